//! OpenAI's chat wire format, shared by the chat route (`openai`) and the answer formats
//! served as chat models (`grounded`), so neither imports the other's helpers.

use serde_json::{json, Value};

/// A whole (not streamed) chat completion: the content, why it ended, the token counts.
pub(super) fn completion(
    id: &str,
    created: u64,
    model: &str,
    (content, finish): (&str, &str),
    (prompt_tokens, completion_tokens): (usize, usize),
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// A message's text: the string, or its content parts' text parts joined.
pub(super) fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}
