//! The window's capability stays the narrowest that works: the app's own events, and the native
//! open dialog (which returns a picked path and reads nothing), no other plugin permission.

use std::collections::BTreeSet;

#[test]
fn the_window_may_listen_to_events_and_show_the_open_dialog_only() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/default.json");
    let text = std::fs::read_to_string(&path).expect("the capability file");
    let json: serde_json::Value = serde_json::from_str(&text).expect("the capability is JSON");
    let permissions: BTreeSet<&str> = json["permissions"]
        .as_array()
        .expect("a permission list")
        .iter()
        .map(|p| p.as_str().expect("a permission name"))
        .collect();
    let expected: BTreeSet<&str> = [
        "core:event:allow-listen",
        "core:event:allow-unlisten",
        "dialog:allow-open",
    ]
    .into_iter()
    .collect();
    assert_eq!(permissions, expected);
    assert_eq!(json["windows"], serde_json::json!(["main"]));
}
