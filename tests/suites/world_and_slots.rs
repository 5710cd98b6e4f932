//! World context, UI slots, stage slots and the image flow (seed page, "Where the other
//! extension points are described" and "Session world context"), rule by rule.

use covel_js::Limits;
use covel_kernel::contract::{PointId, SlotId};
use covel_kernel::runner::Outcome;
use covel_studio::Workspace;
use covel_studio::slots::{SlotHost, Trigger};
use covel_tests::*;
use serde_json::{Value, json};
use std::path::Path;

fn world(session: &str) -> Workspace {
    Workspace::open(
        &fixture("world/plugins"),
        Some(&fixture("world/sessions").join(format!("{session}.session.yaml"))),
        &Limits::default(),
    )
    .expect("opens")
}

fn demo() -> Workspace {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample");
    Workspace::open(
        &root,
        Some(&root.join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("demo opens")
}

fn slots_fixture() -> Vec<covel_js::LoadedPlugin> {
    load("slots/plugins")
}

// ---- session.world-context@1 --------------------------------------------------------------------

#[test]
fn the_host_stamps_dimension_provider_plugin_id_over_a_forged_one() {
    let view = world("forged").world_context();
    assert!(view.error.is_none(), "{:?}", view.error);
    assert_eq!(view.snapshot["dimensionProviderPluginId"], "forger");
    assert_eq!(view.provided_by.as_deref(), Some("forger"));
    assert_eq!(
        view.snapshot["dimensions"]["trust"]["value"], 2,
        "the committed record, not the author's initial value 7"
    );
}

#[test]
fn recovery_runtimes_must_belong_to_the_providing_plugin() {
    let view = world("foreign-recovery").world_context();
    let error = view.error.expect("the call fails");
    assert!(
        error.contains("forger/edit") && error.contains("borrower"),
        "{error}"
    );
    assert_eq!(view.calls[0].outcome, Outcome::InvalidOutput);
}

#[test]
fn a_world_with_dimensions_needs_exactly_one_dimension_provider() {
    let none = world("no-provider").world_context();
    assert!(
        none.error
            .as_deref()
            .is_some_and(|e| e.contains("none is enabled")),
        "{:?}",
        none.error
    );
    assert_eq!(
        none.snapshot,
        Value::Null,
        "never the author's initial values"
    );
    let two = world("two-providers").world_context();
    assert!(
        two.error
            .as_deref()
            .is_some_and(|e| e.contains("2 are enabled")),
        "{:?}",
        two.error
    );
}

#[test]
fn a_failing_world_context_provider_fails_the_turn_visibly() {
    let view = world("throws").world_context();
    let error = view.error.expect("fail-turn");
    assert!(error.contains("dimension store unreachable"), "{error}");
    assert_eq!(view.calls[0].outcome, Outcome::Error);
}

// ---- ui.slot@1 ------------------------------------------------------------------------------------

fn slot_call(
    plugins: &[covel_js::LoadedPlugin],
    slot: SlotId,
    only: &[&str],
) -> covel_kernel::runner::RunResult {
    let picked: Vec<_> = plugins
        .iter()
        .filter(|p| only.contains(&p.name.as_str()))
        .flat_map(|p| p.providers())
        .cloned()
        .collect();
    covel_kernel::runner::run(
        PointId::UiSlot,
        json!({"slot": slot.as_str(), "previous": null, "events": []}),
        &picked,
        &covel_kernel::context::ExecutionContext::empty(),
        &Default::default(),
    )
}

#[test]
fn summary_providers_append_and_more_than_16_entries_is_an_invalid_value() {
    let plugins = slots_fixture();
    let result = slot_call(
        &plugins,
        SlotId::SessionSummary,
        &["sum-a", "sum-b", "sum-c"],
    );
    let outcomes: Vec<Outcome> = result.calls.iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Success, Outcome::InvalidOutput, Outcome::Success]
    );
    let ids: Vec<&str> = result.result["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 16, "appendSummaryEntries caps at 16");
    assert_eq!(
        (ids[0], ids[9], ids[10]),
        ("a0", "a9", "c0"),
        "the invalid provider changed nothing"
    );
}

#[test]
fn returning_previous_changes_nothing_and_null_clears() {
    let plugins = slots_fixture();
    let kept = slot_call(&plugins, SlotId::StageMusic, &["music-set", "music-keep"]);
    assert_eq!(kept.result, json!({"trackId": "theme", "loop": true}));
    let cleared = slot_call(
        &plugins,
        SlotId::StageMusic,
        &["music-set", "music-keep", "music-clear"],
    );
    assert_eq!(cleared.result, Value::Null);
}

#[test]
fn only_providers_of_the_selected_slot_run() {
    let plugins = slots_fixture();
    let result = slot_call(
        &plugins,
        SlotId::StageMusic,
        &["music-set", "sum-a", "watcher-a"],
    );
    let ran: Vec<&str> = result.calls.iter().map(|c| &*c.plugin_id).collect();
    assert_eq!(ran, ["music-set"]);
}

#[test]
fn character_visual_collection_is_split_into_one_value_per_character() {
    let ws = demo();
    let views: Vec<_> = ws
        .slots()
        .into_iter()
        .filter(|v| v.slot == SlotId::CharacterVisual)
        .collect();
    let keys: Vec<Option<&str>> = views.iter().map(|v| v.key.as_deref()).collect();
    assert_eq!(keys, [Some("oren"), Some("tavi")]);
    assert_eq!(views[0].value["characterId"], "oren");
}

#[test]
fn every_demo_slot_has_a_value_and_a_revision_that_follows_the_value() {
    let ws = demo();
    let views = ws.slots();
    for view in &views {
        assert_ne!(
            view.value,
            Value::Null,
            "{} has no value in the demo",
            view.slot
        );
        assert!(
            view.revision.len() == 64
                && view
                    .revision
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{}",
            view.revision
        );
    }
    // The revision is the SHA-256 of the value's compact JSON. Expected digest computed outside
    // the studio: printf '%s' '{"sceneId":"harbour","name":"The Harbour","variant":"night"}' | sha256sum
    let backdrop = views
        .iter()
        .find(|v| v.slot == SlotId::StageBackdrop)
        .expect("backdrop");
    assert_eq!(
        serde_json::to_string(&backdrop.value).expect("json"),
        r#"{"sceneId":"harbour","name":"The Harbour","variant":"night"}"#
    );
    assert_eq!(
        backdrop.revision,
        "c2a83eb884b753cf74bd3ac48363a94a5df71534e3916a19d5902331c345c53b"
    );
    // Different values, different revisions; the same values again, the same revisions.
    let revisions: Vec<&str> = views.iter().map(|v| v.revision.as_str()).collect();
    let distinct: std::collections::BTreeSet<&str> = revisions.iter().copied().collect();
    assert_eq!(distinct.len(), views.len(), "{revisions:?}");
    let again: Vec<String> = demo().slots().into_iter().map(|v| v.revision).collect();
    assert_eq!(again, revisions);
}

// ---- Triggers --------------------------------------------------------------------------------

#[test]
fn consumers_hear_of_a_value_only_when_its_revision_changes() {
    let ws = demo();
    let mut host = SlotHost::default();
    let first = ws.apply_slots(&mut host, &Trigger::All);
    assert_eq!(first.len(), 7, "six slots, two character visuals");
    assert!(
        ws.apply_slots(&mut host, &Trigger::All).is_empty(),
        "same values, no news"
    );
}

#[test]
fn a_plugin_data_write_reprojects_only_slots_whose_provider_owns_and_watches_the_namespace() {
    let mut ws = demo();
    let mut host = SlotHost::default();
    ws.apply_slots(&mut host, &Trigger::All);
    let watched = Trigger::PluginData {
        plugin_id: "scene-stage".into(),
        namespaces: vec!["stage".into()],
    };
    assert_eq!(
        host.affected(&ws.active_providers(), &watched)
            .into_iter()
            .collect::<Vec<_>>(),
        [SlotId::StageBackdrop]
    );
    for row in ws
        .session
        .plugin_data
        .iter_mut()
        .filter(|r| r.plugin_id == "scene-stage" && r.namespace == "stage")
    {
        row.value = json!({"sceneId": "tower", "name": "The Bell Tower"});
    }
    let changes = ws.apply_slots(&mut host, &watched);
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].value["name"], "The Bell Tower");
    let foreign = Trigger::PluginData {
        plugin_id: "quest-log".into(),
        namespaces: vec!["stage".into()],
    };
    assert!(
        host.affected(&ws.active_providers(), &foreign).is_empty(),
        "the namespace belongs to another plugin"
    );
}

#[test]
fn a_watch_namespace_written_by_another_plugin_reprojects_nothing() {
    let ws = Workspace::open(&fixture("slots/plugins"), None, &Limits::default()).expect("opens");
    let host = SlotHost::default();
    let trigger = Trigger::PluginData {
        plugin_id: "watcher-b".into(),
        namespaces: vec!["shared".into()],
    };
    assert!(host.affected(&ws.active_providers(), &trigger).is_empty());
    let own = Trigger::PluginData {
        plugin_id: "watcher-a".into(),
        namespaces: vec!["shared".into()],
    };
    assert_eq!(
        host.affected(&ws.active_providers(), &own)
            .into_iter()
            .collect::<Vec<_>>(),
        [SlotId::StageBackdrop]
    );
}

#[test]
fn previewed_events_reproject_slots_that_list_the_topic_and_end_with_the_turn() {
    let ws = demo();
    let mut host = SlotHost::default();
    ws.apply_slots(&mut host, &Trigger::All);
    let event = Trigger::EventPreviewed {
        turn_id: "turn-3".into(),
        topic: "scene.set".into(),
        data: json!({"sceneId": "tower", "name": "The Bell Tower"}),
        plugin_id: None,
    };
    let previews = ws.apply_slots(&mut host, &event);
    assert_eq!(previews.len(), 1);
    assert_eq!(previews[0].slot, SlotId::StageBackdrop);
    assert_eq!(previews[0].preview_turn.as_deref(), Some("turn-3"));
    assert_eq!(previews[0].value["name"], "The Bell Tower");
    let committed = host
        .values()
        .into_iter()
        .find(|v| v.slot == SlotId::StageBackdrop)
        .expect("committed");
    assert_eq!(
        committed.value["name"], "The Harbour",
        "previews never touch the committed value"
    );
    assert_eq!(host.events("turn-3").len(), 1);
    ws.apply_slots(
        &mut host,
        &Trigger::TurnEnded {
            turn_id: "turn-3".into(),
        },
    );
    assert!(
        host.events("turn-3").is_empty(),
        "previews are dropped when the turn ends"
    );
}

#[test]
fn enabling_a_plugin_or_changing_a_character_reprojects_every_slot() {
    let ws = demo();
    let host = SlotHost::default();
    for trigger in [Trigger::PluginsChanged, Trigger::CharacterChanged] {
        assert_eq!(
            host.affected(&ws.active_providers(), &trigger).len(),
            SlotId::ALL.len()
        );
    }
}

// ---- media.image-flow@1 -----------------------------------------------------------------------

#[test]
fn the_image_flow_is_stamped_with_its_provider_and_shown_in_the_preview() {
    let ws = demo();
    let preview = ws.preview(&covel_studio::RuntimeTarget::Story);
    assert_eq!(preview.image_flow.flow["pluginId"], "image-flow");
    assert_eq!(
        preview.image_flow.flow["assetRuntimeIds"],
        json!(["image-flow/store-asset"])
    );
    assert_eq!(
        preview.world_context.provided_by.as_deref(),
        Some("world-state")
    );
    assert!(preview.world_context.error.is_none());
}

/// `character.visual@1` is split into one view per character, each carrying the slot's one
/// run: the preview's `calls` list that run once (it once listed it never when the slot was
/// keyed, so the providers that filled it were missing from the calls).
#[test]
fn keyed_slot_chains_appear_once_in_the_preview_calls() {
    let ws = demo();
    let preview = ws.preview(&covel_studio::RuntimeTarget::Story);
    let keyed: Vec<_> = preview
        .slots
        .iter()
        .filter(|s| s.slot == SlotId::CharacterVisual)
        .collect();
    assert!(
        keyed.len() > 1 && keyed.iter().all(|s| s.key.is_some()),
        "the demo splits character.visual@1 by character: {keyed:?}"
    );
    let in_calls: Vec<_> = preview
        .calls
        .iter()
        .filter(|c| c.slot == Some(SlotId::CharacterVisual))
        .collect();
    assert_eq!(in_calls.len(), keyed[0].chain.len(), "{in_calls:?}");
    assert!(!in_calls.is_empty());
}
