//! Model backends for playtests and for `ctx.gateway`: the embedded scripted model
//! (deterministic, offline, the default), any OpenAI-compatible chat endpoint (Ollama,
//! llama.cpp, LM Studio…), the Anthropic Messages API, and `replay`, which answers from a
//! recording of one of those ([`crate::replay`]). API keys come from the environment variable
//! the session names, and go only to origins the user trusts ([`crate::secrets`]).
//!
//! A replay backend made by [`Backend::rerecording`] (`covel test --rerecord-changed`) asks the
//! backend the recording was made with when the recording has no answer, and logs which
//! exchange answered each request, so the recording can be rewritten from what the run used.

use crate::replay::{Exchange, Recording, ReplayError, Rerecorded, Used};
use covel_kernel::context::TextGateway;
use covel_kernel::sdk::estimate_tokens;
use covel_kernel::session::{Model, ScriptedCall, ScriptedReply};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    pub text: String,
    pub finish_reason: String,
    /// Usage as the API reported it (Anthropic: input, output, cache read and write tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The tools the model asked to call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// How the reply streamed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streamed: Option<Streamed>,
}

impl Reply {
    /// A finished text reply (the scripted model's, a test's).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            finish_reason: "stop".into(),
            usage: None,
            tool_calls: Vec::new(),
            streamed: None,
        }
    }
}

/// A tool call in a model's reply: the call's id (tool results answer it), the tool and its
/// input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model backend `{0}` (use scripted, openai or anthropic)")]
    UnknownBackend(String),
    #[error("environment variable {0} with the API key is not set")]
    MissingKey(String),
    #[error("{0}")]
    UntrustedKey(String),
    #[error("{backend} request failed: {message}")]
    Request {
        backend: &'static str,
        message: String,
    },
    #[error("{backend} answered without text: {body}")]
    NoText { backend: &'static str, body: String },
    #[error("the model request was cancelled")]
    Cancelled,
    #[error(
        "the `{0}` backend has no server to list models from (the picker lists them for openai and anthropic)"
    )]
    NoModelList(String),
    #[error("{0}")]
    Replay(String),
}

/// How often a waiting model call looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The longest listing a server's models may take.
const MODEL_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a model request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// When a model request gives up: its cancel flag, and its deadline; and, for a streamed
/// request, what receives the reply's text as it arrives.
struct Stop<'a> {
    cancel: &'a AtomicBool,
    deadline: std::time::Instant,
    /// The time the request was given (for the message when it runs out).
    within: Duration,
    stream: Option<&'a dyn Fn(&str)>,
}

/// The names of the tools a request body offers (Anthropic's `name`, OpenAI's
/// `function.name`).
fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What an HTTP error from a model server says to the author: the status and the server's
/// words, and, when the request offered tools, what to do if the server or model cannot call
/// them (local servers often cannot: Ollama refuses models without tool support, llama.cpp's
/// server needs `--jinja`).
fn refusal(status: u16, body: &str, offered: &[String]) -> String {
    let body = body.trim();
    let mut message = format!(
        "HTTP {status}: {}",
        if body.is_empty() { "(no body)" } else { body }
    );
    if offered.is_empty() {
        return message;
    }
    let tools = format!(
        "the request offered {} tool{}: {}",
        offered.len(),
        if offered.len() == 1 { "" } else { "s" },
        offered.join(", ")
    );
    let fix = "choose a model that calls tools (Ollama marks them `tools`; start llama.cpp's llama-server with `--jinja`), or play without the plugins that register them (`plugins.excluded` in the session)";
    if body.to_lowercase().contains("tool") {
        message.push_str(&format!(
            "\nthis server or model does not take tool calls ({tools}): {fix}"
        ));
    } else {
        message.push_str(&format!(
            "\n({tools}; if this server or model cannot call tools: {fix})"
        ));
    }
    message
}

/// How long a stream may stay silent before the studio gives up on it (as Covel does).
pub const STREAM_IDLE: Duration = Duration::from_secs(120);

/// How a streamed reply arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Streamed {
    /// From sending the request to the first text.
    pub first_token_ms: Option<f64>,
    /// Events that carried something.
    pub chunks: u32,
}

/// What the thread reading an answer sends.
enum Arrival {
    Text(String),
    Done(Result<(Value, Option<u32>), ModelError>),
}

/// One model slot's backend.
pub struct Backend {
    config: Model,
    turns: AtomicUsize,
    /// Every HTTP request and its answer, in order (what `covel play --record` writes).
    pub exchanges: Mutex<Vec<Exchange>>,
    /// Where a relative `recording` path is resolved (the session file's folder).
    base_dir: Option<PathBuf>,
    replay: OnceLock<Result<Recording, String>>,
    replay_used: Mutex<Vec<bool>>,
    /// Set for a replay backend that re-records what its recording lacks.
    rerecord: Option<Rerecorder>,
}

/// What a re-recording replay backend keeps (see [`Backend::rerecording`]).
#[derive(Default)]
struct Rerecorder {
    /// The backend the recording was made with, made at the first miss (the recording names
    /// which one it is, and it is read only then).
    live: OnceLock<Box<Backend>>,
    /// Which exchange answered each request, in order.
    used: Mutex<Vec<Used>>,
}

impl Backend {
    pub fn new(config: &Model) -> Backend {
        Backend {
            config: config.clone(),
            turns: AtomicUsize::new(0),
            exchanges: Mutex::new(Vec::new()),
            base_dir: None,
            replay: OnceLock::new(),
            replay_used: Mutex::new(Vec::new()),
            rerecord: None,
        }
    }

    /// A `replay` backend for a session file that answers from its recording as
    /// [`Backend::for_session`]'s does, but sends a request the recording lacks to the backend
    /// the recording was made with (with this model's `model`, `baseUrl` and `apiKeyEnv`, its key
    /// going where [`crate::secrets`] allows, as for any live call) and answers with its reply.
    /// [`Backend::rerecorded`] then gives the recording the run leaves.
    pub fn rerecording(config: &Model, session_path: Option<&Path>) -> Backend {
        Backend {
            rerecord: Some(Rerecorder::default()),
            ..Backend::for_session(config, session_path)
        }
    }

    /// How many requests a re-recording backend has answered afresh so far (0 for any other).
    pub fn rerecorded_count(&self) -> usize {
        self.rerecord.as_ref().map_or(0, |r| {
            lock(&r.used)
                .iter()
                .filter(|u| matches!(u, Used::Fresh(_)))
                .count()
        })
    }

    /// For a re-recording backend, the recording the run so far leaves (see
    /// [`Recording::rerecorded`]); `None` for any other backend.
    pub fn rerecorded(&self) -> Option<Result<Rerecorded, ModelError>> {
        let rerecord = self.rerecord.as_ref()?;
        Some(
            self.loaded_recording()
                .map(|recording| recording.rerecorded(&lock(&rerecord.used))),
        )
    }

    /// A backend for a session file: its `recording` path is relative to the file's folder.
    pub fn for_session(config: &Model, session_path: Option<&Path>) -> Backend {
        Backend {
            base_dir: session_path.and_then(Path::parent).map(Path::to_path_buf),
            ..Backend::new(config)
        }
    }

    /// What this backend sent and got over HTTP, as a recording for the `replay` backend.
    pub fn recording(&self) -> Recording {
        Recording::new(
            &self.config.backend,
            self.exchanges
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }

    pub fn name(&self) -> &str {
        &self.config.backend
    }

    /// Sends an assembled request (`anthropic` and `openai` are the request bodies the prompt
    /// assembly produced; the backend picks its own) and gives up as soon as `cancel` is set or
    /// `within` has passed, also while an HTTP request is in flight: the call returns within a
    /// poll interval, and the abandoned request's answer is discarded when it arrives (or at its
    /// timeout).
    pub fn complete_within(
        &self,
        anthropic: &Value,
        openai: &Value,
        cancel: &AtomicBool,
        within: Duration,
    ) -> Result<Reply, ModelError> {
        self.complete(anthropic, openai, cancel, within, None)
    }

    /// [`Backend::complete_within`] with the reply streamed: `on_text` receives its text as it
    /// arrives (a real backend's server-sent events; the scripted and replay backends give it
    /// whole). A stream that stays silent for [`STREAM_IDLE`] is given up.
    pub fn complete_streaming(
        &self,
        anthropic: &Value,
        openai: &Value,
        cancel: &AtomicBool,
        within: Duration,
        on_text: &dyn Fn(&str),
    ) -> Result<Reply, ModelError> {
        let reply = self.complete(anthropic, openai, cancel, within, Some(on_text))?;
        if reply.streamed.is_none() && !reply.text.is_empty() {
            on_text(&reply.text);
        }
        Ok(reply)
    }

    fn complete(
        &self,
        anthropic: &Value,
        openai: &Value,
        cancel: &AtomicBool,
        within: Duration,
        stream: Option<&dyn Fn(&str)>,
    ) -> Result<Reply, ModelError> {
        if cancel.load(Ordering::SeqCst) {
            return Err(ModelError::Cancelled);
        }
        let stop = Stop {
            cancel,
            deadline: std::time::Instant::now() + within.min(REQUEST_TIMEOUT),
            within: within.min(REQUEST_TIMEOUT),
            stream,
        };
        // A streamed request asks for a stream (and, from OpenAI-compatible servers, the usage
        // at its end); recordings keep the request as sent.
        let streamed = |body: &Value, usage: bool| {
            let mut body = body.clone();
            body["stream"] = json!(true);
            if usage {
                body["stream_options"] = json!({"include_usage": true});
            }
            body
        };
        match (self.config.backend.as_str(), stream.is_some()) {
            ("scripted", _) => Ok(self.scripted_story(openai)),
            ("openai", false) => self.openai(openai, &stop),
            ("openai", true) => self.openai(&streamed(openai, true), &stop),
            ("anthropic", false) => self.anthropic(anthropic, &stop),
            ("anthropic", true) => self.anthropic(&streamed(anthropic, false), &stop),
            // A recording answers a request whether or not it asks for a stream.
            ("replay", _) => self.replay(anthropic, openai, cancel, within, stream),
            (other, _) => Err(ModelError::UnknownBackend(other.to_string())),
        }
    }

    /// The recording file a `replay` backend answers from (relative to the session's folder).
    pub fn recording_path(&self) -> Result<PathBuf, ModelError> {
        let path = self
            .config
            .recording
            .as_deref()
            .ok_or_else(|| ModelError::Replay(ReplayError::NoRecording.to_string()))?;
        Ok(self
            .base_dir
            .as_deref()
            .map_or_else(|| PathBuf::from(path), |dir| dir.join(path)))
    }

    /// The recording, read once (its error too).
    fn loaded_recording(&self) -> Result<&Recording, ModelError> {
        self.replay
            .get_or_init(|| {
                let path = self.recording_path().map_err(|e| e.to_string())?;
                Recording::load(&path).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ModelError::Replay(e.clone()))
    }

    /// Answers from the recording with the reply the recorded backend got for this very
    /// request; a re-recording backend asks the recorded backend about a request it lacks.
    fn replay(
        &self,
        anthropic: &Value,
        openai: &Value,
        cancel: &AtomicBool,
        within: Duration,
        stream: Option<&dyn Fn(&str)>,
    ) -> Result<Reply, ModelError> {
        let recording = self.loaded_recording()?;
        let body = match recording.backend.as_str() {
            "anthropic" => self.with_model(anthropic),
            _ => self.with_model(openai),
        };
        let found = recording.find(&body, &mut lock(&self.replay_used));
        match (found, &self.rerecord) {
            (Some(index), rerecord) => {
                if let Some(rerecord) = rerecord {
                    lock(&rerecord.used).push(Used::Recorded(index));
                }
                let answer = &recording.exchanges[index].response;
                if recording.backend == "anthropic" {
                    anthropic_reply(answer)
                } else {
                    openai_reply(answer)
                }
            }
            (None, None) => Err(ModelError::Replay(recording.miss_report(&body))),
            (None, Some(rerecord)) => {
                let live = rerecord.live.get_or_init(|| {
                    Box::new(Backend::new(&Model {
                        backend: recording.backend.clone(),
                        recording: None,
                        ..self.config.clone()
                    }))
                });
                let reply = live.complete(anthropic, openai, cancel, within, stream);
                // The live backend keeps what it sent and got, as for `covel play --record`; an
                // answer without a usable reply is not kept (the turn fails on it).
                let fresh = std::mem::take(&mut *lock(&live.exchanges));
                let reply = reply?;
                lock(&rerecord.used).extend(fresh.into_iter().map(Used::Fresh));
                Ok(reply)
            }
        }
    }

    fn scripted_story(&self, openai: &Value) -> Reply {
        let turn = self.turns.fetch_add(1, Ordering::Relaxed);
        let last_user = openai["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        Reply::text(scripted_reply(&self.config.script, turn, last_user))
    }

    /// The scripted backend's calls for its next turn (the session's `models.story.script`,
    /// cycled, `{turn}` filled with the turn's id, `{player}` with the message); `None` for any
    /// other backend.
    pub fn scripted_turn(&self, message: &str, turn_id: &str) -> Option<Vec<ScriptedCall>> {
        (self.config.backend == "scripted").then(|| {
            let turn = self.turns.fetch_add(1, Ordering::Relaxed);
            let number = turn_number_of(turn_id).unwrap_or(turn + 1);
            scripted_calls_numbered(&self.config.script, turn, number, message)
        })
    }

    /// Sets where the scripted backend is in its script (the turns a line of play has played)
    /// and returns where it was: each branch of a playtest continues its own script.
    pub fn replace_scripted_position(&self, turns: usize) -> usize {
        self.turns.swap(turns, Ordering::Relaxed)
    }

    /// The key to send to `base`, if the user trusts that pair (see [`crate::secrets`]).
    fn key(&self, base: &str) -> Result<Option<String>, ModelError> {
        let trusted = crate::secrets::trusted_keys().map_err(ModelError::UntrustedKey)?;
        match crate::secrets::key_use(self.config.api_key_env.as_deref(), base, &trusted)
            .map_err(ModelError::UntrustedKey)?
        {
            crate::secrets::KeyUse::None => Ok(None),
            crate::secrets::KeyUse::Send(var) => std::env::var(&var)
                .map(Some)
                .map_err(|_| ModelError::MissingKey(var)),
        }
    }

    /// An HTTP agent for one request: at most `within`, and no redirect followed (a redirect
    /// would carry the key's header to wherever the server points: `x-api-key` is not one of
    /// the headers an HTTP client drops across origins). A redirect is reported instead.
    fn agent(&self, within: Duration) -> ureq::Agent {
        ureq::Agent::config_builder()
            .timeout_global(Some(within.max(Duration::from_millis(20))))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into()
    }

    /// POSTs a JSON body. The blocking request runs on its own thread while this one watches
    /// `cancel`, so a cancelled call returns at once instead of at the server's answer.
    fn post(
        &self,
        backend: &'static str,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
        stop: &Stop<'_>,
    ) -> Result<(Value, Option<Streamed>), ModelError> {
        let left = stop
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        // The client's own limit comes after the call's deadline: the deadline is what gives
        // up (and says so), the client only stops the abandoned request's thread.
        let mut request = self.agent(left + Duration::from_secs(2)).post(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request_body = body.clone();
        let offered = offered_tools(body);
        let body = body.clone();
        let wire = (body["stream"] == true).then_some(if backend == "anthropic" {
            crate::streaming::Wire::Anthropic
        } else {
            crate::streaming::Wire::OpenAi
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let send = move || {
            let answer = (|| {
                let mut response = request.send_json(&body).map_err(|e| ModelError::Request {
                    backend,
                    message: e.to_string(),
                })?;
                let status = response.status();
                if status.is_redirection() {
                    let to = response
                        .headers()
                        .get("location")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("(no location)")
                        .to_string();
                    return Err(ModelError::Request {
                        backend,
                        message: format!(
                            "HTTP {status}: the server redirects to {to}; the studio does not follow a model server's redirects (your key would go along): set `baseUrl` to where it points, if you trust it"
                        ),
                    });
                }
                // A server that does not stream answers a stream request with JSON: read as it is.
                let is_stream = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.contains("text/event-stream"));
                if let Some(wire) = wire.filter(|_| status.is_success() && is_stream) {
                    // The events arrive as they come; their text goes to the caller at once.
                    let mut assembler = crate::streaming::Assembler::new(wire);
                    let reader = std::io::BufReader::new(response.into_body().into_reader());
                    let text_tx = tx.clone();
                    crate::streaming::read_events(reader, |event, data| {
                        if let Some(text) = assembler.feed(event, data)? {
                            let _ = text_tx.send(Arrival::Text(text));
                        }
                        Ok(true)
                    })
                    .map_err(|message| ModelError::Request { backend, message })?;
                    let chunks = assembler.chunks;
                    return assembler
                        .finish()
                        .map(|answer| (answer, Some(chunks)))
                        .map_err(|message| ModelError::Request { backend, message });
                }
                if !status.is_success() {
                    // Whatever the body is (JSON or text): its words are the server's reason.
                    let text = response
                        .body_mut()
                        .with_config()
                        .limit(64 * 1024)
                        .read_to_string()
                        .unwrap_or_default();
                    return Err(ModelError::Request {
                        backend,
                        message: refusal(status.as_u16(), &text, &offered),
                    });
                }
                let answer: Value =
                    response
                        .body_mut()
                        .read_json()
                        .map_err(|e| ModelError::Request {
                            backend,
                            message: e.to_string(),
                        })?;
                Ok((answer, None))
            })();
            // The receiver is gone when the call was cancelled: the answer is discarded.
            let _ = tx.send(Arrival::Done(answer));
        };
        std::thread::Builder::new()
            .name(format!("covel-{backend}-request"))
            .spawn(send)
            .map_err(|e| ModelError::Request {
                backend,
                message: format!("cannot start the request: {e}"),
            })?;
        let sent = std::time::Instant::now();
        let mut last_arrival = sent;
        let mut first_text: Option<Duration> = None;
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(Arrival::Text(text)) => {
                    last_arrival = std::time::Instant::now();
                    first_text.get_or_insert_with(|| sent.elapsed());
                    if let Some(on_text) = stop.stream {
                        on_text(&text);
                    }
                }
                Ok(Arrival::Done(answer)) => {
                    // A recording (`covel play --record`) keeps every answered exchange (a
                    // stream as the answer it assembled to).
                    if let Ok((answer, _)) = &answer {
                        self.exchanges
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(Exchange {
                                request: request_body,
                                response: answer.clone(),
                            });
                    }
                    return answer.map(|(answer, chunks)| {
                        let streamed = chunks.map(|chunks| Streamed {
                            first_token_ms: first_text
                                .map(|d| (d.as_secs_f64() * 100_000.0).round() / 100.0),
                            chunks,
                        });
                        (answer, streamed)
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if wire.is_some() && last_arrival.elapsed() >= STREAM_IDLE =>
                {
                    return Err(ModelError::Request {
                        backend,
                        message: format!(
                            "the stream stayed silent for {} s; the studio gave up on it",
                            STREAM_IDLE.as_secs()
                        ),
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if stop.cancel.load(Ordering::SeqCst) =>
                {
                    return Err(ModelError::Cancelled);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if std::time::Instant::now() >= stop.deadline =>
                {
                    return Err(ModelError::Request {
                        backend,
                        message: format!("no answer within {} ms", stop.within.as_millis()),
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ModelError::Request {
                        backend,
                        message: "the request ended without an answer".into(),
                    });
                }
            }
        }
    }

    fn with_model(&self, body: &Value) -> Value {
        let mut body = body.clone();
        if let Some(model) = &self.config.model {
            body["model"] = json!(model);
        }
        body
    }

    /// The models the backend's server says it serves (`GET /models` of an OpenAI-compatible
    /// server, local ones included; `GET /v1/models` of Anthropic's API), sorted: what the
    /// window's model picker offers. The key rules and the refusal of redirects are those of
    /// a played turn's request.
    pub fn list_models(&self) -> Result<Vec<String>, ModelError> {
        let (backend, url, headers): (&'static str, String, Vec<(&str, String)>) =
            match self.config.backend.as_str() {
                "openai" => {
                    let base = self.base_url();
                    let mut headers = Vec::new();
                    if let Some(key) = self.key(&base)? {
                        headers.push(("authorization", format!("Bearer {key}")));
                    }
                    (
                        "openai",
                        format!("{}/models", base.trim_end_matches('/')),
                        headers,
                    )
                }
                "anthropic" => {
                    let base = self.base_url();
                    let mut headers = vec![("anthropic-version", "2023-06-01".to_string())];
                    if let Some(key) = self.key(&base)? {
                        headers.push(("x-api-key", key));
                    }
                    (
                        "anthropic",
                        format!("{}/v1/models", base.trim_end_matches('/')),
                        headers,
                    )
                }
                other => {
                    return Err(ModelError::NoModelList(other.to_string()));
                }
            };
        let mut request = self.agent(MODEL_LIST_TIMEOUT).get(&url);
        for (name, value) in &headers {
            request = request.header(*name, value);
        }
        let failed = |message: String| ModelError::Request { backend, message };
        let mut response = request.call().map_err(|e| failed(format!("{url}: {e}")))?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(4 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| failed(format!("{url}: {e}")))?;
        if !status.is_success() {
            return Err(failed(format!(
                "{url}: {}",
                refusal(status.as_u16(), &text, &[])
            )));
        }
        let answer: Value = serde_json::from_str(&text)
            .map_err(|e| failed(format!("{url} did not answer a model list: {e}")))?;
        // OpenAI, Anthropic and OpenAI-compatible servers: `data[].id`; Ollama's own API:
        // `models[].name`.
        let mut ids: Vec<String> = answer["data"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|m| m["id"].as_str())
                    .map(str::to_string)
                    .collect()
            })
            .or_else(|| {
                answer["models"].as_array().map(|d| {
                    d.iter()
                        .filter_map(|m| m["name"].as_str().or(m["model"].as_str()))
                        .map(str::to_string)
                        .collect()
                })
            })
            .ok_or_else(|| failed(format!("{url} did not answer a model list (no `data`)")))?;
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The server's address: the session's `baseUrl`, else the backend's usual one.
    fn base_url(&self) -> String {
        self.config.base_url.clone().unwrap_or_else(|| {
            if self.config.backend == "anthropic" {
                "https://api.anthropic.com".into()
            } else {
                "http://127.0.0.1:11434/v1".into()
            }
        })
    }

    fn openai(&self, body: &Value, stop: &Stop<'_>) -> Result<Reply, ModelError> {
        let base = self.base_url();
        let mut headers = Vec::new();
        if let Some(key) = self.key(&base)? {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let (answer, streamed) = self.post(
            "openai",
            &format!("{}/chat/completions", base.trim_end_matches('/')),
            &headers,
            &self.with_model(body),
            stop,
        )?;
        openai_reply(&answer).map(|reply| Reply { streamed, ..reply })
    }

    fn anthropic(&self, body: &Value, stop: &Stop<'_>) -> Result<Reply, ModelError> {
        let base = self.base_url();
        let mut headers = vec![("anthropic-version", "2023-06-01".to_string())];
        if let Some(key) = self.key(&base)? {
            headers.push(("x-api-key", key));
        }
        let (answer, streamed) = self.post(
            "anthropic",
            &format!("{}/v1/messages", base.trim_end_matches('/')),
            &headers,
            &self.with_model(body),
            stop,
        )?;
        anthropic_reply(&answer).map(|reply| Reply { streamed, ..reply })
    }

    /// A gateway text request (`{system?, prompt?, messages?, maxOutputTokens?}`), given up
    /// after `within`.
    pub fn generate_text(&self, request: &Value, within: Duration) -> Result<Reply, ModelError> {
        let system = request["system"].as_str().unwrap_or_default();
        let prompt = request["prompt"].as_str().unwrap_or_default();
        let max_tokens = request["maxOutputTokens"]
            .as_u64()
            .unwrap_or(u64::from(self.config.reserved_for_response));
        if self.config.backend == "scripted" {
            if let Some(fault) = self
                .config
                .scripted_failures
                .iter()
                .find(|f| prompt.contains(f.as_str()))
            {
                return Err(ModelError::Request {
                    backend: "scripted",
                    message: format!("scripted failure (the prompt contains `{fault}`)"),
                });
            }
            return Ok(scripted_summary(prompt, max_tokens));
        }
        let mut messages: Vec<Value> = request["messages"].as_array().cloned().unwrap_or_default();
        if !prompt.is_empty() {
            messages.push(json!({"role": "user", "content": prompt}));
        }
        let model = self.config.model.clone().unwrap_or_else(|| "fast".into());
        let anthropic = json!({"model": model, "max_tokens": max_tokens, "system": system, "messages": messages});
        let mut openai_messages = vec![json!({"role": "system", "content": system})];
        openai_messages.extend(messages.iter().cloned());
        let openai = json!({"model": model, "max_tokens": max_tokens, "messages": openai_messages});
        self.complete_within(&anthropic, &openai, &AtomicBool::new(false), within)
    }
}

/// A lock whose holder panicked is still good here: what it guards is only appended to.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the scripted story model answers when the session gives it no script.
pub const UNSCRIPTED_REPLY: &str = "(The story continues.)";

/// The scripted story model's reply on its `turn`-th call (0-based) to the player's `message`:
/// the session's `models.story.script`, cycled, with `{turn}` (1-based) and `{player}` filled
/// in; [`UNSCRIPTED_REPLY`] without a script. The replies belong to the session (the demo's
/// narration is in `plugins-sample/demo.session.yaml`).
pub fn scripted_reply(script: &[ScriptedReply], turn: usize, message: &str) -> String {
    scripted_calls(script, turn, message)
        .last()
        .and_then(|c| c.text.clone())
        .unwrap_or_default()
}

/// The scripted story model's calls in its `turn`-th turn (see [`scripted_reply`]).
pub fn scripted_calls(script: &[ScriptedReply], turn: usize, message: &str) -> Vec<ScriptedCall> {
    scripted_calls_numbered(script, turn, turn + 1, message)
}

/// The number of a turn id the studio gives (`turn-4` → 4), which a scripted reply's `{turn}`
/// shows, so the reply names the turn it is in.
pub fn turn_number_of(turn_id: &str) -> Option<usize> {
    turn_id.strip_prefix("turn-")?.parse().ok()
}

/// The scripted story model's calls in its `turn`-th turn (0-based, which script entry), with
/// `{turn}` filled as `number`.
pub fn scripted_calls_numbered(
    script: &[ScriptedReply],
    turn: usize,
    number: usize,
    message: &str,
) -> Vec<ScriptedCall> {
    let fill = |text: &str| {
        text.replace("{turn}", &number.to_string())
            .replace("{player}", message.trim())
    };
    match script.get(turn % script.len().max(1)) {
        Some(entry) => entry
            .calls()
            .into_iter()
            .map(|call| ScriptedCall {
                text: call.text.as_deref().map(fill),
                tools: call.tools,
            })
            .collect(),
        None => vec![ScriptedCall {
            text: Some(UNSCRIPTED_REPLY.to_string()),
            tools: Vec::new(),
        }],
    }
}

/// The reply in an OpenAI chat answer: its text and its tool calls (whose `arguments` are JSON
/// text; text that is not JSON is kept as a string for the tool's input check to refuse).
fn openai_reply(answer: &Value) -> Result<Reply, ModelError> {
    let message = answer.pointer("/choices/0/message");
    let text = message.and_then(|m| m["content"].as_str());
    let tool_calls: Vec<ToolCall> = message
        .and_then(|m| m["tool_calls"].as_array())
        .into_iter()
        .flatten()
        .map(|call| {
            let arguments = call.pointer("/function/arguments");
            let input = match arguments {
                Some(Value::String(text)) => {
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                }
                Some(other) => other.clone(),
                None => json!({}),
            };
            ToolCall {
                id: call["id"].as_str().unwrap_or_default().to_string(),
                name: call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                input,
            }
        })
        .collect();
    if text.is_none() && tool_calls.is_empty() {
        return Err(ModelError::NoText {
            backend: "openai",
            body: answer.to_string(),
        });
    }
    let finish = answer
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .unwrap_or("stop");
    Ok(Reply {
        text: text.unwrap_or_default().to_string(),
        finish_reason: finish.to_string(),
        usage: answer.get("usage").cloned(),
        tool_calls,
        streamed: None,
    })
}

/// The reply in an Anthropic Messages answer: its text blocks and its `tool_use` blocks.
fn anthropic_reply(answer: &Value) -> Result<Reply, ModelError> {
    let blocks = answer["content"].as_array().cloned().unwrap_or_default();
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    let tool_calls: Vec<ToolCall> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| ToolCall {
            id: b["id"].as_str().unwrap_or_default().to_string(),
            name: b["name"].as_str().unwrap_or_default().to_string(),
            input: b.get("input").cloned().unwrap_or_else(|| json!({})),
        })
        .collect();
    if text.is_empty() && tool_calls.is_empty() {
        return Err(ModelError::NoText {
            backend: "anthropic",
            body: answer.to_string(),
        });
    }
    let finish = answer["stop_reason"].as_str().unwrap_or("end_turn");
    Ok(Reply {
        text,
        finish_reason: finish.to_string(),
        usage: answer.get("usage").cloned(),
        tool_calls,
        streamed: None,
    })
}

/// The scripted model's summary: the first sentence of each rendered message, kept within the
/// requested size. Deterministic, so played sessions and their snapshots are reproducible.
fn scripted_summary(prompt: &str, max_tokens: u64) -> Reply {
    let mut lines = Vec::new();
    for block in prompt.split("\n\n") {
        let Some(rest) = block.strip_prefix('[') else {
            continue;
        };
        let Some((role, content)) = rest.split_once("]: ") else {
            continue;
        };
        let first = content
            .split(['.', '!', '?'])
            .next()
            .unwrap_or(content)
            .trim();
        let first: String = first.chars().take(80).collect();
        lines.push(format!("{role}: {first}."));
    }
    if lines.is_empty() {
        // Merging summaries: keep the opening of each selected summary.
        lines = prompt
            .split("\n---\n")
            .map(|s| s.trim().chars().take(120).collect::<String>())
            .filter(|s| !s.is_empty())
            .collect();
    }
    let budget = (max_tokens.max(8) * 4) as usize;
    let mut text = String::from("Earlier: ");
    for line in lines {
        if estimate_tokens(&format!("{text} {line}")) > max_tokens {
            break;
        }
        text.push(' ');
        text.push_str(&line);
    }
    let text: String = text.chars().take(budget).collect();
    Reply::text(text)
}

/// `ctx.gateway` over the session's fast model.
pub struct FastGateway {
    pub fast: Backend,
}

impl TextGateway for FastGateway {
    fn generate(&self, request: &Value, within: Duration) -> Result<Value, String> {
        let reply = self
            .fast
            .generate_text(request, within)
            .map_err(|e| e.to_string())?;
        serde_json::to_value(reply).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, Read, Write};

    /// A loopback OpenAI-compatible server that answers one request with `text`; joined, it
    /// gives the body it received.
    fn one_answer(text: &'static str) -> (String, std::thread::JoinHandle<Value>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("a request");
            let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("header");
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().expect("length");
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).expect("body");
            let answer =
                json!({"choices": [{"message": {"content": text}, "finish_reason": "stop"}]})
                    .to_string();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .expect("answer");
            serde_json::from_slice(&body).expect("JSON")
        });
        (url, server)
    }

    fn openai_request(say: &str) -> Value {
        json!({"model": "m", "messages": [{"role": "user", "content": say}]})
    }

    #[test]
    fn a_rerecording_replay_backend_answers_hits_from_the_recording_and_asks_the_recorded_backend_about_misses()
     {
        let dir = std::env::temp_dir().join(format!("covel-rerecord-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let session = dir.join("s.session.yaml");
        let recorded = Exchange {
            request: openai_request("old"),
            response: json!({"choices": [{"message": {"content": "recorded"}}]}),
        };
        Recording::new("openai", vec![recorded.clone(), recorded.clone()])
            .save(&dir.join("r.json"))
            .expect("save");
        let (url, server) = one_answer("fresh");
        let config = Model {
            backend: "replay".into(),
            model: Some("m".into()),
            base_url: Some(url),
            recording: Some("r.json".into()),
            ..covel_kernel::session::Models::default().story
        };
        let ask = |backend: &Backend, say: &str| {
            let request = openai_request(say);
            backend
                .complete_within(
                    &request,
                    &request,
                    &AtomicBool::new(false),
                    Duration::from_secs(10),
                )
                .map(|r| r.text)
        };

        let plain = Backend::for_session(&config, Some(&session));
        assert!(
            ask(&plain, "new").is_err_and(|e| e.to_string().contains("replay miss")),
            "without re-recording a miss fails"
        );
        assert!(plain.rerecorded().is_none());

        let backend = Backend::rerecording(&config, Some(&session));
        assert_eq!(ask(&backend, "old").as_deref(), Ok("recorded"));
        assert_eq!(ask(&backend, "new").as_deref(), Ok("fresh"));
        assert_eq!(
            server.join().expect("server")["messages"][0]["content"],
            "new"
        );
        assert_eq!(backend.rerecorded_count(), 1);
        let run = backend
            .rerecorded()
            .expect("re-recording")
            .expect("the recording");
        assert_eq!(
            (run.kept, run.rerecorded, run.dropped, run.changed),
            (1, 1, 1, true)
        );
        assert_eq!(run.recording.exchanges[0], recorded);
        assert_eq!(run.recording.exchanges[1].request, openai_request("new"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_scripted_turn_placeholder_is_the_number_of_its_turn_id() {
        let script = vec![ScriptedReply::from("turn {turn}: {player}")];
        // Played after two turns of history, the first scripted entry is turn-3's reply.
        let calls = scripted_calls_numbered(&script, 0, turn_number_of("turn-3").unwrap_or(0), "x");
        assert_eq!(calls[0].text.as_deref(), Some("turn 3: x"));
        assert_eq!(turn_number_of("turn-12"), Some(12));
        assert_eq!(turn_number_of("t2"), None);
    }

    #[test]
    fn scripted_replies_come_from_the_session_cycled_with_turn_and_player_filled_in() {
        let script = vec![
            ScriptedReply::from("turn {turn}: {player}"),
            ScriptedReply::from("second"),
        ];
        assert_eq!(scripted_reply(&script, 0, " I swim. "), "turn 1: I swim.");
        assert_eq!(scripted_reply(&script, 1, "x"), "second");
        assert_eq!(scripted_reply(&script, 2, "I dive."), "turn 3: I dive.");

        assert_eq!(
            scripted_reply(&[], 5, "anything"),
            UNSCRIPTED_REPLY,
            "no narration of its own without a script"
        );
    }
}
