//! Streamed model replies: the server-sent events of the Anthropic Messages API
//! (`message_start`, `content_block_start` / `_delta` / `_stop` with text and tool-input
//! deltas, `message_delta` with the stop reason and usage, `message_stop`, `error`) and of
//! OpenAI-compatible chat completions (`data:` chunks with `choices[].delta`, a usage chunk
//! with `stream_options.include_usage`, `[DONE]`), assembled into the answer a non-streamed
//! request gets, so replies, tool calls, usage and recordings read the same either way.

use serde_json::{Map, Value, json};
use std::io::BufRead;

/// Which API's stream it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

/// A stream being assembled.
#[derive(Debug)]
pub struct Assembler {
    wire: Wire,
    /// Anthropic: the message's fields from `message_start`, then its content blocks.
    message: Map<String, Value>,
    blocks: Vec<Value>,
    /// Tool input JSON text by block (Anthropic) or tool call (OpenAI) index.
    partial_json: Vec<String>,
    text: String,
    tool_calls: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    ended: bool,
    /// How many events carried something.
    pub chunks: u32,
}

impl Assembler {
    pub fn new(wire: Wire) -> Assembler {
        Assembler {
            wire,
            message: Map::new(),
            blocks: Vec::new(),
            partial_json: Vec::new(),
            text: String::new(),
            tool_calls: Vec::new(),
            finish_reason: None,
            usage: None,
            ended: false,
            chunks: 0,
        }
    }

    /// Takes one event (its `event:` name, when the stream names events, and its data); returns
    /// the text it adds to the reply, if any.
    pub fn feed(&mut self, event: Option<&str>, data: &str) -> Result<Option<String>, String> {
        if self.wire == Wire::OpenAi && data.trim() == "[DONE]" {
            self.ended = true;
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            format!(
                "a chunk of the stream is not JSON ({e}): {}",
                data.chars().take(120).collect::<String>()
            )
        })?;
        self.chunks += 1;
        match self.wire {
            Wire::Anthropic => self.feed_anthropic(event, &value),
            Wire::OpenAi => self.feed_openai(&value),
        }
    }

    fn feed_anthropic(
        &mut self,
        event: Option<&str>,
        value: &Value,
    ) -> Result<Option<String>, String> {
        let kind = event.or_else(|| value["type"].as_str()).unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(message) = value["message"].as_object() {
                    self.message = message.clone();
                    self.usage = message.get("usage").cloned();
                }
            }
            "content_block_start" => {
                let index = index_of(value);
                let mut block = value["content_block"].clone();
                if block["type"] == "tool_use" {
                    block["input"] = json!({});
                }
                self.grow(index);
                self.blocks[index] = block;
            }
            "content_block_delta" => {
                let index = index_of(value);
                self.grow(index);
                let delta = &value["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        let block = &mut self.blocks[index];
                        let joined =
                            format!("{}{text}", block["text"].as_str().unwrap_or_default());
                        block["text"] = json!(joined);
                        return Ok(Some(text.to_string()));
                    }
                    Some("input_json_delta") => {
                        self.partial_json[index]
                            .push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index_of(value);
                if index < self.blocks.len() && self.blocks[index]["type"] == "tool_use" {
                    let text = std::mem::take(&mut self.partial_json[index]);
                    if !text.trim().is_empty() {
                        self.blocks[index]["input"] = serde_json::from_str(&text).map_err(|e| {
                            format!(
                                "the input of tool call {} is not JSON ({e})",
                                self.blocks[index]["name"]
                            )
                        })?;
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.finish_reason = Some(reason.to_string());
                }
                if let Some(usage) = value["usage"].as_object() {
                    let mut merged = self.usage.take().unwrap_or_else(|| json!({}));
                    for (key, v) in usage {
                        merged[key] = v.clone();
                    }
                    self.usage = Some(merged);
                }
            }
            "message_stop" => self.ended = true,
            "error" => {
                return Err(format!(
                    "the model's stream reported an error: {}: {}",
                    value["error"]["type"].as_str().unwrap_or("error"),
                    value["error"]["message"].as_str().unwrap_or("(no message)")
                ));
            }
            _ => {}
        }
        Ok(None)
    }

    fn feed_openai(&mut self, value: &Value) -> Result<Option<String>, String> {
        if let Some(error) = value.get("error") {
            return Err(format!("the model's stream reported an error: {error}"));
        }
        if value.get("usage").is_some_and(|u| !u.is_null()) {
            self.usage = value.get("usage").cloned();
        }
        let Some(choice) = value["choices"].get(0) else {
            return Ok(None);
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        let delta = &choice["delta"];
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(0) as usize;
            while self.tool_calls.len() <= index {
                self.tool_calls.push(json!({"id": "", "type": "function", "function": {"name": "", "arguments": ""}}));
            }
            let kept = &mut self.tool_calls[index];
            if let Some(id) = call["id"].as_str() {
                kept["id"] = json!(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                let joined = format!(
                    "{}{name}",
                    kept["function"]["name"].as_str().unwrap_or_default()
                );
                kept["function"]["name"] = json!(joined);
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                let joined = format!(
                    "{}{arguments}",
                    kept["function"]["arguments"].as_str().unwrap_or_default()
                );
                kept["function"]["arguments"] = json!(joined);
            }
        }
        match delta["content"].as_str() {
            Some(text) if !text.is_empty() => {
                self.text.push_str(text);
                Ok(Some(text.to_string()))
            }
            _ => Ok(None),
        }
    }

    fn grow(&mut self, index: usize) {
        while self.blocks.len() <= index {
            self.blocks.push(json!({"type": "text", "text": ""}));
            self.partial_json.push(String::new());
        }
    }

    /// The answer as a non-streamed request gets it; `Err` when the stream stopped before its
    /// end.
    pub fn finish(self) -> Result<Value, String> {
        if !self.ended {
            let end = match self.wire {
                Wire::Anthropic => "message_stop",
                Wire::OpenAi => "data: [DONE]",
            };
            return Err(format!(
                "the stream stopped before its end ({end}) after {}: the connection was cut or the server gave up",
                crate::words::counted(self.chunks as usize, "chunk")
            ));
        }
        Ok(match self.wire {
            Wire::Anthropic => {
                let mut message = Value::Object(self.message);
                message["content"] = Value::Array(self.blocks);
                message["stop_reason"] =
                    json!(self.finish_reason.unwrap_or_else(|| "end_turn".into()));
                if let Some(usage) = self.usage {
                    message["usage"] = usage;
                }
                message
            }
            Wire::OpenAi => {
                let mut message = json!({"role": "assistant", "content": if self.text.is_empty() && !self.tool_calls.is_empty() { Value::Null } else { json!(self.text) }});
                if !self.tool_calls.is_empty() {
                    message["tool_calls"] = Value::Array(self.tool_calls);
                }
                let mut answer = json!({"choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason.unwrap_or_else(|| "stop".into())}]});
                if let Some(usage) = self.usage {
                    answer["usage"] = usage;
                }
                answer
            }
        })
    }
}

fn index_of(value: &Value) -> usize {
    value["index"].as_u64().unwrap_or(0) as usize
}

/// Reads a server-sent event stream, calling `on_event(name, data)` for each event (data lines
/// joined by newlines); stops at the end of the input or when `on_event` says so (`false`).
pub fn read_events(
    reader: impl BufRead,
    mut on_event: impl FnMut(Option<&str>, &str) -> Result<bool, String>,
) -> Result<(), String> {
    let mut event: Option<String> = None;
    let mut data: Vec<String> = Vec::new();
    for line in reader.lines() {
        let line = line.map_err(|e| format!("the stream broke: {e}"))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            if !data.is_empty() && !on_event(event.as_deref(), &data.join("\n"))? {
                return Ok(());
            }
            event = None;
            data.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_string()),
            "data" => data.push(value.to_string()),
            _ => {}
        }
    }
    if !data.is_empty() {
        on_event(event.as_deref(), &data.join("\n"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(wire: Wire, stream: &str) -> (Result<Value, String>, String) {
        let mut assembler = Assembler::new(wire);
        let mut text = String::new();
        let read = read_events(stream.as_bytes(), |event, data| {
            if let Some(delta) = assembler.feed(event, data)? {
                text.push_str(&delta);
            }
            Ok(true)
        });
        (read.and_then(|()| assembler.finish()), text)
    }

    #[test]
    fn an_anthropic_stream_is_assembled_with_its_text_tool_input_and_usage() {
        let stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"role\":\"assistant\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The tide \"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"turns.\"}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"set-scene\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"sceneId\\\": \\\"to\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"wer\\\"}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let (answer, text) = assemble(Wire::Anthropic, stream);
        let answer = answer.expect("assembled");
        assert_eq!(text, "The tide turns.");
        assert_eq!(answer["content"][0]["text"], "The tide turns.");
        assert_eq!(answer["content"][1]["input"]["sceneId"], "tower");
        assert_eq!(answer["stop_reason"], "tool_use");
        assert_eq!(
            answer["usage"],
            json!({"input_tokens": 10, "output_tokens": 15})
        );
    }

    #[test]
    fn an_openai_stream_is_assembled_with_its_tool_call_and_the_usage_chunk() {
        let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Cold \"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"air.\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"set-scene\",\"arguments\":\"{\\\"sceneId\\\":\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"crypt\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n";
        let (answer, text) = assemble(Wire::OpenAi, stream);
        let answer = answer.expect("assembled");
        assert_eq!(text, "Cold air.");
        assert_eq!(answer["choices"][0]["message"]["content"], "Cold air.");
        assert_eq!(
            answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"sceneId\":\"crypt\"}"
        );
        assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(answer["usage"]["completion_tokens"], 4);
    }

    #[test]
    fn an_error_event_a_cut_stream_and_a_malformed_chunk_each_say_what_happened() {
        let (error, _) = assemble(
            Wire::Anthropic,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        assert_eq!(
            error.err().as_deref(),
            Some("the model's stream reported an error: overloaded_error: Overloaded")
        );
        let (cut, text) = assemble(
            Wire::Anthropic,
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n",
        );
        assert_eq!(text, "Half");
        assert!(cut.err().is_some_and(|e| {
            e.starts_with("the stream stopped before its end (message_stop) after 1 chunk:")
        }));
        let (malformed, _) = assemble(Wire::OpenAi, "data: {\"choices\": [\n\n");
        assert!(
            malformed
                .err()
                .is_some_and(|e| e.starts_with("a chunk of the stream is not JSON"))
        );
    }
}
