//! The OpenAI-compatible routes: `/v1/models`, `/v1/chat/completions` (streamed or not,
//! `json_schema`/`json_object` enforced by the grammar) and `/v1/embeddings`. This module
//! owns the wire formats; the engine work is `Service::chat` and `Service::embeddings`.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use sextant::llm::chat_template::Message;
use sextant::service::{CancelOnDrop, ChatRequest};
use sextant::structured::OutputSpec;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::chat_wire::{completion, content_text};
use super::{blocking, json_body, App, Failure, Reply};

pub(super) async fn models(State(app): State<App>) -> Json<Value> {
    let model =
        |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "sextant"});
    let mut data = vec![model(&app.svc.llm_name()), model(&app.svc.embedder.name)];
    data.extend(super::grounded::MODELS.iter().map(|(name, _)| model(name)));
    Json(json!({"object": "list", "data": data}))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn finish_reason(truncated: bool) -> &'static str {
    if truncated {
        "length"
    } else {
        "stop"
    }
}

pub(super) async fn chat(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = json_body(body, true)?.unwrap_or_default();
    let id = format!(
        "chatcmpl-{:x}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let created = now_secs();
    let asked = body["model"].as_str().unwrap_or_default().to_string();
    if let Some(format) = super::grounded::format_of(&asked) {
        return super::grounded::chat(app, body, &asked, format, id, created).await;
    }
    let (req, stream) = parse_chat_request(&body, &app.svc.llm_name())?;
    let model = app.svc.llm_name();
    let svc = app.svc.clone();
    // Dropped with this request (the client went away): generation stops at the next token.
    let guard = CancelOnDrop::new();
    let cancel = guard.0.clone();
    if stream {
        let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(256);
        let chunk = {
            let (id, model) = (id.clone(), model.clone());
            move |delta: Value, finish: Option<&str>| {
                json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            }
        };
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            let send = |v: Value| {
                tx.blocking_send(Ok(Event::default().data(v.to_string())))
                    .is_ok()
            };
            send(chunk(json!({"role": "assistant", "content": ""}), None));
            let result = svc.chat(&req, cancel.clone(), &mut |text| {
                if !send(chunk(json!({"content": text}), None)) {
                    cancel.store(true, Ordering::Relaxed);
                }
            });
            match result {
                Ok(r) => {
                    send(chunk(json!({}), Some(finish_reason(r.truncated))));
                }
                Err(e) => {
                    send(Failure::from(e).body());
                }
            }
            let _ = tx.blocking_send(Ok(Event::default().data("[DONE]")));
        });
        return Ok(Sse::new(ReceiverStream::new(rx)).into_response());
    }
    let r = blocking(move || svc.chat(&req, cancel, &mut |_| {})).await;
    guard.disarm();
    let r = r?;
    let usage = (r.prompt_tokens, r.completion_tokens);
    let done = (r.text.as_str(), finish_reason(r.truncated));
    Ok(Json(completion(&id, created, &model, done, usage)).into_response())
}

pub(super) async fn embeddings(
    State(app): State<App>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let body = json_body(body, true)?.unwrap_or_default();
    let name = app.svc.embedder.name.clone();
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != name {
            return Err(Failure::not_found(format!(
                "model {m:?} is not an embedding model here; use {name:?} (GET /v1/models)"
            )));
        }
    }
    let texts: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => {
            return Err(Failure::bad_request(
                "input must be a string or a non-empty array of strings (token arrays are not supported)",
            ))
        }
    };
    // The Python client asks for base64 (little-endian f32) by default.
    let base64 = match body["encoding_format"].as_str() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(f) => {
            return Err(Failure::bad_request(format!(
                "encoding_format {f:?}: use float or base64"
            )))
        }
    };
    let svc = app.svc.clone();
    let (vectors, tokens) = blocking(move || svc.embeddings(&texts)).await?;
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let embedding = if base64 {
                use base64::Engine;
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response())
}

/// Parses an OpenAI chat request body into the engine's request and the `stream` flag.
fn parse_chat_request(body: &Value, model_id: &str) -> Result<(ChatRequest, bool), Failure> {
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != model_id {
            return Err(Failure::not_found(format!(
                "model {m:?} is not loaded; use {model_id:?}, or sextant-rag / sextant-navigator for answers from the knowledge base (GET /v1/models lists the models)"
            ))
            .with_code("model_not_found"));
        }
    }
    let msgs = body["messages"]
        .as_array()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| Failure::bad_request("messages: a non-empty array is required"))?;
    let mut messages = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"]
            .as_str()
            .ok_or_else(|| Failure::bad_request(format!("messages[{i}].role is required")))?;
        if !matches!(role, "system" | "user" | "assistant" | "developer") {
            return Err(Failure::bad_request(format!(
                "messages[{i}].role {role:?}: use system, user or assistant"
            )));
        }
        let content = content_text(&m["content"]).ok_or_else(|| {
            Failure::bad_request(format!("messages[{i}].content must be a string"))
        })?;
        let role = if role == "developer" { "system" } else { role };
        messages.push(Message::new(role, &content));
    }
    let output = match body.get("response_format") {
        None | Some(Value::Null) => OutputSpec::Text,
        Some(rf) => match rf["type"].as_str() {
            Some("text") => OutputSpec::Text,
            Some("json_object") => OutputSpec::JsonSchema(json!({"type": "object"})),
            Some("json_schema") => {
                let schema = rf["json_schema"]["schema"].clone();
                if !schema.is_object() {
                    return Err(Failure::bad_request(
                        "response_format.json_schema.schema must be a JSON Schema object",
                    ));
                }
                OutputSpec::JsonSchema(schema)
            }
            other => {
                return Err(Failure::bad_request(format!(
                    "response_format.type {other:?}: use text, json_object or json_schema"
                )))
            }
        },
    };
    let num = |k: &str| body.get(k).filter(|v| !v.is_null());
    let max_tokens = match num("max_completion_tokens").or_else(|| num("max_tokens")) {
        // A schema gets the budget its required structure needs (at least 1024).
        None => match &output {
            OutputSpec::JsonSchema(schema) => {
                sextant::structured::default_budget(schema, &Default::default())
            }
            _ => 512,
        },
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Failure::bad_request("max_tokens must be a positive integer"))?
            as usize,
    };
    let temperature = match num("temperature") {
        None => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|t| (0.0..=2.0).contains(t))
            .ok_or_else(|| Failure::bad_request("temperature must be a number from 0 to 2"))?
            as f32,
    };
    let top_p = match num("top_p") {
        None => 0.95,
        Some(v) => {
            v.as_f64()
                .filter(|t| *t > 0.0 && *t <= 1.0)
                .ok_or_else(|| Failure::bad_request("top_p must be in (0, 1]"))? as f32
        }
    };
    if let Some(n) = num("n").and_then(Value::as_u64) {
        if n != 1 {
            return Err(Failure::bad_request("n: only 1 is supported"));
        }
    }
    Ok((
        ChatRequest {
            messages,
            output,
            max_tokens,
            temperature,
            top_p,
            seed: num("seed").and_then(Value::as_u64).unwrap_or(42),
        },
        body["stream"].as_bool().unwrap_or(false),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn chat_requests_are_checked() {
        let (ok, stream) = parse_chat_request(
            &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}, "strict": true}}}),
            "m",
        )
        .ok()
        .unwrap();
        assert!(matches!(ok.output, OutputSpec::JsonSchema(_)));
        assert_eq!(ok.max_tokens, sextant::structured::DEFAULT_MAX_TOKENS);
        assert!(!stream);
        for (body, needle) in [
            (json!({"messages": []}), "messages"),
            (
                json!({"messages": [{"role": "robot", "content": "x"}]}),
                "role",
            ),
            (
                json!({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]}),
                "not loaded",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "temperature": 5}),
                "temperature",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}),
                "max_tokens",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}}),
                "response_format",
            ),
        ] {
            let err = parse_chat_request(&body, "m").err().unwrap();
            assert!(err.message.contains(needle), "{body}: {}", err.message);
            assert!(err.status == StatusCode::BAD_REQUEST || err.status == StatusCode::NOT_FOUND);
        }
    }
}
