//! The forecast's own unit tests: OpenAI's cached steps, the look-back, the error bar around
//! the minimum, which call's usage is compared, and a slow pace of play.

#[test]
fn openai_reads_from_1024_shared_tokens_on_in_whole_128_token_steps() {
    // One token under the minimum caches nothing; the minimum itself is read whole.
    assert_eq!(openai_cached(1023, 1023, 1024, 128), 0);
    assert_eq!(openai_cached(1024, 1024, 1024, 128), 1024);
    // A request over the minimum sharing less than it reads nothing.
    assert_eq!(openai_cached(5000, 1023, 1024, 128), 0);
    // Between steps: down to the last whole step; one more token reaches the next.
    assert_eq!(openai_cached(2000, 1151, 1024, 128), 1024);
    assert_eq!(openai_cached(2000, 1152, 1024, 128), 1152);
    assert_eq!(openai_cached(2000, 1279, 1024, 128), 1152);
}
use super::*;
use serde_json::json;

fn item(n: usize, tokens: u64, breakpoint: bool) -> Item {
    Item {
        label: format!("block {n}"),
        key: format!("block {n}").into_bytes(),
        tag: "user".into(),
        tokens,
        // As a Latin text whose exact count is `tokens` would have it.
        low: (tokens as f64 * 1.05).ceil() as u64,
        high: (tokens as f64 * 1.35).ceil() as u64,
        added: Estimate::default(),
        breakpoint,
        slot: Slot::Other,
        message: Some(n),
        parts: vec![ItemPart {
            part: Part {
                from: Source::History {
                    id: format!("m{n}"),
                },
                text: format!("block {n}"),
            },
            tokens,
        }],
        content: format!("block {n}"),
    }
}

fn sim_turns(turns: &[Vec<Item>], pace: f64) -> Vec<TurnSim> {
    let facts = crate::facts::ModelFacts::embedded().expect("facts");
    let profile = facts.profile("claude-sonnet-4-5").expect("model");
    let options = ForecastOptions {
        pace_seconds: pace,
        ttl: "5m".into(),
        reply_tokens: None,
    };
    let counter = TokenCounter::new();
    let sim = Sim {
        profile: &profile,
        options: &options,
        ttl: 300.0,
        min: 1024,
        counter: &counter,
    };
    sim.run(turns)
}

#[test]
fn a_cached_prefix_more_than_20_blocks_before_the_breakpoint_is_not_found() {
    // Turn 1 caches blocks 0..=9; turn 2 adds 25 blocks and breaks only at the last one.
    let first: Vec<Item> = (0..10).map(|n| item(n, 200, n == 9)).collect();
    let second: Vec<Item> = (0..35).map(|n| item(n, 200, n == 34)).collect();
    let sims = sim_turns(&[first.clone(), second], 10.0);
    let row = &sims[1].breakpoints[0];
    assert_eq!(
        (row.outcome, row.reason_code),
        (Outcome::Write, "beyond-lookback"),
        "{}",
        row.reason
    );
    assert_eq!(sims[1].read, 0);
    // Within 20 blocks the earlier prefix is found and only the new blocks are written.
    let near: Vec<Item> = (0..25).map(|n| item(n, 200, n == 24)).collect();
    let sims = sim_turns(&[first, near], 10.0);
    assert_eq!((sims[1].read, sims[1].write), (2000, 3000));
    assert_eq!(sims[1].breakpoints[0].reason_code, "extends");
}

#[test]
fn a_claude_prefix_whose_error_bar_straddles_the_minimum_is_uncertain_with_both_costs() {
    // 880 counted tokens: ×1.05–×1.35 is about 924–1188, around the 1024 minimum.
    let turn: Vec<Item> = (0..4).map(|n| item(n, 220, n == 3)).collect();
    let sims = sim_turns(&[turn], 60.0);
    let row = &sims[0].breakpoints[0];
    assert_eq!((row.outcome, row.reason_code), (Outcome::Miss, "uncertain"));
    let band = crate::tokens::Band {
        factor: 1.2,
        low: 1.05,
        high: 1.35,
    }
    .apply(880);
    assert!(band.low < 1024 && band.high >= 1024, "{band:?}");
    let said = format!("{}–{} tokens", band.low, band.high);
    assert!(row.reason.contains(&said), "{}", row.reason);
    assert!(
        row.reason.contains("880 tokens are written ($0.00330)"),
        "{}",
        row.reason
    );
    assert!(
        row.reason.contains("paid as input ($0.00264)"),
        "{}",
        row.reason
    );
    // Far from the minimum, the verdict is certain.
    let large: Vec<Item> = (0..4).map(|n| item(n, 400, n == 3)).collect();
    assert_eq!(
        sim_turns(&[large], 60.0)[0].breakpoints[0].reason_code,
        "cold"
    );
}

/// Only the turn's first call sends the prompt the forecast predicts: its usage is the
/// one compared; a tool round or a correction after it, or a call a hook rewrote, is not.
#[test]
fn only_the_usage_of_the_call_that_sent_the_assembled_prompt_is_compared() {
    use crate::turn::record::{LoopStep, ModelStep};
    let call = |n: u32, added: Vec<Value>, replaced: Vec<String>, input: u64| {
        let mut reply = crate::models::Reply::text("A reply.");
        reply.usage = Some(json!({"input_tokens": input, "output_tokens": 3}));
        LoopStep::Model(ModelStep {
            call: n,
            added,
            tools: Vec::new(),
            replaced,
            reply: Some(reply),
            error: None,
            duration_ms: 0.0,
        })
    };
    let tool_round = vec![json!({"role": "tool", "content": "ok"})];
    let steps = [
        call(1, Vec::new(), Vec::new(), 900),
        call(2, tool_round, Vec::new(), 960),
    ];
    assert_eq!(
        usage_of_assembled_request(&steps),
        Some(json!({"input_tokens": 900, "output_tokens": 3}))
    );
    let rewritten = [call(1, Vec::new(), vec!["messages".into()], 900)];
    assert_eq!(usage_of_assembled_request(&rewritten), None);
    let scripted = [LoopStep::Model(ModelStep {
        call: 1,
        added: Vec::new(),
        tools: Vec::new(),
        replaced: Vec::new(),
        reply: Some(crate::models::Reply::text("A reply.")),
        error: None,
        duration_ms: 0.0,
    })];
    assert_eq!(usage_of_assembled_request(&scripted), None);
}

#[test]
fn a_slow_pace_expires_the_cache_between_turns() {
    let turn: Vec<Item> = (0..8).map(|n| item(n, 200, n == 7)).collect();
    let sims = sim_turns(&[turn.clone(), turn.clone()], 400.0);
    assert_eq!(
        sims[1].breakpoints[0].reason_code, "ttl-expired",
        "{}",
        sims[1].breakpoints[0].reason
    );
    assert_eq!((sims[1].read, sims[1].write), (0, 1600));
    let sims = sim_turns(&[turn.clone(), turn], 60.0);
    assert_eq!((sims[1].read, sims[1].write), (1600, 0));
    assert_eq!(sims[1].breakpoints[0].outcome, Outcome::Hit);
}
