//! Model facts for the cache-and-cost forecast: per provider and model, the minimum cacheable
//! prefix, the cache TTLs, the prices of input, cache writes and cache reads, and how tokens
//! are counted. They live in a dated data file with its sources (`data/model-facts.json`,
//! embedded), never as constants in code; a different file can be given instead.

use crate::tokens::{Allowance, Band, Encoding, EstimateRule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The embedded facts file.
const EMBEDDED: &str = include_str!("../data/model-facts.json");

/// Why the facts could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error("cannot read the model facts {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("the model facts {path} are not valid: {reason}")]
    Invalid { path: String, reason: String },
    #[error(
        "no model named `{name}` in the model facts ({date}){nearest}; known: {known} (a model the facts do not list is never priced as another)"
    )]
    UnknownModel {
        name: String,
        date: String,
        /// ", nearest: a, b" when some known ids are close to the name.
        nearest: String,
        known: String,
    },
    #[error("no caching kind `{name}` in the model facts; known: {known}")]
    UnknownProvider { name: String, known: String },
    #[error(
        "a model priced with --price and --caching {provider} needs --min-cacheable N (its minimum cacheable prefix in tokens: 1024, 2048 or 4096 for current Claude models)"
    )]
    MinimumNeeded { provider: String },
}

/// A source a fact was taken from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Source {
    pub url: String,
    /// How it was read (primary page or restated elsewhere) and what it says.
    pub read: String,
}

/// How a provider caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum Caching {
    /// Anthropic: `cache_control` breakpoints, a look-back window before each.
    ExplicitBreakpoints,
    /// OpenAI: the longest common prefix with a recent request, in fixed steps.
    AutomaticPrefix,
}

/// How a provider's tokens are counted.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tokenizer {
    /// `exact` (the model's own encoding) or `estimate` (from `base` with `factor`).
    pub kind: String,
    pub base: Option<String>,
    pub factor: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub note: String,
    /// Estimates: a band per kind of text (`latin`, `cjk`, `emoji`, `code`), each citing its
    /// measurements; a kind left out takes `factor`/`low`/`high`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scripts: BTreeMap<String, ScriptBand>,
    /// Estimates: the tokens a request adds around the text (`request`, `message`, `tools`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub framing: BTreeMap<String, Framing>,
}

/// One kind of text's band, with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptBand {
    pub factor: f64,
    pub low: f64,
    pub high: f64,
    pub sources: Vec<String>,
    /// How the band was derived from the sources (or that it is an assumption).
    pub note: String,
}

/// Tokens added around the text, with what they rest on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Framing {
    pub tokens: u64,
    pub low: u64,
    pub high: u64,
    pub sources: Vec<String>,
    pub note: String,
}

/// What is true of every model of a provider.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Provider {
    pub caching: Caching,
    pub max_breakpoints: Option<usize>,
    pub lookback_blocks: Option<usize>,
    pub min_cacheable_tokens: Option<u64>,
    pub step_tokens: Option<u64>,
    /// Named TTLs in seconds (`5m`, `1h`; OpenAI: `default`, and `upTo` and `max` for the range
    /// over which an idle cache is cleared).
    pub ttl_seconds: BTreeMap<String, u64>,
    pub message_overhead_tokens: Option<u64>,
    pub reply_priming_tokens: Option<u64>,
    pub tokenizer: Tokenizer,
    pub sources: Vec<String>,
    pub verified: bool,
}

impl Provider {
    /// Every source the provider's facts cite: its own, its estimate bands' and framing's.
    pub fn cited(&self) -> impl Iterator<Item = &String> {
        let t = &self.tokenizer;
        self.sources
            .iter()
            .chain(t.scripts.values().flat_map(|b| &b.sources))
            .chain(t.framing.values().flat_map(|f| &f.sources))
    }
}

/// Prices in USD per million tokens.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Prices {
    #[specta(type = crate::ts::Number)]
    pub input: f64,
    /// Anthropic: writing the cache with the 5-minute TTL.
    #[specta(type = Option<crate::ts::Number>)]
    pub cache_write5m: Option<f64>,
    /// Anthropic: writing the cache with the 1-hour TTL.
    #[specta(type = Option<crate::ts::Number>)]
    pub cache_write1h: Option<f64>,
    #[specta(type = crate::ts::Number)]
    pub cache_read: f64,
    #[specta(type = crate::ts::Number)]
    pub output: f64,
}

/// Why a `--price` could not be read.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PriceError {
    #[error(
        "--price takes four prices in USD per million tokens, IN/OUT/WRITE/READ (for example 3/15/3.75/0.3; WRITE is 0 for OpenAI); got `{0}`"
    )]
    Shape(String),
    #[error(
        "`{value}` in --price `{text}` is not a price in USD per million tokens (a number ≥ 0)"
    )]
    Number { text: String, value: String },
}

impl Prices {
    /// The cache-write price at a TTL (`5m` or `1h`); when the facts omit it, Anthropic's
    /// stated multipliers of the input price (× 1.25 for 5 minutes, × 2 for an hour).
    pub fn cache_write(&self, ttl: &str) -> f64 {
        match ttl {
            "1h" => self.cache_write1h.unwrap_or(self.input * 2.0),
            _ => self.cache_write5m.unwrap_or(self.input * 1.25),
        }
    }

    /// `IN/OUT/WRITE/READ` in USD per million tokens; WRITE is the cache-write price at `ttl`
    /// (`5m` or `1h`; the other TTL's write price is left unknown).
    pub fn parse(text: &str, ttl: &str) -> Result<Prices, PriceError> {
        let values = text
            .split('/')
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| p.is_finite() && *p >= 0.0)
                    .ok_or_else(|| PriceError::Number {
                        text: text.into(),
                        value: v.into(),
                    })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        let [input, output, write, read] = values[..] else {
            return Err(PriceError::Shape(text.into()));
        };
        Ok(Prices {
            input,
            cache_write5m: (ttl != "1h").then_some(write),
            cache_write1h: (ttl == "1h").then_some(write),
            cache_read: read,
            output,
        })
    }
}

/// One model.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub provider: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// OpenAI models: their encoding.
    pub encoding: Option<String>,
    pub min_cacheable_tokens: u64,
    pub prices: Prices,
    pub sources: Vec<String>,
    pub verified: bool,
    pub note: Option<String>,
}

/// The facts file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelFacts {
    pub format: String,
    /// When the facts were gathered.
    pub date: String,
    pub note: String,
    pub sources: BTreeMap<String, Source>,
    pub providers: BTreeMap<String, Provider>,
    pub models: Vec<Model>,
}

/// A model with its provider's facts, ready for a forecast.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelProfile {
    pub model: Model,
    pub provider: Provider,
    /// When the facts were gathered.
    pub facts_date: String,
    /// The sources of this model's facts (id → source).
    pub sources: BTreeMap<String, Source>,
}

impl ModelProfile {
    /// The encoding counts are computed with (exactly for OpenAI, as the estimate's base for
    /// Claude).
    pub fn encoding(&self) -> Encoding {
        self.model
            .encoding
            .as_deref()
            .or(self.provider.tokenizer.base.as_deref())
            .and_then(Encoding::parse)
            .unwrap_or(Encoding::O200kBase)
    }

    /// The estimate rule when counts are estimated (Claude), `None` when they are exact.
    pub fn estimate(&self) -> Option<EstimateRule> {
        let t = &self.provider.tokenizer;
        (t.kind == "estimate").then(|| {
            let latin = Band {
                factor: t.factor.unwrap_or(1.0),
                low: t.low.unwrap_or(1.0),
                high: t.high.unwrap_or(1.0),
            };
            let band = |name: &str| {
                t.scripts.get(name).map_or(latin, |b| Band {
                    factor: b.factor,
                    low: b.low,
                    high: b.high,
                })
            };
            let framing = |name: &str| {
                t.framing
                    .get(name)
                    .map_or(Allowance::default(), |f| Allowance {
                        tokens: f.tokens,
                        low: f.low,
                        high: f.high,
                    })
            };
            EstimateRule {
                latin: band("latin"),
                cjk: band("cjk"),
                emoji: band("emoji"),
                code: band("code"),
                request: framing("request"),
                message: framing("message"),
                tools: framing("tools"),
            }
        })
    }

    /// A TTL in seconds by name, else the provider's first.
    pub fn ttl_seconds(&self, name: &str) -> u64 {
        self.provider
            .ttl_seconds
            .get(name)
            .or_else(|| self.provider.ttl_seconds.values().next())
            .copied()
            .unwrap_or(300)
    }
}

impl ModelFacts {
    /// The facts embedded in the studio.
    pub fn embedded() -> Result<ModelFacts, FactsError> {
        Self::parse(EMBEDDED, "(embedded data/model-facts.json)")
    }

    /// Facts from a file.
    pub fn load(path: &Path) -> Result<ModelFacts, FactsError> {
        let shown = path.display().to_string();
        let text = covel_kernel::files::read_regular(path, 16 * 1024 * 1024).map_err(|e| {
            FactsError::Read {
                path: shown.clone(),
                reason: e.to_string(),
            }
        })?;
        Self::parse(&text, &shown)
    }

    fn parse(text: &str, shown: &str) -> Result<ModelFacts, FactsError> {
        let facts: ModelFacts = serde_json::from_str(text).map_err(|e| FactsError::Invalid {
            path: shown.into(),
            reason: e.to_string(),
        })?;
        for (name, provider) in &facts.providers {
            let t = &provider.tokenizer;
            if let Some(missing) = provider.cited().find(|s| !facts.sources.contains_key(*s)) {
                return Err(FactsError::Invalid {
                    path: shown.into(),
                    reason: format!("provider {name} cites unknown source {missing}"),
                });
            }
            if let Some(kind) = t.scripts.keys().find(|k| {
                !crate::scripts::Script::ALL
                    .iter()
                    .any(|s| s.name() == k.as_str())
            }) {
                return Err(FactsError::Invalid {
                    path: shown.into(),
                    reason: format!(
                        "provider {name} has a band for `{kind}`; the kinds are latin, cjk, emoji and code"
                    ),
                });
            }
        }
        for model in &facts.models {
            if !facts.providers.contains_key(&model.provider) {
                return Err(FactsError::Invalid {
                    path: shown.into(),
                    reason: format!(
                        "model {} names unknown provider {}",
                        model.id, model.provider
                    ),
                });
            }
            if let Some(missing) = model
                .sources
                .iter()
                .find(|s| !facts.sources.contains_key(*s))
            {
                return Err(FactsError::Invalid {
                    path: shown.into(),
                    reason: format!("model {} cites unknown source {missing}", model.id),
                });
            }
        }
        Ok(facts)
    }

    /// A model the facts do not list, priced by its author (`--price`): the caching facts of
    /// `provider` (`anthropic` or `openai`: TTLs, look-back, how tokens are counted), the given
    /// minimum cacheable prefix (else the provider's) and prices. It is marked unverified and
    /// cites the command line as its source.
    pub fn custom(
        &self,
        id: &str,
        provider: &str,
        min_cacheable_tokens: Option<u64>,
        prices: Prices,
    ) -> Result<ModelProfile, FactsError> {
        let facts =
            self.providers
                .get(provider)
                .cloned()
                .ok_or_else(|| FactsError::UnknownProvider {
                    name: provider.into(),
                    known: self
                        .providers
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        let min = min_cacheable_tokens
            .or(facts.min_cacheable_tokens)
            .ok_or_else(|| FactsError::MinimumNeeded {
                provider: provider.into(),
            })?;
        let source = Source {
            url: "--price".into(),
            read: format!(
                "the author's prices for {id} on the command line, with the {provider} caching facts"
            ),
        };
        let mut sources: BTreeMap<String, Source> = self
            .sources
            .iter()
            .filter(|(k, _)| facts.cited().any(|c| c == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        sources.insert("command-line".into(), source);
        Ok(ModelProfile {
            model: Model {
                id: id.into(),
                provider: provider.into(),
                aliases: Vec::new(),
                encoding: None,
                min_cacheable_tokens: min,
                prices,
                sources: vec!["command-line".into()],
                verified: false,
                note: Some("priced with --price".into()),
            },
            provider: facts,
            facts_date: self.date.clone(),
            sources,
        })
    }

    /// The model named `name`: its id or one of its documented aliases (dated snapshots such as
    /// `claude-sonnet-4-5-20250929`). Nothing else: a longer id that starts like a known one is
    /// another model with other prices (`gpt-4.1-mini` is not `gpt-4.1`), so it is refused with
    /// the nearest known ids.
    pub fn profile(&self, name: &str) -> Result<ModelProfile, FactsError> {
        let exact = self
            .models
            .iter()
            .find(|m| m.id == name || m.aliases.iter().any(|a| a == name));
        let Some(model) = exact else {
            let mut near: Vec<(f64, &str)> = self
                .models
                .iter()
                .map(|m| (strsim::jaro_winkler(name, &m.id), m.id.as_str()))
                .filter(|(score, _)| *score >= 0.85)
                .collect();
            near.sort_by(|a, b| b.0.total_cmp(&a.0));
            let nearest: Vec<&str> = near.into_iter().take(3).map(|(_, id)| id).collect();
            return Err(FactsError::UnknownModel {
                name: name.into(),
                date: self.date.clone(),
                nearest: if nearest.is_empty() {
                    String::new()
                } else {
                    format!(", nearest: {}", nearest.join(", "))
                },
                known: self
                    .models
                    .iter()
                    .map(|m| m.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let provider = self
            .providers
            .get(&model.provider)
            .cloned()
            .ok_or_else(|| FactsError::Invalid {
                path: "facts".into(),
                reason: format!("no provider {}", model.provider),
            })?;
        let cited: Vec<&String> = model.sources.iter().chain(provider.cited()).collect();
        let sources = self
            .sources
            .iter()
            .filter(|(k, _)| cited.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(ModelProfile {
            model: model.clone(),
            provider,
            facts_date: self.date.clone(),
            sources,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of text's band and each framing allowance rests on cited measurements, or
    /// says in its note that none was found; every error bar contains its centre.
    #[test]
    fn every_claude_band_and_framing_cites_its_measurements_or_says_it_has_none() {
        let facts = ModelFacts::embedded().expect("valid facts");
        let tokenizer = &facts.providers["anthropic"].tokenizer;
        let kinds: Vec<&str> = tokenizer.scripts.keys().map(String::as_str).collect();
        assert_eq!(kinds, ["cjk", "code", "emoji", "latin"]);
        for (kind, band) in &tokenizer.scripts {
            assert!(
                band.low <= band.factor && band.factor <= band.high,
                "{kind}"
            );
            assert!(
                !band.sources.is_empty() || band.note.contains("no published"),
                "{kind}: {}",
                band.note
            );
        }
        let framing: Vec<&str> = tokenizer.framing.keys().map(String::as_str).collect();
        assert_eq!(framing, ["message", "request", "tools"]);
        for (name, allowance) in &tokenizer.framing {
            assert!(
                allowance.low <= allowance.tokens && allowance.tokens <= allowance.high,
                "{name}"
            );
            assert!(
                !allowance.sources.is_empty() || allowance.note.contains("an assumption"),
                "{name}: {}",
                allowance.note
            );
        }
        // A facts file that cites a source it does not list is refused.
        let broken = EMBEDDED.replacen(
            "\"sources\": [\"claude-chinese\"",
            "\"sources\": [\"nowhere\"",
            1,
        );
        let broken = broken.replacen("\"claude-chinese\", \"cjk-cl100k-o200k\"", "\"nowhere\"", 1);
        assert!(
            ModelFacts::parse(&broken, "test")
                .is_err_and(|e| e.to_string().contains("cites unknown source nowhere")),
            "refused"
        );
    }

    #[test]
    fn the_embedded_facts_are_dated_sourced_and_cover_both_caching_kinds() {
        let facts = ModelFacts::embedded().expect("valid facts");
        assert_eq!(facts.date.len(), 10, "an ISO date");
        assert!(facts.models.iter().all(|m| !m.sources.is_empty()));
        let claude = facts
            .profile("claude-sonnet-4-5-20250929")
            .expect("a documented dated alias");
        assert_eq!(claude.provider.caching, Caching::ExplicitBreakpoints);
        assert_eq!(claude.provider.lookback_blocks, Some(20));
        assert!(claude.estimate().is_some(), "Claude counts are estimates");
        let gpt = facts.profile("gpt-4o").expect("exact");
        assert_eq!(gpt.provider.caching, Caching::AutomaticPrefix);
        assert_eq!(
            (gpt.provider.min_cacheable_tokens, gpt.provider.step_tokens),
            (Some(1024), Some(128))
        );
        assert_eq!(gpt.encoding(), Encoding::O200kBase);
        assert!(gpt.estimate().is_none());
        assert!(matches!(
            facts.profile("nonsense"),
            Err(FactsError::UnknownModel { .. })
        ));
    }

    #[test]
    fn an_unlisted_variant_is_refused_with_the_nearest_ids_never_priced_as_its_prefix() {
        let facts = ModelFacts::embedded().expect("valid facts");
        for (variant, near) in [
            ("gpt-4.1-mini", "gpt-4.1"),
            ("gpt-5-nano", "gpt-5"),
            ("gpt-4o-2024-05-13", "gpt-4o"),
            ("claude-sonet-4-5", "claude-sonnet-4-5"),
        ] {
            let refused = match facts.profile(variant) {
                Ok(profile) => panic!("{variant} was priced as {}", profile.model.id),
                Err(e) => e.to_string(),
            };
            assert!(
                refused.contains(&format!("no model named `{variant}`")),
                "{refused}"
            );
            let nearest = refused
                .split("nearest: ")
                .nth(1)
                .and_then(|rest| rest.split(';').next())
                .unwrap_or_default();
            assert!(
                nearest.split(", ").any(|id| id == near),
                "{variant}: {refused}"
            );
        }
    }
}
