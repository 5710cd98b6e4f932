//! Token counts you can trust. Exact counts for OpenAI's encodings (`o200k_base`,
//! `cl100k_base`) with the embedded byte-pair encoder of `bpe-openai`, whose tables load on
//! first use (a cold start that never counts never pays for them). A [`TokenCounter`] keeps the
//! count of every text it has seen, so a preview recounts only the segments that changed. For
//! Claude, whose tokenizer is not public, a stated estimate with its error bar (the factors are
//! in the model-facts file). The SDK's `estimateTokens` stays what the contract says it is —
//! budgets use it — and these counts sit beside it.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

/// How many counts a [`TokenCounter`] computed and how many it answered from memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct CountStats {
    #[specta(type = crate::wire::common::Number)]
    pub computed: u64,
    #[specta(type = crate::wire::common::Number)]
    pub reused: u64,
}

/// Entries kept before the memory is cleared (a long session of edits stays bounded).
const MAX_REMEMBERED: usize = 50_000;

/// Exact counts, remembered per text.
#[derive(Debug, Default)]
pub struct TokenCounter {
    counts: Mutex<HashMap<Encoding, HashMap<String, u64>>>,
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

/// How a Claude count is estimated from an exact OpenAI count (from the model-facts file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimateRule {
    pub factor: f64,
    pub low: f64,
    pub high: f64,
}

/// An estimated count with its error bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    pub tokens: u64,
    pub low: u64,
    pub high: u64,
}

impl EstimateRule {
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

    #[test]
    fn a_claude_estimate_states_its_error_bar() {
        let rule = EstimateRule {
            factor: 1.2,
            low: 1.05,
            high: 1.35,
        };
        assert_eq!(
            rule.apply(100),
            Estimate {
                tokens: 120,
                low: 105,
                high: 135
            }
        );
    }
}
