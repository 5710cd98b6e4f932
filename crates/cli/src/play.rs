//! `covel play PLUGINS_DIR --session FILE --say TEXT…`: plays turns with the session's story
//! model (the offline scripted model by default) and prints each turn; `--record FILE` keeps
//! what a real backend was sent and answered, for the `replay` backend; `--from TURN` starts
//! after an earlier turn of a played session (a branch: "what if the player had said…").

use anyhow::Context;
use covel_studio::playtest::Playtest;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugins folder.
    plugins_dir: PathBuf,
    /// The test session to start from.
    #[arg(long)]
    session: PathBuf,
    /// A player message; repeat for several turns.
    #[arg(long = "say", required = true)]
    say: Vec<String>,
    /// Save the played session as YAML to this new file (default name beside the session:
    /// `<name>.played.session.yaml`); written safely, the previous text kept as `.bak`.
    #[arg(long, num_args = 0..=1)]
    save: Option<Option<PathBuf>>,
    /// Allow `--save` onto the authored session itself (its text is kept as `.bak`).
    #[arg(long)]
    overwrite: bool,
    /// Keep the story model's requests and replies in this file, for the `replay` backend
    /// (`backend: replay`, `recording: FILE` in the session's story model).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Start right after this turn of the session's history (a played session saved with
    /// `--save`): the history is cut after it and the plugin data put back as it was then.
    #[arg(long, value_name = "TURN_ID")]
    from: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let save = args.save.as_ref().map(|p| {
        p.clone()
            .unwrap_or_else(|| covel_studio::save::played_file_for(&args.session))
    });
    if let Some(path) = &save
        && !args.overwrite
        && covel_studio::save::same_file(path, &args.session)
    {
        anyhow::bail!(
            "--save {} is the authored session: played turns go to a new file (e.g. `--save` alone writes {}); add --overwrite to replace the authored session (its text is kept as .bak)",
            path.display(),
            covel_studio::save::played_file_for(&args.session).display()
        );
    }
    let workspace = crate::open::workspace(&args.plugins_dir, Some(&args.session))?;
    if !args.json {
        // As `covel preview` does: a turn played without a plugin says which one and why.
        crate::output::print_not_loaded(&mut workspace.diagnostics());
    }
    let backend = workspace.session.models.story.backend.clone();
    if args.record.is_some() && !matches!(backend.as_str(), "anthropic" | "openai") {
        anyhow::bail!(
            "--record keeps what a real backend (anthropic or openai) was sent and answered; this session's story model is `{backend}`"
        );
    }
    let mut workspace = workspace;
    let started_after = match &args.from {
        Some(turn) => {
            let (session, started) =
                covel_studio::checkpoints::start_after(&workspace.session, turn)
                    .with_context(|| format!("--from {turn}"))?;
            workspace.session = session;
            Some(started)
        }
        None => None,
    };
    let mut play = Playtest::new(workspace);
    if let Some(started) = &started_after {
        // A scripted story model goes on with its script where the turn left it.
        play.story_backend()
            .replace_scripted_position(started.turns_before);
        if !args.json {
            crate::say!(
                "starting after {}: {} of {} history messages kept; plugin data {}",
                started.turn_id,
                started.messages_kept,
                started.messages_before,
                started.plugin_data_from.as_ref().map_or_else(
                    || "as saved (no later turn changed it)".to_string(),
                    |c| format!("as it was {c}")
                )
            );
        }
    }
    // With --json each turn is written as soon as it is played and then dropped: a long
    // playtest's memory holds the played session, not every turn's preview.
    let mut stream = args
        .json
        .then(|| TurnStream::start(std::io::stdout().lock()))
        .transpose()?;
    let mut failed = false;
    cancel_on_ctrl_c();
    for message in &args.say {
        // A real backend's reply is printed as it streams (JSON output keeps it for the end).
        let turn = if args.json {
            play.play(message)
        } else {
            play_streaming(&mut play, message)
        };
        failed |= turn.error.is_some();
        if !args.json {
            // (The turn's header was printed before its reply streamed.)
            match (&turn.reply, &turn.error) {
                (_, Some(error)) => crate::say!("   ✗ {error}"),
                (Some(reply), None) => crate::say!("   narrator: {}", reply.text),
                _ => {}
            }
            for step in &turn.steps {
                crate::say!("   · {}", step.line());
            }
            let c = &turn.compaction;
            crate::say!(
                "   prompt {} system tokens · estimate {} / threshold {:.0}{}",
                turn.preview.prompt.system.tokens,
                c.estimated_tokens,
                c.threshold_tokens,
                if c.triggered {
                    format!(
                        " · compaction: {}",
                        c.verdict.as_ref().map_or("failed", |v| if v.accepted {
                            "accepted"
                        } else {
                            "rejected"
                        })
                    )
                } else {
                    String::new()
                }
            );
            if let Some(usage) = turn
                .reply
                .as_ref()
                .and_then(|r| r.usage.as_ref())
                .and_then(covel_studio::forecast::reported_usage)
            {
                crate::say!(
                    "   reported usage: input {} · cache write {} · cache read {} · output {} (compare with `covel forecast`)",
                    usage.input_tokens,
                    usage.cache_write_tokens,
                    usage.cache_read_tokens,
                    usage.output_tokens
                );
            }
            for change in &turn.slot_changes {
                crate::say!("   slot {} changed", change.slot);
            }
        }
        if let Some(stream) = &mut stream {
            stream.turn(&turn)?;
        }
        if failed {
            break;
        }
    }
    let saved = (|| -> anyhow::Result<()> {
        if let Some(path) = &args.record {
            let recording = play.story_backend().recording();
            recording.save(path)?;
            if !args.json {
                crate::say!(
                    "recorded {} in {}",
                    covel_studio::words::counted(
                        recording.exchanges.len(),
                        &format!("{} exchange", recording.backend)
                    ),
                    path.display()
                );
            }
        }
        if let Some(path) = save.as_ref().filter(|_| failed) {
            // A failed or cancelled turn leaves no file behind: what was saved would not be the
            // playtest that was asked for.
            let why = format!(
                "not saved to {}: a turn failed or was cancelled (nothing of it was appended)",
                path.display()
            );
            if args.json {
                eprintln!("{}", crate::output::terminal_safe(&why));
            } else {
                crate::say!("{why}");
            }
        }
        if let Some(path) = save.as_ref().filter(|_| !failed) {
            let written = play
                .save(path)
                .with_context(|| format!("saving {}", path.display()))?;
            if !args.json {
                crate::say!("saved {}", written.display());
            }
        }
        Ok(())
    })();
    // The JSON document is closed even when saving failed (the error goes to stderr).
    if let Some(stream) = stream {
        stream.finish(
            &play.workspace.session.history.summaries,
            started_after.as_ref(),
        )?;
    }
    saved?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `{"turns": [...], "summaries": [...], "startedAfter": {...}}` written one turn at a time.
struct TurnStream<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> TurnStream<W> {
    fn start(mut out: W) -> anyhow::Result<TurnStream<W>> {
        write!(out, "{{\n  \"turns\": [")?;
        Ok(TurnStream { out, first: true })
    }

    fn turn(&mut self, turn: &covel_studio::playtest::TurnReport) -> anyhow::Result<()> {
        self.out
            .write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer_pretty(&mut self.out, turn)?;
        self.out.flush()?;
        Ok(())
    }

    fn finish(
        mut self,
        summaries: &[serde_json::Value],
        started_after: Option<&covel_studio::checkpoints::StartedAfter>,
    ) -> anyhow::Result<()> {
        write!(self.out, "\n  ],\n  \"summaries\": ")?;
        serde_json::to_writer_pretty(&mut self.out, summaries)?;
        if let Some(started) = started_after {
            write!(self.out, ",\n  \"startedAfter\": ")?;
            serde_json::to_writer_pretty(&mut self.out, started)?;
        }
        writeln!(self.out, "\n}}")?;
        self.out.flush()?;
        Ok(())
    }
}

/// Set by Ctrl+C: the turn being played is cancelled (a second Ctrl+C ends at once).
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes Ctrl+C cancel the turn being played instead of killing the process mid-write.
fn cancel_on_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
}

/// Plays one turn, printing a real backend's reply as it arrives; Ctrl+C cancels it.
fn play_streaming(play: &mut Playtest, message: &str) -> covel_studio::playtest::TurnReport {
    let cancel = &INTERRUPTED;
    let turn = match play.prepare_turn(message, None) {
        Ok(turn) => turn,
        Err(failed) => {
            crate::say!("── {} · player: {message}", failed.turn_id);
            return *failed;
        }
    };
    crate::say!("── {} · player: {message}", turn.turn_id());
    let started = std::cell::Cell::new(false);
    let on_text = |text: &str| {
        let mut out = std::io::stdout().lock();
        if !started.replace(true) {
            let _ = write!(out, "   ⋯ ");
        }
        let _ = write!(
            out,
            "{}",
            crate::output::terminal_safe(text).replace('\n', "\n     ")
        );
        let _ = out.flush();
    };
    let answer = turn.ask_streaming(cancel, Some(&on_text));
    if started.get() {
        crate::say!("");
    }
    play.finish_turn(turn, answer, cancel)
}
