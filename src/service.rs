//! The engine behind one front door for the shells that are not the CLI: the local HTTP
//! server (`sextant serve`) and the desktop app both hand `Service::call` a method, a path
//! and a JSON body and return what it returns, so the UI sees the same JSON either way
//! (docs/API.md). No HTTP or Tauri types here: errors are `ApiError` with the status a
//! server should use.
//!
//! One model of each kind is loaded once and shared. Generation runs one at a time; a
//! request that finds more than `QUEUE` others waiting is refused with 503 (`overloaded`)
//! rather than queued without bound.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

use crate::embed::Embedder;
use crate::kb::ingest::{ingest, IngestEvent, IngestOptions};
use crate::kb::search::{search, Hit, SearchMode};
use crate::kb::KnowledgeBase;
use crate::llm::chat_template::Message;
use crate::llm::Llm;
use crate::protocols::interview::{Interview, InterviewOptions};
use crate::protocols::routing::{self, Flow, ForensicSummary};
use crate::protocols::{navigate, AnswerFormat, AnswerMode, AskReport};
use crate::structured::{generate_structured, OutputSpec, StructuredError, StructuredRequest};

/// Requests that may wait for the LLM while one runs.
pub const QUEUE: usize = 4;

/// An error with the HTTP status and OpenAI-style type a shell should report.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub kind: &'static str,
    pub code: Option<&'static str>,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            kind: "invalid_request_error",
            code: None,
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: 404,
            kind: "not_found_error",
            code: None,
            message: message.into(),
        }
    }

    pub fn internal(err: &anyhow::Error) -> Self {
        ApiError {
            status: 500,
            kind: "server_error",
            code: None,
            message: format!("{err:#}"),
        }
    }

    fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The OpenAI error body.
    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": null, "code": self.code}})
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

type ApiResult<T = Value> = Result<T, ApiError>;

/// What a service is started with.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub kb_dir: PathBuf,
    /// Flow used by `/api/route` when the request names none.
    pub flow: PathBuf,
    pub run_base: PathBuf,
    pub interviews_dir: PathBuf,
}

/// Where a service's knowledge base and models come from.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// A folder path or a name under the data dir (default: the default KB).
    pub kb: Option<String>,
    /// The LLM by name in the model store (default: the manifest's).
    pub llm: Option<String>,
    /// The embedding model by name (default: the manifest's; must match the KB's).
    pub embedder: Option<String>,
    pub flow: Option<PathBuf>,
    pub run_base: Option<PathBuf>,
}

pub struct Service {
    pub config: ServiceConfig,
    kb: Mutex<KnowledgeBase>,
    llm: Mutex<Llm>,
    llm_name: String,
    pub embedder: Arc<Embedder>,
    waiting: AtomicUsize,
    /// Generations stopped because their client went away.
    cancelled: AtomicUsize,
    interviews: Mutex<HashMap<String, Interview>>,
    /// The folder last ingested (the UI's "re-index").
    last_ingested: Mutex<Option<PathBuf>>,
}

/// Cancels generation when dropped before `disarm` (a request whose client went away).
pub struct CancelOnDrop(pub Arc<AtomicBool>, bool);

impl CancelOnDrop {
    pub fn new() -> Self {
        CancelOnDrop(Arc::new(AtomicBool::new(false)), true)
    }
    pub fn disarm(mut self) {
        self.1 = false;
    }
}

impl Default for CancelOnDrop {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// A parsed `/v1/chat/completions` request.
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub output: OutputSpec,
    pub max_tokens: usize,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    pub stream: bool,
}

/// What a chat completion produced.
pub struct ChatResult {
    pub text: String,
    pub finish_reason: &'static str,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

impl Service {
    pub fn new(config: ServiceConfig, kb: KnowledgeBase, llm: Llm) -> Self {
        let embedder = kb.embedder.clone();
        Service {
            config,
            kb: Mutex::new(kb),
            llm_name: llm.name.clone(),
            llm: Mutex::new(llm),
            embedder,
            waiting: AtomicUsize::new(0),
            cancelled: AtomicUsize::new(0),
            interviews: Mutex::new(HashMap::new()),
            last_ingested: Mutex::new(None),
        }
    }

    /// Opens the KB and loads both models (verified) from `store`.
    pub fn open(store: &crate::models::ModelStore, opts: &OpenOptions) -> anyhow::Result<Service> {
        use crate::llm::LoadOptions;
        use crate::models::Role;
        let embedder = Arc::new(Embedder::load(
            &store.resolve(Role::Embedding, opts.embedder.as_deref())?,
        )?);
        let kb_dir = crate::kb::resolve_dir(opts.kb.as_deref());
        let kb = KnowledgeBase::open(&kb_dir, embedder)?;
        let llm = Llm::load(
            &store.resolve(Role::Llm, opts.llm.as_deref())?,
            &LoadOptions::from_env()?,
        )?;
        let config = ServiceConfig {
            interviews_dir: kb_dir.join("interviews"),
            kb_dir,
            flow: opts
                .flow
                .clone()
                .unwrap_or_else(|| PathBuf::from("examples/flow.toml")),
            run_base: opts
                .run_base
                .clone()
                .unwrap_or_else(|| PathBuf::from("runs")),
        };
        Ok(Service::new(config, kb, llm))
    }

    pub fn llm_name(&self) -> &str {
        &self.llm_name
    }

    fn kb(&self) -> MutexGuard<'_, KnowledgeBase> {
        self.kb.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` with the LLM, or refuses with 503 when too many requests already wait.
    pub fn with_llm<R>(&self, f: impl FnOnce(&mut Llm) -> ApiResult<R>) -> ApiResult<R> {
        let before = self.waiting.fetch_add(1, Ordering::SeqCst);
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _leave = Leave(&self.waiting);
        if before > QUEUE {
            return Err(ApiError {
                status: 503,
                kind: "overloaded_error",
                code: Some("overloaded"),
                message: format!(
                    "the model is busy ({before} requests ahead); retry in a few seconds"
                ),
            });
        }
        let mut llm = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut llm)
    }

    /// The protocol routes of docs/API.md (all but ingest, which streams).
    pub fn call(&self, method: &str, path_and_query: &str, body: Option<&Value>) -> ApiResult {
        let (path, query) = path_and_query
            .split_once('?')
            .unwrap_or((path_and_query, ""));
        let query: HashMap<String, String> = url_query(query);
        let empty = json!({});
        let body = body.unwrap_or(&empty);
        match (method, path) {
            ("GET", "/api/health") => Ok(json!({
                "ok": true,
                "version": env!("CARGO_PKG_VERSION"),
                "kb": self.config.kb_dir,
                "llm": self.llm_name,
                "embedder": self.embedder.name,
                "cancelled_generations": self.cancelled.load(Ordering::Relaxed),
            })),
            ("GET", "/api/kb") => self.kb_info(),
            ("GET", "/api/document") => {
                let p = query
                    .get("path")
                    .ok_or_else(|| ApiError::bad_request("missing query parameter: path"))?;
                self.document(p)
            }
            ("POST", "/api/search") => {
                let q = str_field(body, "query")?;
                let k = body["k"].as_u64().unwrap_or(5).clamp(1, 50) as usize;
                let hits = search(&self.kb(), q, k, SearchMode::Hybrid)
                    .map_err(|e| ApiError::internal(&e))?;
                Ok(json!({ "hits": hits }))
            }
            ("POST", "/api/ask") => self.ask(body),
            ("POST", "/api/navigate") => {
                let q = str_field(body, "question")?;
                let kb = self.kb();
                self.with_llm(|llm| {
                    let (nav, report) = navigate::navigate(&kb, Some(llm), q)
                        .map_err(|e| ApiError::bad_request(format!("{e:#}")))?;
                    let decided_by = if report.decision.starts_with("fast path") {
                        "fast-path"
                    } else if report.decision.starts_with("retrieval") {
                        "retrieval"
                    } else {
                        "llm"
                    };
                    Ok(json!({"call": nav.call, "target": nav.target, "decided_by": decided_by}))
                })
            }
            ("POST", "/api/route") => self.route(body),
            ("GET", "/api/route/log") => {
                let flow = query
                    .get("flow")
                    .ok_or_else(|| ApiError::bad_request("missing query parameter: flow"))?;
                if flow.is_empty()
                    || !flow
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(ApiError::bad_request(format!(
                        "flow id {flow:?}: use letters, digits, - and _"
                    )));
                }
                let path = self
                    .config
                    .run_base
                    .join(flow)
                    .join("routing")
                    .join("decisions.jsonl");
                let log = routing::read_log(&path).map_err(|e| ApiError::internal(&e))?;
                Ok(json!({ "decisions": log }))
            }
            ("POST", "/api/interview") => self.interview(body),
            (_, p) if p.starts_with("/api/") => Err(ApiError::not_found(format!(
                "no route {method} {p} (see docs/API.md)"
            ))),
            _ => Err(ApiError::not_found(format!("no route {method} {path}"))),
        }
    }

    fn kb_info(&self) -> ApiResult {
        let mut kb = self.kb();
        let stats = kb.stats().map_err(|e| ApiError::internal(&e))?;
        let documents = kb
            .store
            .list_documents()
            .map_err(|e| ApiError::internal(&e))?;
        Ok(json!({"kb": self.config.kb_dir, "stats": stats, "documents": documents}))
    }

    /// A document as HTML built from its stored sections (plain text, escaped), so every
    /// heading carries the anchor that citations and navigation point at.
    fn document(&self, path: &str) -> ApiResult {
        let kb = self.kb();
        let (doc, sections) = kb
            .store
            .document_sections(path)
            .map_err(|e| ApiError::internal(&e))?
            .ok_or_else(|| {
                ApiError::not_found(format!("no document {path:?} in the knowledge base"))
            })?;
        let mut html = String::new();
        let mut outline = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut page = None;
        for s in &sections {
            if s.page.is_some() && s.page != page {
                page = s.page;
                let id = format!("pdfpage_{}", s.page.unwrap_or(1));
                if ids.insert(id.clone()) {
                    html.push_str(&format!(
                        "<div class=\"pdfpage\" id=\"{id}\">Page {}</div>\n",
                        s.page.unwrap_or(1)
                    ));
                }
            }
            let level = s.level.clamp(1, 6);
            if !s.heading.is_empty() && ids.insert(s.anchor.clone()) {
                html.push_str(&format!(
                    "<h{level} id=\"{}\">{}</h{level}>\n",
                    escape(&s.anchor),
                    escape(&s.heading)
                ));
                outline.push(
                    json!({"anchor": s.anchor, "text": s.heading, "level": level, "page": s.page}),
                );
            }
            for para in s
                .text
                .split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
            {
                html.push_str(&format!("<p>{}</p>\n", escape(para)));
            }
        }
        Ok(json!({
            "path": doc.path, "title": doc.title, "format": doc.kind,
            "outline": outline, "html": html,
        }))
    }

    fn ask(&self, body: &Value) -> ApiResult {
        let question = str_field(body, "question")?;
        let format = match body["format"].as_str().unwrap_or("rag") {
            "rag" => AnswerFormat::Rag,
            "navigator" => AnswerFormat::Navigator,
            other => {
                return Err(ApiError::bad_request(format!(
                    "format {other:?}: use rag or navigator"
                )))
            }
        };
        let mode = match body["mode"].as_str() {
            None => format.default_mode(),
            Some("extractive") => AnswerMode::Extractive,
            Some("grounded") => AnswerMode::Grounded,
            Some("llm") => AnswerMode::Llm,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "mode {other:?}: use extractive, grounded or llm"
                )))
            }
        };
        let k = body["k"].as_u64().unwrap_or(5).clamp(1, 20) as usize;
        let kb = self.kb();
        if kb.store.count("chunks").unwrap_or(0) == 0 {
            return Err(ApiError::bad_request(
                "the knowledge base is empty: add a folder first (Library, or POST /api/ingest)",
            )
            .with_code("empty_kb"));
        }
        let run = |llm: Option<&mut Llm>| {
            crate::protocols::ask(&kb, llm, question, format, mode, k)
                .map_err(|e| ApiError::internal(&e))
        };
        let (response, report) = if mode.needs_llm() {
            self.with_llm(|llm| run(Some(llm)))?
        } else {
            run(None)?
        };
        let citations = citations(&kb, format, &response, &report.hits);
        Ok(
            json!({"format": format, "response": response, "citations": citations, "decision": report.decision}),
        )
    }

    fn route(&self, body: &Value) -> ApiResult {
        let flow_path = body["flow"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.config.flow.clone());
        let flow = Flow::load(&flow_path).map_err(|e| ApiError::bad_request(format!("{e:#}")))?;
        let forensics = body
            .get("forensics")
            .ok_or_else(|| ApiError::bad_request("missing field: forensics"))?;
        let summary = ForensicSummary::parse(&forensics.to_string(), &flow)
            .map_err(|e| ApiError::bad_request(format!("{e:#}")))?;
        let mut report = AskReport::default();
        let decision = if routing::needs_llm(&flow, &summary) {
            self.with_llm(|llm| {
                routing::route(&flow, &summary, Some(llm), &mut report)
                    .map_err(|e| ApiError::internal(&e))
            })?
        } else {
            routing::route(&flow, &summary, None, &mut report)
                .map_err(|e| ApiError::internal(&e))?
        };
        routing::record(&self.config.run_base, &flow, &summary, &decision)
            .map_err(|e| ApiError::internal(&e))?;
        let mut v = serde_json::to_value(&decision).map_err(|e| ApiError::internal(&e.into()))?;
        v["flow"] = json!(flow.name);
        Ok(v)
    }

    fn interview(&self, body: &Value) -> ApiResult {
        let session = body["session"].as_str().filter(|s| !s.is_empty());
        let answer = body["answer"]
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let mut sessions = self.interviews.lock().unwrap_or_else(|p| p.into_inner());
        let id = match session {
            Some(id) => {
                if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    return Err(ApiError::bad_request(format!(
                        "session {id:?} is not an id"
                    )));
                }
                if !sessions.contains_key(id) {
                    let path = self.config.interviews_dir.join(format!("{id}.jsonl"));
                    let iv = Interview::resume(&path, InterviewOptions::default())
                        .map_err(|e| ApiError::not_found(format!("{e:#}")))?;
                    sessions.insert(id.to_string(), iv);
                }
                id.to_string()
            }
            None => {
                let id = crate::protocols::interview::new_session_id();
                let mut id_n = id.clone();
                let mut n = 1;
                while self
                    .config
                    .interviews_dir
                    .join(format!("{id_n}.jsonl"))
                    .exists()
                {
                    n += 1;
                    id_n = format!("{id}-{n}");
                }
                let path = self.config.interviews_dir.join(format!("{id_n}.jsonl"));
                let iv = Interview::create(&path, &self.llm_name, InterviewOptions::default())
                    .map_err(|e| ApiError::internal(&e))?;
                sessions.insert(id_n.clone(), iv);
                id_n
            }
        };
        let iv = sessions.get_mut(&id).expect("inserted above");
        if iv.waiting_turn().is_some() {
            match answer {
                Some(a) => iv.answer(a).map_err(|e| ApiError::internal(&e))?,
                None => {
                    // Asked again without an answer: show the waiting question.
                    return Ok(json!({"session": id, "turn": iv.waiting_turn(), "done": false}));
                }
            }
        }
        if iv.is_finished() {
            return Ok(json!({"session": id, "turn": null, "done": true}));
        }
        let (turn, stats) =
            self.with_llm(|llm| iv.next_turn(llm).map_err(|e| ApiError::internal(&e)))?;
        Ok(json!({"session": id, "turn": turn, "done": false, "stats": stats}))
    }

    /// Ingests a folder (or file), reporting `(done, total, file)` as it goes.
    pub fn ingest(
        &self,
        path: &Path,
        on_progress: &mut dyn FnMut(usize, usize, &str),
    ) -> ApiResult {
        if !path.exists() {
            return Err(ApiError::bad_request(format!(
                "{}: no such file or folder",
                path.display()
            ))
            .with_code("not_found"));
        }
        let path = path
            .canonicalize()
            .map_err(|e| ApiError::bad_request(format!("{}: {e}", path.display())))?;
        let mut kb = self.kb();
        let (mut done, mut total) = (0, 0);
        let report = ingest(
            &mut kb,
            std::slice::from_ref(&path),
            &IngestOptions::default(),
            &mut |ev| match ev {
                IngestEvent::Found(n) => {
                    total += n;
                    on_progress(done, total, "");
                }
                IngestEvent::File { path, .. } => {
                    done += 1;
                    on_progress(done, total, path);
                }
            },
        )
        .map_err(|e| ApiError::internal(&e))?;
        *self.last_ingested.lock().unwrap_or_else(|p| p.into_inner()) = Some(path);
        Ok(json!({ "summary": report }))
    }

    /// `/v1/chat/completions`: one completion, streamed through `on_text` as it comes.
    pub fn chat(
        &self,
        req: &ChatRequest,
        cancel: Arc<AtomicBool>,
        on_text: &mut dyn FnMut(&str),
    ) -> ApiResult<ChatResult> {
        self.with_llm(|llm| {
            let mut sreq = StructuredRequest::new(req.messages.clone(), req.output.clone());
            sreq.max_tokens = req.max_tokens;
            sreq.sampling.temperature = req.temperature;
            sreq.sampling.top_p = req.top_p;
            sreq.sampling.seed = req.seed;
            sreq.reuse_kv = true;
            sreq.cancel = Some(cancel);
            let prompt_len = llm
                .chat_tokens(&req.messages)
                .map_err(|e| ApiError::bad_request(format!("{e:#}")))?
                .len();
            let n_ctx = llm.model.n_ctx();
            if prompt_len + req.max_tokens > n_ctx {
                return Err(ApiError::bad_request(format!(
                    "the prompt ({prompt_len} tokens) plus max_tokens ({}) exceeds the model's context of {n_ctx} tokens",
                    req.max_tokens
                ))
                .with_code("context_length_exceeded"));
            }
            match generate_structured(llm, &sreq, on_text) {
                Ok(out) => Ok(ChatResult {
                    finish_reason: match out.generation.stop {
                        crate::llm::generate::StopReason::MaxTokens => "length",
                        _ => "stop",
                    },
                    prompt_tokens: out.generation.prompt_tokens,
                    completion_tokens: out.generation.tokens.len(),
                    text: out.text,
                }),
                Err(e) => Err(match e.downcast_ref::<StructuredError>() {
                    Some(StructuredError::Incomplete { .. }) => {
                        ApiError::bad_request(format!("{e}")).with_code("incomplete")
                    }
                    Some(_) => ApiError::internal(&e),
                    None if e.downcast_ref::<crate::llm::generate::Cancelled>().is_some() => {
                        self.cancelled.fetch_add(1, Ordering::Relaxed);
                        ApiError::bad_request("cancelled").with_code("cancelled")
                    }
                    // A schema the grammar engine cannot compile is the caller's to fix.
                    None => ApiError::bad_request(format!("{e:#}")).with_code("unsupported_schema"),
                }),
            }
        })
    }

    /// `/v1/embeddings`.
    pub fn embeddings(&self, texts: &[String]) -> ApiResult<Vec<Vec<f32>>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.embedder
            .embed(&refs)
            .map_err(|e| ApiError::internal(&e))
    }

    pub fn last_ingested(&self) -> Option<PathBuf> {
        self.last_ingested
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Parses an OpenAI chat request body.
pub fn parse_chat_request(body: &Value, model_id: &str) -> ApiResult<ChatRequest> {
    if let Some(m) = body.get("model").and_then(Value::as_str) {
        if m != model_id {
            return Err(ApiError::not_found(format!(
                "model {m:?} is not loaded; use {model_id:?} (GET /v1/models lists the models)"
            ))
            .with_code("model_not_found"));
        }
    }
    let msgs = body["messages"]
        .as_array()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::bad_request("messages: a non-empty array is required"))?;
    let mut messages = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"]
            .as_str()
            .ok_or_else(|| ApiError::bad_request(format!("messages[{i}].role is required")))?;
        if !matches!(role, "system" | "user" | "assistant" | "developer") {
            return Err(ApiError::bad_request(format!(
                "messages[{i}].role {role:?}: use system, user or assistant"
            )));
        }
        let content = match &m["content"] {
            Value::String(s) => s.clone(),
            // Content parts: the text parts, joined.
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "messages[{i}].content must be a string"
                )))
            }
        };
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
                    return Err(ApiError::bad_request(
                        "response_format.json_schema.schema must be a JSON Schema object",
                    ));
                }
                OutputSpec::JsonSchema(schema)
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "response_format.type {other:?}: use text, json_object or json_schema"
                )))
            }
        },
    };
    let num = |k: &str| body.get(k).filter(|v| !v.is_null());
    let max_tokens = match num("max_completion_tokens").or_else(|| num("max_tokens")) {
        None => 512,
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| ApiError::bad_request("max_tokens must be a positive integer"))?
            as usize,
    };
    let temperature = match num("temperature") {
        None => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|t| (0.0..=2.0).contains(t))
            .ok_or_else(|| ApiError::bad_request("temperature must be a number from 0 to 2"))?
            as f32,
    };
    let top_p = match num("top_p") {
        None => 0.95,
        Some(v) => {
            v.as_f64()
                .filter(|t| *t > 0.0 && *t <= 1.0)
                .ok_or_else(|| ApiError::bad_request("top_p must be in (0, 1]"))? as f32
        }
    };
    if let Some(n) = num("n").and_then(Value::as_u64) {
        if n != 1 {
            return Err(ApiError::bad_request("n: only 1 is supported"));
        }
    }
    Ok(ChatRequest {
        messages,
        output,
        max_tokens,
        temperature,
        top_p,
        seed: num("seed").and_then(Value::as_u64).unwrap_or(42),
        stream: body["stream"].as_bool().unwrap_or(false),
    })
}

/// One link per cited chunk (rag) or source (navigator): the file, the anchor to scroll
/// to, the page for PDFs.
fn citations(
    kb: &KnowledgeBase,
    format: AnswerFormat,
    response: &Value,
    hits: &[Hit],
) -> Vec<Value> {
    let link = |label: String, h: &Hit| json!({"label": label, "file": h.file, "anchor": h.anchor, "page": h.page, "id": h.id});
    let mut out = Vec::new();
    if format == AnswerFormat::Rag {
        for c in response["retrieved_chunks"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let id = c["id"].as_str().unwrap_or_default();
            if let Some(h) = hits.iter().find(|h| h.id == id) {
                out.push(link(format!("{} › {}", h.file, h.section), h));
            }
        }
    } else {
        for s in response["sources"].as_array().into_iter().flatten() {
            let (file, section) = (
                s["file"].as_str().unwrap_or_default(),
                s["section"].as_str().unwrap_or_default(),
            );
            let label = format!("{file} › {section}");
            if let Some(h) = hits.iter().find(|h| h.file == file && h.section == section) {
                out.push(link(label, h));
            } else if let Ok(Some((_, sections))) = kb.store.document_sections(file) {
                let anchor = sections
                    .iter()
                    .find(|x| x.heading == section)
                    .map(|x| x.anchor.clone());
                out.push(json!({"label": label, "file": file, "anchor": anchor, "page": null}));
            }
        }
    }
    out
}

fn str_field<'a>(body: &'a Value, name: &str) -> ApiResult<&'a str> {
    body[name]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("missing field: {name} (a non-empty string)")))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `a=b&c=d` with %-decoding and `+` as space.
fn url_query(q: &str) -> HashMap<String, String> {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_decode() {
        let q = url_query("path=security%2Ftls%20certs.md&x=a+b&flag");
        assert_eq!(q["path"], "security/tls certs.md");
        assert_eq!(q["x"], "a b");
        assert_eq!(q["flag"], "");
        assert_eq!(url_query("p=100%")["p"], "100%");
    }

    #[test]
    fn chat_requests_are_checked() {
        let ok = parse_chat_request(
            &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}, "strict": true}}}),
            "m",
        )
        .unwrap();
        assert!(matches!(ok.output, OutputSpec::JsonSchema(_)));
        assert_eq!(ok.max_tokens, 512);
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
            assert!(err.status == 400 || err.status == 404);
        }
    }
}
