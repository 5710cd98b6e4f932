//! The request as the forecast reads it: each content block of the Anthropic request (or each
//! OpenAI message) counted with the model's counter, attributed to who wrote it, with what the
//! request adds around the texts (Claude's framing, tool definitions).

use super::*;

impl<'a> Counting<'a> {
    pub(crate) fn new(profile: &ModelProfile, counter: &'a TokenCounter) -> Counting<'a> {
        Counting {
            counter,
            encoding: profile.encoding(),
            estimate: profile.estimate(),
        }
    }
}

impl Counting<'_> {
    /// Whether counts are exact (no estimate's range).
    pub(crate) fn exact(&self) -> bool {
        self.estimate.is_none()
    }

    pub(super) fn base(&self, text: &str) -> u64 {
        self.counter.count(self.encoding, text)
    }

    /// The model's count of a text: exact, or the estimate with its error bar.
    pub(crate) fn estimate(&self, text: &str) -> Estimate {
        match &self.estimate {
            Some(rule) => rule.estimate(self.counter, self.encoding, text),
            None => Estimate::exact(self.base(text)),
        }
    }

    pub(crate) fn tokens(&self, text: &str) -> u64 {
        self.estimate(text).tokens
    }
}

impl Item {
    /// Adds tokens the text of no block accounts for (tool definitions, framing) to this block,
    /// as a part of their own.
    pub(super) fn add(&mut self, from: Source, text: String, e: Estimate) {
        self.tokens += e.tokens;
        self.low += e.low;
        self.high += e.high;
        self.added = self.added + e;
        self.parts.push(ItemPart {
            part: Part { from, text },
            tokens: e.tokens,
        });
    }
}

/// What Claude's framing and the tool definitions (`tools`, the Anthropic body's list) add on a
/// block of the request at `place`, as [`add_claude_framing`] puts them: the request's framing
/// and the tools on the first block, each further message's markers on its first block (0 for
/// exact counts).
pub(crate) fn claude_added_at(
    counting: &Counting<'_>,
    tools: &Value,
    place: &covel_kernel::prompt::Place,
    first: bool,
) -> u64 {
    let Some(rule) = counting.estimate else {
        return 0;
    };
    let mut added = 0;
    if first {
        added += rule.request.tokens;
        if let Some(list) = tools.as_array().filter(|t| !t.is_empty()) {
            let json = Value::Array(list.clone()).to_string();
            added += rule
                .estimate_as(Script::Code, counting.counter, counting.encoding, &json)
                .tokens
                + rule.tools.tokens;
        }
    }
    if let covel_kernel::prompt::Place::Message { message, block, .. } = place
        && *message > 0
        && *block == 0
    {
        added += rule.message.tokens;
    }
    added
}

/// Claude's framing and tools, which no block's text holds: the request's framing and the tool
/// definitions with the tool-use system prompt on the first block (tools come first in the
/// cached prefix, so a changed tool changes that block's identity), and each further message's
/// turn markers on its first block.
pub(super) fn add_claude_framing(items: &mut [Item], tools: &Value, counting: &Counting<'_>) {
    let Some(rule) = counting.estimate else {
        return;
    };
    let Some(first) = items.first_mut() else {
        return;
    };
    if let Some(tools) = tools.as_array().filter(|t| !t.is_empty()) {
        let json = Value::Array(tools.clone()).to_string();
        let e = rule.estimate_as(Script::Code, counting.counter, counting.encoding, &json)
            + rule.tools.estimate();
        first.key.extend_from_slice(json.as_bytes());
        first.add(Source::Tools, json, e);
    }
    first.add(Source::Framing, String::new(), rule.request.estimate());
    let mut messages = 0;
    for item in items.iter_mut().filter(|i| i.tag.ends_with("|true")) {
        messages += 1;
        if messages > 1 {
            item.add(Source::Framing, String::new(), rule.message.estimate());
        }
    }
}

pub(super) fn attributed(parts: Vec<Part>, total: u64, counting: &Counting<'_>) -> Vec<ItemPart> {
    let mut out: Vec<ItemPart> = parts
        .into_iter()
        .map(|p| ItemPart {
            tokens: counting.tokens(&p.text),
            part: p,
        })
        .collect();
    let sum: u64 = out.iter().map(|p| p.tokens).sum();
    if total > sum {
        out.push(ItemPart {
            part: Part {
                from: Source::Framing,
                text: String::new(),
            },
            tokens: total - sum,
        });
    } else if sum > total {
        // Tokens merge across joins: take the excess from the largest part.
        let mut excess = sum - total;
        out.sort_by_key(|p| std::cmp::Reverse(p.tokens));
        for p in out.iter_mut() {
            let cut = excess.min(p.tokens);
            p.tokens -= cut;
            excess -= cut;
        }
    }
    out
}

/// A block's identity for the cache: its role, whether it opens its message, and its text
/// (never its breakpoint mark, which moves without changing what is cached).
pub(super) fn key_of(role: &str, first: bool, text: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(role.len() + text.len() + 8);
    key.extend_from_slice(role.as_bytes());
    key.extend_from_slice(if first { b"|first|" } else { b"|" });
    key.extend_from_slice(text.as_bytes());
    key
}

pub(super) fn message_label(index: usize, message: &covel_kernel::prompt::Message) -> String {
    format!("message {} ({})", index + 1, message.origin.name())
}

/// How much of each block a caller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Its counts only (the panels' counts, made on every snapshot).
    Counts,
    /// Its counts, identity and parts with who wrote them (the forecast).
    Attributed,
}

/// The Anthropic request as blocks, in the order the provider reads them (each system block,
/// then each content block of each message sent), counted and, for `Detail::Attributed`,
/// attributed: read from the typed request the body was serialized from, whose blocks name the
/// message they send.
pub(crate) fn anthropic_items(
    preview: &Preview,
    counting: &Counting<'_>,
    detail: Detail,
) -> Vec<Item> {
    let attributed_too = detail == Detail::Attributed;
    let request = &preview.prompt.requests.anthropic_request;
    let rows = &parts::Rows::of(if attributed_too {
        &preview.segments
    } else {
        &[]
    });
    let blocks = &preview.prompt.system.blocks;
    let messages = &preview.prompt.messages;
    let newest = covel_kernel::prompt::history_breakpoint(messages);
    let mut items = Vec::new();
    for (place, part) in request.parts() {
        let (label, role, first, slot, parts) = match place {
            Place::System { index } => {
                let Some(block) = blocks.get(index) else {
                    continue;
                };
                let kind = block.kind.name().to_string();
                (
                    format!("system block {kind}"),
                    "system",
                    true,
                    Slot::System(kind),
                    attributed_too.then(|| parts::block_parts(block, rows)),
                )
            }
            Place::Message { role, block, .. } => {
                let Some((index, message)) = part.message.and_then(|i| Some((i, messages.get(i)?)))
                else {
                    continue;
                };
                let slot = match Some(index) == newest {
                    true => Slot::HistoryNewest,
                    false => Slot::Other,
                };
                (
                    message_label(index, message),
                    role,
                    block == 0,
                    slot,
                    attributed_too.then(|| parts::message_parts(message, rows)),
                )
            }
        };
        let e = counting.estimate(&part.text);
        items.push(Item {
            label,
            key: match attributed_too {
                true => key_of(role, first, &part.text),
                false => Vec::new(),
            },
            tag: match place {
                Place::System { .. } => "system".to_string(),
                Place::Message { .. } => format!("{role}|{first}"),
            },
            tokens: e.tokens,
            low: e.low,
            high: e.high,
            added: Estimate::default(),
            breakpoint: part.cache_control,
            slot,
            message: part.message,
            parts: parts.map_or_else(Vec::new, |parts| attributed(parts, e.tokens, counting)),
            content: match attributed_too {
                true => part.text.clone(),
                false => String::new(),
            },
        });
    }
    add_claude_framing(
        &mut items,
        &preview.prompt.requests.anthropic["tools"],
        counting,
    );
    items
}

/// The tokens OpenAI reads from its cache for a request of `total` tokens sharing `common`
/// with an earlier one: nothing under the minimum, else the shared prefix in whole `step`s.
pub(super) fn openai_cached(total: u64, common: u64, minimum: u64, step: u64) -> u64 {
    if total >= minimum && common >= minimum {
        common / step * step
    } else {
        0
    }
}

/// One OpenAI chat message's tokens as OpenAI's cookbook counts them
/// (`<|im_start|>role<|im_sep|>content<|im_end|>`): the message's framing (`overhead`), the
/// role's own tokens and the content's.
pub(super) fn openai_message_tokens(
    counting: &Counting<'_>,
    role: &str,
    content: &str,
    overhead: u64,
) -> u64 {
    counting.tokens(content) + overhead + counting.base(role)
}

/// A whole OpenAI chat body's input tokens for `profile`, as the forecast counts it: every
/// message, and the reply's priming.
pub fn openai_chat_tokens(
    messages: &[Value],
    profile: &ModelProfile,
    counter: &TokenCounter,
) -> u64 {
    let counting = Counting::new(profile, counter);
    let overhead = profile.provider.message_overhead_tokens.unwrap_or(0);
    let priming = profile.provider.reply_priming_tokens.unwrap_or(0);
    messages
        .iter()
        .map(|m| {
            let text = |field: &str| m[field].as_str().unwrap_or_default().to_string();
            openai_message_tokens(&counting, &text("role"), &text("content"), overhead)
        })
        .sum::<u64>()
        + priming
}

/// The OpenAI request's messages: the system message (every block), then each message.
pub(super) fn openai_items(
    preview: &Preview,
    counting: &Counting<'_>,
    overhead: u64,
    priming: u64,
) -> Vec<Item> {
    let rows = &parts::Rows::of(&preview.segments);
    // The chat body's messages (`prompt::openai_request`): the system prompt, then every
    // message of the assembly, each with its role and text.
    let system = preview.prompt.system.text();
    let messages = std::iter::once(("system", system.as_str())).chain(
        preview
            .prompt
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str())),
    );
    let mut items = Vec::new();
    for (index, (role, text)) in messages.enumerate() {
        let text = text.to_string();
        let tokens = openai_message_tokens(counting, role, &text, overhead);
        let (label, parts) = if index == 0 {
            (
                "system message".to_string(),
                preview
                    .prompt
                    .system
                    .blocks
                    .iter()
                    .flat_map(|b| parts::block_parts(b, rows))
                    .collect(),
            )
        } else {
            match preview.prompt.messages.get(index - 1) {
                Some(m) => (message_label(index - 1, m), parts::message_parts(m, rows)),
                None => (format!("message {index}"), Vec::new()),
            }
        };
        items.push(Item {
            label,
            key: key_of(role, true, &text),
            tag: role.to_string(),
            tokens,
            low: tokens,
            high: tokens,
            added: Estimate::default(),
            breakpoint: false,
            slot: Slot::Other,
            message: index.checked_sub(1),
            parts: attributed(parts, tokens, counting),
            content: text,
        });
    }
    if let Some(last) = items.last_mut() {
        last.tokens += priming;
        last.low += priming;
        last.high += priming;
        last.parts.push(ItemPart {
            part: Part {
                from: Source::Framing,
                text: String::new(),
            },
            tokens: priming,
        });
    }
    items
}

/// The included segments of a preview with both counts; unchanged segments are not recounted
/// (the counter remembers every text).
pub fn segment_tokens(
    preview: &Preview,
    profile: &ModelProfile,
    counter: &TokenCounter,
) -> Vec<SegmentTokens> {
    let encoding = profile.encoding();
    let estimate = profile.estimate();
    preview
        .segments
        .iter()
        .filter(|r| r.included)
        .map(|r| {
            let (tokens, range) = match &estimate {
                Some(rule) => {
                    let e = rule.estimate(counter, encoding, &r.content);
                    (e.tokens, Some((e.low, e.high)))
                }
                None => (counter.count(encoding, &r.content), None),
            };
            SegmentTokens {
                segment: r.key(),
                plugin: r.plugin.to_string(),
                estimate_tokens: r.tokens,
                tokens,
                range,
                exact: estimate.is_none(),
            }
        })
        .collect()
}
