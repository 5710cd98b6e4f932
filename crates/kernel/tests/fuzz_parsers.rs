//! Property tests (time-boxed fuzzing) of the parsers that read untrusted files: PLUGIN.md,
//! RUNTIME.md and test sessions never panic, whatever the text; prompt segments read the same
//! through the kernel's direct reader as through serde. `PROPTEST_CASES` sets the number of
//! cases (scripts/test runs more than the default).

use covel_kernel::manifest::{parse_plugin_md, parse_runtime_md};
use covel_kernel::prompt::Segment;
use covel_kernel::session::parse_session;
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

/// Lines that look like manifest or session YAML, recombined at random.
fn yamlish() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("id: x".to_string()),
        Just("kind: plugin".to_string()),
        Just("contributes:".to_string()),
        Just("  extensions:".to_string()),
        Just("    - point: prompt.segment@1".to_string()),
        Just("      id: a".to_string()),
        Just("      slot: stage.dialogue@1".to_string()),
        Just("  prompt:".to_string()),
        Just("    - { id: s, content: hi, position: system }".to_string()),
        Just("history:".to_string()),
        Just("  messages:".to_string()),
        Just("    - { role: user, content: x }".to_string()),
        Just("settings: { a: { b: 1 } }".to_string()),
        Just("a: &x [*x, *x]".to_string()),
        Just("name: flat".to_string()),
        Just("pluginType: tool".to_string()),
        "[ -~]{0,40}",
        "\\PC{0,20}",
    ];
    prop::collection::vec(line, 0..24).prop_map(|lines| lines.join("\n"))
}

/// Values a segment field may hold: the names each field accepts, their look-alikes, and every
/// other JSON shape.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "system",
            "pre-history",
            "post-history",
            "all",
            "story",
            "self",
            "stable",
            "session",
            "turn",
            "user",
            "",
            "System",
            "pre_history",
        ])
        .prop_map(|s| json!(s)),
        "\\PC{0,12}".prop_map(Value::String),
        Just(Value::Null),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(1.0)),
        Just(json!(2.5)),
        any::<bool>().prop_map(|b| json!(b)),
        Just(json!({"depth": 2})),
        Just(json!({"depth": -1})),
        Just(json!({"contract": "c"})),
        Just(json!({"contract": 1})),
        Just(json!([])),
    ]
}

/// Segment-like objects: any subset of the fields (and an unknown one), each of any shape.
fn segment_like() -> impl Strategy<Value = Value> {
    let keys = [
        "id",
        "content",
        "position",
        "role",
        "audience",
        "volatility",
        "order",
        "providerPluginId",
        "extra",
    ];
    prop::collection::vec(prop::option::of(field_value()), keys.len()).prop_map(move |values| {
        let mut map = serde_json::Map::new();
        for (key, value) in keys.iter().zip(values) {
            if let Some(value) = value {
                map.insert(key.to_string(), value);
            }
        }
        Value::Object(map)
    })
}

/// The usual segment shape with its optional fields present or absent.
fn usual_segment() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["system", "pre-history", "post-history"]),
        prop::sample::select(vec!["all", "story", "self"]),
        prop::sample::select(vec!["stable", "session", "turn"]),
        prop::option::of(prop::sample::select(vec!["system", "user", "assistant"])),
        prop::option::of(any::<i64>()),
        "\\PC{0,40}",
    )
        .prop_map(|(position, audience, volatility, role, order, content)| {
            let mut segment = json!({
                "id": "s", "content": content, "position": position, "audience": audience,
                "volatility": volatility, "providerPluginId": "p",
            });
            if let Some(role) = role {
                segment["role"] = json!(role);
            }
            if let Some(order) = order {
                segment["order"] = json!(order);
            }
            segment
        })
}

proptest! {
    #[test]
    fn segments_read_the_same_as_serde_reads_them(
        value in prop_oneof![segment_like(), usual_segment()]
    ) {
        let direct = Segment::parse(&value);
        let serde = Segment::deserialize(value).ok();
        prop_assert_eq!(direct, serde);
    }

    #[test]
    fn plugin_md_never_panics(body in yamlish(), raw in "\\PC{0,200}") {
        let text = format!("---\n{body}\n---\n# body\n");
        let _ = parse_plugin_md(&text, Path::new("x/PLUGIN.md"), "x");
        let _ = parse_plugin_md(&raw, Path::new("x/PLUGIN.md"), "x");
    }

    #[test]
    fn runtime_md_never_panics(body in yamlish()) {
        let text = format!("---\n{body}\n---\n");
        let _ = parse_runtime_md(&text, Path::new("x/runtimes/r/RUNTIME.md"), "x", "r");
    }

    #[test]
    fn session_files_never_panic(body in yamlish(), raw in "\\PC{0,200}") {
        let _ = parse_session(&body, Path::new("s.session.yaml"));
        let _ = parse_session(&raw, Path::new("s.session.yaml"));
    }
}
