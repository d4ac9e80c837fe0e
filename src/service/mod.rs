//! The engine's one front door. The local HTTP server (`sextant serve`), the desktop app
//! and MCP turn their input into a typed `Request` and hand it to `Service::handle`, so
//! the UI gets the same JSON either way (docs/API.md); the CLI calls the typed methods
//! behind the same requests (`answer`, `navigate`, `route`, `interview_step`, `search`,
//! `kb_stats`, `documents`, `ingest`, …) to print them its own way. One set of defaults
//! for all of them; only `sextant eval` and `bench`, which measure the parts, go below. No HTTP,
//! Tauri or terminal here: errors are `ServiceError`, which each shell maps once.
//!
//! One model of each kind is loaded once and shared. Protocols run in two steps: the rules
//! (`prepare`) under the knowledge-base lock, then the model (`finish`) after the lock is
//! released, so searches and library reads never wait behind a generation. Generation runs
//! one at a time; a request that finds more than `QUEUE` others waiting is refused
//! (`Overloaded`) rather than queued without bound.

mod agents;
mod ask;
mod chat;
mod conversations;
pub mod document;
mod error;
mod ingest;
mod kbs;
mod library;
mod live;
mod model;
mod models;
mod request;
mod sample;
mod section;

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde_json::{json, Value};

pub use agents::{InterviewFile, InterviewStep, Routed};
pub use chat::{CancelOnDrop, ChatRequest, ChatResult};
pub use error::ServiceError;
pub use ingest::IngestProgress;
pub use library::DocumentList;
pub use request::{AskParams, Request};

use model::LlmSlot;

use crate::embed::Embedder;
use crate::kb::home::KbHome;
use crate::kb::parse::worker::Isolation;
use crate::kb::KnowledgeBase;
use crate::llm::Llm;
use crate::protocols::interview::Interview;
use crate::protocols::routing::Flow;
use crate::protocols::watch::Watch;
use crate::protocols::{Pending, Step};

/// Requests that may wait for the LLM while one runs.
pub const QUEUE: usize = 4;

/// What a service is started with.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The KB opened at start (requests may open others from `home`).
    pub started_kb: PathBuf,
    /// Where the named knowledge bases are.
    pub home: KbHome,
    /// Follow the open KB's folders and re-ingest what changes (`live`).
    pub watch: bool,
    /// Flow used by routing requests that name none.
    pub flow: Flow,
    /// Where other flows are found by name (`<name>.toml` or `<name>.json`).
    pub flows_dir: PathBuf,
    pub run_base: PathBuf,
    /// How ingest parses files (a worker process per file, when the shell can run one).
    pub parse_isolation: Option<Isolation>,
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
    /// The default flow file (default: the built-in example).
    pub flow: Option<PathBuf>,
    /// Where decision logs go (default: `<data dir>/sextant/runs`).
    pub run_base: Option<PathBuf>,
    /// Parse ingested files in worker processes run like this (the shell's own binary,
    /// which must handle `parse::worker::WORKER_ARG`).
    pub parse_isolation: Option<Isolation>,
    /// Load the LLM on first use instead of at start; a model that is not there then
    /// fails only the requests that need it (extractive answers stay available).
    pub lazy_llm: bool,
    /// Follow the KB's folders and re-ingest what changes in them (takes effect once the
    /// service is `shared`).
    pub watch: bool,
}

pub struct Service {
    pub config: ServiceConfig,
    /// The open KB; `None` only inside a rename, under this lock.
    kb: Mutex<Option<KnowledgeBase>>,
    /// This service, for the threads it starts (set by `shared`).
    me: Weak<Service>,
    live: live::Live,
    llm: Mutex<LlmSlot>,
    /// The LLM's name (it changes when a person picks another model).
    llm_name: Mutex<String>,
    /// Read without the LLM's lock, which a generation holds.
    llm_available: AtomicBool,
    /// Where the models come from: listed, imported and switched to by name.
    store: crate::models::ModelStore,
    pub embedder: Arc<Embedder>,
    waiting: AtomicUsize,
    /// Generations stopped because their client went away.
    cancelled: AtomicUsize,
    interviews: Mutex<HashMap<String, Interview>>,
    /// The folder last ingested (the UI's "re-index").
    last_ingested: Mutex<Option<PathBuf>>,
}

impl Service {
    pub fn new(config: ServiceConfig, kb: KnowledgeBase, llm: Llm) -> Self {
        let name = llm.name.clone();
        let store = crate::models::ModelStore::open(None);
        Self::with_slot(config, kb, LlmSlot::Loaded(Box::new(llm)), name, store)
    }

    fn with_slot(
        config: ServiceConfig,
        kb: KnowledgeBase,
        llm: LlmSlot,
        llm_name: String,
        store: crate::models::ModelStore,
    ) -> Self {
        let embedder = kb.embedder.clone();
        Service {
            config,
            kb: Mutex::new(Some(kb)),
            me: Weak::new(),
            live: live::Live::default(),
            llm_name: Mutex::new(llm_name),
            llm_available: AtomicBool::new(llm.available()),
            llm: Mutex::new(llm),
            store,
            embedder,
            waiting: AtomicUsize::new(0),
            cancelled: AtomicUsize::new(0),
            interviews: Mutex::new(HashMap::new()),
            last_ingested: Mutex::new(None),
        }
    }

    /// Opens the KB and loads both models (verified) from `store`; the LLM on first use
    /// when `opts.lazy_llm`.
    pub fn open(store: &crate::models::ModelStore, opts: &OpenOptions) -> anyhow::Result<Service> {
        use crate::llm::LoadOptions;
        use crate::models::Role;
        let flow = match &opts.flow {
            Some(path) => Flow::load(path)?,
            None => Flow::example(),
        };
        let embedder = Arc::new(Embedder::load(
            &store.resolve(Role::Embedding, opts.embedder.as_deref())?,
        )?);
        let kb_dir = crate::kb::resolve_dir(opts.kb.as_deref());
        let kb = KnowledgeBase::open(&kb_dir, embedder)?;
        let load = LoadOptions::from_env()?;
        let (llm, llm_name) = match store.resolve(Role::Llm, opts.llm.as_deref()) {
            Ok(model) if opts.lazy_llm => {
                let name = model.spec.name.clone();
                (LlmSlot::Verified(Box::new(model), load), name)
            }
            Ok(model) => {
                let llm = Llm::load(&model, &load)?;
                let name = llm.name.clone();
                (LlmSlot::Loaded(Box::new(llm)), name)
            }
            Err(e) if opts.lazy_llm => {
                let name = opts.llm.clone().unwrap_or_else(|| "none".into());
                (LlmSlot::Missing(format!("{e}")), name)
            }
            Err(e) => return Err(e.into()),
        };
        let config = ServiceConfig {
            started_kb: kb_dir,
            home: KbHome::user(),
            watch: opts.watch,
            flow,
            flows_dir: crate::data_dir().join("flows"),
            run_base: opts
                .run_base
                .clone()
                .unwrap_or_else(|| crate::data_dir().join("runs")),
            parse_isolation: opts.parse_isolation.clone(),
        };
        Ok(Service::with_slot(config, kb, llm, llm_name, store.clone()))
    }

    /// The service shared with the threads it starts; it follows its KB's folders from
    /// here on when it was opened to (`OpenOptions::watch`).
    pub fn shared(self) -> Arc<Service> {
        let svc = Arc::new_cyclic(|me| Service {
            me: me.clone(),
            ..self
        });
        svc.refresh_live();
        svc
    }

    pub fn llm_name(&self) -> String {
        self.llm_name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Fails with `EmptyKb` (which names the folder and the fix) when nothing has been
    /// ingested: for shells whose callers cannot tell an empty result from an empty KB.
    pub fn require_chunks(&self) -> Result<(), ServiceError> {
        Ok(self.kb().require_chunks()?)
    }

    /// Whether an LLM is there to be used (loaded, or verified and loaded on first use).
    /// Never waits for a generation: rules-only answers must not queue behind one.
    pub fn llm_available(&self) -> bool {
        self.llm_available.load(Ordering::SeqCst)
    }

    fn kb(&self) -> KbGuard<'_> {
        KbGuard(self.kb_slot())
    }

    /// The interview sessions by id.
    fn interviews_lock(&self) -> MutexGuard<'_, HashMap<String, Interview>> {
        self.interviews.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open KB's slot, for replacing it.
    fn kb_slot(&self) -> MutexGuard<'_, Option<KnowledgeBase>> {
        self.kb.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` with the LLM, or refuses with `Overloaded` when too many requests wait.
    pub fn with_llm<R>(
        &self,
        f: impl FnOnce(&mut Llm) -> Result<R, ServiceError>,
    ) -> Result<R, ServiceError> {
        let before = self.waiting.fetch_add(1, Ordering::SeqCst);
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _leave = Leave(&self.waiting);
        if before > QUEUE {
            return Err(ServiceError::Overloaded { ahead: before });
        }
        let mut slot = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        f(slot.get()?)
    }

    /// The model's part of a protocol, if its rules left one (the KB is not held here).
    fn finish<T, P: Pending<Output = T>>(&self, step: Step<T, P>) -> Result<T, ServiceError> {
        self.finish_watched(step, &mut Watch::none())
    }

    /// `finish`, with the model's draft and cancellation going through `watch`.
    fn finish_watched<T, P: Pending<Output = T>>(
        &self,
        step: Step<T, P>,
        watch: &mut Watch,
    ) -> Result<T, ServiceError> {
        match step {
            Step::Done(t) => Ok(t),
            Step::NeedsLlm(p) => {
                self.with_llm(|llm| p.finish_watched(llm, watch).map_err(llm_error))
            }
        }
    }

    /// Answers one request of docs/API.md (all but ingest, which streams progress).
    pub fn handle(&self, req: Request) -> Result<Value, ServiceError> {
        match req {
            Request::Health => Ok(json!({
                "ok": true,
                "version": env!("CARGO_PKG_VERSION"),
                "kb": self.kb_dir(),
                "kb_name": self.kb_name(),
                "llm": self.llm_name(),
                "embedder": self.embedder.name,
                "cancelled_generations": self.cancelled.load(Ordering::Relaxed),
            })),
            Request::Kb => {
                let stats = self.kb_stats()?;
                let DocumentList { documents, removed } = self.documents()?;
                Ok(
                    json!({"kb": stats.path, "name": self.kb_name(), "stats": stats,
                          "documents": documents, "removed": removed}),
                )
            }
            Request::Kbs => self.list_kbs(),
            Request::Models => self.models(),
            Request::UseModel { name } => self.use_model(&name),
            Request::ImportModel { path, name } => self.import_model(&path, name.as_deref()),
            Request::CreateKb { name } => self.create_kb(&name),
            Request::SwitchKb { name } => self.switch_kb(&name),
            Request::RenameKb { name, to } => self.rename_kb(&name, &to),
            Request::RemoveKb { name } => self.remove_kb(&name),
            Request::WatchKb { on } => self.set_live(on),
            Request::SampleKb => {
                let path = sample::write_sample(&crate::data_dir())?;
                Ok(json!({ "path": path }))
            }
            Request::RemoveDocument { path } => {
                self.remove_document(&path)?;
                Ok(json!({"removed": path}))
            }
            Request::ReindexDocument { path } => {
                Ok(json!({ "summary": self.reindex_document(&path)? }))
            }
            Request::Document { path } => document::render(&self.kb(), &path),
            Request::DocumentFile { path } => document::pdf_file(&self.kb(), &path),
            Request::Section { path, anchor, page } => {
                section::read(&self.kb(), &path, anchor.as_deref(), page)
            }
            Request::SectionTool => Ok(json!({ "tool": self.section_tool(false)? })),
            Request::FollowSection { arguments } => section::follow(&self.kb(), &arguments),
            Request::Search { query, k, mode } => {
                Ok(json!({ "hits": self.search(&query, k.unwrap_or(5), mode)? }))
            }
            Request::Ask(params) => self.ask(params, &mut Watch::none()),
            Request::Navigate { question } => {
                let (nav, _) = self.navigate(&question)?;
                Ok(serde_json::to_value(nav).map_err(anyhow::Error::from)?)
            }
            Request::Route { forensics, flow } => self.route_json(&forensics, flow.as_deref()),
            Request::RouteLog { flow } => self.route_log(&flow),
            Request::Conversations => self.list_conversations(),
            Request::Conversation { id } => self.conversation_json(&id),
            Request::RenameConversation { id, title } => self.rename_conversation(&id, &title),
            Request::DeleteConversation { id } => self.delete_conversation(&id, false),
            Request::RestoreConversation { id } => self.delete_conversation(&id, true),
            Request::ExportConversation { id } => self.export_conversation(&id),
            Request::Interview { session, answer } => {
                self.interview_json(session.as_deref(), answer.as_deref())
            }
        }
    }
}

/// The open KB, as long as the lock is held.
struct KbGuard<'a>(MutexGuard<'a, Option<KnowledgeBase>>);

impl Deref for KbGuard<'_> {
    type Target = KnowledgeBase;
    fn deref(&self) -> &KnowledgeBase {
        self.0.as_ref().expect("a KB is open outside a rename")
    }
}

impl DerefMut for KbGuard<'_> {
    fn deref_mut(&mut self) -> &mut KnowledgeBase {
        self.0.as_mut().expect("a KB is open outside a rename")
    }
}

/// A protocol's model step failed: structured-generation errors keep their kind.
fn llm_error(e: anyhow::Error) -> ServiceError {
    match e.downcast::<crate::structured::StructuredError>() {
        Ok(s) => s.into(),
        Err(e) => ServiceError::Internal(e),
    }
}

fn non_empty<'a>(name: &str, value: &'a str) -> Result<&'a str, ServiceError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(ServiceError::BadRequest(format!(
            "missing field: {name} (a non-empty string)"
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_from_their_json_form() {
        let r = Request::from_json(json!({"op": "search", "query": "x", "k": 3})).unwrap();
        assert!(matches!(r, Request::Search { k: Some(3), .. }));
        let r = Request::from_json(json!({"op": "interview", "session": null, "answer": null}));
        assert!(matches!(
            r,
            Ok(Request::Interview {
                session: None,
                answer: None
            })
        ));
        let e = Request::from_json(json!({"op": "ask"})).unwrap_err();
        assert!(e.to_string().contains("question"), "{e}");
        assert!(Request::from_json(json!({"op": "drop_tables"})).is_err());
        let e = Request::from_json(json!({"op": "ask", "question": "q", "format": "xml"}));
        assert!(e.is_err());
    }
}
