//! The two provider request bodies an assembly becomes: Anthropic Messages with explicit
//! `cache_control` (at most four breakpoints: the system boundaries plus one moving breakpoint
//! on the newest history message), and OpenAI chat with the boundaries removed (prefix caching
//! is automatic there).

use super::assemble::{Assembly, Origin};
use serde_json::{Value, json};

/// Model names and the reply reserve for the request bodies.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    pub model: String,
    pub max_tokens: u32,
}

/// Anthropic's limit on cache breakpoints per request.
const MAX_BREAKPOINTS: usize = 4;

/// The Anthropic Messages body.
pub fn anthropic_request(assembly: &Assembly, options: &RequestOptions) -> Value {
    let boundaries = assembly.blocks.iter().filter(|b| b.cache_boundary).count();
    // One breakpoint is kept for the moving history breakpoint; the earliest system ones give
    // way if there are too many.
    let system_budget = MAX_BREAKPOINTS - 1;
    let skip = boundaries.saturating_sub(system_budget);
    let mut seen = 0;
    let system: Vec<Value> = assembly
        .blocks
        .iter()
        .map(|b| {
            let mut block = json!({"type": "text", "text": b.text.trim_end()});
            if b.cache_boundary {
                seen += 1;
                if seen > skip {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
            }
            block
        })
        .collect();

    // System messages inside the conversation travel as user text in tags, in place.
    let first_conversation = assembly.messages.iter().position(|m| m.role != "system").unwrap_or(0);
    let newest_history = assembly.messages.iter().rposition(|m| matches!(m.origin, Origin::History { .. } | Origin::Summary { .. }));
    let mut messages: Vec<Value> = Vec::new();
    for (index, m) in assembly.messages.iter().enumerate() {
        let (role, text) = if m.role == "system" || index < first_conversation {
            ("user", format!("<system-instruction>\n{}\n</system-instruction>", m.content))
        } else {
            (if m.role == "assistant" { "assistant" } else { "user" }, m.content.clone())
        };
        let mut block = json!({"type": "text", "text": text});
        if Some(index) == newest_history {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.push(block);
                }
            }
            _ => messages.push(json!({"role": role, "content": [block]})),
        }
    }
    json!({
        "model": options.model,
        "max_tokens": options.max_tokens,
        "system": system,
        "messages": messages,
    })
}

/// The OpenAI chat body.
pub fn openai_request(assembly: &Assembly, options: &RequestOptions) -> Value {
    let mut messages = vec![json!({"role": "system", "content": assembly.system_text()})];
    messages.extend(assembly.messages.iter().map(|m| json!({"role": m.role, "content": m.content})));
    json!({"model": options.model, "max_tokens": options.max_tokens, "messages": messages})
}
