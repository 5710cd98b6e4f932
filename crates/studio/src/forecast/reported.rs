//! Predicted against reported: the usage a real (or replayed) backend reported for a turn, read
//! in either provider's shape, and where it falls outside the prediction's range.

use super::*;

/// Reads the usage an API reported (Anthropic or OpenAI shape).
pub fn reported_usage(usage: &Value) -> Option<Reported> {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    if usage.get("cache_creation_input_tokens").is_some()
        || usage.get("cache_read_input_tokens").is_some()
        || usage.get("input_tokens").is_some()
    {
        return Some(Reported {
            input_tokens: n(usage.get("input_tokens")).unwrap_or(0),
            cache_write_tokens: n(usage.get("cache_creation_input_tokens")).unwrap_or(0),
            cache_read_tokens: n(usage.get("cache_read_input_tokens")).unwrap_or(0),
            output_tokens: n(usage.get("output_tokens")).unwrap_or(0),
        });
    }
    let prompt = n(usage.get("prompt_tokens"))?;
    let cached = n(usage.pointer("/prompt_tokens_details/cached_tokens")).unwrap_or(0);
    Some(Reported {
        input_tokens: prompt.saturating_sub(cached),
        cache_write_tokens: 0,
        cache_read_tokens: cached,
        output_tokens: n(usage.get("completion_tokens")).unwrap_or(0),
    })
}

/// The part at a token offset of a request (the first one the offset does not cover).
pub(super) fn part_at(items: &[Item], offset: u64) -> (String, Option<Part>) {
    let mut sum = 0;
    for item in items {
        for part in &item.parts {
            sum += part.tokens;
            if sum > offset && part.part.from != Source::Framing {
                return (item.label.clone(), Some(part.part.clone()));
            }
        }
    }
    (
        items.last().map(|i| i.label.clone()).unwrap_or_default(),
        None,
    )
}

/// The range a reported figure may fall in around a predicted one, and how far outside it a
/// reported figure is (`None` inside).
pub(super) fn outside(p: u64, r: u64, bar: (f64, f64), slack: f64) -> Option<(u64, u64, String)> {
    let (lowest, highest) = (
        ((p as f64) * bar.0 - slack).max(0.0).floor() as u64,
        ((p as f64) * bar.1 + slack).ceil() as u64,
    );
    if (p == 0) == (r == 0) && r >= lowest && r <= highest {
        return None;
    }
    let by = if r < p {
        format!("{} under", lowest.saturating_sub(r).max(1))
    } else {
        format!("{} over", r.saturating_sub(highest).max(1))
    };
    Some((lowest, highest, by))
}

pub(super) fn mismatches(
    profile: &ModelProfile,
    items: &[Item],
    predicted: &Predicted,
    reported: &Reported,
) -> Vec<Mismatch> {
    let (read, write) = (predicted.read, predicted.write);
    // Claude counts are estimates: a reported figure inside the error bar agrees.
    let (bar, slack) = match profile.estimate() {
        Some(_) => (predicted.bar, 16.0),
        None => (
            (1.0, 1.0),
            profile.provider.step_tokens.unwrap_or(0) as f64 + 8.0,
        ),
    };
    let mut out = Vec::new();
    // Every input token: whatever the cache did, the request's size is what was counted.
    let total = reported.input_tokens + reported.cache_write_tokens + reported.cache_read_tokens;
    if let Some(p) = predicted.input {
        // Exact OpenAI counts differ from the provider's by a few tokens at most (no cache
        // steps are involved in the total); Claude's rest on the error bar.
        let total_slack = if profile.estimate().is_some() {
            slack
        } else {
            4.0
        };
        if let Some((lowest, highest, by)) = outside(p, total, bar, total_slack) {
            let allowed = if (lowest, highest) == (p, p) {
                String::new()
            } else {
                format!(" ({lowest}–{highest} allowed)")
            };
            out.push(Mismatch {
                field: "input",
                predicted: p,
                reported: total,
                segment: None,
                plugin: None,
                at: "the whole request".into(),
                message: format!(
                    "the provider reported {total} input tokens in all (uncached, cache write and cache read) where {p} were predicted{allowed}, {by} the range: the request it counted is not the one predicted, or the estimate is off for this text"
                ),
            });
        }
    }
    for (field, p, r) in [
        ("cacheRead", read, reported.cache_read_tokens),
        ("cacheWrite", write, reported.cache_write_tokens),
    ] {
        let Some((lowest, highest, by)) = outside(p, r, bar, slack) else {
            continue;
        };
        // Where the provider's cached prefix ended, in our token positions.
        let scale = if p > 0 && r > 0 {
            1.0
        } else {
            profile.estimate().map_or(1.0, |rule| rule.latin.factor)
        };
        let offset = if field == "cacheRead" {
            (r as f64 * scale) as u64
        } else {
            ((reported.cache_read_tokens + r) as f64 * scale) as u64
        };
        let (at, part) = part_at(
            items,
            offset.min(if field == "cacheRead" {
                read
            } else {
                read + write
            }),
        );
        let (text, segment, plugin) = who(&part);
        let predicted = if (lowest, highest) == (p, p) || p == 0 {
            format!("{p} were predicted")
        } else {
            format!("{p} were predicted ({lowest}–{highest} allowed)")
        };
        let message = if r < p {
            format!(
                "the provider reported {r} {field} tokens where {predicted}, {by} the range: its cache stopped before {text} ({at}), the first segment that differed from what it had cached"
            )
        } else {
            format!(
                "the provider reported {r} {field} tokens where {predicted}, {by} the range: it cached beyond the predicted point; check {text} ({at})"
            )
        };
        out.push(Mismatch {
            field,
            predicted: p,
            reported: r,
            segment,
            plugin,
            at,
            message,
        });
    }
    out
}
