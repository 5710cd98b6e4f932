//! Token counts you can trust. Exact counts for OpenAI's encodings (`o200k_base`,
//! `cl100k_base`) with the byte-pair encoder of `tiktoken`, whose tables load on
//! first use (a cold start that never counts never pays for them). A [`TokenCounter`] keeps the
//! count of every text it has seen, so a preview recounts only the segments that changed. For
//! Claude, whose tokenizer is not public, a stated estimate with its error bar: each run of
//! Latin, CJK, emoji or code ([`crate::scripts`]) scaled by its own band, plus the framing a
//! request adds (the bands and allowances are in the model-facts file). The SDK's `estimateTokens` stays what the contract says it is —
//! budgets use it — and these counts sit beside it.

use crate::scripts::{self, Script};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// An OpenAI byte-pair encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    /// Parses `o200k_base` or `cl100k_base`.
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "o200k_base" => Some(Encoding::O200kBase),
            "cl100k_base" => Some(Encoding::Cl100kBase),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static tiktoken::CoreBpe {
        static CL100K: OnceLock<&'static tiktoken::CoreBpe> = OnceLock::new();
        static O200K: OnceLock<&'static tiktoken::CoreBpe> = OnceLock::new();
        let loaded = match self {
            Encoding::Cl100kBase => &CL100K,
            Encoding::O200kBase => &O200K,
        };
        // Building the tables is a burst of allocations: see `returning_freed_memory`.
        loaded.get_or_init(|| {
            covel_js::memory::returning_freed_memory(|| {
                tiktoken::get_encoding(self.name())
                    .expect("tiktoken has every encoding `Encoding` names")
            })
        })
    }
}

/// How many counts a [`TokenCounter`] computed and how many it answered from memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct CountStats {
    #[specta(type = crate::ts::Number)]
    pub computed: u64,
    #[specta(type = crate::ts::Number)]
    pub reused: u64,
}

/// Entries kept before the memory is cleared (a long session of edits stays bounded).
const MAX_REMEMBERED: usize = 50_000;

/// A text cut into runs of one kind of text, each with its exact count.
pub type CountedRuns = Arc<[(Script, u64)]>;

/// Exact counts, remembered per text, and each text's runs of one kind with their counts (the
/// Claude estimate's split, which a preview's counts would otherwise redo for every block on
/// every snapshot).
#[derive(Debug, Default)]
pub struct TokenCounter {
    counts: Mutex<HashMap<Encoding, HashMap<String, u64>>>,
    runs: Mutex<HashMap<Encoding, HashMap<String, CountedRuns>>>,
    computed: AtomicU64,
    reused: AtomicU64,
}

impl TokenCounter {
    pub fn new() -> TokenCounter {
        TokenCounter::default()
    }

    /// The exact number of tokens of `text` in `encoding`.
    pub fn count(&self, encoding: Encoding, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        if let Some(&n) = self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&encoding)
            .and_then(|m| m.get(text))
        {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return n;
        }
        let n = encoding.tokenizer().count(text) as u64;
        self.computed.fetch_add(1, Ordering::Relaxed);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let memory = counts.entry(encoding).or_default();
        if memory.len() >= MAX_REMEMBERED {
            memory.clear();
        }
        memory.insert(text.to_string(), n);
        n
    }

    /// `text` cut into runs of one kind ([`scripts::runs`]), each with its exact count in
    /// `encoding`: remembered per text, as the counts are.
    pub fn counted_runs(&self, encoding: Encoding, text: &str) -> CountedRuns {
        if let Some(runs) = self
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&encoding)
            .and_then(|m| m.get(text))
        {
            return Arc::clone(runs);
        }
        let runs: CountedRuns = scripts::runs(text)
            .into_iter()
            .map(|(script, run)| (script, self.count(encoding, run)))
            .collect();
        let mut memory = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let memory = memory.entry(encoding).or_default();
        if memory.len() >= MAX_REMEMBERED {
            memory.clear();
        }
        memory.insert(text.to_string(), Arc::clone(&runs));
        runs
    }

    /// The token ids of `text` (not remembered).
    pub fn encode(&self, encoding: Encoding, text: &str) -> Vec<u32> {
        encoding.tokenizer().encode(text)
    }

    pub fn stats(&self) -> CountStats {
        CountStats {
            computed: self.computed.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }
}

/// A scale on an exact base count: its centre and its error bar (from the model-facts file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Band {
    pub factor: f64,
    pub low: f64,
    pub high: f64,
}

impl Band {
    /// The estimate for a text whose exact `base` count is known.
    pub fn apply(&self, base: u64) -> Estimate {
        let scale = |f: f64| (base as f64 * f).ceil() as u64;
        Estimate {
            tokens: scale(self.factor),
            low: scale(self.low),
            high: scale(self.high),
        }
    }
}

/// Tokens a provider adds around the text (turn markers, a tool-use system prompt): a count
/// with its error bar, not a scale.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Allowance {
    pub tokens: u64,
    pub low: u64,
    pub high: u64,
}

impl Allowance {
    pub fn estimate(&self) -> Estimate {
        Estimate {
            tokens: self.tokens,
            low: self.low,
            high: self.high,
        }
    }
}

/// How a Claude count is estimated from exact OpenAI counts: a band per kind of text
/// ([`Script`]), and the framing the request adds (from the model-facts file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimateRule {
    /// Latin prose, and any text without a band of its own.
    pub latin: Band,
    pub cjk: Band,
    pub emoji: Band,
    pub code: Band,
    /// Once per request: the markers around the system prompt and the first message, and the
    /// reply's start.
    pub request: Allowance,
    /// Each message after the first: its turn markers.
    pub message: Allowance,
    /// Once, when the request offers tools: the provider's tool-use system prompt.
    pub tools: Allowance,
}

impl EstimateRule {
    /// One band for every kind of text and no framing (a facts file without per-script bands).
    pub fn uniform(band: Band) -> EstimateRule {
        EstimateRule {
            latin: band,
            cjk: band,
            emoji: band,
            code: band,
            request: Allowance::default(),
            message: Allowance::default(),
            tools: Allowance::default(),
        }
    }

    pub fn band(&self, script: Script) -> Band {
        match script {
            Script::Latin => self.latin,
            Script::Cjk => self.cjk,
            Script::Emoji => self.emoji,
            Script::Code => self.code,
        }
    }

    /// The estimate of a text: each run of one kind counted exactly in `encoding` and scaled by
    /// its band (a text of one kind is counted whole).
    pub fn estimate(&self, counter: &TokenCounter, encoding: Encoding, text: &str) -> Estimate {
        counter
            .counted_runs(encoding, text)
            .iter()
            .map(|&(script, base)| self.band(script).apply(base))
            .sum()
    }

    /// The estimate of a text taken as one kind (tool definitions are JSON: code).
    pub fn estimate_as(
        &self,
        script: Script,
        counter: &TokenCounter,
        encoding: Encoding,
        text: &str,
    ) -> Estimate {
        self.band(script).apply(counter.count(encoding, text))
    }
}

/// An estimated count with its error bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub tokens: u64,
    pub low: u64,
    pub high: u64,
}

impl Estimate {
    /// An exact count: no error bar.
    pub fn exact(tokens: u64) -> Estimate {
        Estimate {
            tokens,
            low: tokens,
            high: tokens,
        }
    }
}

impl std::ops::Add for Estimate {
    type Output = Estimate;
    fn add(self, other: Estimate) -> Estimate {
        Estimate {
            tokens: self.tokens + other.tokens,
            low: self.low + other.low,
            high: self.high + other.high,
        }
    }
}

impl std::iter::Sum for Estimate {
    fn sum<I: Iterator<Item = Estimate>>(pieces: I) -> Estimate {
        pieces.fold(Estimate::default(), std::ops::Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_counts_are_exact_token_ids_of_the_encoding() {
        let counter = TokenCounter::new();
        assert_eq!(
            counter.encode(Encoding::Cl100kBase, "hello world"),
            [15339, 1917]
        );
        assert_eq!(counter.count(Encoding::Cl100kBase, "hello world"), 2);
        assert_eq!(counter.count(Encoding::O200kBase, "hello world"), 2);
        assert_eq!(counter.count(Encoding::O200kBase, ""), 0);
    }

    #[test]
    fn a_text_already_counted_is_answered_from_memory() {
        let counter = TokenCounter::new();
        counter.count(Encoding::O200kBase, "The bell tolls once.");
        counter.count(Encoding::O200kBase, "The bell tolls once.");
        counter.count(Encoding::O200kBase, "The bell tolls twice.");
        assert_eq!(
            counter.stats(),
            CountStats {
                computed: 2,
                reused: 1
            }
        );
    }

    /// Texts of every kind the split tells apart, mixed.
    fn mixed_texts() -> impl proptest::strategy::Strategy<Value = Vec<String>> {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec![
            "The bell tolls. ",
            "潮が引くと鐘楼が見える。",
            "🔔🌊",
            "fn ring() { bell.toll(); }\n",
            "Vell, 1890 — ",
            "",
        ]);
        prop::collection::vec(
            prop::collection::vec(piece, 0..8).prop_map(|p| p.concat()),
            1..6,
        )
    }

    proptest::proptest! {
        /// The split each text's estimate is made of, remembered, gives what a counter that has
        /// never seen the text gives (the caches table's token counts row).
        #[test]
        fn an_estimate_from_remembered_runs_equals_one_made_afresh(texts in mixed_texts()) {
            let facts = crate::facts::ModelFacts::embedded().expect("facts");
            let profile = facts.profile("claude-sonnet-4-5").expect("model");
            let rule = profile.estimate().expect("an estimated model");
            let warm = TokenCounter::new();
            // The same texts and others, in both encodings (whose counts differ).
            for text in &texts {
                rule.estimate(&warm, Encoding::Cl100kBase, text);
                rule.estimate(&warm, Encoding::O200kBase, &format!("{text} again"));
                rule.estimate(&warm, Encoding::O200kBase, text);
            }
            for text in &texts {
                proptest::prop_assert_eq!(
                    rule.estimate(&warm, Encoding::O200kBase, text),
                    rule.estimate(&TokenCounter::new(), Encoding::O200kBase, text)
                );
            }
        }
    }

    #[test]
    fn a_claude_estimate_states_its_error_bar() {
        let band = Band {
            factor: 1.2,
            low: 1.05,
            high: 1.35,
        };
        assert_eq!(
            band.apply(100),
            Estimate {
                tokens: 120,
                low: 105,
                high: 135
            }
        );
    }
}
