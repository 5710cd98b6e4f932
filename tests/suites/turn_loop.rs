//! A played turn's loop: hooks around the story model, the tools it calls and their effects,
//! each rule of Covel's turn runner (and the seed page's hook return rules) with a test named
//! for it. The fixture plugins (`fixtures/turn-loop`) act as the session's settings say.

use covel_js::engine::Limits;
use covel_kernel::session::ScriptedReply;
use covel_studio::playtest::{Playtest, TurnReport};
use covel_studio::turn::record::{HookOutcome, LoopStep, ToolOutcome};
use covel_tests::fixture;
use serde_json::{Value, json};

/// A playtest of the turn-loop fixtures with the guard in `mode`.
fn playtest(mode: &str) -> (Playtest, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let play = playtest_in(&dir, mode, "");
    (play, dir)
}

/// A playtest of the fixtures with a session in `dir` (its story model in `models`, YAML).
fn playtest_in(dir: &tempfile::TempDir, mode: &str, models: &str) -> Playtest {
    covel_tests::turn_loop_playtest(dir.path(), "loop", mode, models)
}

/// A scripted reply from YAML (the session format's `script` entry).
fn script(yaml: &str) -> ScriptedReply {
    serde_saphyr::from_str(yaml).expect("a scripted reply")
}

fn play(mode: &str, reply: &str) -> (TurnReport, Playtest, tempfile::TempDir) {
    let (mut play, dir) = playtest(mode);
    let report = play.play_scripted("I look around.", Some(&script(reply)));
    (report, play, dir)
}

fn hooks<'a>(report: &'a TurnReport, event: &str) -> Vec<&'a covel_studio::turn::record::HookStep> {
    report
        .steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Hook(h) if h.event == event => Some(h),
            _ => None,
        })
        .collect()
}

fn tools(report: &TurnReport) -> Vec<&covel_studio::turn::record::ToolStep> {
    report
        .steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Tool(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The turn's first commit step.
fn commit_of(report: &TurnReport) -> &covel_studio::turn::record::CommitStep {
    let commit = report.steps.iter().find_map(|s| match s {
        LoopStep::Commit(c) => Some(c),
        _ => None,
    });
    commit.expect("a commit step")
}

fn stage(play: &Playtest) -> Value {
    play.workspace
        .session
        .plugin_data
        .iter()
        .find(|r| r.plugin_id == "stage" && r.namespace == "stage")
        .map_or(Value::Null, |r| r.value.clone())
}

const SET_SCENE: &str =
    "tools: [{ name: set-scene, input: { sceneId: tower, name: The Tower } }]\nreply: You climb.";

#[test]
fn the_loop_runs_hooks_model_calls_and_tools_in_covel_s_order() {
    let (report, _, _dir) = play("none", SET_SCENE);
    assert_eq!(report.error, None);
    let order: Vec<String> = report
        .steps
        .iter()
        .map(|s| match s {
            LoopStep::Hook(h) => h.event.clone(),
            LoopStep::Model(m) => format!("model {}", m.call),
            LoopStep::Tool(t) => format!("tool {}", t.name),
            LoopStep::Commit(c) => format!("commit {}", c.proposal_type),
            LoopStep::Event(e) => format!("event {}", e.topic),
        })
        .collect();
    assert_eq!(
        order,
        [
            "TurnStart",
            "PreLLMCall",
            "PreLLMCall",
            "model 1",
            "PostLLMResponse",
            "PreToolUse",
            "PreToolUse",
            "tool set-scene",
            "PostToolUse",
            "PreLLMCall",
            "PreLLMCall",
            "model 2",
            "PostLLMResponse",
            "TurnStop",
            "PreStateCommit",
            "commit plugin.data",
        ]
    );
    // The first turn of a playtest also fired SessionStart, with no handler here to record.
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("You climb.")
    );
}

#[test]
fn a_tool_s_proposal_takes_effect_and_moves_the_slot_that_watches_its_namespace() {
    let (report, play, _dir) = play("none", SET_SCENE);
    assert_eq!(stage(&play)["sceneId"], "tower");
    let commit = commit_of(&report);
    assert!(commit.committed);
    assert_eq!(commit.writes, ["stage/current"]);
    assert_eq!(commit.slots, ["stage.backdrop@1"]);
    assert!(
        play.slots
            .values()
            .iter()
            .any(|v| v.slot.to_string() == "stage.backdrop@1" && v.value["name"] == "The Tower"),
        "the backdrop shows the new scene after the turn"
    );
}

#[test]
fn hook_return_rule_no_return_means_continue() {
    let (report, _, _dir) = play("none", SET_SCENE);
    let pre = hooks(&report, "PreToolUse");
    assert_eq!(pre.len(), 2, "the guard's two PreToolUse handlers");
    assert!(pre.iter().all(|h| h.outcome == HookOutcome::Continue));
    assert_eq!(tools(&report)[0].outcome, ToolOutcome::Ok);
}

#[test]
fn hook_return_rule_a_replacement_rewrites_the_request_of_that_call() {
    let (report, _, _dir) = play("steer", "You wait.");
    let model = report.steps.iter().find_map(|s| match s {
        LoopStep::Model(m) => Some(m),
        _ => None,
    });
    let model = model.expect("a model call");
    assert_eq!(model.replaced, ["messages"]);
    assert_eq!(
        model.added,
        [json!({"role": "system", "content": "Stay in the tower."})],
        "the hook's message was sent after the assembled prompt"
    );
    let steer = &hooks(&report, "PreLLMCall")[0];
    assert_eq!(steer.outcome, HookOutcome::Replaced);
    assert_eq!(steer.changes[0].field, "messages");
}

#[test]
fn hook_return_rule_a_failing_handler_on_other_events_is_skipped_and_earlier_rewrites_stay() {
    let (report, _, _dir) = play("steer-then-fail", "You wait.");
    assert_eq!(report.error, None);
    let pre = hooks(&report, "PreLLMCall");
    assert_eq!(pre[0].outcome, HookOutcome::Replaced);
    assert_eq!(pre[1].outcome, HookOutcome::Failed);
    assert!(
        pre[1]
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("the second PreLLMCall handler failed"))
    );
    let model = report.steps.iter().find_map(|s| match s {
        LoopStep::Model(m) => Some(m),
        _ => None,
    });
    assert_eq!(
        model.map(|m| m.added.len()),
        Some(1),
        "the first rewrite stayed"
    );
}

#[test]
fn hook_return_rule_a_failing_handler_on_an_interceptable_event_rejects() {
    let (report, play, _dir) = play("broken-guard", SET_SCENE);
    assert_eq!(report.error, None, "the turn goes on without the tool");
    let tool = tools(&report)[0];
    assert_eq!(tool.outcome, ToolOutcome::Rejected);
    assert!(
        tool.result.contains("pre-tool-use hook aborted"),
        "{}",
        tool.result
    );
    assert!(
        tool.result.contains("the guard is broken"),
        "{}",
        tool.result
    );
    assert_eq!(
        stage(&play)["sceneId"],
        "harbour",
        "the rejected tool wrote nothing"
    );
}

#[test]
fn a_pre_tool_use_rejection_keeps_the_tool_from_running_and_the_model_reads_why() {
    let (report, play, _dir) = play("refuse-tool", SET_SCENE);
    let tool = tools(&report)[0];
    assert_eq!(tool.outcome, ToolOutcome::Rejected);
    assert!(tool.result.contains("scenes are fixed"));
    assert!(tool.proposals.is_empty());
    assert_eq!(stage(&play)["sceneId"], "harbour");
}

#[test]
fn a_turn_start_rejection_fails_the_turn_and_appends_nothing() {
    let (report, play, _dir) = play("refuse-turn", SET_SCENE);
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("TurnStart") && e.contains("no turns today")),
        "{:?}",
        report.error
    );
    assert_eq!(play.workspace.session.history.messages.len(), 2);
    assert_eq!(play.turns(), 0);
}

#[test]
fn a_post_tool_use_replacement_is_what_the_model_reads() {
    let (report, _, _dir) = play("rewrite-result", SET_SCENE);
    assert_eq!(tools(&report)[0].result, "rewritten: now at The Tower");
}

#[test]
fn a_pre_state_commit_veto_refuses_the_proposal() {
    let (report, play, _dir) = play("veto-commit", SET_SCENE);
    let commit = commit_of(&report);
    assert!(!commit.committed);
    assert!(
        commit
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("no plugin.data"))
    );
    assert_eq!(stage(&play)["sceneId"], "harbour");
}

#[test]
fn an_audit_event_s_replacement_is_ignored() {
    let (report, _, _dir) = play("none", "You wait.");
    let stop = hooks(&report, "TurnStop");
    assert_eq!(stop.len(), 1);
    assert_eq!(stop[0].outcome, HookOutcome::Continue);
    assert!(
        stop[0]
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("ignored"))
    );
}

#[test]
fn tool_input_is_checked_against_the_tool_s_schema_before_it_runs() {
    let (report, play, _dir) = play(
        "none",
        "tools: [{ name: set-scene, input: { sceneId: '' } }]\nreply: You climb.",
    );
    let tool = tools(&report)[0];
    assert_eq!(tool.outcome, ToolOutcome::InvalidInput);
    assert!(tool.result.contains("VALIDATION_ERROR"), "{}", tool.result);
    assert!(tool.result.contains("sceneId"), "{}", tool.result);
    assert!(tool.result.contains("name"), "{}", tool.result);
    assert_eq!(stage(&play)["sceneId"], "harbour");
}

#[test]
fn a_tool_that_throws_is_reported_to_the_model_and_the_turn_goes_on() {
    let (report, _, _dir) = play("none", "tools: [{ name: boom }]\nreply: Nothing happens.");
    assert_eq!(report.error, None);
    let tool = tools(&report)[0];
    assert_eq!(tool.outcome, ToolOutcome::Failed);
    assert!(tool.result.contains("EXECUTION_ERROR"));
    assert!(tool.result.contains("the boom tool blew up"));
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("Nothing happens.")
    );
}

#[test]
fn an_unknown_tool_is_answered_not_found() {
    let (report, _, _dir) = play("none", "tools: [{ name: teleport }]\nreply: Nothing.");
    let tool = tools(&report)[0];
    assert_eq!(tool.outcome, ToolOutcome::NotFound);
    assert!(tool.result.contains("NOT_FOUND"));
}

#[test]
fn a_tool_that_writes_another_plugin_s_data_is_refused() {
    let (report, play, _dir) = play("none", "tools: [{ name: grab }]\nreply: Done.");
    let commit = commit_of(&report);
    assert!(!commit.committed);
    assert!(
        commit
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("writes only its own plugin's data")),
        "{:?}",
        commit.detail
    );
    assert_eq!(stage(&play)["sceneId"], "harbour");
    assert!(
        !play
            .workspace
            .session
            .plugin_data
            .iter()
            .any(|r| r.plugin_id == "other"),
        "nothing was written as the other plugin"
    );
}

#[test]
fn a_model_that_calls_tools_forever_is_stopped_at_the_bound_and_the_turn_commits_nothing() {
    let (report, play, _dir) = play(
        "none",
        "calls:\n  - tools: [{ name: set-scene, input: { sceneId: tower, name: The Tower } }]\n  - tools: [{ name: again }]",
    );
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("still calling tools after 10 model calls")),
        "{:?}",
        report.error
    );
    let models = report
        .steps
        .iter()
        .filter(|s| matches!(s, LoopStep::Model(_)))
        .count();
    assert_eq!(models, 10);
    assert_eq!(
        stage(&play)["sceneId"],
        "harbour",
        "a failed turn commits nothing"
    );
    assert_eq!(play.workspace.session.history.messages.len(), 2);
}

#[test]
fn a_hook_that_always_asks_for_a_correction_fails_the_turn_after_two() {
    let (report, play, _dir) = play("always-correct", SET_SCENE);
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("Response validation failed") && e.contains("Try again.")),
        "{:?}",
        report.error
    );
    let corrections = hooks(&report, "PostLLMResponse")
        .iter()
        .filter(|h| h.outcome == HookOutcome::Correction)
        .count();
    assert_eq!(
        corrections, 3,
        "two corrections are allowed, the third fails the turn"
    );
    assert!(
        tools(&report).is_empty(),
        "a rejected draft's tool calls never run"
    );
    assert_eq!(stage(&play)["sceneId"], "harbour");
}

#[test]
fn a_correction_asks_the_model_again_with_the_correction() {
    let (report, _, _dir) = play(
        "correct-once",
        "calls:\n  - text: A DRAFT.\n  - text: The final narration.",
    );
    assert_eq!(report.error, None);
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("The final narration.")
    );
    let second = report
        .steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Model(m) => Some(m),
            _ => None,
        })
        .nth(1)
        .expect("a second model call");
    assert_eq!(
        second.added[0],
        json!({"role": "assistant", "content": "A DRAFT."})
    );
    assert!(
        second.added[1]["content"].as_str().is_some_and(|c| c
            .starts_with("The draft was not accepted")
            && c.ends_with("No drafts.")),
        "{}",
        second.added[1]
    );
}

#[test]
fn events_reach_the_slots_that_preview_them_and_undeclared_events_are_refused() {
    let (report, _, _dir) = play(
        "none",
        "tools: [{ name: cue, input: { sceneId: crypt } }, { name: cue, input: { sceneId: x, topic: made.up } }]\nreply: A door opens.",
    );
    let events: Vec<_> = report
        .steps
        .iter()
        .filter_map(|s| match s {
            LoopStep::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 2);
    assert!(events[0].accepted);
    assert_eq!(events[0].plugin_id.as_deref(), Some("stage"));
    assert_eq!(events[0].slots, ["stage.backdrop@1"]);
    assert!(!events[1].accepted);
    assert!(
        events[1]
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("no active plugin declares"))
    );
    assert!(
        report
            .slot_changes
            .iter()
            .any(|c| c.value["sceneId"] == "crypt" && c.preview_turn.is_some()),
        "the cue was previewed on the backdrop during the turn"
    );
    assert_eq!(report.events.len(), 1, "only the accepted event is listed");
}

#[test]
fn emit_event_checks_the_declared_schema() {
    let (report, _, _dir) = play(
        "none",
        "tools: [{ name: emit-event, input: { topic: scene.cue, data: { sceneId: 7 } } }, { name: emit-event, input: { topic: scene.cue, data: { sceneId: vault } } }]\nreply: Stone grinds.",
    );
    let tools = tools(&report);
    assert_eq!(tools[0].outcome, ToolOutcome::InvalidInput);
    assert!(tools[0].result.contains("sceneId"), "{}", tools[0].result);
    assert_eq!(tools[1].outcome, ToolOutcome::Ok);
    assert_eq!(tools[1].result, "event \"scene.cue\" emitted");
    assert_eq!(report.events.len(), 1);
}

#[test]
fn undo_restores_the_data_a_tool_wrote() {
    let (_, mut play, _dir) = play("none", SET_SCENE);
    assert_eq!(stage(&play)["sceneId"], "tower");
    assert!(play.undo());
    assert_eq!(stage(&play)["sceneId"], "harbour");
    assert!(
        play.slots
            .values()
            .iter()
            .any(|v| v.slot.to_string() == "stage.backdrop@1" && v.value["name"] == "The Harbour")
    );
}

#[test]
fn tools_see_the_proposals_their_plugin_made_earlier_in_the_turn_and_read_them_through_ctx_store() {
    let (report, _, _dir) = play(
        "none",
        "tools: [{ name: set-scene, input: { sceneId: tower, name: The Tower } }, { name: again }]\nreply: Done.",
    );
    // ctx.store reads the committed rows with the turn's earlier writes laid over them.
    assert_eq!(tools(&report)[1].result, "call 1 at tower (tower)");
}

/// A model API fake (Anthropic or OpenAI shaped) that answers its requests in order with
/// `answers`, and keeps each request body.
fn model_fake(answers: Vec<Value>) -> (String, std::thread::JoinHandle<Vec<Value>>) {
    use covel_tests::http_fake::{accept_within, read_request, write_json};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for answer in answers {
            let Some(mut stream) = accept_within(&listener, std::time::Duration::from_secs(30))
            else {
                break;
            };
            let (_, body) = read_request(&stream).expect("a request");
            seen.push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            write_json(&mut stream, &answer.to_string()).expect("answered");
        }
        seen
    });
    (url, handle)
}

#[test]
fn a_real_backend_s_tool_use_runs_the_tool_and_a_recording_replays_the_tool_round_offline() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, fake) = model_fake(vec![
        json!({"content": [{"type": "text", "text": "Let me move us."}, {"type": "tool_use", "id": "toolu_1", "name": "set-scene", "input": {"sceneId": "tower", "name": "The Tower"}}], "stop_reason": "tool_use"}),
        json!({"content": [{"type": "text", "text": "The tower looms."}], "stop_reason": "end_turn"}),
    ]);
    let live = format!(
        "models:\n  story: {{ backend: anthropic, baseUrl: \"{url}\", model: claude-sonnet-4-5, contextWindow: 200000 }}\n"
    );
    let mut play = playtest_in(&dir, "none", &live);
    let report = play.play("I look around.");
    assert_eq!(report.error, None);
    assert_eq!(
        stage(&play)["sceneId"],
        "tower",
        "the tool the model called took effect"
    );
    let sent = fake.join().expect("the fake ran");
    assert_eq!(sent.len(), 2, "one tool round, then the narration");
    // The first request offers the tools; the second carries the tool round.
    let offered: Vec<&str> = sent[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(offered.contains(&"set-scene"), "{offered:?}");
    assert!(sent[0]["tools"][0]["input_schema"].get("$schema").is_none());
    let messages = sent[1]["messages"].as_array().expect("messages");
    let n = messages.len();
    assert_eq!(messages[n - 2]["content"][1]["type"], "tool_use");
    assert_eq!(messages[n - 1]["content"][0]["type"], "tool_result");
    assert_eq!(messages[n - 1]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(messages[n - 1]["content"][0]["content"], "now at The Tower");

    // Recorded, the same turn replays offline with the same loop and effects.
    let recording = dir.path().join("loop.recording.json");
    play.story_backend()
        .recording()
        .save(&recording)
        .expect("saved");
    let replay = "models:\n  story: { backend: replay, recording: loop.recording.json, model: claude-sonnet-4-5, contextWindow: 200000 }\n";
    let mut again = playtest_in(&dir, "none", replay);
    let replayed = again.play("I look around.");
    assert_eq!(replayed.error, None);
    let lines = |r: &TurnReport| r.steps.iter().map(LoopStep::line).collect::<Vec<_>>();
    assert_eq!(lines(&replayed), lines(&report));
    assert_eq!(stage(&again)["sceneId"], "tower");
}

#[test]
fn a_hook_past_its_time_on_an_interceptable_event_rejects() {
    // The guard's PreToolUse handler in `spin` mode never returns; its timeoutMs is 200.
    let (report, play, _dir) = play("spin", SET_SCENE);
    let pre = hooks(&report, "PreToolUse");
    assert!(
        pre.iter().any(|h| h.outcome == HookOutcome::Rejected
            && h.detail.as_deref().is_some_and(|d| d.contains("200 ms"))),
        "{pre:?}"
    );
    assert_eq!(tools(&report)[0].outcome, ToolOutcome::Rejected);
    assert_eq!(stage(&play)["sceneId"], "harbour");
    assert_eq!(report.error, None, "the turn went on without the tool");
}

#[test]
fn an_openai_compatible_backend_s_tool_calls_run_and_their_results_go_back_as_tool_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The same fake plumbing answers OpenAI's chat shape.
    let (url, fake) = model_fake(vec![
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "set-scene", "arguments": "{\"sceneId\":\"crypt\",\"name\":\"The Crypt\"}"}}]}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [{"message": {"role": "assistant", "content": "Cold air rises."}, "finish_reason": "stop"}]}),
    ]);
    let live = format!(
        "models:\n  story: {{ backend: openai, baseUrl: \"{url}/v1\", model: local-model, contextWindow: 32768 }}\n"
    );
    let mut play = playtest_in(&dir, "none", &live);
    let report = play.play("I go down.");
    assert_eq!(report.error, None);
    assert_eq!(
        report.reply.as_ref().map(|r| r.text.as_str()),
        Some("Cold air rises.")
    );
    assert_eq!(stage(&play)["sceneId"], "crypt");
    let sent = fake.join().expect("the fake ran");
    assert_eq!(sent[0]["tools"][0]["type"], "function");
    let messages = sent[1]["messages"].as_array().expect("messages");
    let n = messages.len();
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"]["name"],
        "set-scene"
    );
    assert_eq!(messages[n - 1]["role"], "tool");
    assert_eq!(messages[n - 1]["tool_call_id"], "call_1");
    assert_eq!(messages[n - 1]["content"], "now at The Crypt");
}

#[test]
fn a_form_tool_s_form_waits_for_the_player_and_its_answer_is_checked_then_played() {
    let (report, mut play, _dir) = play(
        "none",
        "tools: [{ name: ask-name }]\nreply: A voice asks your name.",
    );
    assert_eq!(report.error, None);
    assert_eq!(report.forms.len(), 1, "{:?}", report.forms);
    let form = play.pending_form().expect("a form waits");
    assert_eq!(form["pluginId"], "stage");
    assert_eq!(form["interaction"]["title"], "Who are you?");
    let answer = |v: Value| v.as_object().cloned().unwrap_or_default();
    // Each field is checked, then the plugin's validator.
    let refused = play
        .answer_form(&answer(json!({"name": "", "role": "pirate"})))
        .err()
        .unwrap_or_default();
    let named: Vec<_> = refused
        .iter()
        .map(|p| (p.field.clone(), p.message.clone()))
        .collect();
    assert_eq!(
        named,
        [
            (Some("name".into()), "required".into()),
            (Some("role".into()), "one of diver, keeper".into())
        ]
    );
    let refused = play
        .answer_form(&answer(json!({"name": "Nobody", "role": "keeper"})))
        .err()
        .unwrap_or_default();
    assert_eq!(
        refused[0].message, "a real name, please",
        "the validator's word"
    );
    let said = play
        .answer_form(&answer(json!({"name": "Mira", "role": "keeper"})))
        .expect("a valid answer");
    assert_eq!(said, "I am Mira, a keeper.");
    let next = play.play_scripted(&said, Some(&script("You begin.")));
    assert_eq!(next.player_message, "I am Mira, a keeper.");
    assert!(play.pending_form().is_none(), "answered: no form waits");
}

#[test]
fn an_event_schema_in_a_file_of_the_plugin_checks_the_event_s_data() {
    let (report, _, _dir) = play(
        "none",
        "tools: [{ name: emit-event, input: { topic: lamp.lit, data: { lit: maybe } } }, { name: emit-event, input: { topic: lamp.lit, data: { lit: true } } }]\nreply: Light.",
    );
    let tools = tools(&report);
    assert_eq!(tools[0].outcome, ToolOutcome::InvalidInput);
    assert!(tools[0].result.contains("lit"), "{}", tools[0].result);
    assert_eq!(tools[1].result, "event \"lamp.lit\" emitted");
}

#[test]
fn the_toolkit_s_short_ids_are_the_sdk_s() {
    let (report, _, _dir) = play(
        "none",
        "tools: [{ name: ids, input: { names: [Oren, Oren, Tavi] } }]\nreply: Names.",
    );
    // `<prefix>-<slug>-<8 hex>`, as the SDK's shortId makes them (not a counter).
    let ids: Vec<String> = tools(&report)[0]
        .result
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for (id, slug) in ids.iter().zip(["npc-oren-", "npc-oren-", "npc-tavi-"]) {
        let hex = id.strip_prefix(slug).unwrap_or_default();
        assert!(
            hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }
}

#[test]
fn a_test_session_answers_a_form_from_its_script_and_a_refused_answer_fails_the_turn() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugins = fixture("turn-loop");
    let write = |name: &str, answer: &str| {
        let path = dir.path().join(name);
        let text = format!(
            "id: forms\ntest:\n  plugins: {}\n  turns:\n    - say: I arrive.\n      reply: {{ tools: [{{ name: ask-name }}], reply: Who are you? }}\n    - answer: {answer}\n      reply: Welcome.\n      expect:\n        - message: {{ index: -1, contains: \"I am Mira, a keeper.\" }}\n",
            plugins.display()
        );
        std::fs::write(&path, text).expect("written");
        covel_studio::testing::Target {
            session: path,
            found_in: None,
        }
    };
    let good = covel_studio::testing::run_session(
        &write("good.session.yaml", "{ name: Mira, role: keeper }"),
        false,
        &Limits::default(),
    );
    assert_eq!(good.error, None);
    assert!(good.turns.iter().all(|t| t.passed), "{:?}", good.turns);
    let refused = covel_studio::testing::run_session(
        &write("refused.session.yaml", "{ name: Nobody, role: keeper }"),
        false,
        &Limits::default(),
    );
    let failed = refused
        .turns
        .iter()
        .find(|t| !t.passed)
        .expect("a failed turn");
    assert!(
        failed
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the form's answer was refused: name: a real name, please")),
        "{failed:?}"
    );
}
