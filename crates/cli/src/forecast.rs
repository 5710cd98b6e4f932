//! `covel forecast PLUGINS_DIR --session FILE [--turns N] [--model NAME [--price IN/OUT/WRITE/READ
//! --caching anthropic|openai --min-cacheable N]] [--reply-tokens N] [--json]`: plays the
//! session for N turns (its scripted turns, then its next messages) and forecasts, per turn and
//! per cache breakpoint, what the named model's prompt cache will read, write or miss and why,
//! what it costs against no caching, which plugin pays for what, and where breakpoints and
//! volatility changes would save most. Reported usage (real or replayed backends) is shown
//! beside the prediction, mismatches flagged.

use crate::output::print_json;
use anyhow::Context;
use covel_kernel::session::CacheTtl;
use covel_studio::facts::{Caching, ModelFacts, Prices};
use covel_studio::forecast::{self, Forecast, ForecastOptions, Outcome};
use covel_studio::tokens::TokenCounter;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The session to play.
    #[arg(long)]
    session: PathBuf,
    /// Turns to play (default: the session's scripted turns, else 3).
    #[arg(long)]
    turns: Option<usize>,
    /// The model to price against (default: the session's story model name).
    #[arg(long)]
    model: Option<String>,
    /// Prices a model the facts do not list: IN/OUT/WRITE/READ in USD per million tokens
    /// (WRITE: the cache-write price at --ttl; 0 for OpenAI). Needs --model and --caching.
    #[arg(long, value_name = "IN/OUT/WRITE/READ", requires_all = ["model", "caching"])]
    price: Option<String>,
    /// How the --price model caches: `anthropic` (explicit breakpoints, Claude token estimate)
    /// or `openai` (automatic prefix caching, o200k_base counts).
    #[arg(long, value_parser = ["anthropic", "openai"], requires = "price")]
    caching: Option<String>,
    /// The --price model's minimum cacheable prefix in tokens (required for anthropic; OpenAI's
    /// is 1024).
    #[arg(long, value_name = "N", requires = "price")]
    min_cacheable: Option<u64>,
    /// Seconds between turns, the assumed pace of play (decides TTL expiry).
    #[arg(long, default_value_t = 60.0)]
    pace: f64,
    /// Anthropic cache TTL: 5m or 1h (default: the session's `cacheTtl`, else 5m). The played
    /// requests carry it in their `cache_control`, so the forecast prices what is sent.
    #[arg(long, value_parser = ["5m", "1h"])]
    ttl: Option<String>,
    /// The assumed reply length in output tokens, for turns whose usage no backend reported
    /// (default: the played reply's text, counted — scripted replies are short).
    #[arg(long, value_name = "N")]
    reply_tokens: Option<u64>,
    /// A model-facts file to use instead of the embedded one.
    #[arg(long)]
    facts: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let facts = match &args.facts {
        Some(path) => ModelFacts::load(path)?,
        None => ModelFacts::embedded()?,
    };
    let mut workspace = crate::open::workspace(&args.plugins_dir, Some(&args.session))?;
    let story = &mut workspace.session.models.story;
    let ttl = match args.ttl.as_deref() {
        Some("1h") => CacheTtl::OneHour,
        Some(_) => CacheTtl::FiveMinutes,
        None => story.cache_ttl.unwrap_or(CacheTtl::FiveMinutes),
    };
    // The request bodies carry the TTL the forecast prices, so the two agree.
    story.cache_ttl = Some(ttl);
    let name = args
        .model
        .clone()
        .or_else(|| workspace.session.models.story.model.clone())
        .context("name the model to price against with --model (the session's story model has no `model`)")?;
    let profile = match (&args.price, &args.caching) {
        (Some(price), Some(caching)) => facts.custom(
            &name,
            caching,
            args.min_cacheable,
            Prices::parse(price, ttl.name())?,
        )?,
        _ => facts.profile(&name)?,
    };
    // As `covel preview` does: a forecast made without a plugin says which one and why.
    let not_loaded = serde_json::to_value(
        workspace
            .diagnostics()
            .map(crate::output::DiagnosticJson::from)
            .collect::<Vec<_>>(),
    )?;
    if !args.json {
        crate::output::print_not_loaded(&mut workspace.diagnostics());
    }
    let (played, error) = forecast::play(workspace, args.turns);
    if played.is_empty()
        && let Some(error) = &error
    {
        anyhow::bail!("the session could not be played: {error}");
    }
    let counter = TokenCounter::new();
    let options = ForecastOptions {
        pace_seconds: args.pace,
        ttl: ttl.name().into(),
        reply_tokens: args.reply_tokens,
    };
    let result = forecast::forecast(&played, &profile, &options, &counter);
    if args.json {
        let mut value = serde_json::to_value(&result)?;
        if let Some(map) = value.as_object_mut() {
            if let Some(error) = &error {
                map.insert("error".into(), serde_json::Value::String(error.clone()));
            }
            if not_loaded.as_array().is_some_and(|d| !d.is_empty()) {
                map.insert("diagnostics".into(), not_loaded);
            }
        }
        print_json(&value)?;
    } else {
        print_human(&result, ttl.name());
        if let Some(error) = &error {
            crate::say!("\n✗ the session stopped early: {error}");
        }
    }
    let mismatch = result.turns.iter().any(|t| !t.mismatches.is_empty());
    Ok(if error.is_some() || mismatch {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn usd(value: f64) -> String {
    format!("${value:.5}")
}

/// ` ($0.01000–$0.01200)`: a cost's range over the token counts' error bar.
fn cost_range(range: Option<(f64, f64)>) -> String {
    range
        .map(|(low, high)| format!(" ({}–{})", usd(low), usd(high)))
        .unwrap_or_default()
}

fn print_human(f: &Forecast, ttl: &str) {
    let m = &f.model;
    crate::say!(
        "Forecast for {} ({}, {}) · minimum cacheable {} tokens · TTL {} s at {} s per turn",
        m.id,
        m.provider,
        match m.caching {
            Caching::ExplicitBreakpoints => "explicit cache breakpoints",
            Caching::AutomaticPrefix => "automatic prefix caching",
        },
        m.min_cacheable_tokens,
        m.ttl_seconds,
        m.pace_seconds
    );
    crate::say!(
        "Prices per MTok: input {} · cache write {} · cache read {} · output {} (facts of {}{}); tokens {}",
        m.prices.input,
        match m.caching {
            Caching::ExplicitBreakpoints => format!("{} ({ttl})", m.prices.cache_write(ttl)),
            Caching::AutomaticPrefix => "free".into(),
        },
        m.prices.cache_read,
        m.prices.output,
        m.facts_date,
        if m.verified {
            ""
        } else {
            ", some values unverified"
        },
        m.counts
    );
    for turn in &f.turns {
        let range = turn
            .input_tokens_range
            .map(|(l, h)| format!(" ({l}–{h})"))
            .unwrap_or_default();
        crate::say!(
            "\nturn {} · {} · player: {} · {} input tokens{range}",
            turn.turn,
            turn.turn_id,
            turn.say,
            turn.input_tokens
        );
        for b in &turn.breakpoints {
            let mark = match b.outcome {
                Outcome::Hit => "hit  ",
                Outcome::Write => "write",
                Outcome::Miss => "miss ",
            };
            crate::say!(
                "  {mark} breakpoint {} at {} · {} tokens in the prefix — {}",
                b.index,
                b.at,
                b.prefix_tokens,
                b.reason
            );
        }
        crate::say!(
            "  uncached {} · cache write {} · cache read {} · output {} ({}) · cost {}{} (no cache {})",
            turn.uncached_tokens,
            turn.cache_write_tokens,
            turn.cache_read_tokens,
            turn.output_tokens,
            turn.output_from,
            usd(turn.cost.total),
            cost_range(turn.cost_range),
            usd(turn.cost_without_cache)
        );
        if let Some(r) = &turn.reported {
            crate::say!(
                "  reported: input {} · cache write {} · cache read {} · output {}",
                r.input_tokens,
                r.cache_write_tokens,
                r.cache_read_tokens,
                r.output_tokens
            );
        }
        for mismatch in &turn.mismatches {
            crate::say!("  ⚠ mismatch: {}", mismatch.message);
        }
    }
    let t = &f.totals;
    let percent = if t.cost_without_cache > 0.0 {
        t.saving / t.cost_without_cache * 100.0
    } else {
        0.0
    };
    crate::say!(
        "\nTotals: {} input tokens = uncached {} + cache write {} + cache read {}, {} output tokens · cost {}{} against {} without caching · saving {} ({percent:.0}%)",
        t.input_tokens,
        t.uncached_tokens,
        t.cache_write_tokens,
        t.cache_read_tokens,
        t.output_tokens,
        usd(t.cost.total),
        cost_range(t.cost_range),
        usd(t.cost_without_cache),
        usd(t.saving)
    );
    crate::say!("\nLedger (tokens over all turns)");
    crate::say!(
        "  {:<22} {:>12} {:>14} {:>8} {:>8} {:>9} {:>10} {:>6}",
        "owner",
        "cached part",
        "uncached part",
        "read",
        "write",
        "uncached",
        "cost",
        "share"
    );
    for row in &f.ledger {
        crate::say!(
            "  {:<22} {:>12} {:>14} {:>8} {:>8} {:>9} {:>10} {:>5.1}%",
            row.owner,
            row.cached_part_tokens,
            row.uncached_part_tokens,
            row.cache_read_tokens,
            row.cache_write_tokens,
            row.uncached_tokens,
            usd(row.cost),
            row.share * 100.0
        );
    }
    if let Some(last) = f.turns.last() {
        crate::say!(
            "\nSegments of {} (estimateTokens, as budgets count · the model's count)",
            last.turn_id
        );
        for t in &f.segment_tokens {
            let range = t
                .range
                .map(|(l, h)| format!(" ({l}–{h})"))
                .unwrap_or_default();
            crate::say!(
                "  {:<36} {:>6} · {:>6}{range}{}",
                t.segment,
                t.estimate_tokens,
                t.tokens,
                if t.exact { " exact" } else { " estimated" }
            );
        }
    }
    crate::say!("\nAdvice");
    if let Some(current) = &f.advice.current_layout {
        // A layout moves what the input costs; the output costs the same in every one.
        crate::say!(
            "  breakpoints now: {} → {} of input",
            current.breakpoints.join(", "),
            usd(current.cost)
        );
        for layout in &f.advice.best_layouts {
            crate::say!(
                "  breakpoints at {} → {} of input (saves {})",
                layout.breakpoints.join(", "),
                usd(layout.cost),
                usd(layout.saving)
            );
        }
    }
    for v in &f.advice.volatility {
        crate::say!(
            "  segment {}: {} — {}; saves {} over these turns",
            v.segment,
            v.change,
            v.why,
            usd(v.saving)
        );
    }
    for note in &f.advice.notes {
        crate::say!("  {note}");
    }
}
