//! The cache-and-cost forecast on fixture sessions: a changed `stable` segment predicts a cache
//! write at its turn and is named; a prompt under the minimum predicts no caching and says why;
//! the totals add up from the per-turn rows; counts are remembered per segment; and loopback
//! fakes of the Anthropic and OpenAI APIs, returning `usage` with cache fields, agree with the
//! forecast — or, when the provider behaves differently, the mismatch names where its cache
//! stopped. World lore is attributed where the assembly put it, never by its tags.

use covel_js::Limits;
use covel_studio::Workspace;
use covel_studio::facts::ModelFacts;
use covel_studio::forecast::{self, Forecast, ForecastOptions, Outcome, PlayedTurn};
use covel_studio::scripts::Script;
use covel_studio::tokens::{Encoding, EstimateRule, TokenCounter};
use covel_tests::http_fake::{accept_within, read_request, write_json};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn fixture(name: &str) -> (PathBuf, PathBuf) {
    let root = covel_tests::fixture("forecast");
    (root.join("plugins"), root.join(name))
}

fn open(session: &str) -> Workspace {
    let (plugins, session) = fixture(session);
    Workspace::open(&plugins, Some(&session), &Limits::default()).expect("opens")
}

fn run(workspace: Workspace, model: &str, pace: f64) -> Forecast {
    let (played, error) = forecast::play(workspace, None);
    assert!(error.is_none(), "{error:?}");
    predict(&played, model, pace, &TokenCounter::new())
}

fn predict(played: &[PlayedTurn], model: &str, pace: f64, counter: &TokenCounter) -> Forecast {
    let profile = ModelFacts::embedded()
        .expect("facts")
        .profile(model)
        .expect("model");
    forecast::forecast(
        played,
        &profile,
        &ForecastOptions {
            pace_seconds: pace,
            ttl: "5m".into(),
            reply_tokens: None,
        },
        counter,
    )
}

#[test]
fn a_changed_stable_segment_predicts_a_cache_write_at_that_turn_and_names_the_segment() {
    let f = run(open("storm.session.yaml"), "claude-sonnet-4-5", 60.0);
    assert_eq!(f.turns.len(), 3);
    let stable = |turn: usize| {
        f.turns[turn]
            .breakpoints
            .iter()
            .find(|b| b.at == "system block stable-segments")
            .expect("stable block breakpoint")
            .clone()
    };
    assert_eq!(
        (stable(0).outcome, stable(0).reason_code),
        (Outcome::Write, "cold")
    );
    assert_eq!(
        (stable(1).outcome, stable(1).reason_code),
        (Outcome::Hit, "read")
    );
    let storm = stable(2);
    assert_eq!(
        (storm.outcome, storm.reason_code),
        (Outcome::Write, "prefix-changed"),
        "{}",
        storm.reason
    );
    assert_eq!(storm.segment.as_deref(), Some("weather/sky"));
    assert_eq!(storm.plugin.as_deref(), Some("weather"));
    assert!(
        storm
            .reason
            .contains("segment weather/sky (plugin weather) changed since turn 2"),
        "{}",
        storm.reason
    );
    assert_eq!(
        f.turns[2].cache_read_tokens, 0,
        "the whole prefix is rewritten"
    );
    assert!(f.turns[2].cache_write_tokens > 2000);
    let advice = f
        .advice
        .volatility
        .iter()
        .find(|v| v.segment == "weather/sky")
        .expect("volatility advice");
    assert!(advice.change.contains("turn") && advice.saving > 0.0);
    let codex = f
        .ledger
        .iter()
        .find(|r| r.owner == "codex")
        .expect("codex in the ledger");
    assert!(
        codex.cached_part_tokens > 6000 && codex.uncached_part_tokens == 0 && codex.share > 0.9
    );
}

#[test]
fn a_prompt_under_the_minimum_predicts_no_caching_and_says_why() {
    let f = run(open("small.session.yaml"), "claude-sonnet-4-5", 60.0);
    for turn in &f.turns {
        assert_eq!((turn.cache_read_tokens, turn.cache_write_tokens), (0, 0));
        for b in &turn.breakpoints {
            assert_eq!((b.outcome, b.reason_code), (Outcome::Miss, "below-minimum"));
            assert!(
                b.reason
                    .contains("under claude-sonnet-4-5's minimum cacheable 1024 tokens"),
                "{}",
                b.reason
            );
        }
    }
    assert!(
        f.advice.notes.iter().any(|n| n.contains("never reaches")),
        "{:?}",
        f.advice.notes
    );
    assert_eq!(f.totals.saving, 0.0);
    let openai = run(open("small.session.yaml"), "gpt-4o", 60.0);
    assert!(
        openai
            .turns
            .iter()
            .all(|t| t.breakpoints[0].reason_code == "below-minimum" && t.cache_read_tokens == 0)
    );
}

#[test]
fn totals_add_up_from_the_per_turn_rows() {
    for model in ["claude-sonnet-4-5", "gpt-4o", "claude-opus-4-5"] {
        let f = run(open("storm.session.yaml"), model, 60.0);
        let sum =
            |get: &dyn Fn(&forecast::TurnForecast) -> f64| f.turns.iter().map(get).sum::<f64>();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(
            f.totals.input_tokens,
            f.turns.iter().map(|t| t.input_tokens).sum::<u64>()
        );
        assert_eq!(
            f.totals.cache_read_tokens,
            f.turns.iter().map(|t| t.cache_read_tokens).sum::<u64>()
        );
        assert_eq!(
            f.totals.cache_write_tokens,
            f.turns.iter().map(|t| t.cache_write_tokens).sum::<u64>()
        );
        assert_eq!(
            f.totals.uncached_tokens,
            f.turns.iter().map(|t| t.uncached_tokens).sum::<u64>()
        );
        for t in &f.turns {
            assert_eq!(
                t.input_tokens,
                t.uncached_tokens + t.cache_write_tokens + t.cache_read_tokens,
                "turn {}",
                t.turn
            );
            assert!(close(
                t.cost.total,
                t.cost.input + t.cost.cache_write + t.cost.cache_read + t.cost.output
            ));
        }
        assert!(
            close(f.totals.cost.total, sum(&|t| t.cost.total)),
            "{model}"
        );
        assert!(close(
            f.totals.cost_without_cache,
            sum(&|t| t.cost_without_cache)
        ));
        assert!(close(
            f.totals.saving,
            f.totals.cost_without_cache - f.totals.cost.total
        ));
        assert!(
            close(
                f.ledger.iter().map(|r| r.cost).sum::<f64>(),
                f.totals.cost.total
            ),
            "the ledger splits the whole cost"
        );
        assert!(close(f.ledger.iter().map(|r| r.share).sum::<f64>(), 1.0));
        let tokens: u64 = f
            .ledger
            .iter()
            .map(|r| r.cache_read_tokens + r.cache_write_tokens + r.uncached_tokens)
            .sum();
        assert_eq!(tokens, f.totals.input_tokens);
    }
}

#[test]
fn a_slow_pace_of_play_expires_the_cache_and_says_so() {
    let f = run(open("storm.session.yaml"), "claude-sonnet-4-5", 600.0);
    let turn = &f.turns[1];
    let stable = turn
        .breakpoints
        .iter()
        .find(|b| b.at == "system block stable-segments")
        .expect("breakpoint");
    assert_eq!(stable.reason_code, "ttl-expired", "{}", stable.reason);
    assert!(
        stable.reason.contains("600 s per turn, over the 300 s TTL"),
        "{}",
        stable.reason
    );
}

#[test]
fn a_second_forecast_recounts_only_the_segments_that_changed() {
    let (played, _) = forecast::play(open("storm.session.yaml"), None);
    let counter = TokenCounter::new();
    predict(&played, "gpt-4o", 60.0, &counter);
    let first = counter.stats();
    predict(&played, "gpt-4o", 60.0, &counter);
    let second = counter.stats();
    assert_eq!(
        second.computed, first.computed,
        "nothing changed, nothing is recounted"
    );
    assert!(second.reused > first.reused);
}

#[test]
fn the_storm_forecast_matches_its_snapshot() {
    let f = run(open("storm.session.yaml"), "claude-sonnet-4-5", 60.0);
    let mut value = serde_json::to_value(&f).expect("json");
    value["counting"] = json!("[counts]");
    insta::assert_json_snapshot!("storm_forecast", value);
}

// ---- loopback fakes that report usage ---------------------------------------------------------

/// A loopback server answering exactly `count` requests with `answer(request_body)`, then
/// stopping by itself.
fn fake(
    count: usize,
    answer: impl Fn(&Value) -> Value + Send + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        for _ in 0..count {
            let Some(mut stream) = accept_within(&listener, std::time::Duration::from_secs(30))
            else {
                return;
            };
            let (_, body) = read_request(&stream).expect("request");
            let text = answer(&serde_json::from_slice(&body).unwrap_or(Value::Null)).to_string();
            write_json(&mut stream, &text).expect("respond");
        }
    });
    (url, handle)
}

/// Claude-like counts for the fake: the same stated estimate the forecast uses (the fake checks
/// the caching behaviour end to end, not the tokenizer).
fn claude_rule() -> EstimateRule {
    ModelFacts::embedded()
        .expect("facts")
        .profile("claude-sonnet-4-5")
        .expect("model")
        .estimate()
        .expect("an estimate")
}

fn claude_tokens(counter: &TokenCounter, text: &str) -> u64 {
    claude_rule()
        .estimate(counter, Encoding::Cl100kBase, text)
        .tokens
}

/// An Anthropic Messages fake with a prefix cache at `cache_control` breakpoints (20-block
/// look-back, 1024-token minimum). `forget_before` empties its cache before that request
/// (1-based), as an eviction would.
fn anthropic_fake(
    turns: usize,
    forget_before: Option<usize>,
) -> (String, std::thread::JoinHandle<()>) {
    let cache: Arc<Mutex<HashSet<Vec<u8>>>> = Arc::default();
    let seen = Arc::new(Mutex::new(0usize));
    let counter = TokenCounter::new();
    fake(turns, move |body| {
        let mut n = seen.lock().expect("lock");
        *n += 1;
        let mut cache = cache.lock().expect("lock");
        if forget_before == Some(*n) {
            cache.clear();
        }
        let mut blocks: Vec<(Value, bool, u64)> = Vec::new();
        // Framing as the estimate has it: the request's (and the tool definitions with the
        // tool-use system prompt) before the first block, each further message's on its first.
        let rule = claude_rule();
        let mut framing = rule.request.tokens;
        let mut tools = Value::Null;
        if let Some(list) = body["tools"].as_array().filter(|t| !t.is_empty()) {
            tools = Value::Array(list.clone());
            framing += rule.tools.tokens
                + rule
                    .estimate_as(
                        Script::Code,
                        &counter,
                        Encoding::Cl100kBase,
                        &tools.to_string(),
                    )
                    .tokens;
        }
        for b in body["system"].as_array().into_iter().flatten() {
            blocks.push((
                json!({"role": "system", "b": b["text"]}),
                b.get("cache_control").is_some(),
                claude_tokens(&counter, b["text"].as_str().unwrap_or_default()),
            ));
        }
        for (n, m) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (i, b) in m["content"].as_array().into_iter().flatten().enumerate() {
                let framed = if n > 0 && i == 0 {
                    rule.message.tokens
                } else {
                    0
                };
                blocks.push((
                    json!({"role": m["role"], "first": i == 0, "b": b["text"]}),
                    b.get("cache_control").is_some(),
                    claude_tokens(&counter, b["text"].as_str().unwrap_or_default()) + framed,
                ));
            }
        }
        if let Some(first) = blocks.first_mut() {
            first.2 += framing;
            first.0["tools"] = tools;
        }
        let mut prefix = Vec::new();
        let mut hashes = Vec::new();
        let mut cum = Vec::new();
        let mut total = 0;
        for (key, _, tokens) in &blocks {
            prefix.extend_from_slice(key.to_string().as_bytes());
            hashes.push(Sha256::digest(&prefix).to_vec());
            total += tokens;
            cum.push(total);
        }
        let breaks: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.1)
            .map(|(i, _)| i)
            .collect();
        let read_at = breaks
            .iter()
            .filter_map(|&k| {
                (k.saturating_sub(20)..=k)
                    .rev()
                    .find(|&j| cache.contains(&hashes[j]))
            })
            .max();
        let read = read_at.map_or(0, |r| cum[r]);
        let last = breaks
            .iter()
            .copied()
            .filter(|&k| cum[k] >= 1024)
            .max()
            .filter(|&k| read_at.is_none_or(|r| k > r));
        let write = last.map_or(0, |k| cum[k] - read);
        for &k in breaks.iter().filter(|&&k| cum[k] >= 1024) {
            cache.insert(hashes[k].clone());
        }
        json!({"content": [{"type": "text", "text": format!("Reply {n}.")}], "stop_reason": "end_turn",
               "usage": {"input_tokens": total - read - write, "output_tokens": 4, "cache_creation_input_tokens": write, "cache_read_input_tokens": read}})
    })
}

/// An OpenAI chat fake with automatic prefix caching (1024-token minimum, 128-token steps, exact
/// o200k_base counts; a message as the chat format frames it, `<|im_start|>role<|im_sep|>content
/// <|im_end|>`, the role one token: 4 tokens beside its content, as OpenAI's cookbook counts;
/// 3 for the reply). `cap` limits what it caches.
fn openai_fake(turns: usize, cap: Option<u64>) -> (String, std::thread::JoinHandle<()>) {
    let previous: Arc<Mutex<Vec<Vec<u32>>>> = Arc::default();
    let counter = TokenCounter::new();
    fake(turns, move |body| {
        let mut sequence: Vec<u32> = Vec::new();
        for m in body["messages"].as_array().into_iter().flatten() {
            let role = if m["role"] == "system" {
                u32::MAX - 1
            } else if m["role"] == "user" {
                u32::MAX - 2
            } else {
                u32::MAX - 3
            };
            sequence.extend([u32::MAX, role, u32::MAX - 4]);
            sequence.extend(counter.encode(
                Encoding::O200kBase,
                m["content"].as_str().unwrap_or_default(),
            ));
            sequence.push(u32::MAX - 5);
        }
        let total = sequence.len() as u64 + 3;
        let mut previous = previous.lock().expect("lock");
        let common = previous
            .iter()
            .map(|p| p.iter().zip(&sequence).take_while(|(a, b)| a == b).count() as u64)
            .max()
            .unwrap_or(0);
        let common = cap.map_or(common, |c| common.min(c));
        let cached = if total >= 1024 && common >= 1024 {
            common / 128 * 128
        } else {
            0
        };
        previous.push(sequence);
        json!({"choices": [{"message": {"role": "assistant", "content": "A reply."}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": total, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": cached}}})
    })
}

/// The storm session's calm turns, answered by a backend at `url` (no scripted replies).
fn live(backend: &str, url: &str, model: &str, turns: usize) -> Workspace {
    let mut ws = open("storm.session.yaml");
    let test = ws.session.test.as_mut().expect("scripted turns");
    test.turns.truncate(turns);
    for turn in &mut test.turns {
        turn.reply = None;
        turn.say = turn.say.replace("storm", "tide");
    }
    let story = &mut ws.session.models.story;
    story.backend = backend.into();
    story.base_url = Some(url.into());
    story.model = Some(model.into());
    ws
}

#[test]
fn an_anthropic_fake_reporting_cache_usage_agrees_with_the_forecast() {
    let (url, server) = anthropic_fake(3, None);
    let (played, error) = forecast::play(live("anthropic", &url, "claude-sonnet-4-5", 3), None);
    server.join().expect("the fake stops by itself");
    assert!(error.is_none(), "{error:?}");
    let f = predict(&played, "claude-sonnet-4-5", 60.0, &TokenCounter::new());
    for turn in &f.turns {
        let reported = turn.reported.expect("usage is kept per turn");
        assert_eq!(
            (reported.cache_read_tokens, reported.cache_write_tokens),
            (turn.cache_read_tokens, turn.cache_write_tokens),
            "turn {}",
            turn.turn
        );
        assert!(turn.mismatches.is_empty(), "{:?}", turn.mismatches);
    }
    assert!(
        f.turns[1].cache_read_tokens > 2000
            && f.turns[2].cache_read_tokens > f.turns[1].cache_read_tokens,
        "the history breakpoint moves forward"
    );
}

#[test]
fn an_anthropic_fake_that_evicts_its_cache_is_flagged_as_a_mismatch() {
    let (url, server) = anthropic_fake(3, Some(3));
    let (played, _) = forecast::play(live("anthropic", &url, "claude-sonnet-4-5", 3), None);
    server.join().expect("the fake stops by itself");
    let f = predict(&played, "claude-sonnet-4-5", 60.0, &TokenCounter::new());
    assert!(f.turns[1].mismatches.is_empty());
    let mismatch = f.turns[2]
        .mismatches
        .iter()
        .find(|m| m.field == "cacheRead")
        .expect("flagged");
    assert_eq!(mismatch.reported, 0);
    assert!(mismatch.predicted > 2000);
    assert_eq!(mismatch.at, "system block preamble", "{}", mismatch.message);
    // Outside the range the count's error bar allows, and by how much.
    let allowed = mismatch
        .message
        .split(" allowed)")
        .next()
        .and_then(|m| m.rsplit('(').next())
        .and_then(|range| range.split('–').next())
        .and_then(|low| low.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("a range: {}", mismatch.message));
    assert!(
        mismatch
            .message
            .contains(&format!(", {allowed} under the range")),
        "{}",
        mismatch.message
    );
}

#[test]
fn an_openai_fake_reporting_cached_tokens_agrees_exactly_with_the_forecast() {
    let (url, server) = openai_fake(3, None);
    let (played, error) = forecast::play(live("openai", &url, "gpt-4o", 3), None);
    server.join().expect("the fake stops by itself");
    assert!(error.is_none(), "{error:?}");
    let f = predict(&played, "gpt-4o", 60.0, &TokenCounter::new());
    for turn in &f.turns {
        let reported = turn.reported.expect("usage");
        assert_eq!(
            reported.cache_read_tokens, turn.cache_read_tokens,
            "turn {}",
            turn.turn
        );
        assert_eq!(
            reported.input_tokens + reported.cache_read_tokens,
            turn.input_tokens,
            "exact counts: turn {}",
            turn.turn
        );
        assert!(turn.mismatches.is_empty());
    }
    assert!(f.turns[1].cache_read_tokens >= 1024);
}

#[test]
fn an_openai_fake_that_caches_less_names_the_segment_where_its_cache_stopped() {
    let (url, server) = openai_fake(2, Some(1100));
    let (played, _) = forecast::play(live("openai", &url, "gpt-4o", 2), None);
    server.join().expect("the fake stops by itself");
    let f = predict(&played, "gpt-4o", 60.0, &TokenCounter::new());
    let mismatch = &f.turns[1].mismatches[0];
    assert_eq!((mismatch.field, mismatch.reported), ("cacheRead", 1024));
    assert_eq!(
        mismatch.segment.as_deref(),
        Some("codex/rules"),
        "{}",
        mismatch.message
    );
    assert_eq!(mismatch.plugin.as_deref(), Some("codex"));
    assert!(
        mismatch
            .message
            .contains("segment codex/rules (plugin codex)"),
        "{}",
        mismatch.message
    );
}

#[test]
fn a_history_message_without_text_does_not_shift_the_moving_breakpoint_or_bill_the_input_as_history()
 {
    let f = run(
        open("empty-message.session.yaml"),
        "claude-sonnet-4-5",
        60.0,
    );
    let turn = &f.turns[0];
    let at: Vec<&str> = turn.breakpoints.iter().map(|b| b.at.as_str()).collect();
    let moving = at
        .iter()
        .find(|a| a.contains("history"))
        .unwrap_or_else(|| panic!("a moving breakpoint on history: {at:?}"));
    assert!(moving.ends_with("(history m4)"), "{at:?}");
    // Every block the request sends is labelled by the message it came from.
    let json = serde_json::to_value(turn).expect("json");
    let text = json.to_string();
    assert!(!text.contains("(history m2)"), "m2 is not sent: {text}");
}

#[test]
fn a_forecast_with_a_counter_that_remembers_equals_one_counted_afresh() {
    let (played, _) = forecast::play(open("storm.session.yaml"), None);
    // A counter that has counted these texts (and others) before, for two encodings.
    let warm = TokenCounter::new();
    predict(&played, "gpt-4o", 60.0, &warm);
    predict(&played, "claude-sonnet-4-5", 30.0, &warm);
    for model in ["gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini"] {
        let json = |f: Forecast| {
            let mut value = serde_json::to_value(&f).expect("json");
            // How many counts were computed or reused is the only thing allowed to differ.
            value["counting"] = json!(null);
            value
        };
        assert_eq!(
            json(predict(&played, model, 60.0, &warm)),
            json(predict(&played, model, 60.0, &TokenCounter::new())),
            "{model}"
        );
    }
}

// ---- explanations that name the cause (#51) ---------------------------------------------------

fn causes(session: &str) -> Forecast {
    let root = covel_tests::fixture("forecast-causes");
    let workspace = Workspace::open(
        &root.join("plugins"),
        Some(&root.join(session)),
        &Limits::default(),
    )
    .expect("opens");
    run(workspace, "claude-sonnet-4-5", 60.0)
}

fn row<'a>(f: &'a Forecast, turn: usize, at: &str) -> &'a forecast::BreakpointForecast {
    f.turns[turn]
        .breakpoints
        .iter()
        .find(|b| b.at.contains(at))
        .unwrap_or_else(|| panic!("turn {}: no breakpoint at {at}", turn + 1))
}

fn write_note<'a>(f: &'a Forecast, cause: &str) -> &'a str {
    f.advice
        .notes
        .iter()
        .find(|n| n.starts_with(&format!("Cache writes caused by {cause}")))
        .unwrap_or_else(|| panic!("no write note for {cause}: {:#?}", f.advice.notes))
}

#[test]
fn a_stable_system_segment_changing_every_turn_is_reported_as_a_change_of_that_segment() {
    let f = causes("clock.session.yaml");
    for turn in 1..f.turns.len() {
        let b = row(&f, turn, "system block stable-segments");
        assert_eq!(
            (b.outcome, b.reason_code),
            (Outcome::Write, "prefix-changed"),
            "turn {}: {}",
            turn + 1,
            b.reason
        );
        assert_eq!(b.segment.as_deref(), Some("clock/time"));
        assert_eq!(b.plugin.as_deref(), Some("clock"));
        assert!(
            b.reason.contains(&format!(
                "segment clock/time (plugin clock) changed since turn {turn}"
            )),
            "{}",
            b.reason
        );
        for later in &f.turns[turn].breakpoints {
            assert_ne!(later.reason_code, "extends", "{}", later.reason);
        }
    }
    let note = write_note(
        &f,
        "segment clock/time (plugin clock) (changed in turns 2, 3)",
    );
    assert!(note.contains("% of the total cost"), "{note}");
}

/// A `turn` segment at a depth inside a 30-message history changes every turn: the history
/// breakpoint is written from the read system prefix on, because of that segment — not
/// because of the look-back, and never "the whole prefix".
fn a_per_turn_segment_at_depth_names_the_segment(session: &str, plugin: &str) {
    let f = causes(session);
    let segment = format!("{plugin}/aside");
    for turn in 1..f.turns.len() {
        let t = &f.turns[turn];
        let b = row(&f, turn, "history");
        assert_eq!(
            (b.outcome, b.reason_code),
            (Outcome::Write, "prefix-changed"),
            "turn {}: {}",
            turn + 1,
            b.reason
        );
        assert_eq!(b.segment.as_deref(), Some(segment.as_str()), "{}", b.reason);
        assert!(
            b.reason
                .contains(&format!("segment {segment} (plugin {plugin}) moved from"))
                && b.reason.contains("and its text changed"),
            "{}",
            b.reason
        );
        assert!(
            !b.reason.contains("whole prefix") && !b.reason.contains("look-back"),
            "{}",
            b.reason
        );
        assert!(
            t.cache_read_tokens > 0,
            "the system prefix is read: {}",
            b.reason
        );
        assert!(
            b.reason.contains(&format!(
                "the {} after it are written",
                b.prefix_tokens - t.cache_read_tokens
            )),
            "{}",
            b.reason
        );
    }
    write_note(
        &f,
        &format!("segment {segment} (plugin {plugin}) (moved in turns 2, 3)"),
    );
}

#[test]
fn a_per_turn_segment_at_depth_15_of_30_messages_is_the_reason_not_the_look_back() {
    a_per_turn_segment_at_depth_names_the_segment("depth-15.session.yaml", "aside-15");
}

#[test]
fn a_per_turn_segment_at_depth_25_of_30_messages_is_the_reason_not_the_look_back() {
    a_per_turn_segment_at_depth_names_the_segment("depth-25.session.yaml", "aside-25");
}

#[test]
fn the_samples_depth_2_reminder_moves_every_turn_so_the_history_breakpoint_never_hits() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample");
    let workspace = Workspace::open(
        &sample,
        Some(&sample.join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    // The sample's prompt is under every Claude minimum: price it as a Claude-like model with a
    // 256-token minimum so that its history breakpoint could be cached.
    let facts = ModelFacts::embedded().expect("facts");
    let prices = facts
        .profile("claude-sonnet-4-5")
        .expect("model")
        .model
        .prices;
    let profile = facts
        .custom("claude-like-256", "anthropic", Some(256), prices)
        .expect("a custom model");
    let (played, error) = forecast::play(workspace, None);
    assert!(error.is_none(), "{error:?}");
    let f = forecast::forecast(
        &played,
        &profile,
        &ForecastOptions::default(),
        &TokenCounter::new(),
    );
    for turn in 1..f.turns.len() {
        let b = row(&f, turn, "history");
        assert_ne!(b.outcome, Outcome::Hit, "turn {}: {}", turn + 1, b.reason);
        assert_eq!(b.reason_code, "prefix-changed", "{}", b.reason);
        assert_eq!(
            b.segment.as_deref(),
            Some("lore-book/remember"),
            "{}",
            b.reason
        );
        assert!(
            b.reason
                .contains("segment lore-book/remember (plugin lore-book) moved from"),
            "{}",
            b.reason
        );
    }
    let note = write_note(
        &f,
        "segment lore-book/remember (plugin lore-book) (moved in turns 2, 3)",
    );
    assert!(
        note.contains("the history breakpoint is never read past it"),
        "{note}"
    );
    assert!(
        f.advice
            .volatility
            .iter()
            .any(|v| v.segment == "lore-book/remember" && v.change.contains("depth 0 or 1")),
        "{:#?}",
        f.advice.volatility
    );
}

#[test]
fn a_one_hour_ttl_reaches_the_cache_control_of_the_requests_the_forecast_prices() {
    let mut workspace = open("storm.session.yaml");
    workspace.session.models.story.cache_ttl = Some(covel_kernel::session::CacheTtl::OneHour);
    let (played, error) = forecast::play(workspace, Some(1));
    assert!(error.is_none(), "{error:?}");
    let body = serde_json::to_string(&played[0].preview.prompt.requests.anthropic).expect("json");
    let marks = body.matches("\"cache_control\"").count();
    assert!(marks > 0);
    assert_eq!(
        body.matches("\"ttl\":\"1h\"").count(),
        marks,
        "every breakpoint: {body}"
    );
}

#[test]
fn an_openai_cache_idle_between_5_and_10_minutes_is_uncertain_with_both_costs() {
    let f = run(open("storm.session.yaml"), "gpt-4o", 450.0);
    let b = &f.turns[1].breakpoints[0];
    assert_eq!(
        (b.outcome, b.reason_code),
        (Outcome::Miss, "uncertain"),
        "{}",
        b.reason
    );
    assert!(
        b.reason.contains("clears a cache after 300–600 s idle")
            && b.reason.contains("may still be read"),
        "{}",
        b.reason
    );
    let cleared = run(open("storm.session.yaml"), "gpt-4o", 700.0);
    assert_eq!(cleared.turns[1].breakpoints[0].reason_code, "ttl-expired");
    let kept = run(open("storm.session.yaml"), "gpt-4o", 200.0);
    assert_eq!(kept.turns[1].breakpoints[0].outcome, Outcome::Hit);
}

#[test]
fn a_prompt_cache_key_set_by_the_session_is_sent_and_the_forecast_says_what_it_changes() {
    let mut workspace = open("storm.session.yaml");
    workspace.session.models.story.prompt_cache_key = Some("storm-session".into());
    let (played, error) = forecast::play(workspace, Some(2));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        played[1].preview.prompt.requests.openai["prompt_cache_key"],
        json!("storm-session")
    );
    let f = predict(&played, "gpt-4o", 60.0, &TokenCounter::new());
    assert!(
        f.advice
            .notes
            .iter()
            .any(|n| n.contains("prompt_cache_key `storm-session`")),
        "{:#?}",
        f.advice.notes
    );
    let without = run(open("storm.session.yaml"), "gpt-4o", 60.0);
    assert!(
        without
            .advice
            .notes
            .iter()
            .any(|n| n.contains("carry no prompt_cache_key")),
        "{:#?}",
        without.advice.notes
    );
}

#[test]
fn a_forecast_priced_at_another_ttl_than_the_requests_carry_says_so() {
    let (played, error) = forecast::play(open("storm.session.yaml"), Some(1));
    assert!(error.is_none(), "{error:?}");
    let profile = ModelFacts::embedded()
        .expect("facts")
        .profile("claude-sonnet-4-5")
        .expect("model");
    let what_if = ForecastOptions {
        ttl: "1h".into(),
        ..ForecastOptions::default()
    };
    let f = forecast::forecast(&played, &profile, &what_if, &TokenCounter::new());
    assert!(
        f.advice
            .notes
            .iter()
            .any(|n| n.contains("carry a 5m cache TTL but are priced at 1h")),
        "{:#?}",
        f.advice.notes
    );
    let same = forecast::forecast(
        &played,
        &profile,
        &ForecastOptions::default(),
        &TokenCounter::new(),
    );
    assert!(
        !same
            .advice
            .notes
            .iter()
            .any(|n| n.contains("cache TTL but"))
    );
}

/// The sample's demo session, live, its story model named `model` when given.
fn live_demo(model: Option<&str>) -> (tempfile::TempDir, covel_studio::live::LiveStudio) {
    live_demo_with(model.map(|m| format!("model: {m}")).as_deref())
}

/// The sample's demo session, live, with `line` added to its story model's settings.
fn live_demo_with(line: Option<&str>) -> (tempfile::TempDir, covel_studio::live::LiveStudio) {
    let dir = tempfile::tempdir().expect("temp dir");
    covel_tests::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample"),
        dir.path(),
    );
    if let Some(line) = line {
        let path = dir.path().join("demo.session.yaml");
        let text = std::fs::read_to_string(&path).expect("the demo session");
        let named = text.replacen("  story:\n", &format!("  story:\n    {line}\n"), 1);
        assert_ne!(named, text, "the demo names its story model's settings");
        std::fs::write(&path, named).expect("written");
    }
    let ws = Workspace::open(
        dir.path(),
        Some(&dir.path().join("demo.session.yaml")),
        &Limits::default(),
    )
    .expect("the demo opens");
    let studio = covel_studio::live::LiveStudio::new(ws, covel_studio::RuntimeTarget::Story);
    (dir, studio)
}

#[test]
fn a_cache_breakpoint_has_one_count_in_the_prompt_panel_and_the_cache_panel() {
    let (_dir, mut studio) = live_demo(None);
    studio.play_turn("I ring the bell.");
    let counts = studio.snapshot().preview.counts;
    let forecast = studio
        .forecast(None, &ForecastOptions::default())
        .expect("the default model is known");
    assert_eq!(counts.counter.model, forecast.model.id);
    let next = forecast.turns.last().expect("the next turn");
    assert!(
        !next.breakpoints.is_empty(),
        "the demo has cache breakpoints"
    );
    assert_eq!(counts.breakpoints.len(), next.breakpoints.len());
    for (count, row) in counts.breakpoints.iter().zip(&next.breakpoints) {
        assert_eq!(count.tokens, row.prefix_tokens, "{}", row.at);
        assert!(
            count.low <= count.tokens && count.tokens <= count.high,
            "{count:?}"
        );
    }
    // The Prompt panel's blocks and sent messages add up to the request the Cache panel prices.
    let whole: u64 = counts
        .blocks
        .iter()
        .chain(&counts.messages)
        .map(|c| c.tokens)
        .sum();
    assert_eq!(
        counts.system.tokens,
        counts.blocks.iter().map(|c| c.tokens).sum::<u64>()
    );
    assert_eq!(
        whole + counts.added.tokens,
        next.input_tokens,
        "every block the request sends, counted once, and what the request adds around them"
    );
    assert!(
        counts.added.tokens > 0,
        "the demo offers tools and Claude frames its requests"
    );
}

#[test]
fn the_panels_count_for_the_story_model_and_say_so_when_the_facts_do_not_know_it() {
    let counts = live_demo(None).1.snapshot().preview.counts;
    assert_eq!(counts.counter.model, forecast::DEFAULT_MODEL);
    assert!(!counts.counter.exact, "Claude counts are estimates");
    assert!(counts.system.low < counts.system.tokens && counts.system.tokens < counts.system.high);

    let counts = live_demo(Some("gpt-4o")).1.snapshot().preview.counts;
    assert_eq!(counts.counter.model, "gpt-4o");
    assert!(counts.counter.exact);
    assert_eq!(counts.counter.chosen, "the session's story model");
    assert_eq!(
        (counts.system.low, counts.system.high),
        (counts.system.tokens, counts.system.tokens)
    );

    let counts = live_demo(Some("llama3.1:8b")).1.snapshot().preview.counts;
    assert_eq!(counts.counter.model, forecast::DEFAULT_MODEL);
    assert!(
        counts
            .counter
            .chosen
            .contains("`llama3.1:8b` is not in the model facts"),
        "{}",
        counts.counter.chosen
    );
}

fn notes(minimum: Option<u32>) -> Vec<(usize, &'static str, String)> {
    let line = minimum.map(|m| format!("minCacheableTokens: {m}"));
    let (_dir, studio) = live_demo_with(line.as_deref());
    let counts = studio.prompt_counts(studio.preview());
    covel_studio::counts::below_minimum(studio.preview(), &counts)
        .into_iter()
        .map(|w| (w.breakpoint, w.code, w.message))
        .collect()
}

#[test]
fn a_short_prefix_a_longer_cached_prefix_covers_is_not_remarked_on() {
    // Breakpoints 0 and 1 close ≈35 and ≈71 tokens, but breakpoint 2's ≈1 200 are cached and
    // read them with it.
    assert_eq!(notes(None), vec![]);
}

#[test]
fn a_prompt_too_short_to_cache_gets_one_note_on_its_longest_prefix_naming_the_shorter_ones() {
    // Nothing reaches 4096: no breakpoint caches anything. A breakpoint's prefix holds every
    // earlier one, so one note on the longest says it for all four (the Problems list and the
    // Prompt panel once showed four notes saying the same).
    let all = notes(Some(4096));
    assert_eq!(
        all.iter().map(|n| (n.0, n.1)).collect::<Vec<_>>(),
        [(3, "prefix-below-minimum")]
    );
    assert!(
        all[0].2.contains(
            "for claude-sonnet-4-5, which caches prefixes of 4096 tokens or more, so this breakpoint caches nothing, nor do breakpoints 0–2 before it (shorter prefixes)"
        ),
        "{}",
        all[0].2
    );
}

#[test]
fn a_prefix_whose_estimated_range_straddles_the_minimum_may_or_may_not_be_cached() {
    let (_dir, studio) = live_demo(None);
    let counts = studio.prompt_counts(studio.preview());
    let moving = counts.breakpoints[3];
    // A minimum inside the longest prefix's range, above its lower end.
    let minimum = u32::try_from(moving.low + (moving.high - moving.low) / 4).expect("small");
    let near = notes(Some(minimum));
    let row = near
        .iter()
        .find(|n| n.0 == 3)
        .expect("breakpoint 3 is remarked on");
    assert_eq!(row.1, "prefix-near-minimum");
    assert!(
        row.2.contains("by the estimate's range") && row.2.contains("it may or may not be cached"),
        "{}",
        row.2
    );
}

// ---- who wrote which text ----------------------------------------------------------------------

/// The forecast-agreement fixture with a session of one stable system segment and `lore`.
fn lore_workspace(segment_text: &str, lore: Option<&str>) -> Workspace {
    let segments = json!([{ "id": "s0", "position": "system", "role": "system", "audience": "story",
        "volatility": "stable", "content": segment_text }]);
    shaped_workspace(json!([]), segments, lore)
}

/// The forecast-agreement fixture with a session of these history messages, the shaper's
/// segments and `lore`.
fn shaped_workspace(history: Value, segments: Value, lore: Option<&str>) -> Workspace {
    let root = covel_tests::fixture("forecast-agrees");
    let mut ws = Workspace::open(
        &root.join("plugins"),
        Some(&root.join("base.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let mut world = json!({ "id": "w", "name": "W", "description": "A test world." });
    if let Some(lore) = lore {
        world["lore"] = json!(lore);
    }
    let doc = json!({
        "id": "lore", "locale": "en", "world": { "worldRecord": world },
        "models": { "story": { "model": "claude-sonnet-4-5", "contextWindow": 200000, "reservedForResponse": 1024 } },
        "pluginData": [{ "pluginId": "shaper", "namespace": "shape", "key": "segments", "value": segments }],
        "history": { "messages": history },
        "nextMessage": "I look around.",
    });
    ws.session = covel_kernel::session::parse_session(
        &doc.to_string(),
        std::path::Path::new("lore.session.yaml"),
    )
    .expect("the session loads");
    ws
}

fn stable_block(preview: &covel_studio::Preview) -> &covel_kernel::prompt::Block {
    preview
        .prompt
        .system
        .blocks
        .iter()
        .find(|b| b.kind == covel_kernel::prompt::BlockKind::StableSegments)
        .expect("a stable block")
}

#[test]
fn world_lore_is_attributed_where_the_assembly_put_it_not_by_its_tags() {
    use covel_kernel::prompt::Source;
    let segment = Source::Segment {
        plugin: "shaper".into(),
        segment: "s0".into(),
    };
    // A segment that opens with the lore's tags, in a world without lore, is the segment's.
    let mimic = "<world-lore>\nNot lore.\n</world-lore> The bell rings.";
    let ws = lore_workspace(mimic, None);
    let preview = ws.preview(&covel_studio::RuntimeTarget::Story);
    let block = stable_block(&preview);
    assert_eq!(block.world_lore_end, None);
    let parts =
        covel_studio::parts::block_parts(block, &covel_studio::parts::Rows::of(&preview.segments));
    let from: Vec<&Source> = parts.iter().map(|p| &p.from).collect();
    assert_eq!(from, [&segment]);

    // Real lore (not ASCII, with a closing tag of its own) is its own part, then the segment.
    let lore = "Le phare \u{e9}teint \u{1f56f} </world-lore> veille.";
    let ws = lore_workspace("The bell rings.", Some(lore));
    let preview = ws.preview(&covel_studio::RuntimeTarget::Story);
    let block = stable_block(&preview);
    let parts =
        covel_studio::parts::block_parts(block, &covel_studio::parts::Rows::of(&preview.segments));
    let from: Vec<&Source> = parts.iter().map(|p| &p.from).collect();
    assert_eq!(from, [&Source::WorldLore, &segment]);
    assert!(parts[0].text.starts_with("<world-lore>\n"));
    assert!(parts[0].text.ends_with("\n</world-lore>"));
    assert!(parts[0].text.contains("veille."));
    // The window slices the block's text in UTF-16 units: the same lore.
    let wire = covel_studio::wire::preview::Block::from(block);
    let end = wire
        .world_lore_end
        .expect("the wire says where the lore ends");
    let units: Vec<u16> = block.text.encode_utf16().collect();
    assert_eq!(String::from_utf16_lossy(&units[..end]), parts[0].text);
}

#[test]
fn the_depth_advice_counts_from_the_message_the_moving_breakpoint_closes_when_the_newest_is_empty()
{
    // The newest history message has no text, so it is not sent: the moving breakpoint closes
    // m0. A segment at depth 3 lands before m0 (ahead of it); depth 2 would land between m0 and
    // the empty m1, behind it.
    let history = json!([
        { "id": "m0", "turnId": "t1", "role": "user", "content": "I wait for the tide." },
        { "id": "m1", "turnId": "t1", "role": "assistant", "content": "" },
    ]);
    let segments = json!([{ "id": "reminder", "position": { "depth": 3 }, "role": "user",
        "audience": "story", "volatility": "session", "content": "Remember the bell." }]);
    let ws = shaped_workspace(history, segments, None);
    let preview = ws.preview(&covel_studio::RuntimeTarget::Story);
    let moving = preview.cache.moving().expect("a moving breakpoint");
    assert_eq!(
        moving.closes,
        covel_kernel::prompt::Origin::History { id: "m0".into() }
    );
    let advice = preview
        .cache
        .advice
        .iter()
        .find(|a| a.code == "depth-segment-moves")
        .expect("the depth advice");
    assert!(
        advice.fix.contains("a depth of at most 2"),
        "{}",
        advice.fix
    );
}

// ---- the forecast agrees with the preview's cache report ---------------------------------------
//
// For generated prompts (histories with empty messages, depth segments, world lore, compaction
// summaries, segments that follow the player's message), the forecast of the next turn and the
// preview's cache report, which reach their answers separately, must agree: the same prefix at
// every breakpoint, and the next turn reads exactly the longest prefix the report calls stable
// (when it is long enough to be cached).

mod agreement {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use std::cell::RefCell;

    const SAY: &str = "I wait for the tide.";
    const FOLLOWING: &str = "I listen.";
    const REPLY: &str = "The tide turns.";

    #[derive(Debug, Clone)]
    struct Segment {
        position: Value,
        role: &'static str,
        volatility: &'static str,
        words: usize,
        follows_player: bool,
    }

    #[derive(Debug, Clone)]
    struct Shape {
        /// Words per history message (0: a message without text).
        history: Vec<usize>,
        summaries: usize,
        lore_words: Option<usize>,
        segments: Vec<Segment>,
    }

    fn words(n: usize, seed: usize) -> String {
        (0..n)
            .map(|i| ["tide", "bell", "harbour", "stone", "salt", "rope", "gull"][(i + seed) % 7])
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn segment() -> impl Strategy<Value = Segment> {
        let position = prop_oneof![
            Just(json!("system")),
            Just(json!("pre-history")),
            Just(json!("post-history")),
            (0u32..6).prop_map(|d| json!({ "depth": d })),
        ];
        (
            position,
            prop::sample::select(vec!["system", "user", "assistant"]),
            prop::sample::select(vec!["stable", "session", "turn"]),
            prop_oneof![1usize..40, 400usize..900],
            any::<bool>(),
        )
            .prop_map(
                |(position, role, volatility, words, follows_player)| Segment {
                    position,
                    role,
                    volatility,
                    words,
                    follows_player,
                },
            )
    }

    fn shape() -> impl Strategy<Value = Shape> {
        (
            prop::collection::vec(prop_oneof![1 => Just(0usize), 6 => 1usize..30], 0..14),
            0usize..3,
            prop::option::of(10usize..700),
            prop::collection::vec(segment(), 0..4),
        )
            .prop_map(|(history, summaries, lore_words, segments)| Shape {
                history,
                summaries,
                lore_words,
                segments,
            })
    }

    /// The session of a shape, as JSON (a YAML document the session loader reads).
    fn session_of(
        shape: &Shape,
        base: &covel_kernel::session::Session,
    ) -> covel_kernel::session::Session {
        let messages: Vec<Value> = shape
            .history
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                json!({
                    "id": format!("m{i}"), "turnId": format!("t{}", i / 2 + 1),
                    "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": words(n, i),
                })
            })
            .collect();
        let summaries: Vec<Value> = (0..shape.summaries)
            .map(|i| json!({ "id": format!("s{i}"), "turnRangeStart": "t0", "turnRangeEnd": "t0", "content": format!("Summary {i}: {}", words(20, i)) }))
            .collect();
        let segments: Vec<Value> = shape
            .segments
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let text = words(s.words, i);
                json!({
                    "id": format!("s{i}"), "position": s.position, "role": s.role, "audience": "story",
                    "volatility": s.volatility,
                    "content": if s.follows_player { format!("{text} (player: {{player}})") } else { text },
                })
            })
            .collect();
        let mut world = json!({ "id": "w", "name": "W", "description": "A test world." });
        if let Some(n) = shape.lore_words {
            world["lore"] = json!(words(n, 3));
        }
        let doc = json!({
            "id": base.id, "locale": "en",
            "world": { "worldRecord": world },
            "models": { "story": { "model": "claude-sonnet-4-5", "contextWindow": 200000, "reservedForResponse": 1024, "script": [REPLY] } },
            "pluginData": [{ "pluginId": "shaper", "namespace": "shape", "key": "segments", "value": segments }],
            "history": { "messages": messages, "summaries": summaries },
            "nextMessage": SAY,
            "followingMessage": FOLLOWING,
        });
        covel_kernel::session::parse_session(
            &doc.to_string(),
            std::path::Path::new("generated.session.yaml"),
        )
        .expect("a generated session loads")
    }

    /// How the forecast names the block a breakpoint closes (`system block body`,
    /// `message 7 (history m4)`).
    fn closes(origin: &covel_kernel::prompt::Origin) -> String {
        use covel_kernel::prompt::Origin;
        match origin {
            Origin::System { .. } => origin.name(),
            other => format!("({})", other.name()),
        }
    }

    fn played(preview: covel_studio::Preview, say: &str) -> PlayedTurn {
        PlayedTurn {
            turn_id: preview.turn_id.clone(),
            say: say.into(),
            preview,
            usage: None,
            reply: Some(REPLY.into()),
            with_newer_plugins: false,
        }
    }

    /// Cases of the agreement property: 1 000 (`COVEL_AGREEMENT_CASES` changes it), run as two
    /// halves so the test harness gives each a core of its own.
    fn agreement_cases() -> u32 {
        std::env::var("COVEL_AGREEMENT_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000)
    }

    #[test]
    fn the_forecast_and_the_preview_agree_on_every_breakpoint_for_generated_prompts() {
        agree_on_generated_prompts(agreement_cases().div_ceil(2));
    }

    #[test]
    fn the_forecast_and_the_preview_agree_on_every_breakpoint_for_generated_prompts_second_half() {
        agree_on_generated_prompts(agreement_cases() / 2);
    }

    /// The property, on `cases` generated shapes.
    fn agree_on_generated_prompts(cases: u32) {
        let root = covel_tests::fixture("forecast-agrees");
        let ws = Workspace::open(
            &root.join("plugins"),
            Some(&root.join("base.session.yaml")),
            &Limits::default(),
        )
        .expect("opens");
        let base = ws.session.clone();
        let ws = RefCell::new(ws);
        let profile = ModelFacts::embedded()
            .expect("facts")
            .profile("claude-sonnet-4-5")
            .expect("model");
        let minimum = profile.model.min_cacheable_tokens;
        let mut runner = TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&shape(), |shape| {
                let mut ws = ws.borrow_mut();
                ws.session = session_of(&shape, &base);
                let this = ws.preview(&covel_studio::RuntimeTarget::Story);
                // The next turn as the preview's report imagines it: one more exchange, the
                // following player message.
                let mut next = ws.session.clone();
                let order = next.history.messages.len();
                next.history
                    .messages
                    .extend(covel_kernel::session_history::exchange(
                        &next.id,
                        &this.turn_id,
                        SAY,
                        REPLY,
                        order,
                    ));
                next.next_message = FOLLOWING.into();
                ws.session = next;
                let then = ws.preview(&covel_studio::RuntimeTarget::Story);
                let report = this.cache.breakpoints.clone();
                let f = forecast::forecast(
                    &[played(this, SAY), played(then, FOLLOWING)],
                    &profile,
                    &ForecastOptions::default(),
                    &ws.counter,
                );
                // The same prefix at every breakpoint, closed by the same block.
                let first = &f.turns[0].breakpoints;
                prop_assert_eq!(first.len(), report.len(), "{:?}", shape);
                for (row, b) in first.iter().zip(&report) {
                    prop_assert_eq!(
                        row.prefix_tokens,
                        b.prefix_tokens,
                        "breakpoint {} of {:?}",
                        b.index,
                        shape
                    );
                    prop_assert!(
                        row.at.ends_with(&closes(&b.closes)),
                        "{} is not {:?} in {:?}",
                        row.at,
                        b.closes,
                        shape
                    );
                }
                // The next turn reads the longest prefix the report calls stable, when cached.
                let expected = report
                    .iter()
                    .filter(|b| b.stable && b.prefix_tokens >= minimum)
                    .map(|b| b.prefix_tokens)
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(
                    f.turns[1].cache_read_tokens,
                    expected,
                    "{:?}\n{:#?}",
                    shape,
                    f.turns[1].breakpoints
                );
                Ok(())
            })
            .expect("the forecast agrees with the preview's cache report");
    }
}

// ---- the Claude estimate: bands per kind of text, framing, reported usage ---------------------

fn claude_profile() -> covel_studio::facts::ModelProfile {
    ModelFacts::embedded()
        .expect("facts")
        .profile("claude-sonnet-4-5")
        .expect("model")
}

/// Anthropic's own `count_tokens` examples (its token-counting page) and a measured one, framed
/// as the forecast frames a request: each documented count is inside the estimate's range.
#[test]
fn the_documented_claude_token_counts_fall_inside_the_estimates_range() {
    let rule = claude_rule();
    let counter = TokenCounter::new();
    let text = |t: &str| rule.estimate(&counter, Encoding::Cl100kBase, t);
    let tool = r#"[{"name":"get_weather","description":"Get the current weather in a given location","input_schema":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}}]"#;
    let cases = [
        (
            "system 'You are a scientist', message 'Hello, Claude'",
            rule.request.estimate() + text("You are a scientist") + text("Hello, Claude"),
            14,
        ),
        ("one message 'Hi'", rule.request.estimate() + text("Hi"), 8),
        (
            "the get_weather tool and one message",
            rule.request.estimate()
                + rule.tools.estimate()
                + rule.estimate_as(Script::Code, &counter, Encoding::Cl100kBase, tool)
                + text("What's the weather like in San Francisco?"),
            403,
        ),
    ];
    for (case, estimate, documented) in cases {
        assert!(
            estimate.low <= documented && documented <= estimate.high,
            "{case}: documented {documented}, estimated {estimate:?}"
        );
    }
}

/// A text is cut into runs of Latin, CJK, emoji and code, each scaled by its own band: the
/// estimate of a mixed text is the sum of its runs' estimates, and a CJK run's error bar is the
/// wider one the measurements give.
#[test]
fn a_claude_estimate_scales_each_kind_of_text_by_its_own_band() {
    let rule = claude_rule();
    let counter = TokenCounter::new();
    let count = |t: &str| counter.count(Encoding::Cl100kBase, t);
    let text = "Mira says 守门人在钟楼下等你。 👍🏽👨‍👩‍👧\n{\"sceneId\": \"tower\", \"night\": true}\n";
    let runs = covel_studio::scripts::runs(text);
    let kinds: Vec<Script> = runs.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        kinds,
        [
            Script::Latin,
            Script::Cjk,
            Script::Latin,
            Script::Emoji,
            Script::Latin,
            Script::Code
        ]
    );
    let summed: covel_studio::tokens::Estimate = runs
        .iter()
        .map(|(script, run)| rule.band(*script).apply(count(run)))
        .sum();
    assert_eq!(rule.estimate(&counter, Encoding::Cl100kBase, text), summed);
    let cjk = rule.estimate(&counter, Encoding::Cl100kBase, "守门人在钟楼下等你。");
    let latin = rule.estimate(
        &counter,
        Encoding::Cl100kBase,
        "The keeper waits below the bell tower.",
    );
    let spread = |e: covel_studio::tokens::Estimate| (e.high - e.low) as f64 / e.tokens as f64;
    assert!(spread(cjk) > spread(latin), "{cjk:?} against {latin:?}");
    // Prose is one run, counted whole, as before the bands were split.
    let prose = "Keep a grave (unhurried) voice.";
    assert_eq!(
        rule.estimate(&counter, Encoding::Cl100kBase, prose),
        rule.latin.apply(count(prose))
    );
}

/// The forecast counts what a Claude request adds around the text: the request's framing, each
/// further message's turn markers, and, when tools are offered, their definitions and the
/// tool-use system prompt, attributed to `(tools)` in the ledger.
#[test]
fn claude_framing_and_tool_definitions_are_part_of_the_predicted_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins-sample");
    let ws = Workspace::open(
        &root,
        Some(&root.join("tests/replayed.session.yaml")),
        &Limits::default(),
    )
    .expect("opens");
    let (played, error) = forecast::play(ws, Some(1));
    assert!(error.is_none(), "{error:?}");
    let rule = claude_rule();
    let f = forecast::forecast(
        &played,
        &claude_profile(),
        &ForecastOptions::default(),
        &TokenCounter::new(),
    );
    let tools = f
        .ledger
        .iter()
        .find(|row| row.owner == "(tools)")
        .expect("the tools have a ledger row");
    let body = &played[0].preview.prompt.requests.anthropic;
    let json = body["tools"].to_string();
    let counter = TokenCounter::new();
    let expected = rule.tools.tokens
        + rule
            .estimate_as(Script::Code, &counter, Encoding::Cl100kBase, &json)
            .tokens;
    assert_eq!(
        tools.uncached_tokens + tools.cache_write_tokens + tools.cache_read_tokens,
        expected
    );
    let messages = body["messages"].as_array().map_or(0, Vec::len) as u64;
    let text: u64 = body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["content"].as_array().into_iter().flatten()),
        )
        .map(|b| claude_tokens(&counter, b["text"].as_str().unwrap_or_default()))
        .sum();
    assert_eq!(
        f.turns[0].input_tokens,
        text + expected + rule.request.tokens + (messages - 1) * rule.message.tokens
    );
}

/// A replay whose recording reports far fewer input tokens than the request it answered is a
/// mismatch of the whole input, saying by how much it is outside the estimate's range.
#[test]
fn a_reported_input_far_under_the_prediction_is_a_mismatch_saying_by_how_much() {
    let mut played = forecast::play(open("small.session.yaml"), Some(1)).0;
    played[0].usage = Some(json!({"input_tokens": 21, "output_tokens": 5,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}));
    let f = predict(&played, "claude-sonnet-4-5", 60.0, &TokenCounter::new());
    let turn = &f.turns[0];
    let (low, high) = turn.input_tokens_range.expect("a Claude range");
    let mismatch = turn
        .mismatches
        .iter()
        .find(|m| m.field == "input")
        .expect("flagged");
    assert_eq!(
        (mismatch.predicted, mismatch.reported),
        (turn.input_tokens, 21)
    );
    let allowed_low = low - 16;
    assert!(
        mismatch.message.contains(&format!(
            "where {} were predicted ({allowed_low}–{} allowed), {} under the range",
            turn.input_tokens,
            high + 16,
            allowed_low - 21
        )),
        "{}",
        mismatch.message
    );
    // Inside the range, nothing is flagged.
    played[0].usage = Some(json!({"input_tokens": low + 1, "output_tokens": 5}));
    let f = predict(&played, "claude-sonnet-4-5", 60.0, &TokenCounter::new());
    assert!(
        f.turns[0].mismatches.is_empty(),
        "{:?}",
        f.turns[0].mismatches
    );
}

/// Chat bodies counted offline with OpenAI's encodings as OpenAI's cookbook counts a request
/// (tests/fixtures/openai-counts: `count.mjs` made them, with the tool and version it names).
#[test]
fn openai_chat_bodies_count_as_tiktoken_counts_them_with_the_cookbooks_framing() {
    let path = covel_tests::fixture("openai-counts").join("bodies.json");
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the fixture")).expect("json");
    assert!(
        fixture["tool"]
            .as_str()
            .is_some_and(|t| t.starts_with("js-tiktoken"))
    );
    let facts = ModelFacts::embedded().expect("facts");
    let counter = TokenCounter::new();
    let bodies = fixture["bodies"].as_array().expect("bodies");
    assert!(bodies.len() >= 10);
    for body in bodies {
        // gpt-4o counts with o200k_base, gpt-4.1 too; a cl100k_base body is counted by a
        // profile whose encoding is cl100k_base.
        let model = match body["encoding"].as_str() {
            Some("o200k_base") => "gpt-4o",
            _ => continue,
        };
        let profile = facts.profile(model).expect("model");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(
            forecast::openai_chat_tokens(messages, &profile, &counter),
            body["tokens"].as_u64().expect("tokens"),
            "{} ({})",
            body["name"],
            body["encoding"]
        );
    }
    // The cl100k_base counts, encoded directly with the same framing.
    for body in bodies.iter().filter(|b| b["encoding"] == "cl100k_base") {
        let messages = body["messages"].as_array().expect("messages");
        let counted: u64 = 3 + messages
            .iter()
            .map(|m| {
                3 + counter.count(Encoding::Cl100kBase, m["role"].as_str().unwrap_or_default())
                    + counter.count(
                        Encoding::Cl100kBase,
                        m["content"].as_str().unwrap_or_default(),
                    )
            })
            .sum::<u64>();
        assert_eq!(
            counted,
            body["tokens"].as_u64().expect("tokens"),
            "{}",
            body["name"]
        );
    }
}
