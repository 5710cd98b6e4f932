//! Property tests (time-boxed fuzzing) of what crosses from the engine and of TypeScript
//! stripping: values built from random shapes with shared references convert within the
//! budget or are refused, never a panic or an unbounded expansion; random source text never
//! panics the stripper. `PROPTEST_CASES` sets the number of cases.

use covel_js::convert::{ConversionBudget, from_js_within};
use proptest::prelude::*;
use rquickjs::{Context, Runtime, Value};

/// A random JS expression building a value (objects, arrays, strings, numbers, sharing).
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("1.5".to_string()),
        Just("NaN".to_string()),
        Just("\"s\"".to_string()),
        Just("\"x\".repeat(1000)".to_string()),
        Just("undefined".to_string()),
        Just("(() => 1)".to_string()),
        Just("Symbol('x')".to_string()),
        Just("10n".to_string()),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec(inner.clone(), 0..6).prop_map(|items| format!(
                "({{{}}})",
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("k{i}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            inner.clone().prop_map(|v| format!(
                "((a) => {{ for (let i = 0; i < 20; i++) a = [a, a]; return a; }})({v})"
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64), ..ProptestConfig::default() })]

    #[test]
    fn conversion_stays_within_its_budget(expr in expression()) {
        let runtime = Runtime::new().expect("runtime");
        runtime.set_memory_limit(64 * 1024 * 1024);
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            if let Ok(value) = ctx.eval::<Value, _>(expr.as_str()) {
                let budget = ConversionBudget { nodes: 5_000, bytes: 64 * 1024 };
                if let Ok(json) = from_js_within(&value, budget, &|| false) {
                    prop_assert!(json.to_string().len() < 2 * 1024 * 1024);
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn typescript_stripping_never_panics(source in "\\PC{0,300}", typed in "(let|const|type|interface|enum|namespace|class) [a-z]{1,3}(: [A-Z][a-z]{0,3}(<[A-Z]>)?)? ?[=:{]? ?[a-z0-9\"]{0,4};?") {
        let _ = covel_js::typescript::strip("fuzz.ts", &source);
        let _ = covel_js::typescript::strip("fuzz.ts", &typed);
    }
}
