//! Sessions are the author's documents: the studio's edits change the author's YAML in place
//! (comments, key order, quoting and layout of everything untouched stay byte for byte), played
//! sessions go to new files, undo of a session edit restores the file, and a change on disk
//! restarts the playtest from it.

use covel_js::Limits;
use covel_studio::document::SessionEdit;
use covel_studio::live::{LiveStudio, SessionSaveError, UndoKind};
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::{copy_dir, fixture};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

const SESSION: &str = "harbour.session.yaml";

/// A copy of plugins-sample with the hand-formatted session beside it.
fn studio() -> (tempfile::TempDir, LiveStudio, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample"),
        dir.path(),
    );
    let path = dir.path().join(SESSION);
    std::fs::copy(fixture("sessions/hand-formatted.session.yaml"), &path)
        .expect("copy the session");
    let ws = Workspace::open(dir.path(), Some(&path), &Limits::default()).expect("opens");
    let studio = LiveStudio::new(ws, RuntimeTarget::Story);
    (dir, studio, path)
}

fn original() -> String {
    std::fs::read_to_string(fixture("sessions/hand-formatted.session.yaml")).expect("fixture")
}

/// The one changed hunk between two texts: (line number, removed lines, added lines).
fn hunk(before: &str, after: &str) -> (usize, Vec<String>, Vec<String>) {
    let a: Vec<&str> = before.split_inclusive('\n').collect();
    let b: Vec<&str> = after.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let lines = |v: &[&str]| {
        v.iter()
            .map(|l| l.trim_end_matches('\n').to_string())
            .collect()
    };
    (
        prefix + 1,
        lines(&a[prefix..a.len() - suffix]),
        lines(&b[prefix..b.len() - suffix]),
    )
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

#[test]
fn every_studio_action_changes_only_the_edited_lines_of_the_authors_file() {
    let cases: Vec<(SessionEdit, usize, Vec<String>, Vec<String>)> = vec![
        (
            SessionEdit::SetLocale {
                locale: "fr".into(),
            },
            6,
            strings(&["locale: en"]),
            strings(&["locale: fr"]),
        ),
        (
            SessionEdit::SetPluginEnabled {
                plugin: "lore-book".into(),
                enabled: false,
            },
            7,
            vec![],
            strings(&["plugins:", "  excluded: [lore-book]"]),
        ),
        (
            SessionEdit::SetSetting {
                plugin: "story-director".into(),
                key: "tone".into(),
                value: Some(json!("wry")),
            },
            10,
            strings(&["    tone: 'grave'      # single-quoted on purpose"]),
            strings(&["    tone: 'wry'      # single-quoted on purpose"]),
        ),
        (
            SessionEdit::SetCharacter {
                index: 0,
                character: json!({"id": "mira", "name": "Mira", "type": "player", "description": "A salvage diver."}),
            },
            16,
            strings(&["    - { id: mira, name: Mira, type: player }"]),
            strings(&[
                "    - { id: mira, name: Mira, type: player, description: A salvage diver. }",
            ]),
        ),
        (
            SessionEdit::AddCharacter {
                character: json!({"id": "tavi", "name": "Tavi", "type": "companion"}),
            },
            20,
            vec![],
            strings(&["    - { id: tavi, name: Tavi, type: companion }"]),
        ),
    ];
    for (edit, line, removed, added) in cases {
        let (_dir, mut studio, path) = studio();
        studio
            .edit_session(
                std::slice::from_ref(&edit),
                covel_studio::live::PlayedTurns::Keep,
            )
            .unwrap_or_else(|e| panic!("{edit:?}: {e}"));
        let saved = std::fs::read_to_string(&path).expect("saved");
        assert_eq!(
            hunk(&original(), &saved),
            (line, removed, added),
            "{edit:?} gave:\n{saved}"
        );
        assert_eq!(
            studio.workspace().session_text.as_deref(),
            Some(saved.as_str())
        );
        assert_eq!(
            std::fs::read_to_string(format!("{}.bak", path.display())).expect("backup"),
            original(),
            "the previous text is kept"
        );
    }
}

#[test]
fn a_plugin_toggle_keeps_requested_absent_so_plugins_added_later_are_enabled() {
    let (dir, mut studio, path) = studio();
    studio
        .edit_session(
            &[SessionEdit::SetPluginEnabled {
                plugin: "lore-book".into(),
                enabled: false,
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("off");
    assert!(!studio.workspace().resolution.is_active("lore-book"));
    assert!(
        studio.workspace().session.plugins.requested.is_none(),
        "requested stays as the author wrote it: absent"
    );
    copy_dir(&dir.path().join("choices"), &dir.path().join("choices-two"));
    let manifest = dir.path().join("choices-two/PLUGIN.md");
    std::fs::write(
        &manifest,
        std::fs::read_to_string(&manifest).expect("read").replacen(
            "id: choices",
            "id: choices-two",
            1,
        ),
    )
    .expect("write");
    let changes = studio.classify(&[dir.path().join("choices-two/PLUGIN.md")]);
    studio.reload(&changes, Instant::now());
    assert!(
        studio
            .workspace()
            .plugins
            .iter()
            .any(|p| p.name == "choices-two")
    );
    studio
        .edit_session(
            &[SessionEdit::SetPluginEnabled {
                plugin: "lore-book".into(),
                enabled: true,
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("on");
    assert!(studio.workspace().resolution.is_active("lore-book"));
    assert!(
        studio.workspace().resolution.is_active("choices-two"),
        "a plugin added to the folder later is enabled"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("saved"),
        original(),
        "toggled back, the file is the author's again"
    );
}

#[test]
fn undo_of_a_session_edit_restores_the_file_unless_it_changed_on_disk() {
    let (_dir, mut studio, path) = studio();
    studio
        .edit_session(
            &[SessionEdit::SetLocale {
                locale: "fr".into(),
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("edit");
    studio.play_turn("I swim.");
    assert_eq!(studio.next_undo().map(|_| ()), Some(()));
    assert_eq!(
        studio.undo().expect("undo"),
        Some(UndoKind::Turn),
        "the turn first"
    );
    assert_eq!(studio.undo().expect("undo"), Some(UndoKind::SessionEdit));
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        original(),
        "the file is restored byte for byte"
    );
    assert_eq!(studio.workspace().session.locale, "en", "and memory agrees");
    assert_eq!(studio.undo().expect("undo"), None);

    studio
        .edit_session(
            &[SessionEdit::SetLocale {
                locale: "de".into(),
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("edit");
    std::fs::write(&path, original().replace("locale: en", "locale: it"))
        .expect("someone else edits");
    assert!(matches!(
        studio.undo(),
        Err(SessionSaveError::ChangedOnDisk(_))
    ));
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .contains("locale: it"),
        "their change is kept"
    );
}

#[test]
fn saving_text_checks_it_first_and_a_session_edit_restarts_the_playtest() {
    let (_dir, mut studio, path) = studio();
    studio.play_turn("I swim.");
    assert_eq!(studio.turns().len(), 1);
    let broken = original().replace("locale: en", "locale: [en");
    assert!(matches!(
        studio.save_session_text(&broken, covel_studio::live::PlayedTurns::Keep),
        Err(SessionSaveError::Invalid(_))
    ));
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        original(),
        "nothing was written"
    );
    assert_eq!(studio.turns().len(), 1, "nor was the playtest touched");
    let edited = original().replace("# the player first", "# the player first (edited by hand)");
    assert!(
        matches!(
            studio.save_session_text(&edited, covel_studio::live::PlayedTurns::Keep),
            Err(SessionSaveError::WouldDropPlayedTurns(turns)) if turns == ["turn-2"]
        ),
        "a valid text with played turns asks first"
    );
    studio
        .save_session_text(&edited, covel_studio::live::PlayedTurns::Drop)
        .expect("saves");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), edited);
    assert!(
        studio.turns().is_empty(),
        "played turns belong to the previous version"
    );
    assert_eq!(studio.workspace().session.history.messages.len(), 1);
}

#[test]
fn played_sessions_go_to_a_new_file_and_the_authored_file_only_by_choice() {
    let (dir, mut studio, path) = studio();
    studio.play_turn("I swim.");
    let written = studio.save_played(None, false).expect("saves");
    assert_eq!(
        written,
        dir.path()
            .join("harbour.played.session.yaml")
            .canonicalize()
            .unwrap_or(written.clone())
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        original(),
        "the authored file is untouched"
    );
    let played = covel_kernel::session::parse_session(
        &std::fs::read_to_string(&written).expect("read"),
        &written,
    )
    .expect("parses");
    assert_eq!(played.history.messages.len(), 3);
    assert!(
        played.plugins.requested.is_none(),
        "plugins.requested stays absent (all plugins)"
    );
    assert!(matches!(
        studio.save_played(Some(&path), false),
        Err(SessionSaveError::WouldOverwriteAuthored(_))
    ));
    studio
        .save_played(Some(&path), true)
        .expect("an explicit choice");
    assert_eq!(
        std::fs::read_to_string(format!("{}.bak", path.display())).expect("backup"),
        original()
    );
}

#[test]
fn a_change_on_disk_restarts_the_playtest_and_the_studios_own_write_is_no_change() {
    let (_dir, mut studio, path) = studio();
    studio
        .edit_session(
            &[SessionEdit::SetLocale {
                locale: "fr".into(),
            }],
            covel_studio::live::PlayedTurns::Keep,
        )
        .expect("edit");
    studio.play_turn("I swim.");
    let changes = studio.classify(std::slice::from_ref(&path));
    let entry = studio.reload(&changes, Instant::now());
    assert!(
        !entry.session_reloaded,
        "the watcher seeing the studio's own save changes nothing"
    );
    assert_eq!(studio.turns().len(), 1);
    std::fs::write(&path, original().replace("locale: en", "locale: it")).expect("edit on disk");
    let entry = studio.reload(&changes, Instant::now());
    assert!(entry.session_reloaded);
    assert!(studio.turns().is_empty());
    assert_eq!(
        studio.snapshot().session_text.as_deref(),
        Some(original().replace("locale: en", "locale: it").as_str())
    );
}

#[test]
fn a_folder_or_session_that_cannot_be_opened_is_a_diagnostic_with_file_line_and_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no-such-folder");
    let error = Workspace::open(&missing, None, &Limits::default())
        .err()
        .expect("a missing folder does not open");
    let d = error.diagnostic();
    assert_eq!(
        (d.code.as_str(), d.file.as_deref()),
        ("missing-file", Some(missing.as_path()))
    );
    let broken = dir.path().join("broken.session.yaml");
    std::fs::write(&broken, "id: broken\nlocale: en\nlokale: fr\n").expect("write");
    let d = Workspace::open(dir.path(), Some(&broken), &Limits::default())
        .err()
        .expect("a broken session does not open")
        .diagnostic();
    assert_eq!(
        (d.code.as_str(), d.line, d.column),
        ("session-schema", Some(3), Some(1)),
        "{d}"
    );
    let d = Workspace::open(
        dir.path(),
        Some(&dir.path().join("gone.session.yaml")),
        &Limits::default(),
    )
    .err()
    .expect("unreadable")
    .diagnostic();
    assert!(
        d.file
            .as_ref()
            .is_some_and(|f| f.ends_with("gone.session.yaml")),
        "{d}"
    );
}
