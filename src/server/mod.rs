//! `sextant serve`: the loopback HTTP shell over `sextant::service` (docs/API.md). It
//! parses requests, runs the engine off the async threads, and writes JSON or server-sent
//! events; every decision about content is the service's.
//!
//! Errors use the OpenAI error shape everywhere, including malformed JSON, oversized
//! bodies, a missing token and unknown routes, so OpenAI clients report them properly;
//! `Failure::from(ServiceError)` is the one place engine errors become HTTP statuses. The
//! OpenAI wire formats are in `openai`.

mod admission;
mod chat_wire;
mod grounded;
mod openai;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

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
use serde_json::{json, Map, Value};
use sextant::service::{CancelOnDrop, Request as ServiceRequest, Service, ServiceError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Largest request body accepted (a chat with a long context is well under this).
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// A UI file compiled in: (route, contents, content type).
macro_rules! ui {
    ($path:literal, $mime:expr) => {
        (
            concat!("/", $path),
            include_str!(concat!("../../ui/", $path)),
            $mime,
        )
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The UI, compiled in so the binary serves it with no files beside it.
const UI_FILES: &[(&str, &str, &str)] = &[
    ("/", include_str!("../../ui/index.html"), HTML),
    ui!("index.html", HTML),
    ui!("app.js", JS),
    ui!("client.js", JS),
    ui!("dom.js", JS),
    ui!("highlight.js", JS),
    ui!("screens/library.js", JS),
    ui!("screens/kbs.js", JS),
    ui!("screens/ask.js", JS),
    ui!("screens/reader.js", JS),
    ui!("screens/interview.js", JS),
    ui!("screens/router.js", JS),
    ui!("screens/models.js", JS),
    ui!("screens/conversations.js", JS),
    ui!("style.css", CSS),
    ui!("vendor/highlight/github.min.css", CSS),
    ui!("vendor/highlight/core.min.js", JS),
    ui!("vendor/highlight/languages/bash.min.js", JS),
    ui!("vendor/highlight/languages/diff.min.js", JS),
    ui!("vendor/highlight/languages/dockerfile.min.js", JS),
    ui!("vendor/highlight/languages/go.min.js", JS),
    ui!("vendor/highlight/languages/ini.min.js", JS),
    ui!("vendor/highlight/languages/javascript.min.js", JS),
    ui!("vendor/highlight/languages/json.min.js", JS),
    ui!("vendor/highlight/languages/nginx.min.js", JS),
    ui!("vendor/highlight/languages/plaintext.min.js", JS),
    ui!("vendor/highlight/languages/powershell.min.js", JS),
    ui!("vendor/highlight/languages/python.min.js", JS),
    ui!("vendor/highlight/languages/rust.min.js", JS),
    ui!("vendor/highlight/languages/shell.min.js", JS),
    ui!("vendor/highlight/languages/sql.min.js", JS),
    ui!("vendor/highlight/languages/xml.min.js", JS),
    ui!("vendor/pdfjs/pdf.min.mjs", JS),
    ui!("vendor/pdfjs/pdf.worker.min.mjs", JS),
    ui!("vendor/highlight/languages/yaml.min.js", JS),
];

/// Same policy as the page's meta tag: nothing but this origin.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[derive(Clone)]
struct App {
    svc: Arc<Service>,
    token: Option<Arc<str>>,
    /// The address the server listens on: requests must name it (or loopback) as Host.
    bound: SocketAddr,
}

pub struct ServeOptions {
    pub addr: SocketAddr,
    pub token: Option<String>,
}

/// An error as the HTTP API reports it: a status and the OpenAI error body.
pub(crate) struct Failure {
    status: StatusCode,
    kind: &'static str,
    code: Option<&'static str>,
    message: String,
}

impl Failure {
    fn bad_request(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code: None,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::NOT_FOUND,
            kind: "not_found_error",
            code: None,
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: None,
            message: message.into(),
        }
    }

    fn with_code(mut self, code: &'static str) -> Failure {
        self.code = Some(code);
        self
    }

    /// The OpenAI error body.
    fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": null, "code": self.code}})
    }
}

impl From<ServiceError> for Failure {
    fn from(e: ServiceError) -> Self {
        let message = format!("{e}");
        match e {
            ServiceError::NotFound(_) => Failure::not_found(message),
            ServiceError::Overloaded { .. } => Failure {
                status: StatusCode::SERVICE_UNAVAILABLE,
                kind: "overloaded_error",
                code: Some("overloaded"),
                message,
            },
            ServiceError::KbBusy(_) | ServiceError::Stale(_) => Failure {
                status: StatusCode::CONFLICT,
                kind: "conflict_error",
                code: Some(e.code()),
                message,
            },
            ServiceError::Internal(_) => Failure::internal(message),
            ServiceError::ModelUnavailable(_) => Failure::internal(message).with_code(e.code()),
            ServiceError::BadRequest(_) => Failure::bad_request(message),
            other => Failure::bad_request(message).with_code(other.code()),
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        r
    }
}

type Reply = Result<Response, Failure>;

/// The protocol routes of docs/API.md and the service request each one makes: the query
/// string and the JSON body become the request's fields.
const PROTOCOL_ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "/api/health", "health"),
    ("GET", "/api/kb", "kb"),
    ("GET", "/api/kbs", "kbs"),
    ("POST", "/api/kbs/create", "create_kb"),
    ("POST", "/api/kbs/switch", "switch_kb"),
    ("POST", "/api/kbs/rename", "rename_kb"),
    ("POST", "/api/kbs/remove", "remove_kb"),
    ("POST", "/api/kbs/watch", "watch_kb"),
    ("GET", "/api/models", "models"),
    ("POST", "/api/models/use", "use_model"),
    ("POST", "/api/models/import", "import_model"),
    ("GET", "/api/document", "document"),
    ("GET", "/api/document/file", "document_file"),
    ("POST", "/api/document/remove", "remove_document"),
    ("POST", "/api/sample-kb", "sample_kb"),
    ("POST", "/api/document/reindex", "reindex_document"),
    ("GET", "/api/section", "section"),
    ("POST", "/api/search", "search"),
    ("POST", "/api/ask", "ask"),
    ("POST", "/api/navigate", "navigate"),
    ("POST", "/api/route", "route"),
    ("GET", "/api/route/log", "route_log"),
    ("POST", "/api/interview", "interview"),
    ("GET", "/api/conversations", "conversations"),
    ("GET", "/api/conversation", "conversation"),
    ("POST", "/api/conversation/rename", "rename_conversation"),
    ("POST", "/api/conversation/delete", "delete_conversation"),
    ("POST", "/api/conversation/restore", "restore_conversation"),
    ("GET", "/api/conversation/export", "export_conversation"),
];

pub fn router(svc: Arc<Service>, token: Option<String>, bound: SocketAddr) -> Router {
    let app = App {
        svc,
        token: token.map(Arc::from),
        bound,
    };
    let mut r = Router::new();
    for (path, _, _) in UI_FILES {
        r = r.route(path, get(ui_file));
    }
    r.route("/api/ingest", post(ingest))
        .route("/api/ask/stream", post(ask_stream))
        .route("/api/{*rest}", get(protocol).post(protocol))
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::chat))
        .route("/v1/embeddings", post(openai::embeddings))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), auth))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            admission::admit,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(app)
}

pub async fn serve(svc: Arc<Service>, opts: ServeOptions) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("cannot listen on {}", opts.addr))?;
    let addr = listener.local_addr()?;
    eprintln!("listening on http://{addr}");
    axum::serve(listener, router(svc, opts.token, addr))
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
            return Failure {
                status: StatusCode::UNAUTHORIZED,
                kind: "authentication_error",
                code: Some("invalid_api_key"),
                message: "missing or wrong bearer token (Authorization: Bearer TOKEN, as given to `sextant serve --token`)".into(),
            }
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
    Failure::not_found(format!("no route {method} {}", uri.path()))
}

/// A JSON body, or the OpenAI-style error for an oversized or malformed one.
fn json_body(
    body: Result<Bytes, BytesRejection>,
    required: bool,
) -> Result<Option<Value>, Failure> {
    let bytes = body.map_err(|e| {
        let status = e.status();
        Failure {
            status,
            kind: "invalid_request_error",
            code: (status == StatusCode::PAYLOAD_TOO_LARGE).then_some("request_too_large"),
            message: if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!("the request body is larger than {BODY_LIMIT} bytes")
            } else {
                e.body_text()
            },
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return if required {
            Err(Failure::bad_request("the request needs a JSON body"))
        } else {
            Ok(None)
        };
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Failure::bad_request(format!("the body is not valid JSON: {e}")))
}

/// Runs engine work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Failure::from),
        Err(e) => Err(Failure::internal(format!("the request's task failed: {e}"))),
    }
}

async fn protocol(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let Some((_, _, op)) = PROTOCOL_ROUTES
        .iter()
        .find(|(m, p, _)| *m == method.as_str() && *p == uri.path())
    else {
        return Err(Failure::not_found(format!(
            "no route {method} {} (see docs/API.md)",
            uri.path()
        )));
    };
    let mut fields = match json_body(body, false)? {
        None => Map::new(),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(Failure::bad_request("the body must be a JSON object")),
    };
    for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        fields
            .entry(k.into_owned())
            .or_insert(Value::String(v.into_owned()));
    }
    fields.insert("op".into(), json!(op));
    let req = ServiceRequest::from_json(Value::Object(fields))?;
    let svc = app.svc.clone();
    let v = blocking(move || svc.handle(req)).await?;
    Ok(Json(v).into_response())
}

/// `POST /api/ask/stream`: the answer's draft text as `answer` events while the model
/// writes it, then `done` with the response of `POST /api/ask` (or `error`). A client that
/// goes away stops the generation at its next token.
async fn ask_stream(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let mut fields = match json_body(body, true)? {
        Some(Value::Object(o)) => o,
        _ => return Err(Failure::bad_request("the body must be a JSON object")),
    };
    fields.insert("op".into(), json!("ask"));
    let ServiceRequest::Ask(params) = ServiceRequest::from_json(Value::Object(fields))? else {
        return Err(Failure::internal("an ask body did not parse as an ask"));
    };
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(256);
    let svc = app.svc.clone();
    let guard = CancelOnDrop::new();
    let cancel = guard.0.clone();
    tokio::task::spawn_blocking(move || {
        let _guard = guard;
        let send = |name: &str, v: Value| {
            tx.blocking_send(Ok(Event::default().event(name).data(v.to_string())))
                .is_ok()
        };
        let stop = cancel.clone();
        let result = svc.ask_watched(
            params,
            &mut |text| {
                if !send("answer", json!({ "text": text })) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            },
            cancel,
        );
        match result {
            Ok(v) => send("done", v),
            Err(e) => send("error", Failure::from(e).body()),
        };
    });
    Ok(event_stream(rx))
}

/// The server-sent events a blocking task sends on `rx`, kept alive while it works.
fn event_stream(rx: mpsc::Receiver<Result<Event, Infallible>>) -> Response {
    Sse::new(ReceiverStream::new(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn ingest(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Reply {
    let body = json_body(body, false)?.unwrap_or(json!({}));
    let path = body["path"]
        .as_str()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from);
    let images = body["images"].as_bool().unwrap_or(false);
    // A folder that does not exist is a plain error, before any event is streamed.
    let path = app.svc.ingest_target(path.as_deref())?;
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(256);
    let svc = app.svc.clone();
    tokio::task::spawn_blocking(move || {
        let send = |name: &str, v: Value| {
            let _ = tx.blocking_send(Ok(Event::default().event(name).data(v.to_string())));
        };
        let result = svc.ingest(std::slice::from_ref(&path), images, &mut |p| {
            send("progress", json!(p));
        });
        match result {
            Ok(report) => send("done", json!({ "summary": report })),
            Err(e) => send("error", Failure::from(e).body()),
        }
    });
    Ok(event_stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_route_makes_a_request_the_service_knows() {
        for (_, path, op) in PROTOCOL_ROUTES {
            let mut fields = Map::new();
            fields.insert("op".into(), json!(op));
            for k in [
                "path", "query", "question", "flow", "name", "to", "id", "title",
            ] {
                fields.insert(k.into(), json!("x"));
            }
            fields.insert("on".into(), json!(true));
            fields.insert("forensics".into(), json!({}));
            assert!(
                ServiceRequest::from_json(Value::Object(fields)).is_ok(),
                "{path} -> {op}"
            );
        }
    }

    /// The UI's table (`ROUTE_OPS` in ui/client.js, which the desktop app turns into the
    /// same requests) and docs/API.md name exactly the server's routes.
    #[test]
    fn the_ui_route_table_is_the_servers() {
        let client = include_str!("../../ui/client.js");
        let start = client
            .find("const ROUTE_OPS = {")
            .expect("ROUTE_OPS in client.js");
        let table = &client[start..start + client[start..].find("};").unwrap()];
        let entry = regex::Regex::new(r#""(GET|POST) (/api/[^"]+)": "([a-z_]+)""#).unwrap();
        let mut ui: Vec<(String, String, String)> = entry
            .captures_iter(table)
            .map(|c| (c[1].to_string(), c[2].to_string(), c[3].to_string()))
            .collect();
        let mut server: Vec<(String, String, String)> = PROTOCOL_ROUTES
            .iter()
            .map(|(m, p, o)| (m.to_string(), p.to_string(), o.to_string()))
            .collect();
        ui.sort();
        server.sort();
        assert_eq!(
            ui, server,
            "ui/client.js ROUTE_OPS and PROTOCOL_ROUTES differ"
        );
        let api = include_str!("../../docs/API.md");
        for (method, path, _) in PROTOCOL_ROUTES {
            assert!(
                api.contains(&format!("`{method} {path}")),
                "docs/API.md does not document {method} {path}"
            );
        }
    }

    #[test]
    fn service_errors_map_to_statuses_once() {
        let f = Failure::from(ServiceError::Overloaded { ahead: 5 });
        assert_eq!(f.status, StatusCode::SERVICE_UNAVAILABLE);
        let f = Failure::from(ServiceError::Incomplete("x".into()));
        assert_eq!(
            (f.status, f.code),
            (StatusCode::BAD_REQUEST, Some("incomplete"))
        );
        let f = Failure::from(ServiceError::NotFound("x".into()));
        assert_eq!(f.status, StatusCode::NOT_FOUND);
        let f = Failure::from(ServiceError::Internal(anyhow::anyhow!("boom")));
        assert_eq!(f.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
