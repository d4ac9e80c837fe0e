//! `sextant serve`: the loopback HTTP shell over `sextant::service` (docs/API.md). It
//! parses requests, runs the engine off the async threads, and writes JSON or server-sent
//! events; every decision about content is the service's.
//!
//! Errors use the OpenAI error shape everywhere, including malformed JSON, oversized
//! bodies, a missing token and unknown routes, so OpenAI clients report them properly.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use sextant::service::{parse_chat_request, ApiError, CancelOnDrop, Service};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Largest request body accepted (a chat with a long context is well under this).
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The UI, compiled in so the binary serves it with no files beside it.
const UI_FILES: &[(&str, &str, &str)] = &[
    (
        "/",
        include_str!("../../ui/index.html"),
        "text/html; charset=utf-8",
    ),
    (
        "/index.html",
        include_str!("../../ui/index.html"),
        "text/html; charset=utf-8",
    ),
    (
        "/app.js",
        include_str!("../../ui/app.js"),
        "text/javascript; charset=utf-8",
    ),
    (
        "/client.js",
        include_str!("../../ui/client.js"),
        "text/javascript; charset=utf-8",
    ),
    (
        "/style.css",
        include_str!("../../ui/style.css"),
        "text/css; charset=utf-8",
    ),
];

/// Same policy as the page's meta tag: nothing but this origin.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[derive(Clone)]
struct App {
    svc: Arc<Service>,
    token: Option<Arc<str>>,
}

pub struct ServeOptions {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

struct Failure(ApiError);

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut r = (status, Json(self.0.body())).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        r
    }
}

type Reply = Result<Response, Failure>;

pub fn router(svc: Arc<Service>, token: Option<String>) -> Router {
    let app = App {
        svc,
        token: token.map(Arc::from),
    };
    let mut r = Router::new();
    for (path, _, _) in UI_FILES {
        r = r.route(path, get(ui_file));
    }
    r.route("/api/ingest", post(ingest))
        .route("/api/{*rest}", get(protocol).post(protocol))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), auth))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

pub async fn serve(svc: Arc<Service>, opts: ServeOptions) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("cannot listen on {}", opts.addr))?;
    let addr = listener.local_addr()?;
    eprintln!("listening on http://{addr}");
    axum::serve(listener, router(svc, opts.token))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

async fn auth(State(app): State<App>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let guarded = path.starts_with("/api/") || path.starts_with("/v1/");
    if let (true, Some(token)) = (guarded, &app.token) {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(token) {
            return Failure(ApiError {
                status: 401,
                kind: "authentication_error",
                code: Some("invalid_api_key"),
                message: "missing or wrong bearer token (Authorization: Bearer TOKEN, as given to `sextant serve --token`)".into(),
            })
            .into_response();
        }
    }
    next.run(req).await
}

async fn ui_file(uri: Uri) -> Response {
    let (_, body, mime) = UI_FILES
        .iter()
        .find(|(p, _, _)| *p == uri.path())
        .expect("routed only for UI paths");
    (
        [
            (header::CONTENT_TYPE, *mime),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        *body,
    )
        .into_response()
}

async fn not_found(method: Method, uri: Uri) -> Failure {
    Failure(ApiError::not_found(format!(
        "no route {method} {}",
        uri.path()
    )))
}

/// A JSON body, or the OpenAI-style error for an oversized or malformed one.
fn json_body(
    body: Result<Bytes, BytesRejection>,
    required: bool,
) -> Result<Option<Value>, Failure> {
    let bytes = body.map_err(|e| {
        let status = e.status().as_u16();
        Failure(ApiError {
            status,
            kind: "invalid_request_error",
            code: (status == 413).then_some("request_too_large"),
            message: if status == 413 {
                format!("the request body is larger than {BODY_LIMIT} bytes")
            } else {
                e.body_text()
            },
        })
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return if required {
            Err(ApiError::bad_request("the request needs a JSON body").into())
        } else {
            Ok(None)
        };
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")).into())
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Failure),
        Err(e) => {
            Err(ApiError::internal(&anyhow::anyhow!("the request's task failed: {e}")).into())
        }
    }
}

async fn protocol(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let body = json_body(body, false)?;
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let svc = app.svc.clone();
    let v = blocking(move || svc.call(method.as_str(), &path, body.as_ref())).await?;
    Ok(Json(v).into_response())
}

async fn ingest(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = json_body(body, false)?.unwrap_or(json!({}));
    let path = match body["path"].as_str().filter(|p| !p.trim().is_empty()) {
        Some(p) => std::path::PathBuf::from(p.trim()),
        None => app
            .svc
            .last_ingested()
            .ok_or_else(|| ApiError::bad_request("missing field: path (the folder to add)"))?,
    };
    if !path.exists() {
        return Err(ApiError::bad_request(format!(
            "{}: no such file or folder on the machine running sextant",
            path.display()
        ))
        .into());
    }
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(256);
    let svc = app.svc.clone();
    tokio::task::spawn_blocking(move || {
        let send = |name: &str, v: Value| {
            let _ = tx.blocking_send(Ok(Event::default().event(name).data(v.to_string())));
        };
        let result = svc.ingest(&path, &mut |done, total, file| {
            send(
                "progress",
                json!({"done": done, "total": total, "file": file}),
            );
        });
        match result {
            Ok(v) => send("done", v),
            Err(e) => send("error", e.body()),
        }
    });
    Ok(Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn models(State(app): State<App>) -> Json<Value> {
    let model =
        |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "sextant"});
    Json(json!({
        "object": "list",
        "data": [model(app.svc.llm_name()), model(&app.svc.embedder.name)],
    }))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn chat(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = json_body(body, true)?.unwrap_or_default();
    let req = parse_chat_request(&body, app.svc.llm_name())?;
    let id = format!(
        "chatcmpl-{:x}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let created = now_secs();
    let model = app.svc.llm_name().to_string();
    let svc = app.svc.clone();
    // Dropped with this request (the client went away): generation stops at the next token.
    let guard = CancelOnDrop::new();
    let cancel = guard.0.clone();
    if req.stream {
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
                    send(chunk(json!({}), Some(r.finish_reason)));
                }
                Err(e) => {
                    send(e.body());
                }
            }
            let _ = tx.blocking_send(Ok(Event::default().data("[DONE]")));
        });
        return Ok(Sse::new(ReceiverStream::new(rx)).into_response());
    }
    let r = blocking(move || svc.chat(&req, cancel, &mut |_| {})).await;
    guard.disarm();
    let r = r?;
    Ok(Json(json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": r.text},
            "finish_reason": r.finish_reason,
        }],
        "usage": {
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "total_tokens": r.prompt_tokens + r.completion_tokens,
        },
    }))
    .into_response())
}

async fn embeddings(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = json_body(body, true)?.unwrap_or_default();
    let name = app.svc.embedder.name.clone();
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != name {
            return Err(ApiError::not_found(format!(
                "model {m:?} is not an embedding model here; use {name:?} (GET /v1/models)"
            ))
            .into());
        }
    }
    let texts: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => {
            return Err(ApiError::bad_request(
                "input must be a string or a non-empty array of strings (token arrays are not supported)",
            )
            .into())
        }
    };
    // The Python client asks for base64 (little-endian f32) by default.
    let base64 = match body["encoding_format"].as_str() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(f) => {
            return Err(ApiError::bad_request(format!(
                "encoding_format {f:?}: use float or base64"
            ))
            .into())
        }
    };
    let svc = app.svc.clone();
    let counted = texts.clone();
    let (vectors, tokens) = blocking(move || {
        let v = svc.embeddings(&texts)?;
        let tok = svc.embedder.counting_tokenizer();
        let n: usize = counted
            .iter()
            .map(|t| tok.encode(t.as_str(), true).map(|e| e.len()).unwrap_or(0))
            .sum();
        Ok((v, n))
    })
    .await?;
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
