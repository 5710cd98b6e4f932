//! Prompt assembly (seed page, "The two fields of the prompt segment"): one test per row of the
//! volatility table, the order rule with ties across plugins, depth segments, static segments,
//! the audience filter, cache boundaries and the request bodies, and cache stability.

use covel_js::Limits;
use covel_kernel::prompt::{BlockKind, Origin, Placement};
use covel_studio::{Preview, RuntimeTarget, Workspace};
use covel_tests::fixture;
use serde_json::{Value, json};

fn preview_of(session: &str, target: RuntimeTarget) -> Preview {
    let ws = Workspace::open(&fixture("prompt/plugins"), Some(&fixture("prompt").join(session)), &Limits::default()).expect("opens");
    ws.preview(&target)
}

fn story() -> Preview {
    preview_of("session.yaml", RuntimeTarget::Story)
}

fn placement(p: &Preview, id: &str) -> Placement {
    p.segments.iter().find(|s| s.id == id).unwrap_or_else(|| panic!("no segment {id}")).placement
}

fn block(p: &Preview, kind: BlockKind) -> &covel_kernel::prompt::Block {
    p.prompt.system.blocks.iter().find(|b| b.kind == kind).unwrap_or_else(|| panic!("no {kind:?} block"))
}

fn message_index(p: &Preview, segment: &str) -> usize {
    p.prompt
        .messages
        .iter()
        .position(|m| matches!(&m.origin, Origin::Segment { segment: s, .. } if s == segment))
        .unwrap_or_else(|| panic!("no message for {segment}"))
}

fn player_input_index(p: &Preview) -> usize {
    p.prompt.messages.iter().position(|m| m.origin == Origin::PlayerInput).expect("player input")
}

// ---- The volatility table ---------------------------------------------------------------------

#[test]
fn system_stable_and_session_go_into_the_stable_part_of_the_system_prompt() {
    let p = story();
    for id in ["system-stable", "system-session"] {
        assert_eq!(placement(&p, id), Placement::SystemStable);
        assert!(block(&p, BlockKind::StableSegments).segments.contains(&format!("placements/{id}")));
    }
    assert!(block(&p, BlockKind::StableSegments).cache_boundary);
}

#[test]
fn system_turn_goes_into_the_turn_context_after_the_history_with_the_system_role() {
    let p = story();
    assert_eq!(placement(&p, "system-turn"), Placement::TurnContext);
    let at = p.prompt.messages.iter().position(|m| matches!(m.origin, Origin::TurnContext { .. })).expect("turn context");
    assert_eq!(p.prompt.messages[at].role, "system");
    assert_eq!(at + 1, player_input_index(&p), "right before the player's input");
    let last_history = p.prompt.messages.iter().rposition(|m| matches!(m.origin, Origin::History { .. })).expect("history");
    assert!(at > last_history, "after the history");
    assert!(!p.prompt.system.blocks.iter().any(|b| b.text.contains("[system-turn]")), "never in the system prompt");
}

#[test]
fn system_role_pre_history_stays_in_the_system_prompt_with_turn_after_the_last_boundary() {
    let p = story();
    assert_eq!(placement(&p, "pre-system-stable"), Placement::SystemStable);
    assert_eq!(placement(&p, "pre-default-role-session"), Placement::SystemStable, "no role means system");
    assert_eq!(placement(&p, "pre-system-turn"), Placement::SystemTurnTail);
    let blocks = &p.prompt.system.blocks;
    let tail = blocks.iter().position(|b| b.kind == BlockKind::TurnTail).expect("tail");
    let last_boundary = blocks.iter().rposition(|b| b.cache_boundary).expect("boundary");
    assert!(tail > last_boundary && !blocks[tail].cache_boundary);
}

#[test]
fn non_system_pre_history_post_history_and_depth_keep_message_positions_and_ignore_volatility() {
    let p = story();
    for (id, expected) in [
        ("pre-user-turn", Placement::PreHistoryMessage),
        ("pre-assistant-stable", Placement::PreHistoryMessage),
        ("post-stable", Placement::PostHistoryMessage),
        ("depth-1", Placement::Depth(1)),
    ] {
        assert_eq!(placement(&p, id), expected, "{id}");
        let row = p.segments.iter().find(|s| s.id == id).expect("row");
        assert!(!row.volatility_applies, "{id}: volatility is ignored");
    }
    let first_history = p.prompt.messages.iter().position(|m| matches!(m.origin, Origin::Summary { .. } | Origin::History { .. })).expect("history");
    assert!(message_index(&p, "pre-user-turn") < first_history);
    assert_eq!(message_index(&p, "post-stable"), p.prompt.messages.len() - 1, "post-history is last");
}

#[test]
fn depth_counts_conversation_messages_back_from_the_newest() {
    let p = story();
    let input = player_input_index(&p);
    assert_eq!(message_index(&p, "depth-1"), input - 2, "before the newest message, ahead of the turn context");
    assert_eq!(message_index(&p, "depth-0"), input + 1, "depth 0 follows the newest message");
    assert_eq!(message_index(&p, "depth-99"), 0, "deeper than the conversation: at the start");
}

// ---- Order --------------------------------------------------------------------------------------

#[test]
fn segments_sort_by_volatility_then_order_then_plugin_id_then_id() {
    let p = story();
    let stable = &block(&p, BlockKind::StableSegments).segments;
    let expected = [
        "zzz-ties/first", // order -1 beats plugin id
        "aaa-ties/tie",
        "placements/pre-system-stable",
        "placements/system-stable",
        "zzz-ties/tie",
        "audience/for-all", // session after every stable one
    ];
    assert_eq!(&stable[..expected.len()], expected);
}

#[test]
fn equal_order_across_plugins_is_flagged_as_broken_only_by_plugin_id() {
    let p = story();
    let row = |plugin: &str, id: &str| p.segments.iter().find(|s| s.plugin == plugin && s.id == id).expect("row");
    assert!(row("aaa-ties", "tie").tie_broken_by_plugin_id);
    assert!(row("zzz-ties", "tie").tie_broken_by_plugin_id);
    assert!(!row("zzz-ties", "first").tie_broken_by_plugin_id, "its own order placed it");
    assert_eq!(row("aaa-ties", "tie").sort_key.provider_plugin_id, "aaa-ties");
}

// ---- Audience and static segments ----------------------------------------------------------

#[test]
fn audience_filters_segments_for_the_runtime_being_previewed() {
    let included = |p: &Preview| -> Vec<String> { p.segments.iter().filter(|s| s.plugin == "audience" && s.included).map(|s| s.id.clone()).collect() };
    assert_eq!(included(&story()), ["for-all", "for-narrative-engine", "for-story"]);
    let own = preview_of("session.yaml", RuntimeTarget::Plugin("audience".into()));
    assert_eq!(included(&own), ["for-all", "for-other", "for-self", "static-rule"]);
    let contract = preview_of("session.yaml", RuntimeTarget::Contract("other@1".into()));
    assert_eq!(included(&contract), ["for-all", "for-other", "for-self", "static-rule"]);
    assert_eq!(block(&own, BlockKind::Body).text, "You are the audience plugin's own runtime.");
    let excluded = story().segments.into_iter().find(|s| s.id == "for-self").expect("row");
    assert!(excluded.excluded_because.as_deref().is_some_and(|w| w.contains("self")));
}

#[test]
fn static_prompt_segments_are_self_audience_session_segments_of_their_plugin() {
    let own = preview_of("session.yaml", RuntimeTarget::Plugin("audience".into()));
    let row = own.segments.iter().find(|s| s.id == "static-rule").expect("static segment");
    assert_eq!(serde_json::to_value(&row.audience).expect("json"), json!("self"));
    assert_eq!(serde_json::to_value(row.volatility).expect("json"), json!("session"));
    assert_eq!(row.placement, Placement::SystemStable);
}

// ---- History ----------------------------------------------------------------------------------

#[test]
fn summaries_reenter_as_user_messages_and_compacted_messages_leave() {
    let p = story();
    let summary = p.prompt.messages.iter().find(|m| matches!(m.origin, Origin::Summary { .. })).expect("summary");
    assert_eq!(summary.role, "user", "never system");
    assert!(summary.content.contains("&lt;first&gt;"), "summary text is escaped");
    assert!(!p.prompt.messages.iter().any(|m| matches!(&m.origin, Origin::History { id } if id == "h1" || id == "h2")));
}

// ---- Cache boundaries and requests ----------------------------------------------------------

#[test]
fn boundaries_follow_each_cacheable_block_and_anthropic_gets_at_most_four_breakpoints() {
    let p = story();
    let boundaries: Vec<BlockKind> = p.prompt.system.blocks.iter().filter(|b| b.cache_boundary).map(|b| b.kind).collect();
    assert_eq!(boundaries, [BlockKind::Preamble, BlockKind::Body, BlockKind::StableSegments]);
    let body = &p.prompt.requests.anthropic;
    let count = body.to_string().matches("cache_control").count();
    assert_eq!(count, 4, "three system boundaries and one moving breakpoint");
    let system = body["system"].as_array().expect("system blocks");
    assert!(system.last().is_some_and(|b| b.get("cache_control").is_none()), "the turn tail is never cached");
    let moving: Vec<&Value> = body["messages"].as_array().expect("messages").iter().filter(|m| m.to_string().contains("cache_control")).collect();
    assert_eq!(moving.len(), 1);
    assert!(moving[0].to_string().contains("second answer"), "on the newest history message");
    assert!(body.to_string().contains("<system-instruction>"), "system messages in the conversation travel as tagged user text");
}

#[test]
fn openai_request_has_the_boundaries_removed() {
    let p = story();
    let body = &p.prompt.requests.openai;
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(!body.to_string().contains("cache_control") && !body.to_string().contains('\u{E000}'));
    assert_eq!(body["messages"][0]["content"], p.prompt.system.blocks.iter().map(|b| b.text.as_str()).collect::<Vec<_>>().join("\n\n"));
}

#[test]
fn stable_segments_keep_the_system_prompt_identical_next_turn() {
    let p = story();
    assert!(p.cache.boundaries.iter().all(|b| b.stable), "{:?}", p.cache.boundaries);
    assert!(p.cache.lint.is_empty());
    assert!(p.cache.history_prefix_stable);
}

#[test]
fn a_clock_in_a_stable_segment_is_reported_by_the_lint_with_the_boundary_it_breaks() {
    let p = preview_of("clock.session.yaml", RuntimeTarget::Story);
    let finding = p.cache.lint.iter().find(|f| f.plugin == "clock").expect("lint finding");
    assert_eq!(finding.segment, "clock");
    assert_eq!(finding.breaks_boundary, Some(2));
    let boundary = &p.cache.boundaries[2];
    assert!(!boundary.stable);
    let diff = boundary.first_difference.as_ref().expect("difference");
    assert_eq!(diff.plugin.as_deref(), Some("clock"));
    assert_eq!(diff.segment.as_deref(), Some("clock/clock"));
    assert!(p.cache.boundaries[0].stable && p.cache.boundaries[1].stable);
}

#[test]
fn short_prefixes_warn_against_the_models_minimum_cacheable_length() {
    let p = story();
    let warning = p.cache.warnings.first().expect("warning");
    assert_eq!(warning.minimum, 1024);
    assert_eq!(warning.code, "prefix-below-minimum");
}

#[test]
fn full_preview_of_the_prompt_fixture_matches_its_snapshot() {
    let p = story();
    let mut value = serde_json::to_value(&p).expect("json");
    covel_tests::redact_timings(&mut value);
    insta::assert_json_snapshot!("prompt_fixture_preview", value);
}
