//! Advice: where the (at most four) breakpoints save most, what changing a segment's volatility
//! would save, the notes on writes, the cache TTL and OpenAI's routing.

use super::*;
use crate::words::{counted, listed};

pub(super) fn with_layout(turns: &[Vec<Item>], layout: &[String]) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            items
                .iter()
                .cloned()
                .map(|mut item| {
                    item.breakpoint = match &item.slot {
                        Slot::System(kind) => layout.contains(kind),
                        Slot::HistoryNewest => layout.iter().any(|l| l == "history"),
                        Slot::Other => false,
                    };
                    item
                })
                .collect()
        })
        .collect()
}

pub(super) fn rekey(item: &mut Item) {
    let mut key = item.tag.clone().into_bytes();
    for part in &item.parts {
        key.extend_from_slice(part.part.from.to_string().as_bytes());
        key.push(0);
        key.extend_from_slice(part.part.text.as_bytes());
        key.push(0);
    }
    item.key = key;
}

/// Takes the segment's part (`plugin/id`) out of a block, with its tokens, and keys the block
/// by what is left.
fn take_segment(item: &mut Item, segment: &str) -> Option<ItemPart> {
    let at = item
        .parts
        .iter()
        .position(|p| p.part.from.is_segment(segment))?;
    let part = item.parts.remove(at);
    item.tokens = item.tokens.saturating_sub(part.tokens);
    rekey(item);
    Some(part)
}

/// Moves a segment's tokens out of the cached prefix (as if it were declared `turn`).
pub(super) fn without_segment(turns: &[Vec<Item>], segment: &str) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            let mut items = items.clone();
            let mut moved = 0;
            for item in items.iter_mut() {
                if let Some(part) = take_segment(item, segment) {
                    moved += part.tokens;
                }
            }
            if let Some(last) = items.last_mut() {
                last.tokens += moved;
            }
            items
        })
        .collect()
}

/// Moves a constant segment into the cached system block (as if it were declared `session`).
pub(super) fn into_stable(turns: &[Vec<Item>], segment: &str) -> Vec<Vec<Item>> {
    turns
        .iter()
        .map(|items| {
            let mut items = items.clone();
            let mut moved: Option<ItemPart> = None;
            for item in items.iter_mut() {
                if let Some(part) = take_segment(item, segment) {
                    moved = Some(part);
                }
            }
            if let Some(part) = moved {
                let target = items
                    .iter()
                    .position(|i| i.slot == Slot::System("stable-segments".into()))
                    .or_else(|| items.iter().position(|i| matches!(i.slot, Slot::System(_))));
                if let Some(target) = target {
                    items[target].tokens += part.tokens;
                    items[target].parts.push(part);
                    rekey(&mut items[target]);
                }
            }
            items
        })
        .collect()
}

/// Every cause of cache writes over the session, the costliest first: the segment (or event)
/// named, the turns, the tokens written, their cost and its share of the total cost, and for a
/// segment what to do about it.
pub(super) fn write_notes(sim: &Sim<'_>, sims: &[TurnSim], total_cost: f64) -> Vec<String> {
    // One entry per cause (its first write) with every turn it wrote in and the tokens summed.
    let mut by_cause: Vec<(WriteCause, Vec<usize>)> = Vec::new();
    for cause in sims.iter().flat_map(|s| &s.causes) {
        match by_cause
            .iter_mut()
            .find(|(c, _)| c.name == cause.name && c.kind == cause.kind)
        {
            Some((c, turns)) => {
                if !turns.contains(&(cause.turn + 1)) {
                    turns.push(cause.turn + 1);
                }
                c.tokens += cause.tokens;
            }
            None => by_cause.push((cause.clone(), vec![cause.turn + 1])),
        }
    }
    by_cause.sort_by(|(a, _), (b, _)| b.tokens.cmp(&a.tokens).then(a.name.cmp(&b.name)));
    by_cause
        .into_iter()
        .map(|(cause, turns)| {
            let WriteCause {
                name,
                segment,
                kind,
                tokens,
                ..
            } = cause;
            let cost = tokens as f64 * sim.write_price() / 1e6;
            let share = if total_cost > 0.0 { cost / total_cost * 100.0 } else { 0.0 };
            let turns: Vec<String> = turns.iter().map(usize::to_string).collect();
            let what = match (kind, segment.is_some()) {
                ("moved", true) => " — it moves every turn: it sits at a depth inside the cached history, so the history breakpoint is never read past it; put it at depth 0 or 1 (after the moving breakpoint) or pre-history",
                ("changed", true) => " — its text changes inside the cached prefix: declare it `turn` or move it after the last breakpoint",
                ("new", true) | ("removed", true) => " — it comes and goes inside the cached prefix: keep it after the last breakpoint",
                _ => "",
            };
            let verb = match kind {
                "changed" | "moved" | "new" | "removed" => format!("{kind} in {}", listed("turn", &turns)),
                _ => listed("turn", &turns),
            };
            format!(
                "Cache writes caused by {name} ({verb}): {tokens} tokens written, ${cost:.5}, {share:.1}% of the total cost{what}."
            )
        })
        .collect()
}

pub(super) fn advice(
    sim: &Sim<'_>,
    turns: &[Vec<Item>],
    sims: &[TurnSim],
    current_cost: f64,
) -> Advice {
    let mut notes = Vec::new();
    let (current_layout, best_layouts) = if sim.profile.provider.caching
        == Caching::ExplicitBreakpoints
    {
        let mut candidates: Vec<String> = Vec::new();
        for item in turns.iter().flatten() {
            if let Slot::System(kind) = &item.slot
                && !candidates.contains(kind)
            {
                candidates.push(kind.clone());
            }
        }
        if turns
            .iter()
            .flatten()
            .any(|i| i.slot == Slot::HistoryNewest)
        {
            candidates.push("history".into());
        }
        let mut current: Vec<String> = Vec::new();
        for item in turns.iter().flatten().filter(|i| i.breakpoint) {
            let name = match &item.slot {
                Slot::System(kind) => kind.clone(),
                Slot::HistoryNewest => "history".into(),
                Slot::Other => continue,
            };
            if !current.contains(&name) {
                current.push(name);
            }
        }
        let max = sim.profile.provider.max_breakpoints.unwrap_or(4);
        let mut layouts = Vec::new();
        for mask in 1u32..(1 << candidates.len().min(16)) {
            if mask.count_ones() as usize > max {
                continue;
            }
            let layout: Vec<String> = candidates
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, c)| c.clone())
                .collect();
            let cost = sim.total_cost(&with_layout(turns, &layout));
            layouts.push(Layout {
                breakpoints: layout,
                cost,
                saving: current_cost - cost,
            });
        }
        layouts.sort_by(|a, b| {
            a.cost
                .total_cmp(&b.cost)
                .then(a.breakpoints.len().cmp(&b.breakpoints.len()))
        });
        // One layout per cost (the one with the fewest breakpoints), and only cheaper ones.
        layouts.dedup_by(|a, b| (a.cost - b.cost).abs() < 1e-12);
        layouts.retain(|l| l.saving > 1e-12);
        layouts.truncate(3);
        if layouts.is_empty() {
            notes.push(
                "No breakpoint layout is cheaper than the current one for this session.".into(),
            );
        }
        (
            Some(Layout {
                breakpoints: current,
                cost: current_cost,
                saving: 0.0,
            }),
            layouts,
        )
    } else {
        notes.push("OpenAI caches the longest common prefix automatically: there are no breakpoints to place; keep what changes at the end.".into());
        (None, Vec::new())
    };

    // Segments whose text changes inside the cached prefix, and constant ones outside it.
    let mut texts: BTreeMap<String, (Vec<Option<String>>, bool, bool)> = BTreeMap::new();
    for (t, items) in turns.iter().enumerate() {
        let last_breakpoint = items.iter().rposition(|i| i.breakpoint);
        for (j, item) in items.iter().enumerate() {
            let cacheable = match sim.profile.provider.caching {
                Caching::ExplicitBreakpoints => last_breakpoint.is_some_and(|b| j <= b),
                Caching::AutomaticPrefix => true,
            };
            for part in &item.parts {
                if let Some(segment) = part.part.segment() {
                    let entry = texts
                        .entry(segment.to_string())
                        .or_insert_with(|| (vec![None; turns.len()], false, false));
                    entry.0[t] = Some(part.part.text.clone());
                    if cacheable {
                        entry.1 = true;
                    } else {
                        entry.2 = true;
                    }
                }
            }
        }
    }
    let mut volatility = Vec::new();
    for (segment, (seen, in_cached, in_uncached)) in &texts {
        let plugin = segment.split('/').next().unwrap_or_default().to_string();
        let present: Vec<&String> = seen.iter().flatten().collect();
        let changes = present.windows(2).filter(|w| w[0] != w[1]).count();
        let moves = sims
            .iter()
            .flat_map(|s| &s.causes)
            .filter(|c| c.kind == "moved" && c.segment.as_deref() == Some(segment.as_str()))
            .count();
        let (change, why, simulated) = if *in_cached && changes == 0 && moves > 0 {
            (
                "put it at depth 0 or 1 (after the moving history breakpoint) or pre-history"
                    .to_string(),
                format!(
                    "it moves with the history inside the cached prefix ({} in {}), so the history breakpoint is never read past it",
                    counted(moves, "time"),
                    counted(turns.len(), "turn")
                ),
                without_segment(turns, segment),
            )
        } else if *in_cached && changes > 0 {
            (
                "declare it `turn` (or move it after the last breakpoint)".to_string(),
                format!(
                    "its text changes {} in {} inside the cached prefix, rewriting everything after it",
                    counted(changes, "time"),
                    counted(turns.len(), "turn")
                ),
                without_segment(turns, segment),
            )
        } else if *in_uncached
            && !*in_cached
            && changes == 0
            && present.len() == turns.len()
            && turns.len() > 1
        {
            (
                "declare it `session` (it never changed)".to_string(),
                format!(
                    "its text is the same in all {} turns but sits after the last breakpoint, so it is paid at full price every turn",
                    turns.len()
                ),
                into_stable(turns, segment),
            )
        } else {
            continue;
        };
        let cost_after = sim.total_cost(&simulated);
        volatility.push(VolatilityAdvice {
            segment: segment.clone(),
            plugin,
            change,
            why,
            cost_after,
            saving: current_cost - cost_after,
        });
    }
    volatility.retain(|v| v.saving > 1e-12);
    volatility.sort_by(|a, b| b.saving.total_cmp(&a.saving));
    let largest = turns
        .iter()
        .map(|items| items.iter().map(|i| i.tokens).sum::<u64>())
        .max()
        .unwrap_or(0);
    if largest < sim.min {
        notes.push(format!(
            "The prompt never reaches {}'s minimum cacheable {} tokens (largest: {largest}): caching saves nothing for this session until the cacheable prefix grows.",
            sim.profile.model.id, sim.min
        ));
    }
    Advice {
        current_layout,
        best_layouts,
        volatility,
        notes,
    }
}

/// When the Anthropic request's breakpoints carry another TTL than the one priced (the Cache
/// panel's TTL is a what-if; the session's `cacheTtl` decides what is sent), says so.
pub(super) fn ttl_note(anthropic_body: &Value, priced: &str) -> Option<String> {
    let blocks = anthropic_body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            anthropic_body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["content"].as_array().into_iter().flatten()),
        );
    let control = blocks.filter_map(|b| b.get("cache_control")).next()?;
    let sent = control["ttl"].as_str().unwrap_or("5m");
    (sent != priced).then(|| {
        format!(
            "The requests carry a {sent} cache TTL but are priced at {priced}: set the session's story `cacheTtl: {priced}` so what is sent matches this forecast."
        )
    })
}

/// What the request's `prompt_cache_key` changes. OpenAI routes a request to a cache machine
/// by a hash of its first ~256 tokens (and the key, when there is one), and spreads a prefix
/// used more than about 15 times a minute over more machines. The forecast's reads assume this
/// session's turns reach the same machine: true of one session, not of many sessions of the
/// same plugins sharing their first tokens — unless each carries its own key.
pub(super) fn routing_note(openai_body: &Value) -> String {
    match openai_body.get("prompt_cache_key").and_then(Value::as_str) {
        Some(key) => format!(
            "The requests carry prompt_cache_key `{key}`: OpenAI routes them by it together with the first ~256 tokens, so this session's turns reach the same cache even when other sessions share those tokens; the reads above assume so (a key shared by more than about 15 requests a minute spills over to other machines)."
        ),
        None => "The requests carry no prompt_cache_key: OpenAI routes them by their first ~256 tokens only, which every session of these plugins shares; the reads above assume one session. With many players (more than about 15 requests a minute on that prefix), requests spill over to other machines and miss: set `promptCacheKey` in the session's story model to keep each session's turns together.".into(),
    }
}
