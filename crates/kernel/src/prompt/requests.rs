//! The two provider request bodies an assembly becomes: Anthropic Messages with explicit
//! `cache_control` (at most four breakpoints: the system boundaries plus one moving breakpoint
//! on the newest history message), and OpenAI chat with the boundaries removed (prefix caching
//! is automatic there).
//!
//! The Anthropic request is first built as an [`AnthropicRequest`]: every content block with
//! its breakpoint mark and where it came from. The body sent over HTTP is serialized from it,
//! and cache stability compares two of them block by block (see `cache`), so the verdict is
//! about exactly what the provider receives.

use super::assemble::{Assembly, Message, Origin};
use crate::session::CacheTtl;
use serde::Serialize;
use serde_json::{Value, json};

/// Model names, the reply reserve and the cache settings for the request bodies.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    pub model: String,
    pub max_tokens: u32,
    /// Anthropic: `1h` adds `"ttl": "1h"` to every `cache_control`; `5m` (or none) leaves the
    /// provider's default.
    pub cache_ttl: Option<CacheTtl>,
    /// OpenAI: sent as `prompt_cache_key`.
    pub prompt_cache_key: Option<String>,
}

/// Anthropic's limit on cache breakpoints per request.
const MAX_BREAKPOINTS: usize = 4;

/// One text content block as the provider receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPart {
    /// The text sent (system messages inside the conversation already wrapped in tags).
    pub text: String,
    /// Whether the block carries `cache_control` (a breakpoint).
    pub cache_control: bool,
    pub origin: Origin,
    /// The index of the assembly's message this block sends (none for a system block): a
    /// message without text is not sent, so the request's blocks and the assembly's messages
    /// do not pair by position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<usize>,
}

impl RequestPart {
    /// The block exactly as serialized in the body, its breakpoint with the TTL asked for.
    pub fn body(&self, ttl: Option<CacheTtl>) -> Value {
        let mut block = json!({"type": "text", "text": self.text});
        if self.cache_control {
            block["cache_control"] = match ttl {
                Some(CacheTtl::OneHour) => json!({"type": "ephemeral", "ttl": "1h"}),
                _ => json!({"type": "ephemeral"}),
            };
        }
        block
    }
}

/// One message of an Anthropic request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestMessage {
    pub role: &'static str,
    pub content: Vec<RequestPart>,
}

/// Where a content block sits in an Anthropic request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "in")]
pub enum Place {
    /// The `index`-th block of `system`.
    System { index: usize },
    /// The `block`-th content block of the `message`-th message.
    Message {
        message: usize,
        role: &'static str,
        block: usize,
    },
}

/// The Anthropic Messages request, block by block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnthropicRequest {
    pub system: Vec<RequestPart>,
    pub messages: Vec<RequestMessage>,
}

/// A system message as the user text Anthropic's API takes inside a conversation. Sized once:
/// the turn context holds every turn-volatile segment, and growing it in steps showed up in
/// every preview's profile.
fn system_instruction(content: &str) -> String {
    const OPEN: &str = "<system-instruction>\n";
    const CLOSE: &str = "\n</system-instruction>";
    let mut text = String::with_capacity(OPEN.len() + content.len() + CLOSE.len());
    text.push_str(OPEN);
    text.push_str(content);
    text.push_str(CLOSE);
    text
}

impl AnthropicRequest {
    /// Builds the request for an assembly: every system boundary (the earliest give way when
    /// there are more than three) and one moving breakpoint on the newest history message.
    pub fn of(assembly: &Assembly) -> AnthropicRequest {
        let boundaries = assembly.blocks.iter().filter(|b| b.cache_boundary).count();
        // One breakpoint is kept for the moving history breakpoint; the earliest system ones give
        // way if there are too many.
        let skip = boundaries.saturating_sub(MAX_BREAKPOINTS - 1);
        let mut seen = 0;
        let system = assembly
            .blocks
            .iter()
            .map(|b| {
                let mut cache_control = false;
                if b.cache_boundary {
                    seen += 1;
                    cache_control = seen > skip;
                }
                RequestPart {
                    text: b.text.trim_end().to_string(),
                    cache_control,
                    origin: Origin::System {
                        block: b.kind,
                        segments: b.segments.clone(),
                    },
                    message: None,
                }
            })
            .collect();

        // System messages inside the conversation travel as user text in tags, in place.
        let newest_history = history_breakpoint(&assembly.messages);
        let mut messages: Vec<RequestMessage> = Vec::new();
        for (index, m) in assembly
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| is_sent(m))
        {
            let (role, text) = match m.role.as_str() {
                "system" => ("user", system_instruction(&m.content)),
                "assistant" => ("assistant", m.content.clone()),
                _ => ("user", m.content.clone()),
            };
            let part = RequestPart {
                text,
                cache_control: Some(index) == newest_history,
                origin: m.origin.clone(),
                message: Some(index),
            };
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.push(part),
                _ => messages.push(RequestMessage {
                    role,
                    content: vec![part],
                }),
            }
        }
        AnthropicRequest { system, messages }
    }

    /// Every content block in the order the provider reads them (system, then messages).
    pub fn parts(&self) -> Vec<(Place, &RequestPart)> {
        let system = self
            .system
            .iter()
            .enumerate()
            .map(|(index, part)| (Place::System { index }, part));
        let messages = self.messages.iter().enumerate().flat_map(|(message, m)| {
            m.content.iter().enumerate().map(move |(block, part)| {
                (
                    Place::Message {
                        message,
                        role: m.role,
                        block,
                    },
                    part,
                )
            })
        });
        system.chain(messages).collect()
    }

    /// The JSON body.
    pub fn body(&self, options: &RequestOptions) -> Value {
        let ttl = options.cache_ttl;
        let system: Vec<Value> = self.system.iter().map(|p| p.body(ttl)).collect();
        let messages: Vec<Value> = self
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content.iter().map(|p| p.body(ttl)).collect::<Vec<_>>()}))
            .collect();
        json!({
            "model": options.model,
            "max_tokens": options.max_tokens,
            "system": system,
            "messages": messages,
        })
    }
}

/// Whether a message of the assembly is sent in the Anthropic request: one without text is left
/// out (the API refuses an empty text block). Whatever pairs the request's blocks with the
/// assembly's messages (the forecast) skips the same ones.
pub fn is_sent(message: &Message) -> bool {
    !message.content.trim().is_empty()
}

/// The index of the message that carries the moving history breakpoint: the newest history
/// message or summary that is sent.
pub fn history_breakpoint(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| {
        is_sent(m) && matches!(m.origin, Origin::History { .. } | Origin::Summary { .. })
    })
}

/// The Anthropic Messages body.
pub fn anthropic_request(assembly: &Assembly, options: &RequestOptions) -> Value {
    AnthropicRequest::of(assembly).body(options)
}

/// The OpenAI chat body.
pub fn openai_request(assembly: &Assembly, options: &RequestOptions) -> Value {
    let mut messages = vec![json!({"role": "system", "content": assembly.system_text()})];
    messages.extend(
        assembly
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content})),
    );
    let mut body =
        json!({"model": options.model, "max_tokens": options.max_tokens, "messages": messages});
    if let Some(key) = &options.prompt_cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::assemble::{Assembly, Message};

    fn message(role: &str, content: &str, origin: Origin) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
            tokens: 0,
            origin,
        }
    }

    #[test]
    fn a_message_without_text_is_not_sent_as_an_empty_text_block() {
        let assembly = Assembly {
            blocks: Vec::new(),
            messages: vec![
                message("user", "hello", Origin::History { id: "m1".into() }),
                message("assistant", "  ", Origin::History { id: "m2".into() }),
                message("user", "", Origin::PlayerInput),
            ],
            segments: Vec::new(),
            turn_context: String::new(),
        };
        let request = AnthropicRequest::of(&assembly);
        let texts: Vec<&str> = request
            .parts()
            .into_iter()
            .map(|(_, p)| p.text.as_str())
            .collect();
        assert_eq!(texts, ["hello"]);
        let history: Vec<bool> = request
            .parts()
            .into_iter()
            .map(|(_, p)| p.cache_control)
            .collect();
        assert_eq!(
            history,
            [true],
            "the moving breakpoint sits on the newest history message that is sent"
        );
    }

    fn one_history_message() -> Assembly {
        Assembly {
            blocks: Vec::new(),
            messages: vec![message(
                "user",
                "hello",
                Origin::History { id: "m1".into() },
            )],
            segments: Vec::new(),
            turn_context: String::new(),
        }
    }

    fn options(cache_ttl: Option<CacheTtl>, prompt_cache_key: Option<&str>) -> RequestOptions {
        RequestOptions {
            model: "m".into(),
            max_tokens: 10,
            cache_ttl,
            prompt_cache_key: prompt_cache_key.map(str::to_string),
        }
    }

    #[test]
    fn a_one_hour_ttl_is_sent_in_every_cache_control_and_five_minutes_is_the_default() {
        let assembly = one_history_message();
        let control = |ttl| {
            anthropic_request(&assembly, &options(ttl, None))["messages"][0]["content"][0]["cache_control"].clone()
        };
        assert_eq!(
            control(Some(CacheTtl::OneHour)),
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(
            control(Some(CacheTtl::FiveMinutes)),
            json!({"type": "ephemeral"})
        );
        assert_eq!(control(None), json!({"type": "ephemeral"}));
    }

    #[test]
    fn the_openai_body_carries_the_prompt_cache_key_only_when_the_session_sets_one() {
        let assembly = one_history_message();
        let key = openai_request(&assembly, &options(None, Some("story-42")));
        assert_eq!(key["prompt_cache_key"], json!("story-42"));
        let none = openai_request(&assembly, &options(None, None));
        assert!(none.get("prompt_cache_key").is_none());
    }
}
