//! Cache stability between two consecutive turns: for every boundary, is the prefix before it
//! byte-identical, and if not, which segment (and plugin) changed first; volatility lint for
//! segments declared `stable` or `session` whose content changed; prefixes shorter than the
//! model's minimum cacheable length.

use super::assemble::{Assembly, BlockKind, Origin};
use super::segment::Volatility;
use serde::Serialize;

/// What differs first before a boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    pub block: BlockKind,
    /// The first segment whose content (or presence) differs, as `plugin/id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

/// One cache boundary of the system prompt across two turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundaryStability {
    pub index: usize,
    /// The block the boundary closes.
    pub after: BlockKind,
    pub prefix_tokens: u64,
    pub stable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<Difference>,
}

/// A segment declared stable or session whose content changed between turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LintFinding {
    pub code: &'static str,
    pub plugin: String,
    pub segment: String,
    pub volatility: Volatility,
    /// The first boundary whose prefix it breaks, if it is in the cached system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaks_boundary: Option<usize>,
    pub message: String,
}

/// A cached prefix shorter than the model caches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheWarning {
    pub code: &'static str,
    pub boundary: usize,
    pub prefix_tokens: u64,
    pub minimum: u32,
    pub message: String,
}

/// The cache report of one preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheReport {
    pub boundaries: Vec<BoundaryStability>,
    /// Whether the history before this turn's moving breakpoint is still the start of the next
    /// turn's history.
    pub history_prefix_stable: bool,
    pub lint: Vec<LintFinding>,
    pub warnings: Vec<CacheWarning>,
}

/// Compares this turn's assembly with the next turn's.
pub fn analyse(this: &Assembly, next: &Assembly, min_cacheable_tokens: u32) -> CacheReport {
    let mut boundaries = Vec::new();
    let mut warnings = Vec::new();
    let closing: Vec<BlockKind> = this.blocks.iter().filter(|b| b.cache_boundary).map(|b| b.kind).collect();
    for (index, after) in closing.iter().enumerate() {
        let prefix = this.prefix_before_boundary(index).unwrap_or_default();
        let prefix_tokens = crate::sdk::estimate_tokens(&prefix);
        let stable = next.prefix_before_boundary(index).as_deref() == Some(prefix.as_str());
        let first_difference = (!stable).then(|| first_difference(this, next));
        if prefix_tokens < u64::from(min_cacheable_tokens) {
            warnings.push(CacheWarning {
                code: "prefix-below-minimum",
                boundary: index,
                prefix_tokens,
                minimum: min_cacheable_tokens,
                message: format!(
                    "the prefix before boundary {index} is about {prefix_tokens} tokens; the model caches prefixes of {min_cacheable_tokens} tokens or more, so this boundary caches nothing"
                ),
            });
        }
        boundaries.push(BoundaryStability { index, after: *after, prefix_tokens, stable, first_difference });
    }

    let history = |a: &Assembly| -> Vec<String> {
        a.messages.iter().filter(|m| matches!(m.origin, Origin::History { .. } | Origin::Summary { .. })).map(|m| m.content.clone()).collect()
    };
    let (before, after) = (history(this), history(next));
    let history_prefix_stable = after.len() >= before.len() && after[..before.len()] == before[..];

    let mut lint = Vec::new();
    for row in this.segments.iter().filter(|r| r.volatility != Volatility::Turn) {
        let Some(other) = next.segments.iter().find(|o| o.plugin == row.plugin && o.id == row.id) else { continue };
        if other.content == row.content {
            continue;
        }
        let key = format!("{}/{}", row.plugin, row.id);
        let breaks_boundary = this
            .blocks
            .iter()
            .filter(|b| b.cache_boundary)
            .position(|b| b.segments.contains(&key))
            .filter(|_| row.included && row.volatility_applies);
        let volatility = match row.volatility {
            Volatility::Stable => "stable",
            _ => "session",
        };
        let consequence = match breaks_boundary {
            Some(i) => format!("it sits before cache boundary {i}, so every turn rewrites the cached prefix"),
            None => "its position ignores volatility, but the declaration is still wrong".to_string(),
        };
        lint.push(LintFinding {
            code: "volatility-lint",
            plugin: row.plugin.clone(),
            segment: row.id.clone(),
            volatility: row.volatility,
            breaks_boundary,
            message: format!("segment `{key}` is declared `{volatility}` but its content changed between two turns; {consequence}. Declare it `turn` or keep it constant."),
        });
    }
    CacheReport { boundaries, history_prefix_stable, lint, warnings }
}

fn first_difference(this: &Assembly, next: &Assembly) -> Difference {
    for (a, b) in this.blocks.iter().zip(next.blocks.iter()) {
        if a.text == b.text && a.kind == b.kind {
            continue;
        }
        let segment = a
            .segments
            .iter()
            .zip(b.segments.iter().map(Some).chain(std::iter::repeat(None)))
            .find(|(x, y)| {
                let content = |asm: &Assembly, key: &str| asm.segments.iter().find(|s| format!("{}/{}", s.plugin, s.id) == key).map(|s| s.content.clone());
                Some(*x) != *y || content(this, x) != y.and_then(|y| content(next, y))
            })
            .map(|(x, _)| x.clone())
            .or_else(|| b.segments.get(a.segments.len()).cloned());
        let plugin = segment.as_ref().and_then(|s| s.split('/').next()).map(str::to_string);
        return Difference { block: a.kind, segment, plugin };
    }
    let kind = next.blocks.get(this.blocks.len()).or(this.blocks.last()).map(|b| b.kind).unwrap_or(BlockKind::Preamble);
    Difference { block: kind, segment: None, plugin: None }
}
