//! The answer formats as OpenAI chat models: `sextant-rag` and `sextant-navigator` answer
//! the last user message from the knowledge base (rules, retrieval and the reader, as
//! `POST /api/ask`), read after the user messages before it, and the message content is the format's JSON object, so any OpenAI
//! client gets cited answers. Streaming sends that object as one content delta: it is
//! validated whole before it is sent.

use std::convert::Infallible;

use axum::response::sse::{Event, Sse};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use sextant::protocols::AnswerFormat;
use sextant::service::{AskParams, Request};
use tokio_stream::wrappers::ReceiverStream;

use super::{blocking, App, Failure, Reply};

/// The grounded models and the format each answers in.
pub(super) const MODELS: [(&str, AnswerFormat); 2] = [
    ("sextant-rag", AnswerFormat::Rag),
    ("sextant-navigator", AnswerFormat::Navigator),
];

pub(super) fn format_of(model: &str) -> Option<AnswerFormat> {
    MODELS.iter().find(|(m, _)| *m == model).map(|(_, f)| *f)
}

/// The question (the last user message's text) and the user messages before it, oldest
/// first: a follow-up is read with them.
fn question(body: &Value) -> Result<(String, Vec<String>), Failure> {
    let msgs = body["messages"]
        .as_array()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| Failure::bad_request("messages: a non-empty array is required"))?;
    let mut asked: Vec<String> = msgs
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| super::chat_wire::content_text(&m["content"]).unwrap_or_default())
        .collect();
    let Some(text) = asked.pop() else {
        return Err(Failure::bad_request(
            "messages: a user message (the question) is required",
        ));
    };
    if text.trim().is_empty() {
        return Err(Failure::bad_request(
            "the last user message must hold the question as text",
        ));
    }
    Ok((text, asked))
}

pub(super) async fn chat(
    app: App,
    body: Value,
    model: &str,
    format: AnswerFormat,
    id: String,
    created: u64,
) -> Reply {
    if body["response_format"]["type"] == "json_schema" {
        return Err(Failure::bad_request(format!(
            "{model} answers in its own format (schemas/{}-response.schema.json); drop response_format or ask the plain model",
            if format == AnswerFormat::Rag { "rag" } else { "navigator" }
        )));
    }
    let (question, history) = question(&body)?;
    let params = AskParams {
        question,
        format: Some(format),
        history,
        ..AskParams::default()
    };
    let svc = app.svc.clone();
    let answer = blocking(move || svc.handle(Request::Ask(params))).await?;
    let content = answer["response"].to_string();
    if body["stream"].as_bool().unwrap_or(false) {
        let chunk = |delta: Value, finish: Option<&str>| {
            let v = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            Ok::<_, Infallible>(Event::default().data(v.to_string()))
        };
        let events = vec![
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": content}), None),
            chunk(json!({}), Some("stop")),
            Ok(Event::default().data("[DONE]")),
        ];
        let (tx, rx) = tokio::sync::mpsc::channel(events.len());
        for e in events {
            let _ = tx.try_send(e);
        }
        return Ok(Sse::new(ReceiverStream::new(rx)).into_response());
    }
    // Retrieval and rules, not one generation: no token counts to report.
    let whole =
        super::chat_wire::completion(&id, created, model, (content.as_str(), "stop"), (0, 0));
    Ok(Json(whole).into_response())
}
