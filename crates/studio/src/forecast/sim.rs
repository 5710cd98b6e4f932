//! The simulation: each turn's blocks against the provider's cache as the turns before left
//! it (Anthropic's breakpoints with their 20-block look-back, minimum and TTL; OpenAI's automatic
//! prefix), each breakpoint's verdict and why, the causes of every write, and the prices.

use super::*;

pub(super) fn chain(items: &[Item], model: &str) -> Vec<[u8; 32]> {
    let mut hash: [u8; 32] = Sha256::digest(model.as_bytes()).into();
    items
        .iter()
        .map(|item| {
            let mut h = Sha256::new();
            h.update(hash);
            h.update(&item.key);
            hash = h.finalize().into();
            hash
        })
        .collect()
}

pub(super) fn cumulative(items: &[Item]) -> Vec<u64> {
    let mut sum = 0;
    items
        .iter()
        .map(|i| {
            sum += i.tokens;
            sum
        })
        .collect()
}

/// What a block is, regardless of its position and text: its parts' origins (`segment a/b`,
/// `history m4`), else its label (system blocks are labelled by kind).
pub(super) fn identity(item: &Item) -> String {
    let froms: Vec<String> = item
        .parts
        .iter()
        .filter(|p| p.part.from != Source::Framing)
        .map(|p| p.part.from.to_string())
        .collect();
    if froms.is_empty() || item.label.starts_with("system") {
        item.label.clone()
    } else {
        froms.join(",")
    }
}

pub(super) fn main_part(item: &Item) -> Option<Part> {
    item.parts
        .iter()
        .find(|p| p.part.from != Source::Framing)
        .map(|p| p.part.clone())
}

/// Inside one block that kept its identity: the part whose text changed, a new part, or one
/// that is gone.
pub(super) fn changed_part(a: &Item, b: &Item) -> (Option<Part>, Change) {
    let real = |i: &Item| -> Vec<Part> {
        i.parts
            .iter()
            .filter(|p| p.part.from != Source::Framing)
            .map(|p| p.part.clone())
            .collect()
    };
    let (old, new) = (real(a), real(b));
    if let Some(p) = new.iter().find(|p| !old.contains(p)) {
        let change = if old.iter().any(|q| q.from == p.from) {
            Change::Changed
        } else {
            Change::New
        };
        return (Some(p.clone()), change);
    }
    if let Some(p) = old.iter().find(|p| !new.iter().any(|q| q.from == p.from)) {
        return (Some(p.clone()), Change::Removed);
    }
    (None, Change::Changed)
}

/// The first block that differs between two requests, what it is and how it differs.
pub(super) fn divergence(before: &[Item], now: &[Item]) -> Option<Divergence> {
    let index = before
        .iter()
        .zip(now.iter())
        .position(|(a, b)| a.key != b.key)
        .or_else(|| (before.len() != now.len()).then(|| before.len().min(now.len())))?;
    let (a, b) = match (before.get(index), now.get(index)) {
        (Some(a), Some(b)) => (a, b),
        (None, b) => {
            let part = b.and_then(main_part);
            return Some(Divergence {
                index,
                part,
                change: Change::New,
            });
        }
        (a, None) => {
            let part = a.and_then(main_part);
            return Some(Divergence {
                index,
                part,
                change: Change::Removed,
            });
        }
    };
    let (old, new) = (identity(a), identity(b));
    if old == new {
        let (part, change) = changed_part(a, b);
        return Some(Divergence {
            index,
            part,
            change,
        });
    }
    if let Some(to) = (index + 1..now.len()).find(|&j| identity(&now[j]) == old) {
        let change = Change::Moved {
            to,
            text_changed: now[to].key != a.key,
        };
        return Some(Divergence {
            index,
            part: main_part(a),
            change,
        });
    }
    if !before.iter().any(|i| identity(i) == new) {
        return Some(Divergence {
            index,
            part: main_part(b),
            change: Change::New,
        });
    }
    Some(Divergence {
        index,
        part: main_part(a),
        change: Change::Removed,
    })
}

impl Divergence {
    /// `segment weather/sky (plugin weather) changed since turn 2`, `… moved from message 9 to
    /// message 11`, `… is new this turn`.
    pub(super) fn describe(&self, before: &[Item], now: &[Item], previous_turn: usize) -> String {
        let (who, _, _) = who(&self.part);
        match &self.change {
            Change::Changed => format!("{who} changed since turn {previous_turn}"),
            Change::Moved { to, text_changed } => format!(
                "{who} moved from {} at turn {previous_turn} to {}{}",
                before[self.index].label,
                now[*to].label,
                if *text_changed {
                    " and its text changed"
                } else {
                    ""
                }
            ),
            Change::New => format!("{who} is new since turn {previous_turn}"),
            Change::Removed => format!("{who} was removed since turn {previous_turn}"),
        }
    }

    /// `changed`, `moved`, `new`, `removed`.
    pub(super) fn kind(&self) -> &'static str {
        match self.change {
            Change::Changed => "changed",
            Change::Moved { .. } => "moved",
            Change::New => "new",
            Change::Removed => "removed",
        }
    }
}

pub(super) fn who(part: &Option<Part>) -> (String, Option<String>, Option<String>) {
    match part {
        Some(p) => {
            let plugin = p.plugin().map(str::to_string);
            let text = match &plugin {
                Some(plugin) => format!("{} (plugin {plugin})", p.from),
                None => p.from.to_string(),
            };
            (text, p.segment(), plugin)
        }
        None => ("the block list".into(), None, None),
    }
}

impl Request<'_> {
    /// What a breakpoint that is not read costs: what is read before it and what is written.
    pub(super) fn written(&self, k: usize) -> String {
        match self.read_at.filter(|&r| r < k) {
            Some(r) => format!(
                "{} tokens are read up to {} and the {} after it are written",
                self.cum[r],
                self.items[r].label,
                self.cum[k] - self.cum[r]
            ),
            None => format!(
                "nothing is read: all {} tokens of the prefix are written",
                self.cum[k]
            ),
        }
    }

    /// The breakpoint of the previous request whose cached prefix this one would extend: the
    /// one in the same place (the same system block, the moving history breakpoint), else the
    /// last one at or before it.
    pub(super) fn old_end(&self, k: usize) -> Option<usize> {
        let previous = self.previous?;
        let slot = &self.items[k].slot;
        previous
            .iter()
            .rposition(|i| i.breakpoint && *slot != Slot::Other && i.slot == *slot)
            .or_else(|| previous.iter().take(k + 1).rposition(|i| i.breakpoint))
    }
}

impl Verdict {
    pub(super) fn of(outcome: Outcome, code: &'static str, reason: String, cause: &str) -> Verdict {
        Verdict {
            outcome,
            code,
            reason,
            part: None,
            cause: cause.into(),
            kind: code,
        }
    }
}

impl Sim<'_> {
    /// Whether a prefix is cached and not expired at `now`.
    pub(super) fn is_valid(
        &self,
        cache: &HashMap<[u8; 32], Entry>,
        hash: &[u8; 32],
        now: f64,
    ) -> bool {
        cache
            .get(hash)
            .is_some_and(|e| now - e.last_used <= self.ttl)
    }

    /// A breakpoint at or before the read point: read, as its own prefix or inside a longer one.
    pub(super) fn hit(
        &self,
        r: &Request<'_>,
        k: usize,
        read_at: usize,
        cache: &HashMap<[u8; 32], Entry>,
    ) -> Verdict {
        let reason = match cache
            .get(&r.hashes[k])
            .filter(|_| self.is_valid(cache, &r.hashes[k], r.now))
        {
            Some(e) => format!(
                "the prefix is read from the cache (written at turn {})",
                e.written_turn + 1
            ),
            None => format!(
                "read as part of the longer cached prefix up to {}",
                r.items[read_at].label
            ),
        };
        Verdict::of(Outcome::Hit, "read", reason, "")
    }

    /// Claude counts are estimates: when the prefix's error bar straddles the minimum
    /// cacheable size, the verdict is uncertain and says what either outcome costs.
    pub(super) fn near_minimum(&self, r: &Request<'_>, k: usize, verdict: Verdict) -> Verdict {
        if self.profile.estimate().is_none() {
            return verdict;
        }
        let band = Estimate {
            tokens: r.cum[k],
            low: r.items[..=k].iter().map(|i| i.low).sum(),
            high: r.items[..=k].iter().map(|i| i.high).sum(),
        };
        if band.low >= self.min || band.high < self.min {
            return verdict;
        }
        let tokens = r.cum[k] - r.read_at.filter(|&x| x < k).map_or(0, |x| r.cum[x]);
        let written = tokens as f64 * self.write_price() / 1e6;
        let paid = tokens as f64 * self.profile.model.prices.input / 1e6;
        Verdict {
            code: "uncertain",
            reason: format!(
                "uncertain: the prefix is {}–{} tokens by the estimate's error bar, around {}'s minimum cacheable {} tokens: if it reaches the minimum, {tokens} tokens are written (${written:.5}) and can be read next turn; if not, they are paid as input (${paid:.5}). Predicted: {}",
                band.low, band.high, self.profile.model.id, self.min, verdict.reason
            ),
            ..verdict
        }
    }

    /// A breakpoint after the read point: why it is not read. A change before the end of the
    /// prefix the previous turn cached is the cause whenever there is one; the look-back, the
    /// TTL or a new prefix are named only when that prefix is intact.
    pub(super) fn verdict(
        &self,
        r: &Request<'_>,
        k: usize,
        cache: &HashMap<[u8; 32], Entry>,
    ) -> Verdict {
        let (items, t) = (r.items, r.turn);
        let prefix_tokens = r.cum[k];
        if prefix_tokens < self.min {
            return Verdict::of(
                Outcome::Miss,
                "below-minimum",
                format!(
                    "the prefix is {prefix_tokens} tokens, under {}'s minimum cacheable {} tokens: nothing is cached here",
                    self.profile.model.id, self.min
                ),
                "",
            );
        }
        let written = r.written(k);
        if let Some(entry) = cache.get(&r.hashes[k]) {
            return Verdict::of(
                Outcome::Write,
                "ttl-expired",
                format!(
                    "the same prefix was cached at turn {} but expired: {:.0} s since its last use at the assumed pace of {:.0} s per turn, over the {:.0} s TTL; {written}",
                    entry.written_turn + 1,
                    r.now - entry.last_used,
                    self.options.pace_seconds,
                    self.ttl
                ),
                "expiry at the assumed pace",
            );
        }
        let Some(previous) = r.previous else {
            return Verdict::of(
                Outcome::Write,
                "cold",
                format!(
                    "first request: nothing is cached yet, so all {prefix_tokens} tokens of the prefix are written"
                ),
                "the first request",
            );
        };
        let Some(end) = r.old_end(k) else {
            return Verdict::of(
                Outcome::Write,
                "new-prefix",
                format!("turn {t} had no breakpoint at or before this block; {written}"),
                "a breakpoint new this turn",
            );
        };
        let old = &previous[end].label;
        if let Some(dv) = divergence(previous, items).filter(|dv| dv.index <= end) {
            let at = dv.index.min(items.len() - 1);
            let rewritten = r
                .read_at
                .filter(|&x| at > x + 1)
                .map(|x| {
                    format!(
                        " ({} of them unchanged, before the change, but no cached breakpoint closes them)",
                        r.cum[at - 1] - r.cum[x]
                    )
                })
                .unwrap_or_default();
            let (cause, _, _) = who(&dv.part);
            return Verdict {
                outcome: Outcome::Write,
                code: "prefix-changed",
                reason: format!(
                    "the prefix turn {t} cached up to {old} no longer matches at {}: {}; {written}{rewritten}",
                    items[at].label,
                    dv.describe(previous, items, t)
                ),
                kind: dv.kind(),
                part: dv.part,
                cause,
            };
        }
        // Nothing before the old prefix's end changed: it is still the start of this request.
        let lookback = self.profile.provider.lookback_blocks.unwrap_or(20);
        let valid = self.is_valid(cache, &r.hashes[end], r.now);
        if valid && k.saturating_sub(end) > lookback {
            return Verdict::of(
                Outcome::Write,
                "beyond-lookback",
                format!(
                    "nothing before {old} changed, but the prefix cached there ends {} blocks before this breakpoint, beyond the {lookback}-block look-back, so it is not found; {written}",
                    k - end
                ),
                "the look-back window",
            );
        }
        if let Some(entry) = cache.get(&r.hashes[end]).filter(|_| !valid) {
            return Verdict::of(
                Outcome::Write,
                "ttl-expired",
                format!(
                    "nothing before {old} changed, but the prefix cached there at turn {} expired: {:.0} s since its last use at {:.0} s per turn, over the {:.0} s TTL; {written}",
                    entry.written_turn + 1,
                    r.now - entry.last_used,
                    self.options.pace_seconds,
                    self.ttl
                ),
                "expiry at the assumed pace",
            );
        }
        if valid {
            return Verdict::of(
                Outcome::Write,
                "extends",
                format!(
                    "nothing before {old} changed: the cached prefix grows with the blocks new this turn; {written}"
                ),
                "the growing conversation (new blocks each turn)",
            );
        }
        Verdict::of(
            Outcome::Write,
            "new-prefix",
            format!(
                "turn {t} did not cache a prefix ending at {old} (it was under the minimum); {written}"
            ),
            "a prefix not cached before",
        )
    }

    pub(super) fn anthropic(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        let lookback = self.profile.provider.lookback_blocks.unwrap_or(20);
        let mut cache: HashMap<[u8; 32], Entry> = HashMap::new();
        let mut out = Vec::new();
        for (t, items) in turns.iter().enumerate() {
            let now = t as f64 * self.options.pace_seconds;
            let hashes = chain(items, &self.profile.model.id);
            let cum = cumulative(items);
            let valid = |h: &[u8; 32], cache: &HashMap<[u8; 32], Entry>| {
                cache.get(h).is_some_and(|e| now - e.last_used <= self.ttl)
            };
            let breakpoints: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, i)| i.breakpoint)
                .map(|(j, _)| j)
                .collect();
            let read_at = breakpoints
                .iter()
                .filter_map(|&k| {
                    (k.saturating_sub(lookback)..=k)
                        .rev()
                        .find(|&j| valid(&hashes[j], &cache))
                })
                .max();
            let read = read_at.map_or(0, |r| cum[r]);
            let last_cacheable = breakpoints
                .iter()
                .copied()
                .filter(|&k| cum[k] >= self.min)
                .max();
            let written_to = last_cacheable.filter(|&k| read_at.is_none_or(|r| k > r));
            let write = written_to.map_or(0, |k| cum[k] - read);
            let request = Request {
                turn: t,
                now,
                items,
                previous: t.checked_sub(1).map(|p| turns[p].as_slice()),
                hashes: &hashes,
                cum: &cum,
                read_at,
            };
            let mut rows = Vec::new();
            let mut causes = Vec::new();
            let mut covered = read;
            for (index, &k) in breakpoints.iter().enumerate() {
                let verdict = match read_at.filter(|&r| k <= r) {
                    Some(r) => self.hit(&request, k, r, &cache),
                    None => self.near_minimum(&request, k, self.verdict(&request, k, &cache)),
                };
                if verdict.outcome == Outcome::Write && cum[k] > covered {
                    causes.push(WriteCause {
                        turn: t,
                        name: verdict.cause.clone(),
                        segment: verdict.part.as_ref().and_then(Part::segment),
                        kind: verdict.kind,
                        tokens: cum[k] - covered,
                    });
                    covered = cum[k];
                }
                let (_, segment, plugin) = who(&verdict.part);
                rows.push(BreakpointForecast {
                    index,
                    at: items[k].label.clone(),
                    prefix_tokens: cum[k],
                    outcome: verdict.outcome,
                    reason_code: verdict.code,
                    reason: verdict.reason,
                    segment,
                    plugin,
                });
            }

            // Update the cache: read entries are refreshed, written ones created.
            if let Some(r) = read_at {
                for &k in breakpoints.iter().filter(|&&k| k <= r) {
                    if let Some(e) = cache.get_mut(&hashes[k]) {
                        e.last_used = now;
                    }
                }
                if let Some(e) = cache.get_mut(&hashes[r]) {
                    e.last_used = now;
                }
            }
            for &k in breakpoints
                .iter()
                .filter(|&&k| read_at.is_none_or(|r| k > r) && cum[k] >= self.min)
            {
                cache.insert(
                    hashes[k],
                    Entry {
                        written_turn: t,
                        last_used: now,
                    },
                );
            }
            let last_breakpoint = breakpoints.last().copied();
            let per_item = items
                .iter()
                .enumerate()
                .map(|(j, item)| {
                    let cacheable = last_breakpoint.is_some_and(|b| j <= b);
                    if read_at.is_some_and(|r| j <= r) {
                        (item.tokens, 0, cacheable)
                    } else if written_to.is_some_and(|w| j <= w) {
                        (0, item.tokens, cacheable)
                    } else {
                        (0, 0, cacheable)
                    }
                })
                .collect();
            out.push(TurnSim {
                breakpoints: rows,
                read,
                write,
                per_item,
                causes,
            });
        }
        out
    }

    /// Tokens two OpenAI requests share at the start.
    pub(super) fn common_prefix(&self, before: &[Item], now: &[Item]) -> (u64, Option<usize>) {
        let mut tokens = 0;
        for (index, (a, b)) in before.iter().zip(now.iter()).enumerate() {
            if a.key == b.key {
                tokens += a.tokens;
                continue;
            }
            if a.tag == b.tag {
                let encoding = self.profile.encoding();
                let (x, y) = (
                    self.counter.encode(encoding, &a.content),
                    self.counter.encode(encoding, &b.content),
                );
                let same = x.iter().zip(y.iter()).take_while(|(p, q)| p == q).count() as u64;
                tokens += self.profile.provider.message_overhead_tokens.unwrap_or(0) + same;
            }
            return (tokens, Some(index));
        }
        (tokens, None)
    }

    pub(super) fn openai(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        let step = self.profile.provider.step_tokens.unwrap_or(128).max(1);
        let mut seen: Vec<(usize, f64)> = Vec::new();
        let mut out = Vec::new();
        for (t, items) in turns.iter().enumerate() {
            let now = t as f64 * self.options.pace_seconds;
            let total: u64 = items.iter().map(|i| i.tokens).sum();
            let best = seen
                .iter()
                .filter(|(_, used)| now - used <= self.ttl)
                .map(|(p, _)| (*p, self.common_prefix(&turns[*p], items)))
                .max_by_key(|(_, (tokens, _))| *tokens);
            let expired = seen
                .iter()
                .filter(|(_, used)| now - used > self.ttl)
                .map(|(p, used)| (*p, *used, self.common_prefix(&turns[*p], items).0))
                .max_by_key(|x| x.2);
            let common = best.map_or(0, |(_, (tokens, _))| tokens.min(total));
            let read = openai_cached(total, common, self.min, step);
            let previous = t.checked_sub(1).map(|p| turns[p].as_slice());
            let difference = previous.and_then(|p| divergence(p, items));
            let at = "automatic prefix".to_string();
            let row = |outcome, reason_code, reason: String, part: &Option<Part>| {
                let (_, segment, plugin) = who(part);
                BreakpointForecast {
                    index: 0,
                    at: at.clone(),
                    prefix_tokens: common,
                    outcome,
                    reason_code,
                    reason,
                    segment,
                    plugin,
                }
            };
            let previous_len = previous.map_or(0, <[Item]>::len);
            let changed = |what: &str| match (difference.as_ref(), previous) {
                (Some(dv), _) if dv.index >= previous_len => (
                    None,
                    format!("{what}; this request extends turn {t}'s with new messages"),
                ),
                (Some(dv), Some(previous)) if dv.index < items.len() => (
                    Some(dv.part.clone()),
                    format!(
                        "{what}; the prefix changed at {}: {}",
                        items[dv.index].label,
                        dv.describe(previous, items, t)
                    ),
                ),
                _ => (None, what.to_string()),
            };
            let row = if total < self.min {
                row(
                    Outcome::Miss,
                    "below-minimum",
                    format!(
                        "the prompt is {total} tokens, under the {}-token minimum: nothing is cached",
                        self.min
                    ),
                    &None,
                )
            } else if read > 0 {
                let (part, text) = changed(&format!(
                    "{read} of the {common} tokens shared with an earlier request are read ({step}-token steps)"
                ));
                row(Outcome::Hit, "read", text, &part.flatten())
            } else if t == 0 {
                row(Outcome::Miss, "cold", "first request: nothing is cached yet (the prefix is cached for the next request at no extra cost)".into(), &None)
            } else if let Some((p, used, tokens)) = expired.filter(|e| e.2 >= self.min) {
                let idle = now - used;
                let retained = self.profile.ttl_seconds("upTo") as f64;
                if idle <= retained {
                    // OpenAI clears caches after 5 to 10 idle minutes: between the two, either.
                    let hit = tokens / step * step;
                    let if_hit = self.price(total - hit, 0, hit).total;
                    let if_miss = self.price(total, 0, 0).total;
                    row(
                        Outcome::Miss,
                        "uncertain",
                        format!(
                            "uncertain: turn {} shared {tokens} tokens, last used {idle:.0} s ago at {:.0} s per turn; OpenAI clears a cache after {:.0}–{retained:.0} s idle, so it may still be read ({hit} tokens, ${if_hit:.5} this turn) or not (${if_miss:.5}); priced as a miss",
                            p + 1,
                            self.options.pace_seconds,
                            self.ttl
                        ),
                        &None,
                    )
                } else {
                    row(
                        Outcome::Miss,
                        "ttl-expired",
                        format!(
                            "turn {} shared {tokens} tokens but its cache is cleared: {idle:.0} s since its last use at {:.0} s per turn, over the {:.0}–{retained:.0} s OpenAI keeps an idle cache (at most an hour)",
                            p + 1,
                            self.options.pace_seconds,
                            self.ttl
                        ),
                        &None,
                    )
                }
            } else {
                let (part, text) = changed(&format!(
                    "only {common} tokens are shared with earlier requests, under the {}-token minimum",
                    self.min
                ));
                row(Outcome::Miss, "prefix-changed", text, &part.flatten())
            };
            if let Some((p, _)) = best.filter(|_| read > 0)
                && let Some(entry) = seen.iter_mut().find(|(q, _)| *q == p)
            {
                entry.1 = now;
            }
            seen.push((t, now));
            // Attribute the read tokens to the leading items.
            let mut left = read;
            let per_item = items
                .iter()
                .map(|item| {
                    let r = left.min(item.tokens);
                    left -= r;
                    (r, 0, r > 0)
                })
                .collect();
            out.push(TurnSim {
                breakpoints: vec![row],
                read,
                write: 0,
                per_item,
                causes: Vec::new(),
            });
        }
        out
    }

    pub(super) fn run(&self, turns: &[Vec<Item>]) -> Vec<TurnSim> {
        match self.profile.provider.caching {
            Caching::ExplicitBreakpoints => self.anthropic(turns),
            Caching::AutomaticPrefix => self.openai(turns),
        }
    }

    pub(super) fn write_price(&self) -> f64 {
        self.profile.model.prices.cache_write(&self.options.ttl)
    }

    pub(super) fn price(&self, uncached: u64, write: u64, read: u64) -> Cost {
        let prices = &self.profile.model.prices;
        let (input, cache_write, cache_read) = (
            uncached as f64 * prices.input / 1e6,
            write as f64 * self.write_price() / 1e6,
            read as f64 * prices.cache_read / 1e6,
        );
        Cost {
            input,
            cache_write,
            cache_read,
            output: 0.0,
            total: input + cache_write + cache_read,
        }
    }

    pub(super) fn total_cost(&self, turns: &[Vec<Item>]) -> f64 {
        self.run(turns)
            .iter()
            .zip(turns)
            .map(|(sim, items)| {
                let total: u64 = items.iter().map(|i| i.tokens).sum();
                self.price(total - sim.read - sim.write, sim.write, sim.read)
                    .total
            })
            .sum()
    }
}
