//! The kernel's provider order: `order` ascending (0 when absent), then plugin id, then provider
//! id, both by plain UTF-16 code-unit comparison (never locale collation), so the same folder
//! always yields the same chain on every machine.

use super::Provider;
use serde::Serialize;
use std::cmp::Ordering;

/// Compares two strings by UTF-16 code units, as JavaScript's `<` does.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    // Up to their first differing byte the two strings hold the same characters, so they differ
    // there in UTF-16 too. When both bytes there are ASCII (always, for the usual ids), they are
    // whole characters and compare the same as their code units; only elsewhere can UTF-8 and
    // UTF-16 order disagree (a supplementary character against U+E000–U+FFFF).
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(at) if x[at].is_ascii() && y[at].is_ascii() => x[at].cmp(&y[at]),
        Some(_) => a.encode_utf16().cmp(b.encode_utf16()),
    }
}

/// The key that placed a provider in its chain, shown to authors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SortKey {
    pub order: i64,
    pub plugin_id: String,
    pub id: String,
}

impl SortKey {
    pub fn of(provider: &Provider) -> SortKey {
        SortKey {
            order: provider.decl.order,
            plugin_id: provider.plugin_id.clone(),
            id: provider.decl.id.clone(),
        }
    }
}

/// The kernel's call order of two providers.
fn call_order(a: &Provider, b: &Provider) -> Ordering {
    // By `order`; equal `order` sorts by `providerPluginId`, then id (UTF-16 code units).
    // Compared in place (a `SortKey` per comparison would copy both ids every time).
    a.decl
        .order
        .cmp(&b.decl.order)
        .then_with(|| utf16_cmp(&a.plugin_id, &b.plugin_id))
        .then_with(|| utf16_cmp(&a.decl.id, &b.decl.id))
}

/// Sorts providers into the kernel's call order.
pub fn sort_providers<'a>(providers: impl Iterator<Item = &'a Provider>) -> Vec<&'a Provider> {
    let mut chain: Vec<&Provider> = providers.collect();
    chain.sort_by(|a, b| call_order(a, b));
    chain
}

/// Puts a list of providers in the kernel's call order once, for a caller that runs several
/// points over it: each run's own sort then finds its chain already in order (one pass instead
/// of a full sort). Both sorts are stable and use the same key, so every chain is exactly the
/// one sorting the unsorted list would give.
pub fn presort_providers(providers: &mut Vec<Provider>) {
    // Providers come in folder order (plugin ids ascending) with each plugin's own `order`, so
    // the key's leading field is interleaved: grouped by `order` first (keeping their order
    // within a group), they are nearly sorted and the stable sort finds runs instead of
    // comparing log2(n) times per provider. The sort alone decides the result.
    let mut groups: std::collections::BTreeMap<i64, Vec<Provider>> = Default::default();
    for provider in providers.drain(..) {
        groups
            .entry(provider.decl.order)
            .or_default()
            .push(provider);
    }
    providers.extend(groups.into_values().flatten());
    providers.sort_by(call_order);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::PointId;

    #[test]
    fn code_unit_order_puts_upper_case_first() {
        assert_eq!(utf16_cmp("Zeta", "alpha"), Ordering::Less);
        // U+FF5E (one unit) sorts after a surrogate pair (U+1F600) in UTF-16 but not in UTF-8.
        assert_eq!(utf16_cmp("\u{1F600}", "\u{FF5E}"), Ordering::Less);
        assert_eq!(utf16_cmp("gen-2", "gen-10"), Ordering::Greater);
        assert_eq!(utf16_cmp("abc", "abcd"), Ordering::Less);
        assert_eq!(utf16_cmp("é-2", "é-10"), Ordering::Greater);
        assert_eq!(utf16_cmp("é\u{1F600}", "é\u{FF5E}"), Ordering::Less);
        assert_eq!(utf16_cmp("\u{FF5E}a", "\u{FF5E}"), Ordering::Greater);
    }

    fn provider(plugin: &str, id: &str, order: i64, point: PointId) -> Provider {
        struct Never;
        impl crate::runner::Invoker for Never {
            fn call(&self, _: &crate::runner::ProviderCall) -> crate::runner::CallReport {
                unreachable!("never called: only sorted")
            }
        }
        Provider {
            plugin_id: plugin.into(),
            decl: std::sync::Arc::new(crate::manifest::ExtensionDecl::new(point, id, order)),
            runtime_ids: std::sync::Arc::new(Vec::new()),
            invoker: std::sync::Arc::new(Never),
            checked: Default::default(),
            settled: Default::default(),
        }
    }

    proptest::proptest! {
        #[test]
        fn presorting_gives_what_a_stable_sort_of_the_providers_as_given_gives(
            keys in proptest::collection::vec(("[ab]", "[xy]", -1i64..2, proptest::bool::ANY), 0..24),
        ) {
            // Two points let one plugin hold two providers with the same key; where each ended
            // shows whether equal keys kept their order.
            let all: Vec<Provider> = keys
                .iter()
                .map(|(plugin, id, order, slot)| {
                    let point = if *slot { PointId::UiSlot } else { PointId::PromptSegment };
                    provider(plugin, id, *order, point)
                })
                .collect();
            let shown = |list: &[Provider]| -> Vec<(String, String, i64, PointId)> {
                list.iter()
                    .map(|p| (p.plugin_id.clone(), p.decl.id.clone(), p.decl.order, p.decl.point))
                    .collect()
            };
            let mut expected: Vec<&Provider> = all.iter().collect();
            expected.sort_by(|a, b| call_order(a, b));
            let expected: Vec<Provider> = expected.into_iter().cloned().collect();
            let mut sorted = all.clone();
            presort_providers(&mut sorted);
            proptest::prop_assert_eq!(shown(&sorted), shown(&expected));
        }

        #[test]
        fn code_unit_order_matches_encode_utf16_on_any_strings(
            a in "[a-c\u{e9}\u{FF5E}\u{1F600}-]{0,6}",
            b in "[a-c\u{e9}\u{FF5E}\u{1F600}-]{0,6}",
        ) {
            proptest::prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
        }
    }
}
