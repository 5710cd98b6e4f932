//! Test sessions, the session resolver, the handler context and the SDK: the seed page's
//! sections "Depending on an extension point", "What a handler can get" and "Helper functions
//! in the public SDK", rule by rule, from fixture folders and session files.

use covel_js::Limits;
use covel_kernel::Code;
use covel_kernel::contract::PointId;
use covel_kernel::manifest::PluginKind;
use covel_kernel::resolver::{self, Candidate, RejectionCode};
use covel_kernel::{sdk, session};
use covel_studio::Workspace;
use covel_tests::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

fn resolver_workspace(session: &str) -> Workspace {
    let session = fixture("resolver/sessions").join(format!("{session}.session.yaml"));
    Workspace::open(
        &fixture("resolver/plugins"),
        Some(&session),
        &Limits::default(),
    )
    .expect("fixture workspace opens")
}

fn rejection(ws: &Workspace, plugin: &str) -> (RejectionCode, Vec<String>) {
    let r = ws
        .resolution
        .rejected
        .iter()
        .find(|r| &*r.plugin == plugin)
        .unwrap_or_else(|| panic!("{plugin} not rejected: {:?}", ws.resolution));
    (r.code, r.candidates.clone())
}

// ---- Depending on an extension point ----------------------------------------------------------

#[test]
fn every_resolver_session_matches_its_snapshot() {
    let mut sessions: Vec<_> = std::fs::read_dir(fixture("resolver/sessions"))
        .expect("sessions")
        .filter_map(|e| e.ok())
        .collect();
    sessions.sort_by_key(|e| e.file_name());
    for entry in sessions {
        let name = entry
            .file_name()
            .to_string_lossy()
            .trim_end_matches(".session.yaml")
            .to_string();
        let ws = resolver_workspace(&name);
        insta::assert_json_snapshot!(format!("resolve_{name}"), ws.resolution);
    }
}

#[test]
fn requires_may_name_a_point_and_a_slot_and_an_implementation_satisfies_it() {
    let ws = resolver_workspace("requires-point");
    assert!(ws.resolution.is_active("narrator"), "{:?}", ws.resolution);
    assert!(ws.resolution.rejected.is_empty());
}

#[test]
fn a_non_empty_contributes_prompt_implements_prompt_segment() {
    let ws = resolver_workspace("static-prompt-implements-segments");
    assert!(ws.resolution.is_active("narrator"), "{:?}", ws.resolution);
}

#[test]
fn a_slot_requirement_needs_a_provider_of_that_slot() {
    // backdrop-only provides stage.backdrop@1, which is not stage.cast@1: the only candidate is
    // cast-a, and the session excludes it.
    let ws = resolver_workspace("slot-must-match");
    assert_eq!(
        rejection(&ws, "narrator"),
        (RejectionCode::Excluded, vec!["cast-a".to_string()])
    );
}

#[test]
fn an_excluded_only_provider_gives_one_code_for_a_plugin_requirement_and_a_world_requirement() {
    // The same situation — every provider of a required contract excluded by the session —
    // whether a plugin or the world requires the contract.
    let plugin = resolver_workspace("slot-must-match");
    let world = resolver_workspace("world-dimensions-excluded");
    let by_plugin = plugin
        .resolution
        .rejected
        .iter()
        .find(|r| &*r.plugin == "narrator")
        .expect("rejected");
    let by_world = &world.resolution.unmet[0];
    assert_eq!(
        (by_plugin.code, by_world.code),
        (RejectionCode::Excluded, RejectionCode::Excluded)
    );
    assert_eq!(
        (
            by_plugin.candidates.as_slice(),
            by_world.candidates.as_slice()
        ),
        (
            &["cast-a".to_string()][..],
            &["dims-provider".to_string()][..]
        )
    );
    assert!(
        by_plugin
            .message
            .contains("excludes its providers (cast-a)"),
        "{}",
        by_plugin.message
    );
}

#[test]
fn a_kernel_contract_written_only_in_provides_satisfies_nothing() {
    let ws = resolver_workspace("provides-only-satisfies-nothing");
    assert_eq!(
        rejection(&ws, "needs-visual").0,
        RejectionCode::MissingProvider
    );
}

#[test]
fn a_second_provider_of_a_single_point_is_rejected() {
    let ws = resolver_workspace("single-provider-conflict");
    assert_eq!(
        rejection(&ws, "world-b"),
        (
            RejectionCode::SingleProviderConflict,
            vec!["world-a".to_string()]
        )
    );
}

#[test]
fn a_requirement_auto_adds_its_provider_and_a_default_steps_aside() {
    let ws = resolver_workspace("dependency-auto-added");
    assert!(
        ws.resolution
            .auto_added
            .contains(&"memory-fancy".to_string())
    );
    let ws = resolver_workspace("default-replaced");
    assert_eq!(
        rejection(&ws, "memory-default").0,
        RejectionCode::DefaultReplaced
    );
}

#[test]
fn excluded_or_unauthorized_providers_are_never_added_automatically() {
    let ws = resolver_workspace("excluded-never-auto-added");
    assert!(!ws.resolution.is_active("memory-fancy"));
    let ws = resolver_workspace("approval-required");
    assert!(!ws.resolution.is_active("cloud"));
    assert_eq!(
        rejection(&ws, "needs-cloud"),
        (RejectionCode::ApprovalRequired, vec!["cloud".to_string()])
    );
    let ws = resolver_workspace("unauthorized-requested");
    assert_eq!(rejection(&ws, "cloud").0, RejectionCode::ApprovalRequired);
}

#[test]
fn every_rejection_code_is_produced_with_its_candidates() {
    let expectations = [
        (
            "ambiguous-provider",
            "needs-lore",
            RejectionCode::AmbiguousProvider,
            vec!["lore-one", "lore-two"],
        ),
        (
            "conflict",
            "rival",
            RejectionCode::Conflict,
            vec!["memory-fancy"],
        ),
        (
            "unknown-plugin",
            "ghost",
            RejectionCode::UnknownPlugin,
            vec![],
        ),
    ];
    for (session, plugin, code, candidates) in expectations {
        let ws = resolver_workspace(session);
        assert_eq!(
            rejection(&ws, plugin),
            (
                code,
                candidates.into_iter().map(String::from).collect::<Vec<_>>()
            ),
            "{session}"
        );
    }
    let excluded = resolver::resolve(&resolver::Request {
        requested: &["a".to_string()],
        excluded: &["a".to_string()],
        plugins: &[candidate("a", &[])],
        required_contracts: &[],
    });
    assert_eq!(excluded.rejected[0].code, RejectionCode::Excluded);
}

fn candidate(id: &str, conflicts: &[&str]) -> Candidate {
    Candidate {
        id: id.into(),
        kind: PluginKind::Plugin,
        authorized: true,
        provides: vec![],
        requires: vec![],
        optional: vec![],
        conflicts: conflicts.iter().map(|c| c.to_string()).collect(),
        implements: BTreeSet::new(),
        single_points: BTreeSet::new(),
        load_failure: None,
    }
}

#[test]
fn conflicts_naming_a_kernel_contract_is_invalid_from_a_direct_resolver_call_too() {
    for bad in ["ui.slot@1", "stage.cast@1", "history.compact@1"] {
        let result = resolver::resolve(&resolver::Request {
            requested: &["a".to_string()],
            excluded: &[],
            plugins: &[candidate("a", &[bad])],
            required_contracts: &[],
        });
        assert_eq!(
            result.rejected[0].code,
            RejectionCode::InvalidConflict,
            "{bad}"
        );
    }
}

#[test]
fn a_world_with_dimensions_requires_one_dimension_provider() {
    let ws = resolver_workspace("world-requires-dimensions");
    assert!(
        ws.resolution
            .auto_added
            .contains(&"dims-provider".to_string())
    );
    let ws = resolver_workspace("world-dimensions-excluded");
    assert_eq!(ws.resolution.unmet[0].code, RejectionCode::Excluded);
}

#[test]
fn a_provider_is_only_called_when_its_plugin_is_active() {
    let ws = resolver_workspace("single-provider-conflict");
    let result = ws.call(PointId::SessionWorldContext, json!({}), None, None);
    let callers: Vec<&str> = result.calls.iter().map(|c| &*c.plugin_id).collect();
    assert_eq!(callers, ["world-a"], "world-b is rejected and never called");
}

// ---- Test session files -----------------------------------------------------------------------

#[test]
fn invalid_session_files_are_reported_with_line_and_column() {
    for (file, line) in [
        ("unknown-key", 5),
        ("bad-row", 3),
        ("bad-yaml", 3),
        ("history-without-content", 5),
        ("history-content-not-text", 5),
        ("summary-without-range", 4),
        // Checked after the text was read into types: the position is found again in the text.
        ("empty-namespace", 8),
        ("empty-id", 1),
        // A quote left open runs on to the next one; the report points where it opened.
        ("unclosed-quote", 4),
    ] {
        let path = fixture("sessions-invalid").join(format!("{file}.session.yaml"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        let error = session::parse_session(&text, Path::new(file)).expect_err(file);
        assert_eq!(error.code, Code::SessionSchema, "{file}");
        assert_eq!(error.line, Some(line), "{file}: {error}");
        assert!(error.column.is_some());
    }
}

#[test]
fn history_messages_and_summaries_may_omit_what_the_studio_derives() {
    let path = fixture("sessions/minimal-history.session.yaml");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let session =
        session::parse_session(&text, &path).expect("a minimal history is a valid session");
    let fields = |m: &Value| -> Vec<Value> {
        [
            "id",
            "sessionId",
            "turnId",
            "sourceType",
            "role",
            "order",
            "createdAt",
        ]
        .iter()
        .map(|k| m[k].clone())
        .collect()
    };
    let got: Vec<Vec<Value>> = session.history.messages.iter().map(fields).collect();
    assert_eq!(
        got,
        [
            vec![
                json!("m1"),
                json!("minimal"),
                json!("t1"),
                json!("player"),
                json!("user"),
                json!(1),
                json!("2026-01-01T00:00:00Z")
            ],
            vec![
                json!("m2"),
                json!("minimal"),
                json!("t1"),
                json!("runtime"),
                json!("assistant"),
                json!(2),
                json!("2026-01-01T00:00:01Z")
            ],
            vec![
                json!("ask"),
                json!("minimal"),
                json!("t2"),
                json!("player"),
                json!("user"),
                json!(3),
                json!("2026-01-01T00:00:02Z")
            ],
            vec![
                json!("m4"),
                json!("minimal"),
                json!("t2"),
                json!("runtime"),
                json!("assistant"),
                json!(4),
                json!("2026-01-01T00:00:03Z")
            ],
        ]
    );
    let summary = &session.history.summaries[0];
    assert_eq!(
        (
            &summary["id"],
            &summary["sessionId"],
            &summary["focusSections"]
        ),
        (&json!("s1"), &json!("minimal"), &json!([]))
    );
    // Derived values never shadow what the author wrote, and derived ids skip written ones.
    let text = "id: x\nhistory:\n  messages:\n    - { role: user, content: a, id: m2, turnId: t1 }\n    - { role: user, content: b }\n";
    let session = session::parse_session(text, Path::new("x")).expect("valid");
    assert_eq!(session.history.messages[1]["id"], "m3");
    assert_eq!(session.history.messages[1]["turnId"], "t2");
}

#[test]
fn what_cannot_be_derived_is_a_session_schema_diagnostic_at_the_message() {
    let text = "id: x\nhistory:\n  messages:\n    - { role: user, content: a }\n    - { role: narrator, content: b }\n";
    let error = session::parse_session(text, Path::new("x"))
        .expect_err("a narrator role has no source type");
    assert_eq!((error.code, error.line), (Code::SessionSchema, Some(5)));
    assert!(error.message.contains("sourceType"), "{error}");
    let text = "id: x\nhistory:\n  messages:\n    - { role: user, content: a, id: m1 }\n    - { role: user, content: b, id: m1 }\n";
    let error = session::parse_session(text, Path::new("x")).expect_err("ids are unique");
    assert_eq!(
        (error.line, error.column),
        (Some(5), Some(37)),
        "{error}: the second `m1`"
    );
}

#[test]
fn the_published_session_schema_is_generated_from_the_types_and_accepts_every_valid_session() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let published = repo.join("docs/session.schema.json");
    let fresh = serde_json::to_string_pretty(&session::json_schema()).expect("json") + "\n";
    covel_tests::assert_generated_file_is_fresh(
        &published,
        &fresh,
        "UPDATE_SESSION_SCHEMA",
        "run with UPDATE_SESSION_SCHEMA=1",
    );
    let schema: Value = serde_json::from_str(&fresh).expect("json");
    let validator = jsonschema::draft7::new(&schema).expect("the schema compiles");
    let demo = repo.join("plugins-sample/demo.session.yaml");
    let text = std::fs::read_to_string(&demo).expect("demo");
    assert!(
        text.starts_with("# yaml-language-server: $schema=../docs/session.schema.json\n"),
        "editors find the schema from the demo"
    );
    for path in [
        demo,
        fixture("sessions/minimal-history.session.yaml"),
        fixture("sessions/hand-formatted.session.yaml"),
        fixture("compaction/long.session.yaml"),
        // Test sessions: the `test:` section's turns and every kind of expectation.
        repo.join("plugins-sample/tests/bell-tower.session.yaml"),
        repo.join("plugins-sample/tests/replayed.session.yaml"),
        repo.join("plugins-sample/tests/scene-tools.session.yaml"),
        repo.join("plugins-sample/tests/without-lore.session.yaml"),
    ] {
        let text = std::fs::read_to_string(&path).expect("session");
        let data: Value = serde_saphyr::from_str(&text).expect("yaml");
        let errors: Vec<String> = validator
            .iter_errors(&data)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
    let invalid: Value =
        serde_saphyr::from_str("id: x\nunknown: 1\nhistory:\n  messages:\n    - { role: user }\n")
            .expect("yaml");
    assert!(
        validator.iter_errors(&invalid).count() >= 2,
        "unknown keys and a message without content are flagged in the editor too"
    );
}

#[test]
fn the_demo_session_parses_and_resolves_every_sample_plugin() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample");
    let ws = Workspace::open(
        &root,
        Some(&root.join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("demo opens");
    assert!(
        ws.resolution.rejected.is_empty(),
        "{:?}",
        ws.resolution.rejected
    );
    for p in &ws.plugins {
        assert!(p.ok(), "{}: {:?}", p.name, p.diagnostics);
        assert!(
            ws.resolution.is_active(&p.name),
            "{} is active in the demo",
            p.name
        );
    }
}

// ---- What a handler can get -------------------------------------------------------------------

/// The context plugins on the probe session.
fn probe_workspace() -> Workspace {
    let session = fixture("context/probe.session.yaml");
    Workspace::open(
        &fixture("context/plugins"),
        Some(&session),
        &Limits::default(),
    )
    .expect("opens")
}

fn probe() -> (Value, Value) {
    probe_in(&probe_workspace())
}

/// What the probe plugin reports in `ws` (its `probe` and `after` segments).
fn probe_in(ws: &Workspace) -> (Value, Value) {
    let result = ws.call(
        PointId::PromptSegment,
        json!({"turnId": "t7", "playerMessage": "x"}),
        None,
        Some("t7".into()),
    );
    assert!(result.error.is_none(), "{:?}", result.error);
    let read = |id: &str| -> Value {
        let seg = result
            .result
            .as_array()
            .and_then(|a| a.iter().find(|s| s["id"] == id))
            .expect("probe segment");
        serde_json::from_str(seg["content"].as_str().expect("content")).expect("probe reports JSON")
    };
    (read("probe"), read("after"))
}

#[test]
fn handler_context_matches_its_snapshot() {
    let (report, after) = probe();
    insta::assert_json_snapshot!(
        "handler_context_probe",
        json!({"probe": report, "after": after})
    );
}

#[test]
fn plugin_data_get_returns_the_value_or_null_and_list_returns_rows_in_creation_order() {
    let (report, _) = probe();
    assert_eq!(report["ownGet"], json!({"text": "original"}));
    assert_eq!(report["missingGet"], Value::Null);
    assert_eq!(
        report["detachedGet"],
        json!({"text": "original"}),
        "get works detached from ctx.pluginData too"
    );
    let keys: Vec<&str> = report["list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(keys, ["first", "second"]);
    let fields: BTreeSet<&str> = report["list"][0]
        .as_object()
        .expect("row")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from(["key", "value", "createdAt", "updatedAt"]),
        "no storage identifiers"
    );
}

#[test]
fn a_key_named_proto_in_session_data_reaches_the_handler_as_an_own_key() {
    let (report, _) = probe();
    assert_eq!(
        report["protoKey"],
        json!({"keys": ["__proto__", "kept"], "isAdmin": null, "plainPrototype": true}),
        "as JSON.parse would give it: not the object's prototype"
    );
}

#[test]
fn hidden_and_foreign_data_are_unreadable() {
    let (report, _) = probe();
    assert_eq!(report["hiddenGet"], Value::Null);
    assert_eq!(report["hiddenList"], json!([]));
    assert_eq!(
        report["foreignList"],
        json!([]),
        "another plugin's namespace reads empty"
    );
    assert_eq!(
        report["ownGet"]["text"], "original",
        "same namespace and key of another plugin is not mixed in"
    );
}

#[test]
fn a_handler_cannot_write_or_change_what_it_read() {
    let (report, after) = probe();
    assert_eq!(report["writers"], json!([]), "no set, update or delete");
    assert_eq!(report["afterMutatingARead"], "original");
    assert_eq!(report["worldMutation"], "TypeError");
    assert_eq!(report["settingsMutation"], "TypeError");
    assert_eq!(
        after["lateRead"],
        "ctx.pluginData is only readable while the handler runs"
    );
}

#[test]
fn a_handler_that_changes_its_own_ctx_changes_nothing_for_the_next_call() {
    let (_, after) = probe();
    assert_eq!(after["own"]["sessionId"], "ctx-session");
    assert_eq!(after["own"]["read"], json!({"text": "original"}));
    assert_eq!(
        after["own"]["hasWorld"], true,
        "the next call's ctx is new and whole"
    );
}

#[test]
fn a_call_signal_aborts_when_its_call_ends_and_runs_its_listeners_then() {
    let (report, after) = probe();
    assert_eq!(
        report["signalDuring"],
        json!({"aborted": false, "reason": null, "ownKeys": []}),
        "live during the call; like an AbortSignal, its state is not own properties"
    );
    assert_eq!(
        after["own"]["signalAfter"],
        json!({
            "heard": ["aborted: true"],
            "reason": "Plugin service call completed",
            "ownAborted": false
        }),
        "the listener ran once, at the end of its call; a listener added later never runs"
    );
}

#[test]
fn the_executions_of_one_call_scope_share_one_session_view_which_lasts_until_the_session_changes() {
    let mut ws = probe_workspace();
    let (report, _) = probe_in(&ws);
    assert_eq!(report["settings"]["mood"], "calm");
    let calls = ws.calls();
    let (this_turn, next_turn, no_turn) = (
        calls.execution(Some("t1")),
        calls.execution(Some("t2")),
        calls.execution(None),
    );
    assert!(std::sync::Arc::ptr_eq(&this_turn.view, &next_turn.view));
    assert!(std::sync::Arc::ptr_eq(&this_turn.view, &no_turn.view));
    assert_ne!(this_turn.execution_id, next_turn.execution_id);
    assert_eq!(this_turn.turn_id.as_deref(), Some("t1"));
    assert!(
        std::sync::Arc::ptr_eq(&calls.execution(Some("t1")), &this_turn),
        "one execution per turn id in a scope"
    );
    let first_view = this_turn.view.id();
    drop(calls);

    // Nothing changed: the next scope reads the session again and gets the same view back (an
    // engine that ran under it need not check what its plugin sees again).
    assert_eq!(ws.calls().execution(None).view.id(), first_view);

    // The same world record with its keys in another order is another view: a handler sees an
    // object's keys in order.
    let record = json!({"id": "vell", "name": "Vell"});
    ws.session.world.world_record = Some(record);
    let named_first = ws.calls().execution(None).view.id();
    assert_ne!(named_first, first_view);
    ws.session.world.world_record = Some(json!({"name": "Vell", "id": "vell"}));
    let reordered = std::sync::Arc::clone(&ws.calls().execution(None).view);
    assert_ne!(reordered.id(), named_first, "key order counts");
    let keys: Vec<&String> = reordered.world["worldRecord"]
        .as_object()
        .expect("a record")
        .keys()
        .collect();
    assert_eq!(keys, ["name", "id"]);
    let first_view = reordered.id();

    // The author edits the session: the next scope reads it again, under a new view, and the
    // probe's engine (which saw the first view) hands its handler the new setting.
    ws.session
        .settings
        .entry("ctx-probe".into())
        .or_default()
        .insert("mood".into(), json!("tense"));
    let calls = ws.calls();
    let after = calls.execution(Some("t1"));
    assert_ne!(after.view.id(), first_view);
    assert_eq!(after.view.plugins["ctx-probe"].settings["mood"], "tense");
    drop(calls);
    let (report, _) = probe_in(&ws);
    assert_eq!(report["settings"], json!({"mood": "tense", "verbosity": 3}));
}

#[test]
fn settings_are_declared_defaults_overridden_by_the_session_and_frozen() {
    let (report, _) = probe();
    assert_eq!(report["settings"], json!({"mood": "calm", "verbosity": 3}));
    assert_eq!(report["settingsFrozen"], true);
}

#[test]
fn context_carries_session_locale_turn_and_the_providers_own_messages() {
    let (report, _) = probe();
    assert_eq!(report["sessionId"], "ctx-session");
    assert_eq!(report["locale"], "fr");
    assert_eq!(report["turnId"], "t7");
    assert_eq!(report["translated"], "Quête");
}

#[test]
fn acting_character_is_the_primary_seats_character_not_the_first_player() {
    let (report, _) = probe();
    assert_eq!(report["acting"], "bram");
    assert_eq!(report["actingBySeat"], "ayla");
}

#[test]
fn http_reaches_only_origins_in_permissions_http_and_answers_from_recorded_mocks() {
    let (report, _) = probe();
    assert_eq!(
        report["http"],
        json!({"status": 200, "body": {"sky": "clear"}})
    );
    assert!(
        report["refused"].as_str().is_some_and(
            |m| m.contains("https://evil.example.org") && m.contains("permissions.http")
        )
    );
    assert!(
        report["covelHttpRefused"]
            .as_str()
            .is_some_and(|m| m.contains("not listed"))
    );
}

#[test]
fn ctx_world_carries_the_character_schema_the_dimension_snapshot_characters_and_seats() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample"),
        dir.path(),
    );
    let plugin = dir.path().join("world-probe");
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(
        plugin.join("PLUGIN.md"),
        "---\nid: world-probe\nkind: plugin\ndescription: Reports ctx.world.\ncontributes:\n  extensions:\n    - { point: prompt.segment@1, id: world }\n---\n",
    )
    .expect("manifest");
    std::fs::write(
        plugin.join("server/index.js"),
        "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"world\", {\n    handler: (_input, ctx) => [{ id: \"world\", content: JSON.stringify(ctx.world), position: \"system\", audience: \"all\", volatility: \"turn\" }],\n  });\n}\n",
    )
    .expect("entry");
    let ws = Workspace::open(
        dir.path(),
        Some(&dir.path().join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let result = ws.call(
        PointId::PromptSegment,
        json!({"turnId": "t3", "playerMessage": "x"}),
        None,
        Some("t3".into()),
    );
    let segment = result
        .result
        .as_array()
        .and_then(|a| a.iter().find(|s| s["providerPluginId"] == "world-probe"))
        .expect("the probe answered");
    let world: Value =
        serde_json::from_str(segment["content"].as_str().expect("text")).expect("JSON");

    let keys: BTreeSet<&str> = world
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "worldRecord",
            "characterSchema",
            "characters",
            "dimensions",
            "seats",
            "dimensionProviderPluginId"
        ])
    );
    assert_eq!(
        world["characterSchema"],
        json!({"version": 1, "types": ["npc", "companion"], "attributes": [{"id": "courage", "name": "Courage", "type": "number", "min": 0, "max": 10, "category": "stats"}]}),
        "the session's character schema as written"
    );
    // The snapshot from the provider's committed `_dimensions` record (value 4, version 2),
    // never the world's initial value 3, and without initialValue or updateRule.
    assert_eq!(
        world["dimensions"],
        json!({"trust": {"name": "Trust", "schema": {"type": "integer", "minimum": 0, "maximum": 10}, "value": 4, "version": 2}})
    );
    assert_eq!(world["dimensionProviderPluginId"], "world-state");
    let characters: Vec<&str> = world["characters"]
        .as_array()
        .expect("characters")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(characters, ["mira", "oren", "tavi"]);
    assert_eq!(world["characters"][0]["fields"], json!({"courage": 6}));
    assert_eq!(
        world["seats"],
        json!([{"id": "seat-1", "characterId": "mira", "primary": true}])
    );
    assert_eq!(world["worldRecord"]["name"], "Vell");
}

#[test]
fn plugin_code_has_no_fetch_process_require_or_quickjs_std_and_os() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("sandbox-probe");
    std::fs::create_dir_all(plugin.join("server")).expect("mkdir");
    std::fs::write(
        plugin.join("PLUGIN.md"),
        "---\nid: sandbox-probe\nkind: plugin\ndescription: Looks for ways out.\ncontributes:\n  extensions:\n    - { point: prompt.segment@1, id: probe }\n---\n",
    )
    .expect("manifest");
    std::fs::write(
        plugin.join("server/index.js"),
        r#"const tryImport = (name) => import(name).then(() => "imported", (e) => `refused: ${e.message}`);
export default function (covel) {
  covel.provideExtension("prompt.segment@1", "probe", {
    handler: async () => {
      const report = {};
      for (const name of ["fetch", "process", "require", "XMLHttpRequest", "WebSocket", "std", "os", "scriptArgs", "Deno", "Bun"]) {
        report[name] = typeof globalThis[name];
      }
      for (const name of ["std", "os", "qjs:std", "qjs:os", "node:fs", "node:child_process", "node:net"]) {
        report[`import ${name}`] = await tryImport(name);
      }
      return [{ id: "probe", content: JSON.stringify(report), position: "system", audience: "all", volatility: "turn" }];
    },
  });
}
"#,
    )
    .expect("entry");
    let plugins = covel_js::load_folder(dir.path(), &Limits::default()).expect("loads");
    assert!(plugins[0].ok(), "{:?}", plugins[0].diagnostics);
    let result = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t1", "playerMessage": "x"}),
    );
    let report: Value = serde_json::from_str(
        result.result[0]["content"]
            .as_str()
            .unwrap_or_else(|| panic!("{:?}", result.calls)),
    )
    .expect("JSON");
    for name in [
        "fetch",
        "process",
        "require",
        "XMLHttpRequest",
        "WebSocket",
        "std",
        "os",
        "scriptArgs",
        "Deno",
        "Bun",
    ] {
        assert_eq!(
            report[name], "undefined",
            "`{name}` is reachable from plugin code"
        );
    }
    for name in [
        "std",
        "os",
        "qjs:std",
        "qjs:os",
        "node:fs",
        "node:child_process",
        "node:net",
    ] {
        let answer = report[format!("import {name}")]
            .as_str()
            .unwrap_or_default();
        assert!(
            answer.starts_with("refused"),
            "`import(\"{name}\")`: {answer}"
        );
    }
}

// ---- Helper functions in the public SDK -------------------------------------------------------

#[test]
fn sdk_rust_and_javascript_agree_on_the_shared_vectors() {
    let vectors: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("sdk/sdk-vectors/vectors.json")).expect("vectors"),
    )
    .expect("json");
    let plugins = load("sdk");
    let result = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
    );
    let js: Value =
        serde_json::from_str(result.result[0]["content"].as_str().expect("content")).expect("json");

    for (i, v) in vectors["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .enumerate()
    {
        let text = v["text"].as_str().expect("text");
        assert_eq!(
            sdk::estimate_tokens(text),
            v["tokens"].as_u64().expect("n"),
            "rust tokens of {text:?}"
        );
        assert_eq!(js["tokens"][i], v["tokens"], "js tokens of {text:?}");
    }
    for (i, v) in vectors["i18n"].as_array().expect("i18n").iter().enumerate() {
        let locale = v["locale"].as_str().expect("locale");
        assert_eq!(
            sdk::resolve_i18n_text(&v["text"], locale),
            v["expected"].as_str().expect("expected"),
            "rust i18n #{i}"
        );
        assert_eq!(js["i18n"][i], v["expected"], "js i18n #{i}");
    }
    for (i, v) in vectors["acting"]
        .as_array()
        .expect("acting")
        .iter()
        .enumerate()
    {
        let list = |k: &str| v[k].as_array().cloned().unwrap_or_default();
        let characters = list("characters");
        let rust = sdk::acting_character_of(&list("actions"), &characters, &list("seats"))
            .and_then(|c| c.get("id"))
            .cloned();
        assert_eq!(
            rust.unwrap_or(Value::Null),
            v["expected"],
            "rust acting: {}",
            v["name"]
        );
        assert_eq!(js["acting"][i], v["expected"], "js acting: {}", v["name"]);
    }
}

/// The locale rule is one rule: every vector of `locale-vectors.json` gives the expected answer
/// in Rust (`covel_kernel::locale`) and in the JavaScript SDK, and the two agree where the file
/// states no answer (instruction variant candidates). The UI's port checks the same file.
#[test]
fn locale_rule_is_the_same_in_rust_and_javascript_on_the_locale_vectors() {
    let text = std::fs::read_to_string(fixture("sdk/locale-vectors.json")).expect("locale vectors");
    let vectors: Value = serde_json::from_str(&text).expect("json");
    let plugins = load("sdk");
    // The file lies outside the plugin's root, so the plugin gets its text as the message.
    let result = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": text}),
    );
    let js: Value =
        serde_json::from_str(result.result[0]["content"].as_str().expect("content")).expect("json");
    let js = &js["locale"];
    let each = |kind: &str| {
        vectors[kind]
            .as_array()
            .unwrap_or_else(|| panic!("{kind} vectors"))
            .iter()
            .enumerate()
    };
    let locale = |v: &Value| v["locale"].as_str().expect("locale").to_string();

    assert_eq!(js["defaultLocale"], sdk::DEFAULT_LOCALE);
    for (i, v) in each("canonical") {
        let rust = sdk::canonicalize_locale(&locale(v)).map_or(Value::Null, Value::from);
        assert_eq!(rust, v["expected"], "rust canonical #{i} {v}");
        assert_eq!(js["canonical"][i], v["expected"], "js canonical #{i} {v}");
    }
    for (i, v) in each("lookup") {
        assert_eq!(
            json!(sdk::locale_lookup_candidates(&locale(v))),
            v["expected"],
            "rust lookup #{i} {v}"
        );
        assert_eq!(js["lookup"][i], v["expected"], "js lookup #{i} {v}");
    }
    for (i, v) in each("i18n") {
        assert_eq!(
            sdk::resolve_i18n_text(&v["text"], &locale(v)),
            v["expected"].as_str().expect("text"),
            "rust i18n: {}",
            v["name"]
        );
        assert_eq!(js["i18n"][i], v["expected"], "js i18n: {}", v["name"]);
        assert_eq!(
            js["deep"][i], v["expected"],
            "js resolveI18nDeep of an x-i18n wrapper: {}",
            v["name"]
        );
    }
    for (i, v) in each("defaultLocale") {
        assert_eq!(
            json!(sdk::is_default_locale(&locale(v))),
            v["expected"],
            "rust default locale #{i} {v}"
        );
        assert_eq!(
            js["isDefault"][i], v["expected"],
            "js default locale #{i} {v}"
        );
    }
    for (i, v) in each("instruction") {
        let l = locale(v);
        assert_eq!(
            sdk::instruction_locale_for(&l, None),
            v["expected"].as_str().expect("expected"),
            "rust instruction #{i} {v}"
        );
        assert_eq!(
            js["instruction"][i], v["expected"],
            "js instruction #{i} {v}"
        );
        assert_eq!(
            json!(sdk::instruction_variant_candidates(&l, None)),
            js["variantCandidates"][i],
            "variant candidates of {l}"
        );
        assert_eq!(
            json!(sdk::is_instruction_variant_locale(&l)),
            js["isVariant"][i],
            "variant locale {l}"
        );
        let reads = v["expected"] == "zh";
        assert_eq!(
            sdk::reads_instruction_variant(&l),
            reads,
            "{l} reads PLUGIN.zh.md"
        );
        assert_eq!(
            covel_kernel::package::reads_zh_variant(&l),
            reads,
            "the package reads the variant by the same rule: {l}"
        );
    }
    for (i, v) in each("pick") {
        assert_eq!(
            sdk::pick_locale_text(&locale(v), "zh", "en"),
            v["expected"].as_str().expect("expected"),
            "rust pick #{i} {v}"
        );
        assert_eq!(js["pick"][i], v["expected"], "js pick #{i} {v}");
    }
}

#[test]
fn sdk_sub_entries_and_helpers_behave_as_documented() {
    let plugins = load("sdk");
    let result = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
    );
    let js: Value =
        serde_json::from_str(result.result[0]["content"].as_str().expect("content")).expect("json");
    assert_eq!(js["prompt"]["en"], "Hello, traveller.\n");
    assert_eq!(
        js["prompt"]["zh"], "你好，旅人。\n",
        "a Chinese locale reads <name>.zh.md"
    );
    assert!(
        js["prompt"]["missing"]
            .as_str()
            .is_some_and(|m| m.contains("not found"))
    );
    assert!(
        js["escape"]
            .as_str()
            .is_some_and(|m| m.starts_with("error")),
        "the prompt loader stays inside the plugin root"
    );
    assert_eq!(
        js["summary"], 16,
        "appendSummaryEntries keeps at most 16 entries"
    );
    assert_eq!(js["deep"], json!({"title": "地图", "n": 1}));
    assert_eq!(
        js["fields"],
        json!(["field courage is above 10", "field name must be string"])
    );
    assert_eq!(js["dimensionIds"], json!([true, false, false]));
    // Upstream's shape: `[{path, message}]`, with zod-like messages.
    assert_eq!(
        js["dimensionValue"],
        json!([{"path": [], "message": "Minimum is 0"}])
    );
}

#[test]
fn reading_plugin_data_in_the_old_row_shape_is_explained_in_the_trace() {
    let ws = probe_workspace();
    let result = ws.call(
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
        None,
        None,
    );
    let call = result
        .calls
        .iter()
        .find(|c| &*c.plugin_id == "row-reader")
        .expect("called");
    // A note of the studio's, never mixed into what the handler printed.
    assert!(
        call.notes
            .iter()
            .any(|l| l.contains("returns the stored value itself")),
        "{:?}",
        call.notes
    );
    assert!(
        call.logs
            .iter()
            .all(|l| !l.contains("returns the stored value itself"))
    );
    let segment = result
        .result
        .as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == "old-shape"))
        .expect("segment");
    assert_eq!(
        segment["content"], "empty",
        "`.value` of the value is undefined, as in Covel"
    );
}

#[test]
fn sdk_helpers_real_plugins_import_exist() {
    let plugins = load("sdk");
    let result = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t", "playerMessage": ""}),
    );
    let js: Value =
        serde_json::from_str(result.result[0]["content"].as_str().expect("content")).expect("json");
    assert_eq!(js["picked"], json!(["中", "en"]));
    assert_eq!(
        js["mentioned"],
        json!(["rin"]),
        "whole words only: `ring` is not in `spring`"
    );
}
