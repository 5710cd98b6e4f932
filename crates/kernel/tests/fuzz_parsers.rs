//! Property tests (time-boxed fuzzing) of the parsers that read untrusted files: PLUGIN.md,
//! RUNTIME.md and test sessions never panic, whatever the text. `PROPTEST_CASES` sets the
//! number of cases (scripts/test runs more than the default).

use covel_kernel::manifest::{parse_plugin_md, parse_runtime_md};
use covel_kernel::session::parse_session;
use proptest::prelude::*;
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

proptest! {
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
