//! `covel play PLUGINS_DIR --session FILE --say TEXT…`: plays turns with the session's story
//! model (the offline scripted model by default) and prints each turn.

use crate::output::print_json;
use anyhow::Context;
use covel_studio::playtest::Playtest;
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
    /// Save the played session to this file (atomically).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let workspace = crate::open::workspace(&args.plugins_dir, Some(&args.session))?;
    let mut play = Playtest::new(workspace);
    let mut turns = Vec::new();
    let mut failed = false;
    for message in &args.say {
        let turn = play.play(message);
        failed |= turn.error.is_some();
        if !args.json {
            println!("── {} · player: {}", turn.turn_id, turn.player_message);
            match (&turn.reply, &turn.error) {
                (_, Some(error)) => println!("   ✗ {error}"),
                (Some(reply), None) => println!("   narrator: {}", reply.text),
                _ => {}
            }
            let c = &turn.compaction;
            println!(
                "   prompt {} system tokens · estimate {} / threshold {:.0}{}",
                turn.preview.prompt.system.tokens,
                c.estimated_tokens,
                c.threshold_tokens,
                if c.triggered { format!(" · compaction: {}", c.verdict.as_ref().map_or("failed", |v| if v.accepted { "accepted" } else { "rejected" })) } else { String::new() }
            );
            for change in &turn.slot_changes {
                println!("   slot {} changed", change.slot);
            }
        }
        turns.push(turn);
        if failed {
            break;
        }
    }
    if let Some(path) = &args.save {
        play.save(path).with_context(|| format!("saving {}", path.display()))?;
        if !args.json {
            println!("saved {}", path.display());
        }
    }
    if args.json {
        print_json(&serde_json::json!({"turns": turns, "summaries": play.workspace.session.history.summaries}))?;
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
