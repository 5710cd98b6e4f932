//! Streamed replies against local servers speaking the providers' documented streaming
//! formats: the Anthropic Messages API's server-sent events and OpenAI-compatible chat
//! completion chunks. Each failure (an `error` event, a cut connection, a stalled stream, a
//! malformed chunk) ends the turn with a clear message and leaves the session as it was.

use covel_js::engine::Limits;
use covel_studio::playtest::Playtest;
use covel_studio::workspace::Workspace;
use covel_tests::fixture;
use covel_tests::http_fake::{accept_within, read_request};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the fake answers one request with.
enum Answer {
    /// A whole JSON answer (an unstreamed request).
    Json(Value),
    /// Server-sent events (`event:` name, data), then the connection closes — or, with
    /// `stall`, stays open and silent for that long first.
    Events(Vec<(Option<&'static str>, String)>, Option<Duration>),
    /// An HTTP error status with this body (as a server that refuses the request answers).
    Status(u16, String),
}

/// A model server answering its requests in order; returns its URL and the requests it got.
fn fake(answers: Vec<Answer>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = Arc::clone(&seen);
    std::thread::spawn(move || {
        for answer in answers {
            let Some(mut stream) = accept_within(&listener, Duration::from_secs(30)) else {
                return;
            };
            let (_, body) = read_request(&stream).expect("a request");
            kept.lock()
                .expect("lock")
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            match answer {
                Answer::Json(value) => {
                    let text = value.to_string();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                }
                Answer::Status(code, text) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {code} Refused\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                }
                Answer::Events(events, stall) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                    );
                    for (event, data) in events {
                        if let Some(event) = event {
                            let _ = writeln!(stream, "event: {event}");
                        }
                        let _ = write!(stream, "data: {data}\n\n");
                        let _ = stream.flush();
                        std::thread::sleep(Duration::from_millis(15));
                    }
                    if let Some(stall) = stall {
                        std::thread::sleep(stall);
                    }
                }
            }
        }
    });
    (url, seen)
}

fn text_event(text: &str) -> (Option<&'static str>, String) {
    (
        Some("content_block_delta"),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}).to_string(),
    )
}

/// An Anthropic stream of these text pieces, ended properly.
fn anthropic_text(pieces: &[&str]) -> Vec<(Option<&'static str>, String)> {
    let mut events = vec![
        (Some("message_start"), json!({"type": "message_start", "message": {"id": "msg_1", "model": "m", "role": "assistant", "usage": {"input_tokens": 30, "output_tokens": 1}}}).to_string()),
        (Some("content_block_start"), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string()),
    ];
    events.extend(pieces.iter().map(|p| text_event(p)));
    events.push((
        Some("content_block_stop"),
        json!({"type": "content_block_stop", "index": 0}).to_string(),
    ));
    events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}).to_string()));
    events.push((
        Some("message_stop"),
        json!({"type": "message_stop"}).to_string(),
    ));
    events
}

/// A playtest of the turn-loop fixtures whose story model is `backend` at `url`.
fn playtest(dir: &tempfile::TempDir, backend: &str, url: &str, mode: &str) -> Playtest {
    let base = if backend == "openai" {
        format!("{url}/v1")
    } else {
        url.to_string()
    };
    let models = format!(
        "models:\n  story: {{ backend: {backend}, baseUrl: \"{base}\", model: m, contextWindow: 32768 }}\n"
    );
    covel_tests::turn_loop_playtest(dir.path(), "stream", mode, &models)
}

/// Plays one turn with its text streamed; returns the report and the pieces received.
fn play_streamed(play: &mut Playtest) -> (covel_studio::playtest::TurnReport, Vec<String>) {
    let pieces: Mutex<Vec<String>> = Mutex::default();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let turn = play
        .prepare_turn("I listen.", None)
        .map_err(|r| r.error)
        .expect("a turn");
    let on_text = |text: &str| pieces.lock().expect("lock").push(text.to_string());
    let answer = turn.ask_streaming(&cancel, Some(&on_text));
    let report = play.finish_turn(turn, answer, &cancel);
    (report, pieces.into_inner().expect("pieces"))
}

#[test]
fn an_anthropic_stream_arrives_piece_by_piece_and_the_turn_keeps_its_reply_and_usage() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = fake(vec![Answer::Events(
        anthropic_text(&["The bell ", "rings ", "once."]),
        None,
    )]);
    let mut play = playtest(&dir, "anthropic", &url, "none");
    let (report, pieces) = play_streamed(&mut play);
    assert_eq!(report.error, None);
    assert_eq!(
        pieces,
        ["The bell ", "rings ", "once."],
        "the text arrived as it came"
    );
    let reply = report.reply.expect("a reply");
    assert_eq!(reply.text, "The bell rings once.");
    assert_eq!(
        reply.usage,
        Some(json!({"input_tokens": 30, "output_tokens": 12}))
    );
    let streamed = reply.streamed.expect("streamed");
    assert_eq!(streamed.chunks, 8);
    assert!(streamed.first_token_ms.is_some());
    assert_eq!(
        seen.lock().expect("lock")[0]["stream"],
        true,
        "the request asked for a stream"
    );
    assert_eq!(play.workspace.session.history.messages.len(), 4);
}

#[test]
fn an_openai_compatible_stream_with_a_tool_call_and_the_usage_chunk_runs_the_tool() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chunk = |v: Value| (None, v.to_string());
    let (url, seen) = fake(vec![
        Answer::Events(
            vec![
                chunk(
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "set-scene", "arguments": "{\"sceneId\":\"cr"}}]}}]}),
                ),
                chunk(
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "ypt\",\"name\":\"The Crypt\"}"}}]}, "finish_reason": "tool_calls"}]}),
                ),
                chunk(
                    json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}),
                ),
                (None, "[DONE]".to_string()),
            ],
            None,
        ),
        Answer::Events(
            vec![
                chunk(json!({"choices": [{"index": 0, "delta": {"content": "Cold "}}]})),
                chunk(
                    json!({"choices": [{"index": 0, "delta": {"content": "air rises."}, "finish_reason": "stop"}]}),
                ),
                chunk(
                    json!({"choices": [], "usage": {"prompt_tokens": 60, "completion_tokens": 4}}),
                ),
                (None, "[DONE]".to_string()),
            ],
            None,
        ),
    ]);
    let mut play = playtest(&dir, "openai", &url, "none");
    let (report, pieces) = play_streamed(&mut play);
    assert_eq!(report.error, None);
    assert_eq!(pieces.concat(), "Cold air rises.");
    let reply = report.reply.expect("a reply");
    assert_eq!(
        reply.usage,
        Some(json!({"prompt_tokens": 60, "completion_tokens": 4}))
    );
    let stage = play
        .workspace
        .session
        .plugin_data
        .iter()
        .find(|r| r.plugin_id == "stage")
        .map(|r| r.value.clone());
    assert_eq!(
        stage,
        Some(json!({"sceneId": "crypt", "name": "The Crypt"})),
        "the streamed tool call ran"
    );
    let requests = seen.lock().expect("lock");
    assert_eq!(
        requests[0]["stream_options"],
        json!({"include_usage": true})
    );
}

#[test]
fn a_hook_that_says_stream_false_gets_an_unstreamed_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, seen) = fake(vec![Answer::Json(
        json!({"content": [{"type": "text", "text": "Whole."}], "stop_reason": "end_turn"}),
    )]);
    let mut play = playtest(&dir, "anthropic", &url, "no-stream");
    let (report, pieces) = play_streamed(&mut play);
    assert_eq!(report.error, None);
    assert!(seen.lock().expect("lock")[0].get("stream").is_none());
    let reply = report.reply.expect("a reply");
    assert!(reply.streamed.is_none());
    assert_eq!(reply.text, "Whole.");
    assert!(
        pieces.is_empty(),
        "not streamed: the text comes with the turn's reply"
    );
}

/// Plays a turn that must fail with `expected` in its error and leave the session as it was.
fn fails_and_keeps_the_session(answer: Answer, backend: &str, expected: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, _) = fake(vec![answer]);
    let mut play = playtest(&dir, backend, &url, "none");
    let before = play.workspace.session.clone();
    let (report, _) = play_streamed(&mut play);
    assert!(
        report
            .error
            .as_deref()
            .is_some_and(|e| e.contains(expected)),
        "{:?}",
        report.error
    );
    assert_eq!(play.workspace.session, before, "the session is as it was");
    assert_eq!(play.turns(), 0);
}

#[test]
fn an_error_event_ends_the_turn_with_its_message() {
    let mut events = anthropic_text(&["Half a"]);
    events.truncate(3);
    events.push((
        Some("error"),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            .to_string(),
    ));
    fails_and_keeps_the_session(
        Answer::Events(events, None),
        "anthropic",
        "the model's stream reported an error: overloaded_error: Overloaded",
    );
}

#[test]
fn a_cut_connection_ends_the_turn() {
    let mut events = anthropic_text(&["Half a", " sentence"]);
    events.truncate(4);
    fails_and_keeps_the_session(
        Answer::Events(events, None),
        "anthropic",
        "the stream stopped before its end (message_stop) after 4 chunks",
    );
}

#[test]
fn a_malformed_chunk_ends_the_turn() {
    fails_and_keeps_the_session(
        Answer::Events(vec![(None, "{\"choices\": [".to_string())], None),
        "openai",
        "a chunk of the stream is not JSON",
    );
}

#[test]
fn a_stalled_stream_ends_at_the_call_s_deadline() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut events = anthropic_text(&["Slow"]);
    events.truncate(3);
    // The server stalls 10 s, the call's deadline is 600 ms: far enough apart that a loaded
    // machine cannot blur them.
    let (url, _) = fake(vec![Answer::Events(events, Some(Duration::from_secs(10)))]);
    let play = playtest(&dir, "anthropic", &url, "none");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let body =
        json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let pieces: Mutex<Vec<String>> = Mutex::default();
    let started = std::time::Instant::now();
    let answer = play.story_backend().complete_streaming(
        &body,
        &body,
        &cancel,
        Duration::from_millis(600),
        &|text| pieces.lock().expect("lock").push(text.to_string()),
    );
    let error = answer.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("no answer within 600 ms"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it did not wait for the server"
    );
    assert_eq!(
        pieces.into_inner().expect("pieces"),
        ["Slow"],
        "what came before the stall arrived"
    );
}

#[test]
fn a_streamed_turn_s_recording_replays_unstreamed_and_a_server_that_does_not_stream_is_read_whole()
{
    let dir = tempfile::tempdir().expect("temp dir");
    // The second server answers a stream request with JSON, as one that cannot stream does.
    let (url, _) = fake(vec![Answer::Events(anthropic_text(&["Streamed."]), None)]);
    let mut play = playtest(&dir, "anthropic", &url, "none");
    let (report, _) = play_streamed(&mut play);
    assert_eq!(report.error, None);
    let recording = dir.path().join("stream.recording.json");
    play.story_backend()
        .recording()
        .save(&recording)
        .expect("saved");
    let session = dir.path().join("stream.session.yaml");
    let text = std::fs::read_to_string(&session).expect("read");
    let replayed = text.replace(
        &format!("backend: anthropic, baseUrl: \"{url}\""),
        "backend: replay, recording: stream.recording.json",
    );
    std::fs::write(&session, replayed).expect("written");
    let ws =
        Workspace::open(&fixture("turn-loop"), Some(&session), &Limits::default()).expect("opens");
    let mut again = Playtest::new(ws);
    let report = again.play("I listen.");
    assert_eq!(
        report.error, None,
        "the recorded stream answers an unstreamed request"
    );
    assert_eq!(report.reply.map(|r| r.text).as_deref(), Some("Streamed."));

    let (url, _) = fake(vec![Answer::Json(
        json!({"content": [{"type": "text", "text": "Whole anyway."}], "stop_reason": "end_turn"}),
    )]);
    let other = tempfile::tempdir().expect("temp dir");
    let mut play = playtest(&other, "anthropic", &url, "none");
    let (report, _) = play_streamed(&mut play);
    assert_eq!(report.error, None);
    assert_eq!(
        report.reply.map(|r| r.text).as_deref(),
        Some("Whole anyway.")
    );
}

#[test]
fn a_server_that_cannot_call_tools_fails_the_turn_saying_so_and_what_to_do() {
    // Ollama's answer for a model without tool support.
    let refusal = Answer::Status(
        400,
        json!({"error": "registry.ollama.ai/library/llama2:latest does not support tools"})
            .to_string(),
    );
    fails_and_keeps_the_session(
        refusal,
        "openai",
        "this server or model does not take tool calls (the request offered 8 tools: set-scene, cue, boom, grab, again, ask-name, ids, emit-event)",
    );
    // A server whose error does not say why still hears that the request offered tools.
    let dir = tempfile::tempdir().expect("temp dir");
    let (url, _) = fake(vec![Answer::Status(500, "internal error".into())]);
    let mut play = playtest(&dir, "openai", &url, "none");
    let (report, _) = play_streamed(&mut play);
    let error = report.error.expect("the turn failed");
    assert!(
        error.contains("HTTP 500") && error.contains("internal error"),
        "{error}"
    );
    assert!(error.contains("the request offered 8 tools"), "{error}");
}

/// A server answering one request with `status` and `body`; returns its URL and the request
/// line's path it got.
fn one_answer(status: u16, body: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Some(mut stream) = accept_within(&listener, Duration::from_secs(30)) {
            let (path, _) = read_request(&stream).expect("a request");
            let _ = tx.send(path);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, rx)
}

fn backend(backend: &str, base_url: &str) -> covel_studio::models::Backend {
    let config: covel_kernel::session::Model = serde_json::from_value(
        json!({"backend": backend, "baseUrl": base_url, "contextWindow": 8192}),
    )
    .expect("a model");
    covel_studio::models::Backend::new(&config)
}

#[test]
fn the_model_picker_lists_what_a_local_server_reports() {
    // Ollama's OpenAI-compatible `GET /v1/models`.
    let (url, path) = one_answer(
        200,
        r#"{"object":"list","data":[{"id":"qwen2.5:7b","object":"model"},{"id":"llama3.1:8b","object":"model"}]}"#,
    );
    let models = backend("openai", &format!("{url}/v1"))
        .list_models()
        .expect("listed");
    assert_eq!(models, ["llama3.1:8b", "qwen2.5:7b"]);
    assert_eq!(path.recv().expect("asked"), "/v1/models");
    // Anthropic's list, under its own path.
    let (url, path) = one_answer(
        200,
        r#"{"data":[{"id":"claude-sonnet-4-5","type":"model"}],"has_more":false}"#,
    );
    assert_eq!(
        backend("anthropic", &url).list_models().expect("listed"),
        ["claude-sonnet-4-5"]
    );
    assert_eq!(path.recv().expect("asked"), "/v1/models");
}

#[test]
fn the_model_picker_says_why_a_server_gave_no_list() {
    let (url, _) = one_answer(401, r#"{"error":{"message":"invalid api key"}}"#);
    let error = backend("openai", &url)
        .list_models()
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("HTTP 401") && error.contains("invalid api key"),
        "{error}"
    );
    let (url, _) = one_answer(200, r#"{"ok":true}"#);
    let error = backend("openai", &url)
        .list_models()
        .expect_err("no list")
        .to_string();
    assert!(error.contains("did not answer a model list"), "{error}");
    let error = backend("scripted", "http://127.0.0.1:9")
        .list_models()
        .expect_err("no server")
        .to_string();
    assert!(
        error.contains("has no server to list models from"),
        "{error}"
    );
    // A redirect is not followed (a key would go along).
    let (url, _) = one_answer(302, "");
    let error = backend("openai", &url)
        .list_models()
        .expect_err("redirect")
        .to_string();
    assert!(error.contains("HTTP 302"), "{error}");
}
