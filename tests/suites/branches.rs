//! Branches of a playtest (docs/turn-loop.md, "Branches"): "Play from here" starts a
//! branch from the state right after a played turn, branches are kept side by side and each
//! turn's prompt can be recomputed in its own branch, and "Replay with my change" plays a
//! branch's player messages again against the plugins as they are now.
//!
//! The sample's demo session (two authored turns in its history, so the first played turn is
//! turn-3) is played with its scripted narrator: its first turn moves the stage to the bell
//! tower, the second offers choices, the third moves it back to the harbour.

use covel_js::Limits;
use covel_studio::branches::BranchError;
use covel_studio::live::{LiveStudio, PlayedTurns, SessionSaveError};
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::copy_dir;
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

fn demo() -> (tempfile::TempDir, LiveStudio) {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample"),
        dir.path(),
    );
    let ws = Workspace::open(
        dir.path(),
        Some(&dir.path().join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("the demo opens");
    (dir, LiveStudio::new(ws, RuntimeTarget::Story))
}

/// What a branch's state is made of: the history's contents, the plugin data and the stage's
/// slot values.
#[derive(Debug, PartialEq)]
struct State {
    history: Vec<String>,
    plugin_data: Value,
    backdrop: Value,
    choices: Value,
}

fn state(studio: &LiveStudio) -> State {
    let session = &studio.play().workspace.session;
    let slot = |id: &str| {
        studio
            .play()
            .slots
            .values()
            .into_iter()
            .find(|v| v.slot.to_string() == id)
            .map(|v| v.value)
            .unwrap_or(Value::Null)
    };
    State {
        history: session
            .history
            .messages
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect(),
        plugin_data: serde_json::to_value(&session.plugin_data).expect("rows serialize"),
        backdrop: slot("stage.backdrop@1"),
        choices: slot("stage.choices@1"),
    }
}

fn play(studio: &mut LiveStudio, message: &str) -> String {
    let turn = studio.play_turn(message);
    assert_eq!(turn.error, None, "{message}");
    turn.turn_id
}

fn turn_ids(studio: &LiveStudio) -> Vec<&str> {
    studio.turns().iter().map(|t| t.turn_id.as_str()).collect()
}

#[test]
fn a_fork_starts_from_the_state_right_after_its_turn() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    let after_turn_2 = state(&studio);
    play(&mut studio, "I go back to the harbour.");
    assert_ne!(state(&studio), after_turn_2, "turn 3 changed the stage");

    let branch = studio.fork_turn("turn-4").expect("turn-4 is played");
    assert_eq!(branch, "b2");
    assert_eq!(
        state(&studio),
        after_turn_2,
        "history, plugin data and slots as right after turn-4"
    );
    assert_eq!(turn_ids(&studio), ["turn-3", "turn-4"]);
    assert_eq!(
        studio.branches().active().label,
        "from turn-4 of main",
        "the branch says where it started"
    );

    // The branch goes on with its own next turn; its scripted narrator is at its own third
    // script entry, and its `{turn}` names the turn it is in.
    let turn = studio.play_turn("I wait on the stairs instead.");
    assert_eq!(turn.turn_id, "turn-5");
    let reply = turn.reply.expect("a reply").text;
    assert!(
        reply.contains("turn 5") && reply.contains("Dawn comes"),
        "{reply}"
    );
    let history = &studio.play().workspace.session.history.messages;
    assert_eq!(
        history[history.len() - 2]["content"],
        "I wait on the stairs instead."
    );
}

#[test]
fn switching_branches_keeps_each_branch_as_it_was() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    play(&mut studio, "I go back to the harbour.");
    let main = state(&studio);
    studio.fork_turn("turn-3").expect("forks");
    play(&mut studio, "I dive under the tower.");
    let forked = state(&studio);
    assert_ne!(forked, main);

    studio.switch_branch("main").expect("main is kept");
    assert_eq!(state(&studio), main);
    assert_eq!(turn_ids(&studio), ["turn-3", "turn-4", "turn-5"]);
    studio.switch_branch("b2").expect("b2 is kept");
    assert_eq!(state(&studio), forked);
    assert_eq!(turn_ids(&studio), ["turn-3", "turn-4"]);
    assert_eq!(
        studio.switch_branch("b9"),
        Err(BranchError::NoSuchBranch("b9".into()))
    );
    let listed: Vec<_> = studio
        .branches()
        .list()
        .iter()
        .map(|b| b.label.as_str())
        .collect();
    assert_eq!(listed, ["main", "from turn-3 of main"]);
}

#[test]
fn a_turn_of_another_branch_keeps_its_own_prompt() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    play(&mut studio, "I shout for Oren.");
    studio.fork_turn("turn-3").expect("forks");
    play(&mut studio, "I shout for Tavi.");

    let player_input = |prompt: &covel_studio::live::TurnPrompt| {
        prompt
            .preview
            .prompt
            .messages
            .iter()
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let here = studio
        .branch_turn_prompt(None, "turn-4")
        .expect("b2's turn-4");
    let there = studio
        .branch_turn_prompt(Some("main"), "turn-4")
        .expect("main's turn-4");
    let there_3 = studio
        .branch_turn_prompt(Some("main"), "turn-5")
        .expect("main's turn-5");
    assert!(player_input(&here).contains("I shout for Tavi."));
    assert!(!player_input(&here).contains("I climb the stairs."));
    assert!(player_input(&there).contains("I climb the stairs."));
    assert!(player_input(&there_3).contains("I shout for Oren."));
    assert!(studio.branch_turn_prompt(Some("main"), "turn-9").is_none());
}

#[test]
fn a_fork_needs_a_played_turn() {
    let (_dir, mut studio) = demo();
    assert_eq!(
        studio.fork_turn("turn-3"),
        Err(BranchError::NotPlayed("turn-3".into()))
    );
    assert_eq!(
        studio.begin_replay().err(),
        Some(BranchError::NothingToReplay)
    );
}

#[test]
fn replay_plays_the_same_messages_against_the_plugins_as_they_are_now() {
    let (dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    let before: Vec<_> = studio.turns().iter().map(|t| t.reply.clone()).collect();

    // The author changes a segment's text, then replays.
    let entry = dir.path().join("story-director/server/index.js");
    let text = std::fs::read_to_string(&entry).expect("read");
    let changed = text.replacen("Prefer concrete detail", "Always prefer concrete detail", 1);
    assert_ne!(text, changed, "the fixture text to change is there");
    std::fs::write(&entry, changed).expect("write");
    let changes = studio.classify(std::slice::from_ref(&entry));
    studio.reload(&changes, Instant::now());

    let (branch, messages) = studio.begin_replay().expect("a replay starts");
    assert_eq!(messages, ["I swim to the tower.", "I climb the stairs."]);
    assert_eq!(studio.branches().active().label, "replay of main");
    assert!(
        studio.turns().is_empty(),
        "the replay starts before the first turn"
    );
    for message in &messages {
        play(&mut studio, message);
    }
    assert_eq!(turn_ids(&studio), ["turn-3", "turn-4"]);
    // Same scripted replies, prompts built by the changed plugin.
    let after: Vec<_> = studio.turns().iter().map(|t| t.reply.clone()).collect();
    assert_eq!(after, before);
    // What each turn sent is kept with it: the replay's turn against the one it replays.
    let house_style = |turn: &covel_studio::playtest::TurnRecord| {
        turn.sent
            .iter()
            .find(|p| &*p.key == "segment story-director/house-style")
            .map(|p| p.text.to_string())
            .expect("the segment was sent")
    };
    let main = studio.branches().parked("main").expect("main is kept");
    assert!(!house_style(&main.turns[0]).contains("Always prefer"));
    assert!(house_style(&studio.turns()[0]).contains("Always prefer"));
    assert_eq!(studio.branches().active().id, branch);
    // Main's turn recomputed now uses the plugins as they are: flagged as such.
    let then = studio
        .branch_turn_prompt(Some("main"), "turn-3")
        .expect("turn-3");
    assert!(then.with_newer_plugins);
}

/// A turn keeps what its prompt said (to compare branches by it), but what the turn before
/// said the same way is kept once: most segments say the same every turn.
#[test]
fn a_played_turn_keeps_once_what_its_prompt_said_as_the_turn_before() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    let [first, second] = studio.turns() else {
        panic!("two turns played")
    };
    let part = |turn: &covel_studio::playtest::TurnRecord, key: &str| {
        turn.sent
            .iter()
            .find(|p| &*p.key == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} was sent"))
    };
    let (style, style_again) = (
        part(first, "segment story-director/house-style"),
        part(second, "segment story-director/house-style"),
    );
    assert_eq!(style.text, style_again.text);
    assert!(std::sync::Arc::ptr_eq(&style.text, &style_again.text));
    assert!(std::sync::Arc::ptr_eq(&style.key, &style_again.key));
    let (said, said_next) = (part(first, "player input"), part(second, "player input"));
    assert_eq!(&*said.text, "I swim to the tower.");
    assert_eq!(&*said_next.text, "I climb the stairs.");
    assert!(std::sync::Arc::ptr_eq(&said.key, &said_next.key));
}

#[test]
fn a_session_save_names_the_played_turns_of_every_branch() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    studio.fork_turn("turn-3").expect("forks");
    play(&mut studio, "I dive.");
    let text = studio
        .play()
        .workspace
        .session_text
        .clone()
        .expect("a session file");
    let refused = studio.save_session_text(&format!("{text}\n# edited\n"), PlayedTurns::Keep);
    match refused {
        Err(SessionSaveError::WouldDropPlayedTurns(turns)) => {
            assert_eq!(turns, ["turn-3", "turn-4", "main/turn-3", "main/turn-4"]);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    studio
        .save_session_text(&format!("{text}\n# edited\n"), PlayedTurns::Drop)
        .expect("saved when told to drop them");
    assert_eq!(
        studio.branches().list().len(),
        1,
        "a new session starts one branch"
    );
}

#[test]
fn a_turn_in_flight_appends_nothing_to_the_branch_switched_to() {
    let (_dir, mut studio) = demo();
    play(&mut studio, "I swim to the tower.");
    play(&mut studio, "I climb the stairs.");
    let pending = studio
        .begin_turn("I ring the bell.")
        .expect("a turn starts");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let answer = pending.ask(&cancel);
    studio.fork_turn("turn-3").expect("forks meanwhile");
    let before = state(&studio);
    let report = studio.finish_turn(pending, answer, &cancel);
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("session changed")),
        "{:?}",
        report.error
    );
    assert_eq!(state(&studio), before);
}

#[test]
fn undo_takes_back_the_played_turn_and_the_failed_attempts_after_it() {
    let (_dir, mut studio) = demo();
    let before = state(&studio);
    play(&mut studio, "I swim to the tower.");
    // A turn cancelled before its reply: recorded, with nothing appended and no undo step.
    let cancelled = std::sync::atomic::AtomicBool::new(true);
    let failed = studio.play_turn_cancellable("I wait.", &cancelled);
    assert!(failed.error.is_some());
    assert_eq!(
        studio.turns().len(),
        2,
        "the played turn and the cancelled attempt"
    );
    studio.undo().expect("undone");
    assert_eq!(state(&studio), before, "the played turn is undone");
    assert!(
        studio.turns().is_empty(),
        "its record goes, and the attempt made after it: {:?}",
        turn_ids(&studio)
    );
    assert!(studio.next_undo().is_none());
}
