//! `covel preview PLUGINS_DIR [--session FILE] [--runtime story|plugin:ID|contract:C]`: the
//! assembled prompt with its cache boundaries, where each segment landed and why, cache
//! stability of every breakpoint against the next turn's request (with what to change), the
//! world context and every slot.

use crate::output::print_json;
use covel_kernel::prompt::{CacheWarning, Origin};
use covel_studio::counts::{self, PromptCounts};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The test session.
    #[arg(long)]
    session: Option<PathBuf>,
    /// The runtime to assemble for: story, plugin:ID or contract:C.
    #[arg(long, default_value = "story")]
    runtime: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Exit 1 when any provider call failed, also where the prompt and the slots went on
    /// without it.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let target = crate::open::runtime(&args.runtime)?;
    let workspace = crate::open::workspace(&args.plugins_dir, args.session.as_deref())?;
    if let Some(why) = workspace.runtime_unavailable(&target) {
        anyhow::bail!("--runtime {}: {why}", args.runtime);
    }
    let preview = workspace.preview(&target);
    let note = workspace.runtime_note(&target);
    // Counted as the window counts: the story model's tokenizer, not estimateTokens (the texts
    // the preview's cache report counted are answered from the workspace's counter).
    let counts = counts::of_session(&workspace, &preview, &workspace.counter);
    let below_minimum = counts::below_minimum(&preview, &counts);
    let failed_calls = covel_studio::testing::FailedCall::among(&preview.calls);
    if args.json {
        let mut value = serde_json::to_value(&preview)?;
        value["cache"]["warnings"] = serde_json::to_value(&below_minimum)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("counts".into(), serde_json::to_value(&counts)?);
            if let Some(note) = &note {
                map.insert("runtimeNote".into(), note.clone().into());
            }
            map.insert(
                "resolution".into(),
                serde_json::to_value(&workspace.resolution)?,
            );
            let diagnostics: Vec<_> = workspace
                .diagnostics()
                .map(crate::output::DiagnosticJson::from)
                .collect();
            map.insert("diagnostics".into(), serde_json::to_value(diagnostics)?);
            map.insert("failedCalls".into(), serde_json::to_value(&failed_calls)?);
        }
        print_json(&value)?;
    } else {
        if let Some(note) = &note {
            crate::say!("note: {note}\n");
        }
        print_human(&preview, &counts, &below_minimum);
        crate::output::print_failed_calls(&failed_calls, args.strict);
        crate::say!();
        crate::output::print_rejections(&workspace.resolution);
        crate::output::print_not_loaded(&mut workspace.diagnostics());
    }
    let failed = preview.world_context.error.is_some()
        || !preview.errors.is_empty()
        || workspace.plugins.iter().any(|p| !p.ok())
        || (args.strict && !failed_calls.is_empty());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_human(p: &covel_studio::Preview, counts: &PromptCounts, below_minimum: &[CacheWarning]) {
    if !p.errors.is_empty() {
        crate::say!("Runs that failed (the preview below is missing what they would have given)");
        for e in &p.errors {
            let slot = e.slot.map(|s| format!(" {s}")).unwrap_or_default();
            crate::say!("  ✗ {}{slot} ({}): {}", e.point, e.turn, e.message);
        }
        crate::say!();
    }
    crate::say!("System prompt ({} tokens)", p.prompt.system.tokens);
    let mut boundary = 0;
    for block in &p.prompt.system.blocks {
        crate::say!(
            "── {:?} · {} tokens {}",
            block.kind,
            block.tokens,
            if block.segments.is_empty() {
                String::new()
            } else {
                format!("· {}", block.segments.join(", "))
            }
        );
        crate::say!("{}", block.text);
        if block.cache_boundary {
            let breakpoint = p.cache.breakpoints.iter().find(
                |b| matches!(b.closes, Origin::System { block: kind, .. } if kind == block.kind),
            );
            let stability = breakpoint.map_or(String::new(), |b| {
                format!(
                    " · breakpoint {}, {}",
                    b.index,
                    if b.stable {
                        "stable next turn"
                    } else {
                        "CHANGES next turn"
                    }
                )
            });
            crate::say!("════════ cache boundary {boundary}{stability} ════════");
            boundary += 1;
        }
    }
    crate::say!("\nMessages");
    for m in &p.prompt.messages {
        let origin = match &m.origin {
            Origin::TurnContext { segments } => format!("turn context: {}", segments.join(", ")),
            other => other.name(),
        };
        let rewritten = match &m.origin {
            Origin::History { id } => p
                .history_rewrites
                .iter()
                .find(|r| r.id.as_str() == Some(id.as_str()))
                .map(|r| format!(", {} by {}", r.change, r.providers.join(" → ")))
                .unwrap_or_default(),
            _ => String::new(),
        };
        crate::say!(
            "  [{}] ({origin}{rewritten}, {} tokens) {}",
            m.role,
            m.tokens,
            m.content.replace('\n', " ⏎ ")
        );
        let closes = matches!(m.origin, Origin::History { .. } | Origin::Summary { .. })
            .then_some(&m.origin);
        if let Some(b) = p
            .cache
            .breakpoints
            .iter()
            .find(|b| b.moving && Some(&b.closes) == closes)
        {
            crate::say!(
                "  ════════ moving cache breakpoint {} · {} ════════",
                b.index,
                if b.stable {
                    "stable next turn"
                } else {
                    "CHANGES next turn"
                }
            );
        }
    }
    for r in p.history_rewrites.iter().filter(|r| r.change == "dropped") {
        crate::say!(
            "  (history {} dropped by {})",
            r.id,
            r.providers.join(" → ")
        );
    }
    crate::say!(
        "\nSegments (sorted: volatility, order, plugin id, id; tokens {}, estimateTokens as budgets count)",
        counted_for(counts)
    );
    for (s, count) in p.segments.iter().zip(&counts.segments) {
        let tie = if s.tie_broken_by_plugin_id {
            " ⚠ tie broken by plugin id"
        } else {
            ""
        };
        let state = match &s.excluded_because {
            Some(why) => format!("excluded: {why}"),
            None => format!("{:?}", s.placement),
        };
        crate::say!(
            "  {}/{} · {:?} · order {} · {} (estimateTokens {}) → {state}{tie}",
            s.plugin,
            s.id,
            s.volatility,
            s.order,
            count.label(),
            s.tokens
        );
    }
    crate::say!("\nCache (tokens {})", counted_for(counts));
    for (b, count) in p.cache.breakpoints.iter().zip(&counts.breakpoints) {
        let diff = b
            .first_difference
            .as_ref()
            .map(|d| format!(" — {}", d.said))
            .unwrap_or_default();
        let kind = if b.moving {
            "moving breakpoint"
        } else {
            "breakpoint"
        };
        crate::say!(
            "  {kind} {} on {} ({}): {}{diff}",
            b.index,
            b.closes.describe(),
            count.label(),
            if b.stable { "stable" } else { "changes" }
        );
    }
    for a in &p.cache.advice {
        crate::say!("  ⚠ {}", a.headline);
        crate::say!("  why: {}", a.message);
        crate::say!("  fix: {}", a.fix);
    }
    // Severities as the window says them: advice and lint are warnings, the cache's remarks
    // (a prefix under the model's minimum, …) are notes.
    for f in &p.cache.lint {
        crate::say!("  ⚠ lint: {}", f.message);
    }
    for w in below_minimum {
        crate::say!("  ℹ note: {}", w.message);
    }
    crate::say!(
        "\nWorld context{}",
        p.world_context
            .provided_by
            .as_ref()
            .map(|p| format!(" (from {p})"))
            .unwrap_or_default()
    );
    if let Some(error) = &p.world_context.error {
        crate::say!("  error: {error}");
    }
    crate::say!("  {}", p.world_context.snapshot);
    crate::say!("\nSlots");
    for s in &p.slots {
        let key = s.key.as_ref().map(|k| format!("[{k}]")).unwrap_or_default();
        crate::say!(
            "  {}{key} = {} (rev {})",
            s.slot,
            s.value,
            &s.revision[..12]
        );
    }
    let noteworthy: Vec<_> = p
        .calls
        .iter()
        .filter(|c| c.message.is_some() || !c.logs.is_empty() || !c.notes.is_empty())
        .cloned()
        .collect();
    if !noteworthy.is_empty() {
        crate::say!("\nProvider calls that failed or logged");
        crate::output::print_calls(&noteworthy);
    }
}

/// `counted for claude-sonnet-4-5 (estimated)`.
fn counted_for(counts: &PromptCounts) -> String {
    let how = if counts.counter.exact {
        "exact"
    } else {
        "estimated"
    };
    format!("counted for {} ({how})", counts.counter.model)
}
