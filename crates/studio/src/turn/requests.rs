//! The story model's requests in a turn's loop: the assembled prompt's bodies as they are
//! (their cache breakpoints kept), with the active tools and the turn's tool rounds and
//! corrections appended. When a hook replaced the system prompt or the messages, the bodies
//! are rendered afresh from the replaced messages.
//!
//! Messages are kept in one neutral shape, the one hooks see: `{role, content}`, an assistant's
//! `toolCalls: [{id, name, arguments}]` (arguments as JSON text) and a tool result's
//! `toolCallId`.

use crate::turn::OfferedTool;
use serde_json::{Value, json};

/// The conversation of one turn's loop.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The assembled request bodies.
    pub anthropic: Value,
    pub openai: Value,
    pub system: String,
    /// The assembled messages, then the loop's own (tool rounds, corrections).
    pub messages: Vec<Value>,
    /// How many of `messages` the assembly made.
    pub assembled: usize,
    /// Whether a hook replaced the system prompt or the assembled messages.
    pub rewritten: bool,
}

impl Conversation {
    /// The conversation of an assembled prompt (its OpenAI body holds the neutral messages:
    /// the system prompt first, then `{role, content}`).
    pub fn new(anthropic: &Value, openai: &Value) -> Conversation {
        let all = openai["messages"].as_array().cloned().unwrap_or_default();
        let system = all
            .first()
            .filter(|m| m["role"] == "system")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        let messages: Vec<Value> = all.into_iter().skip(1).collect();
        Conversation {
            anthropic: anthropic.clone(),
            openai: openai.clone(),
            system,
            assembled: messages.len(),
            messages,
            rewritten: false,
        }
    }

    /// The messages the loop added after the assembled ones.
    pub fn added(&self) -> &[Value] {
        &self.messages[self.assembled.min(self.messages.len())..]
    }

    /// The request bodies for one call: `messages` (as sent: a `PreLLMCall` hook may replace
    /// them for this call only) and, when a hook replaced them, the tools offered (the
    /// assembled bodies already offer the active tools, see [`add_tools`]).
    pub fn bodies(
        &self,
        messages: &[Value],
        tools: Option<&[OfferedTool]>,
        model: Option<&str>,
    ) -> (Value, Value) {
        let untouched = !self.rewritten
            && messages.len() >= self.assembled
            && messages[..self.assembled] == self.messages[..self.assembled];
        let (mut anthropic, mut openai) = if untouched {
            let added = &messages[self.assembled..];
            let mut anthropic = self.anthropic.clone();
            if let Some(list) = anthropic["messages"].as_array_mut() {
                list.extend(anthropic_messages(added));
            }
            let mut openai = self.openai.clone();
            if let Some(list) = openai["messages"].as_array_mut() {
                list.extend(openai_messages(added));
            }
            (anthropic, openai)
        } else {
            let mut anthropic = self.anthropic.clone();
            anthropic["system"] = json!(self.system);
            anthropic["messages"] = json!(anthropic_messages(messages));
            let mut openai = self.openai.clone();
            let mut list = vec![json!({"role": "system", "content": self.system})];
            list.extend(openai_messages(messages));
            openai["messages"] = json!(list);
            (anthropic, openai)
        };
        if let Some(tools) = tools {
            add_tools(&mut anthropic, &mut openai, tools);
        }
        if let Some(model) = model {
            anthropic["model"] = json!(model);
            openai["model"] = json!(model);
        }
        (anthropic, openai)
    }
}

/// Offers `tools` in both request bodies (`tools` left out when there are none).
pub fn add_tools(anthropic: &mut Value, openai: &mut Value, tools: &[OfferedTool]) {
    for body in [&mut *anthropic, &mut *openai] {
        if let Some(fields) = body.as_object_mut() {
            fields.remove("tools");
        }
    }
    if tools.is_empty() {
        return;
    }
    anthropic["tools"] = tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    openai["tools"] = tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
        .collect();
}

/// Neutral messages as Anthropic messages: tool calls as `tool_use` blocks, consecutive tool
/// results as one user message of `tool_result` blocks, a system message (a correction) as a
/// user message.
fn anthropic_messages(messages: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let text = m["content"].as_str().unwrap_or_default();
        match m["role"].as_str().unwrap_or_default() {
            "assistant" if m["toolCalls"].is_array() => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in m["toolCalls"].as_array().into_iter().flatten() {
                    let input = call["arguments"]
                        .as_str()
                        .and_then(|a| serde_json::from_str::<Value>(a).ok())
                        .unwrap_or_else(|| json!({}));
                    blocks.push(json!({"type": "tool_use", "id": call["id"], "name": call["name"], "input": input}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            }
            "tool" => {
                let block =
                    json!({"type": "tool_result", "tool_use_id": m["toolCallId"], "content": text});
                let merged = out.last_mut().filter(|last| {
                    last["role"] == "user"
                        && last["content"]
                            .as_array()
                            .is_some_and(|b| b.iter().all(|b| b["type"] == "tool_result"))
                });
                match merged.and_then(|last| last["content"].as_array_mut()) {
                    Some(blocks) => blocks.push(block),
                    None => out.push(json!({"role": "user", "content": [block]})),
                }
            }
            "system" => out.push(json!({"role": "user", "content": text})),
            role => out.push(json!({"role": role, "content": text})),
        }
    }
    out
}

/// Neutral messages as OpenAI chat messages.
fn openai_messages(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            match m["role"].as_str().unwrap_or_default() {
                "assistant" if m["toolCalls"].is_array() => json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                    "tool_calls": m["toolCalls"].as_array().into_iter().flatten().map(|c| json!({
                        "id": c["id"], "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    })).collect::<Vec<_>>(),
                }),
                "tool" => json!({"role": "tool", "tool_call_id": m["toolCallId"], "content": text}),
                role => json!({"role": role, "content": text}),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_rounds_are_appended_to_the_assembled_bodies_in_each_backend_s_shape() {
        let anthropic = json!({"model": "m", "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": "hi"}]});
        let openai = json!({"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]});
        let mut conversation = Conversation::new(&anthropic, &openai);
        conversation.messages.push(json!({"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "scene", "arguments": "{\"at\":\"tower\"}"}]}));
        conversation
            .messages
            .push(json!({"role": "tool", "toolCallId": "c1", "content": "ok"}));
        let tools = [OfferedTool {
            name: "scene".into(),
            description: "Sets the scene".into(),
            parameters: json!({"type": "object"}),
        }];
        let (mut a, mut o) = conversation.bodies(&conversation.messages, None, None);
        add_tools(&mut a, &mut o, &tools);
        // The assembled part is untouched (its cache breakpoint kept).
        assert_eq!(a["system"], anthropic["system"]);
        assert_eq!(a["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(a["messages"][1]["content"][0]["input"]["at"], "tower");
        assert_eq!(a["messages"][2]["content"][0]["tool_use_id"], "c1");
        assert_eq!(a["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(
            o["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"at\":\"tower\"}"
        );
        assert_eq!(o["messages"][3]["role"], "tool");
        assert_eq!(o["tools"][0]["function"]["name"], "scene");
    }

    #[test]
    fn replaced_messages_are_rendered_afresh() {
        let anthropic = json!({"system": [{"type": "text", "text": "S"}], "messages": [{"role": "user", "content": "hi"}]});
        let openai = json!({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]});
        let mut conversation = Conversation::new(&anthropic, &openai);
        conversation.system = "S2".into();
        conversation.rewritten = true;
        let (a, o) = conversation.bodies(&[json!({"role": "user", "content": "bye"})], None, None);
        assert_eq!(a["system"], "S2");
        assert_eq!(a["messages"], json!([{"role": "user", "content": "bye"}]));
        assert_eq!(o["messages"][0]["content"], "S2");
        assert!(a.get("tools").is_none());
    }
}
