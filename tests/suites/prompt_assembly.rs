//! Prompt assembly (seed page, "The two fields of the prompt segment"): one test per row of the
//! volatility table, the order rule with ties across plugins, depth segments, static segments,
//! the audience filter, cache boundaries and the request bodies, and cache stability.

use covel_js::Limits;
use covel_kernel::prompt::{self, BlockKind, Origin, Place, Placement};
use covel_studio::playtest::Playtest;
use covel_studio::{Preview, RuntimeTarget, Workspace};
use covel_tests::fixture;
use serde_json::{Value, json};

fn preview_of(session: &str, target: RuntimeTarget) -> Preview {
    let ws = Workspace::open(
        &fixture("prompt/plugins"),
        Some(&fixture("prompt").join(session)),
        &Limits::default(),
    )
    .expect("opens");
    ws.preview(&target)
}

fn story() -> Preview {
    preview_of("session.yaml", RuntimeTarget::Story)
}

fn placement(p: &Preview, id: &str) -> Placement {
    p.segments
        .iter()
        .find(|s| &*s.id == id)
        .unwrap_or_else(|| panic!("no segment {id}"))
        .placement
}

fn block(p: &Preview, kind: BlockKind) -> &covel_kernel::prompt::Block {
    p.prompt
        .system
        .blocks
        .iter()
        .find(|b| b.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} block"))
}

fn message_index(p: &Preview, segment: &str) -> usize {
    p.prompt
        .messages
        .iter()
        .position(|m| matches!(&m.origin, Origin::Segment { segment: s, .. } if s == segment))
        .unwrap_or_else(|| panic!("no message for {segment}"))
}

fn player_input_index(p: &Preview) -> usize {
    p.prompt
        .messages
        .iter()
        .position(|m| m.origin == Origin::PlayerInput)
        .expect("player input")
}

// ---- The volatility table ---------------------------------------------------------------------

#[test]
fn system_stable_and_session_go_into_the_stable_part_of_the_system_prompt() {
    let p = story();
    for id in ["system-stable", "system-session"] {
        assert_eq!(placement(&p, id), Placement::SystemStable);
        assert!(
            block(&p, BlockKind::StableSegments)
                .segments
                .contains(&format!("placements/{id}"))
        );
    }
    assert!(block(&p, BlockKind::StableSegments).cache_boundary);
}

#[test]
fn system_turn_goes_into_the_turn_context_after_the_history_with_the_system_role() {
    let p = story();
    assert_eq!(placement(&p, "system-turn"), Placement::TurnContext);
    let at = p
        .prompt
        .messages
        .iter()
        .position(|m| matches!(m.origin, Origin::TurnContext { .. }))
        .expect("turn context");
    assert_eq!(p.prompt.messages[at].role, "system");
    assert_eq!(
        at + 1,
        player_input_index(&p),
        "right before the player's input"
    );
    let last_history = p
        .prompt
        .messages
        .iter()
        .rposition(|m| matches!(m.origin, Origin::History { .. }))
        .expect("history");
    assert!(at > last_history, "after the history");
    assert!(
        !p.prompt
            .system
            .blocks
            .iter()
            .any(|b| b.text.contains("[system-turn]")),
        "never in the system prompt"
    );
}

#[test]
fn system_role_pre_history_stays_in_the_system_prompt_with_turn_after_the_last_boundary() {
    let p = story();
    assert_eq!(placement(&p, "pre-system-stable"), Placement::SystemStable);
    assert_eq!(
        placement(&p, "pre-default-role-session"),
        Placement::SystemStable,
        "no role means system"
    );
    assert_eq!(placement(&p, "pre-system-turn"), Placement::SystemTurnTail);
    let blocks = &p.prompt.system.blocks;
    let tail = blocks
        .iter()
        .position(|b| b.kind == BlockKind::TurnTail)
        .expect("tail");
    let last_boundary = blocks
        .iter()
        .rposition(|b| b.cache_boundary)
        .expect("boundary");
    assert!(tail > last_boundary && !blocks[tail].cache_boundary);
}

#[test]
fn non_system_pre_history_post_history_and_depth_keep_message_positions() {
    let p = story();
    for (id, expected) in [
        ("pre-user-turn", Placement::PreHistoryMessage),
        ("pre-assistant-stable", Placement::PreHistoryMessage),
        ("post-stable", Placement::PostHistoryMessage),
        ("depth-1", Placement::Depth(1)),
    ] {
        assert_eq!(placement(&p, id), expected, "{id}");
    }
    let first_history = p
        .prompt
        .messages
        .iter()
        .position(|m| matches!(m.origin, Origin::Summary { .. } | Origin::History { .. }))
        .expect("history");
    assert!(message_index(&p, "pre-user-turn") < first_history);
    assert_eq!(
        message_index(&p, "post-stable"),
        p.prompt.messages.len() - 1,
        "post-history is last"
    );
}

/// Assembles one segment (plus the fixture's history) with the given volatility; returns the
/// request as the provider receives it.
fn assembled_with(segment: Value, volatility: &str) -> Value {
    let mut segment = segment;
    segment["volatility"] = json!(volatility);
    segment["audience"] = json!("all");
    segment["providerPluginId"] = json!("probe");
    let history = vec![
        json!({"id": "u1", "role": "user", "content": "first"}),
        json!({"id": "a1", "role": "assistant", "content": "second"}),
    ];
    let assembly = prompt::assemble(prompt::AssemblyInput {
        segments: prompt::Segment::parse(&segment).into_iter().collect(),
        runtime: &prompt::RuntimeView::story(),
        preamble: prompt::FRAMEWORK_PREAMBLE,
        body: "Narrate.",
        lore: None,
        history: &history,
        summaries: &[],
        player_message: "third",
    });
    prompt::anthropic_request(
        &assembly,
        &prompt::RequestOptions {
            model: "m".into(),
            max_tokens: 10,
            cache_ttl: None,
            prompt_cache_key: None,
        },
    )
}

#[test]
fn non_system_pre_history_post_history_and_depth_ignore_volatility() {
    for segment in [
        json!({"id": "pre-user", "content": "[pre-user]", "position": "pre-history", "role": "user"}),
        json!({"id": "pre-assistant", "content": "[pre-assistant]", "position": "pre-history", "role": "assistant"}),
        json!({"id": "post", "content": "[post]", "position": "post-history"}),
        json!({"id": "post-user", "content": "[post-user]", "position": "post-history", "role": "user"}),
        json!({"id": "depth", "content": "[depth]", "position": {"depth": 1}, "role": "user"}),
        json!({"id": "depth-system", "content": "[depth-system]", "position": {"depth": 2}}),
    ] {
        let stable = assembled_with(segment.clone(), "stable");
        for volatility in ["session", "turn"] {
            assert_eq!(
                assembled_with(segment.clone(), volatility),
                stable,
                "{} moved when declared {volatility}",
                segment["id"]
            );
        }
    }
    // The same probe sees volatility where the seed page says it applies.
    let system = json!({"id": "sys", "content": "[sys]", "position": "system"});
    assert_ne!(
        assembled_with(system.clone(), "stable"),
        assembled_with(system, "turn"),
        "position: system follows volatility"
    );
    let pre_system = json!({"id": "pre-sys", "content": "[pre-sys]", "position": "pre-history", "role": "system"});
    assert_ne!(
        assembled_with(pre_system.clone(), "session"),
        assembled_with(pre_system, "turn"),
        "system-role pre-history follows volatility"
    );
}

#[test]
fn depth_counts_conversation_messages_back_from_the_newest() {
    let p = story();
    let input = player_input_index(&p);
    assert_eq!(
        message_index(&p, "depth-1"),
        input - 2,
        "before the newest message, ahead of the turn context"
    );
    assert_eq!(
        message_index(&p, "depth-0"),
        input + 1,
        "depth 0 follows the newest message"
    );
    assert_eq!(
        message_index(&p, "depth-99"),
        0,
        "deeper than the conversation: at the start"
    );
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
    let row = |plugin: &str, id: &str| {
        p.segments
            .iter()
            .find(|s| &*s.plugin == plugin && &*s.id == id)
            .expect("row")
    };
    assert!(row("aaa-ties", "tie").tie_broken_by_plugin_id);
    assert!(row("zzz-ties", "tie").tie_broken_by_plugin_id);
    assert!(
        !row("zzz-ties", "first").tie_broken_by_plugin_id,
        "its own order placed it"
    );
    assert_eq!(
        &*row("aaa-ties", "tie").sort_key.provider_plugin_id,
        "aaa-ties"
    );
}

// ---- Audience and static segments ----------------------------------------------------------

#[test]
fn audience_filters_segments_for_the_runtime_being_previewed() {
    let included = |p: &Preview| -> Vec<String> {
        p.segments
            .iter()
            .filter(|s| &*s.plugin == "audience" && s.included)
            .map(|s| s.id.to_string())
            .collect()
    };
    assert_eq!(
        included(&story()),
        ["for-all", "for-narrative-engine", "for-story"]
    );
    let own = preview_of("session.yaml", RuntimeTarget::Plugin("audience".into()));
    assert_eq!(
        included(&own),
        ["for-all", "for-other", "for-self", "static-rule"]
    );
    let contract = preview_of("session.yaml", RuntimeTarget::Contract("other@1".into()));
    assert_eq!(
        included(&contract),
        ["for-all", "for-other", "for-self", "static-rule"]
    );
    assert_eq!(
        block(&own, BlockKind::Body).text,
        "You are the audience plugin's own runtime."
    );
    let excluded = story()
        .segments
        .into_iter()
        .find(|s| &*s.id == "for-self")
        .expect("row");
    assert!(
        excluded
            .excluded_because
            .as_deref()
            .is_some_and(|w| w.contains("self"))
    );
}

#[test]
fn static_prompt_segments_are_self_audience_session_segments_of_their_plugin() {
    let own = preview_of("session.yaml", RuntimeTarget::Plugin("audience".into()));
    let row = own
        .segments
        .iter()
        .find(|s| &*s.id == "static-rule")
        .expect("static segment");
    assert_eq!(
        serde_json::to_value(&row.audience).expect("json"),
        json!("self")
    );
    assert_eq!(
        serde_json::to_value(row.volatility).expect("json"),
        json!("session")
    );
    assert_eq!(row.placement, Placement::SystemStable);
}

// ---- History ----------------------------------------------------------------------------------

#[test]
fn summaries_reenter_as_user_messages_and_compacted_messages_leave() {
    let p = story();
    let summary = p
        .prompt
        .messages
        .iter()
        .find(|m| matches!(m.origin, Origin::Summary { .. }))
        .expect("summary");
    assert_eq!(summary.role, "user", "never system");
    assert!(
        summary.content.contains("&lt;first&gt;"),
        "summary text is escaped"
    );
    assert!(
        !p.prompt
            .messages
            .iter()
            .any(|m| matches!(&m.origin, Origin::History { id } if id == "h1" || id == "h2"))
    );
}

// ---- Cache boundaries and requests ----------------------------------------------------------

#[test]
fn boundaries_follow_each_cacheable_block_and_anthropic_gets_at_most_four_breakpoints() {
    let p = story();
    let boundaries: Vec<BlockKind> = p
        .prompt
        .system
        .blocks
        .iter()
        .filter(|b| b.cache_boundary)
        .map(|b| b.kind)
        .collect();
    assert_eq!(
        boundaries,
        [
            BlockKind::Preamble,
            BlockKind::Body,
            BlockKind::StableSegments
        ]
    );
    let body = &p.prompt.requests.anthropic;
    let count = body.to_string().matches("cache_control").count();
    assert_eq!(
        count, 4,
        "three system boundaries and one moving breakpoint"
    );
    let system = body["system"].as_array().expect("system blocks");
    assert!(
        system
            .last()
            .is_some_and(|b| b.get("cache_control").is_none()),
        "the turn tail is never cached"
    );
    let moving: Vec<&Value> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m.to_string().contains("cache_control"))
        .collect();
    assert_eq!(moving.len(), 1);
    assert!(
        moving[0].to_string().contains("second answer"),
        "on the newest history message"
    );
    assert!(
        body.to_string().contains("<system-instruction>"),
        "system messages in the conversation travel as tagged user text"
    );
}

#[test]
fn openai_request_has_the_boundaries_removed() {
    let p = story();
    let body = &p.prompt.requests.openai;
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(!body.to_string().contains("cache_control") && !body.to_string().contains('\u{E000}'));
    assert_eq!(
        body["messages"][0]["content"],
        p.prompt
            .system
            .blocks
            .iter()
            .map(|b| b.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn stable_segments_keep_every_breakpoint_of_the_request_identical_next_turn() {
    let p = story();
    assert_eq!(
        p.cache.breakpoints.len(),
        4,
        "three system boundaries and the moving breakpoint"
    );
    assert!(
        p.cache.breakpoints.iter().all(|b| b.stable),
        "{:?}",
        p.cache.breakpoints
    );
    assert!(p.cache.lint.is_empty() && p.cache.advice.is_empty());
    assert_eq!(p.cache.history_prefix_stable, Some(true));
}

#[test]
fn a_clock_in_a_stable_segment_is_reported_by_the_lint_with_the_breakpoint_it_breaks() {
    let p = preview_of("clock.session.yaml", RuntimeTarget::Story);
    let finding = p
        .cache
        .lint
        .iter()
        .find(|f| f.plugin == "clock")
        .expect("lint finding");
    assert_eq!(finding.segment, "clock");
    assert_eq!(finding.breaks_breakpoint, Some(2));
    let breakpoint = &p.cache.breakpoints[2];
    assert!(!breakpoint.stable);
    let diff = breakpoint.first_difference.as_ref().expect("difference");
    assert_eq!(diff.plugin.as_deref(), Some("clock"));
    assert_eq!(diff.segment.as_deref(), Some("clock/clock"));
    assert!(p.cache.breakpoints[0].stable && p.cache.breakpoints[1].stable);
    assert!(
        !p.cache.breakpoints[3].stable,
        "everything behind a changed system block changes too"
    );
    let advice = p.cache.advice.first().expect("advice");
    assert_eq!(
        (advice.code, advice.breakpoints.as_slice()),
        ("stable-block-changes", &[2, 3][..])
    );
}

// ---- Cache stability on the provider's request ------------------------------------------------

fn sample_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample")
}

fn sample_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    covel_tests::copy_dir(&sample_dir(), dir.path());
    dir
}

fn demo_in(dir: &std::path::Path) -> Workspace {
    Workspace::open(
        dir,
        Some(&dir.join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("the demo opens")
}

fn edit(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replace(from, to)).expect("write");
}

/// The content blocks of an Anthropic body in the order the provider reads them, each as
/// (where, text) — `cache_control` left out, since it is not part of the cached prefix — and
/// the positions of the blocks that carry `cache_control`.
fn provider_blocks(body: &Value) -> (Vec<(String, String)>, Vec<usize>) {
    let mut blocks = Vec::new();
    let mut breakpoints = Vec::new();
    let mut push = |place: String, block: &Value| {
        if block.get("cache_control").is_some() {
            breakpoints.push(blocks.len());
        }
        blocks.push((
            place,
            block["text"].as_str().expect("text block").to_string(),
        ));
    };
    for (i, block) in body["system"]
        .as_array()
        .expect("system")
        .iter()
        .enumerate()
    {
        push(format!("system {i}"), block);
    }
    for (m, message) in body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
    {
        for (b, block) in message["content"]
            .as_array()
            .expect("content")
            .iter()
            .enumerate()
        {
            push(
                format!("message {m} ({}) block {b}", message["role"]),
                block,
            );
        }
    }
    (blocks, breakpoints)
}

/// For each breakpoint of `this`, whether `next` starts with exactly the blocks up to it.
fn oracle(this: &Value, next: &Value) -> Vec<bool> {
    let (mine, breakpoints) = provider_blocks(this);
    let (theirs, _) = provider_blocks(next);
    breakpoints
        .iter()
        .map(|&b| theirs.len() > b && mine[..=b] == theirs[..=b])
        .collect()
}

/// Plays `turns` scripted turns and checks each turn's verdict against the request the next
/// turn really sent; returns the verdicts.
fn verdicts_agree_with_the_bodies_sent(ws: Workspace, turns: usize) -> Vec<Vec<bool>> {
    let mut play = Playtest::new(ws);
    let reports: Vec<_> = (0..turns)
        .map(|i| play.play(&format!("I act ({i}).")))
        .collect();
    let mut verdicts = Vec::new();
    for pair in reports.windows(2) {
        let (this, next) = (&pair[0].preview, &pair[1].preview);
        let expected = oracle(
            &this.prompt.requests.anthropic,
            &next.prompt.requests.anthropic,
        );
        let reported: Vec<bool> = this.cache.breakpoints.iter().map(|b| b.stable).collect();
        assert_eq!(
            reported, expected,
            "turn {}: the verdict disagrees with the bodies sent",
            this.turn_id
        );
        verdicts.push(reported);
    }
    verdicts
}

#[test]
fn each_breakpoint_verdict_matches_the_next_turns_request_as_sent() {
    let demo = verdicts_agree_with_the_bodies_sent(demo_in(&sample_dir()), 4);
    assert!(
        demo.iter().all(|v| v == &[true, true, true, false]),
        "the demo's depth segment moves every turn: {demo:?}"
    );
    let dir = sample_copy();
    edit(
        &dir.path().join("lore-book/server/index.js"),
        "position: { depth: 2 }",
        "position: { depth: 1 }",
    );
    let fixed = verdicts_agree_with_the_bodies_sent(demo_in(dir.path()), 4);
    assert!(
        fixed.iter().all(|v| v.iter().all(|stable| *stable)),
        "{fixed:?}"
    );
}

#[test]
fn a_depth_segment_ahead_of_the_moving_breakpoint_changes_the_history_prefix_every_turn() {
    let p = demo_in(&sample_dir()).preview(&RuntimeTarget::Story);
    assert_eq!(p.cache.history_prefix_stable, Some(false));
    let moving = p.cache.moving().expect("a moving breakpoint");
    assert_eq!(moving.closes, Origin::History { id: "m4".into() });
    let diff = moving.first_difference.as_ref().expect("a difference");
    assert_eq!(
        diff.this_turn,
        Origin::Segment {
            plugin: "lore-book".into(),
            segment: "remember".into()
        }
    );
    assert_eq!(
        diff.next_turn,
        Some(Origin::History { id: "m4".into() }),
        "next turn m4 comes where the reminder was"
    );
    assert_eq!(diff.segment.as_deref(), Some("lore-book/remember"));
    let body = &p.prompt.requests.anthropic;
    let (blocks, _) = provider_blocks(body);
    let at = match diff.place {
        Place::Message { message, block, .. } => blocks.iter().position(|(place, _)| {
            place.starts_with(&format!("message {message} "))
                && place.ends_with(&format!("block {block}"))
        }),
        Place::System { index } => Some(index),
    };
    assert_eq!(
        at.map(|i| blocks[i].1.as_str()),
        Some("Remember: the bell still rings at low tide."),
        "the place names the block in the body"
    );

    let advice = p.cache.advice.first().expect("advice");
    assert_eq!(advice.code, "depth-segment-moves");
    assert_eq!(advice.segment.as_deref(), Some("lore-book/remember"));
    let last_system = p
        .cache
        .breakpoints
        .iter()
        .filter(|b| !b.moving)
        .map(|b| b.prefix_tokens)
        .max()
        .expect("system breakpoints");
    assert_eq!(
        advice.still_cached_tokens, last_system,
        "the next turn reads only up to the last system breakpoint"
    );
    assert_eq!(advice.lost_tokens, moving.prefix_tokens - last_system);
    assert!(advice.lost_tokens > 0);
    assert!(
        advice.message.contains("{depth: 2}") && advice.message.contains("between `m3` and `m4`"),
        "{}",
        advice.message
    );
    assert!(
        advice
            .message
            .contains(&format!("{} fewer", advice.lost_tokens)),
        "{}",
        advice.message
    );
    assert!(
        advice.fix.contains("depth of at most 1") && advice.fix.contains("post-history"),
        "{}",
        advice.fix
    );
}

#[test]
fn the_advised_fixes_for_a_moving_depth_segment_keep_the_history_prefix() {
    for fixed in [
        "position: { depth: 1 }",
        "position: { depth: 0 }",
        "position: \"post-history\"",
    ] {
        let dir = sample_copy();
        edit(
            &dir.path().join("lore-book/server/index.js"),
            "position: { depth: 2 }",
            fixed,
        );
        let p = demo_in(dir.path()).preview(&RuntimeTarget::Story);
        assert_eq!(
            p.cache.history_prefix_stable,
            Some(true),
            "{fixed}: {:?}",
            p.cache.breakpoints
        );
        assert!(p.cache.advice.is_empty(), "{fixed}: {:?}", p.cache.advice);
    }
}

#[test]
fn a_turn_tail_that_changes_loses_the_history_breakpoint_behind_it() {
    let dir = sample_copy();
    // `latest` is a system-role pre-history `turn` segment: the turn tail of the system prompt.
    edit(
        &dir.path().join("lore-book/server/index.js"),
        "content: `Most recent discovery: ${found.term}.`",
        "content: `Most recent discovery (${_input.turnId}): ${found.term}.`",
    );
    let p = demo_in(dir.path()).preview(&RuntimeTarget::Story);
    let stable: Vec<bool> = p.cache.breakpoints.iter().map(|b| b.stable).collect();
    assert_eq!(
        stable,
        [true, true, true, false],
        "the system breakpoints hold; the history one is lost"
    );
    let diff = p.cache.breakpoints[3]
        .first_difference
        .as_ref()
        .expect("difference");
    assert!(
        matches!(
            diff.this_turn,
            Origin::System {
                block: BlockKind::TurnTail,
                ..
            }
        ),
        "{diff:?}"
    );
    assert_eq!(diff.segment.as_deref(), Some("lore-book/latest"));
    let advice = p.cache.advice.first().expect("advice");
    assert_eq!(advice.code, "turn-tail-changes");
    assert!(advice.fix.contains("turn context"), "{}", advice.fix);
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

/// Ids are unique per provider, so two providers of one plugin may send the same `plugin/id`.
/// Everything that names a segment by key then relies on one order: a block lists its keys in
/// the order of the included rows (the Prompt panel takes the n-th mention as the n-th row).
#[test]
fn a_key_shared_by_two_providers_is_listed_in_row_order_in_its_block() {
    let segment = |content: &str, order: i64| {
        json!({"id": "lore", "content": content, "position": "system", "audience": "all",
               "volatility": "stable", "order": order, "providerPluginId": "p"})
    };
    let segments: Vec<prompt::Segment> = [segment("second", 2), segment("first", 1)]
        .iter()
        .filter_map(prompt::Segment::parse)
        .collect();
    let assembly = prompt::assemble(prompt::AssemblyInput {
        segments,
        runtime: &prompt::RuntimeView::story(),
        preamble: prompt::FRAMEWORK_PREAMBLE,
        body: "Narrate.",
        lore: None,
        history: &[],
        summaries: &[],
        player_message: "go",
    });
    let stable = assembly
        .blocks
        .iter()
        .find(|b| b.kind == BlockKind::StableSegments)
        .expect("stable block");
    assert_eq!(stable.segments, ["p/lore", "p/lore"]);
    let rows: Vec<&str> = assembly
        .segments
        .iter()
        .filter(|r| r.included)
        .map(|r| &*r.content)
        .collect();
    assert_eq!(rows, ["first", "second"]);
    assert_eq!(
        stable.text, "first\n\nsecond",
        "the block's text follows the same order"
    );
}

/// Two providers of one plugin may each send `lore`: the lint compares each row with the same
/// row of the next turn (by rank), so two constant texts are never taken for one that changed.
#[test]
fn two_providers_sharing_a_segment_id_are_not_linted_as_a_changing_segment() {
    let p = preview_of("shared-id.session.yaml", RuntimeTarget::Story);
    let rows: Vec<(&str, &str)> = p.segments.iter().map(|s| (&*s.id, &*s.content)).collect();
    assert_eq!(
        rows,
        [
            ("lore", "The hall is cold."),
            ("lore", "The cellar is damp.")
        ]
    );
    assert!(p.cache.lint.is_empty(), "{:?}", p.cache.lint);
    assert!(p.cache.breakpoints.iter().all(|b| b.stable));
}

#[test]
fn a_contract_no_active_runtime_produces_is_previewed_with_a_note() {
    let plugins = fixture("prompt/plugins");
    let session = fixture("prompt/session.yaml");
    let ws = Workspace::open(&plugins, Some(&session), &Limits::default()).expect("opens");
    let mut studio = covel_studio::live::LiveStudio::new(ws, RuntimeTarget::Story);
    assert_eq!(studio.snapshot().runtime_note, None);
    studio
        .switch_target(RuntimeTarget::Contract("nobody@1".into()))
        .expect("any well-formed contract id is previewed");
    let note = studio.snapshot().runtime_note.expect("a note");
    assert!(
        note.starts_with("no active plugin has a runtime whose output contract is `nobody@1`"),
        "{note}"
    );
    assert!(
        studio
            .switch_target(RuntimeTarget::Contract("not a contract".into()))
            .is_err(),
        "an ill-formed id is refused"
    );
    studio
        .switch_target(RuntimeTarget::Story)
        .expect("back to the story");
    assert_eq!(studio.snapshot().runtime_note, None);
}
