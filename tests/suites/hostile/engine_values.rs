//! Seeded hostile engine values (issue #45): a generator of values a handler can return —
//! untrustworthy lengths, holes, getters and proxy traps that loop, throw or balloon, cycles,
//! shared references, deep nesting, revoked proxies, prototype pollution — each returned by a
//! real handler in a fresh runtime and read back by the host's one reader of engine values.
//! Every case must end in bounded time with a result or a failure that says why, never a
//! panic, and a neighbour plugin keeps working. `COVEL_SLIP_SEED=N` explores other cases.

use super::seeded_runner;
use covel_js::Limits;
use covel_kernel::contract::PointId;
use covel_kernel::runner::Outcome;
use covel_studio::Workspace;
use proptest::prelude::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// A JS expression that evaluates to a hostile value.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("1".to_string()),
        Just("NaN".to_string()),
        Just("-0".to_string()),
        Just("2 ** 53 + 1".to_string()),
        Just("\"text\"".to_string()),
        Just("\"x\".repeat(1 << 22)".to_string()),
        Just("undefined".to_string()),
        Just("null".to_string()),
        Just("Symbol(\"s\")".to_string()),
        Just("10n".to_string()),
        Just("(() => 1)".to_string()),
        Just("new Date(0)".to_string()),
        Just("/re/g".to_string()),
        Just("new Map([[1, 2]])".to_string()),
        Just("new Uint8Array(1 << 16)".to_string()),
        Just("Promise.resolve(1)".to_string()),
        Just("JSON.parse(\"[\".repeat(2000) + \"]\".repeat(2000))".to_string()),
        Just("(() => { const o = {}; o.self = o; return o; })()".to_string()),
        Just(
            "(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()"
                .to_string()
        ),
        Just("JSON.parse('{\"__proto__\": {\"polluted\": true}}')".to_string()),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let length = prop_oneof![
            Just("2 ** 31"),
            Just("2 ** 32 - 1"),
            Just("5e7"),
            Just("100001"),
            Just("1000"),
        ];
        let index = prop_oneof![Just("0"), Just("99999"), Just("1e6"), Just("2 ** 32 - 2")];
        let getter_body = prop_oneof![
            Just("for (;;) {}".to_string()),
            Just("throw new Error(\"getter\");".to_string()),
            Just("return \"y\".repeat(1 << 21);".to_string()),
        ];
        let keys = prop_oneof![Just("10"), Just("100000"), Just("1000000")];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(", "))),
            (inner.clone(), length).prop_map(|(item, length)| format!(
                "(() => {{ const a = [{item}]; a.length = {length}; return a; }})()"
            )),
            (inner.clone(), index).prop_map(|(item, index)| format!(
                "(() => {{ const a = []; a[{index}] = {item}; return a; }})()"
            )),
            (inner.clone(), getter_body.clone()).prop_map(|(item, body)| format!(
                "({{ plain: {item}, get g() {{ {body} }} }})"
            )),
            (inner.clone(), keys).prop_map(|(item, keys)| format!(
                "new Proxy({{}}, {{ ownKeys: () => Array.from({{ length: {keys} }}, (_, i) => \"k\" + i), getOwnPropertyDescriptor: () => ({{ value: 1, enumerable: true, configurable: true }}), get: () => {item} }})"
            )),
            inner.clone().prop_map(|item| format!(
                "(() => {{ let a = [{item}]; for (let i = 0; i < 24; i++) a = [a, a]; return a; }})()"
            )),
            (inner.clone(), getter_body).prop_map(|(item, body)| format!(
                "(() => {{ Object.defineProperty(Array.prototype, \"0\", {{ get() {{ {body} }}, configurable: true }}); const a = [, {item}]; return a; }})()"
            )),
            inner.prop_map(|item| format!("Promise.resolve({item})")),
        ]
    })
}

#[test]
fn seeded_hostile_engine_values_end_in_bounded_time_with_a_result_or_a_reason() {
    let cases: u32 = std::env::var("COVEL_ENGINE_VALUE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir().expect("tempdir");
    super::segment_plugin(
        dir.path(),
        "calm",
        "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"calm\", { handler: () => [{ id: \"calm\", content: \"The neighbour still works.\", position: \"system\", audience: \"story\", volatility: \"stable\" }] });\n}\n",
    );
    // The handler evaluates the case it is given: one plugin, a fresh runtime per case.
    super::segment_plugin(
        dir.path(),
        "values",
        "export default function (covel) {\n  covel.provideExtension(\"prompt.segment@1\", \"values\", { handler: (input) => new Function(`return (${input.playerMessage});`)() });\n}\n",
    );
    std::fs::write(dir.path().join("t.session.yaml"), "id: t\nlocale: en\n").expect("session");
    let (mut runner, seed) = seeded_runner(cases);
    let outcomes = std::cell::RefCell::new(std::collections::BTreeMap::<String, usize>::new());
    let result = runner.run(&value(), |source| {
        let ws = Workspace::open(
            dir.path(),
            Some(&dir.path().join("t.session.yaml")),
            &Limits::default(),
        )
        .expect("opens");
        let started = Instant::now();
        let run = covel_kernel::runner::run(
            PointId::PromptSegment,
            json!({"turnId": "t", "playerMessage": source}),
            &ws.active_providers(),
            &ws.execution(Some("t".into())),
            &covel_kernel::runner::RunOptions {
                timeout: Some(Duration::from_millis(300)),
                ..Default::default()
            },
        );
        let took = started.elapsed();
        prop_assert!(took < Duration::from_secs(15), "took {took:?}");
        let call = run
            .calls
            .iter()
            .find(|c| &*c.plugin_id == "values")
            .expect("the case ran");
        if call.outcome != Outcome::Success {
            prop_assert!(
                call.message
                    .as_deref()
                    .is_some_and(|m| !m.trim().is_empty()),
                "a failure says why: {call:?}"
            );
        }
        let calm = covel_tests::segment_content(&run, "calm");
        prop_assert_eq!(calm.as_deref(), Some("The neighbour still works."));
        *outcomes
            .borrow_mut()
            .entry(format!("{:?}", call.outcome))
            .or_default() += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("seed {seed}: {e}");
    }
    // The generator reaches more than one kind of ending (it is not all one refusal).
    let outcomes = outcomes.into_inner();
    assert!(outcomes.len() >= 2, "seed {seed}: {outcomes:?}");
    // What the host took in memory stays bounded: one case once took 14 GB.
    let peak_kb: u64 = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0);
    assert!(peak_kb < 6 * 1024 * 1024, "peak memory {peak_kb} kB");
}
