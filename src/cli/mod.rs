//! The CLI's commands, one file per command group. They parse, call the engine and print;
//! decisions belong to the library.

pub mod ask;
pub mod bench;
pub mod chat;
pub mod eval;
pub mod generate;
pub mod ingest;
pub mod interview;
pub mod kb;
pub mod mcp;
pub mod models;
pub mod route;
pub mod serve;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use sextant::embed::Embedder;
use sextant::kb::KnowledgeBase;
use sextant::llm::{Llm, LoadOptions};
use sextant::models::{ModelStore, Role, VerifiedModel};
use sextant::protocols::AnswerMode;
use sextant::service::{OpenOptions, Service};

/// What every command may need: the model store and the `--llm` choice.
pub struct Ctx {
    pub store: ModelStore,
    pub llm_name: Option<String>,
}

impl Ctx {
    pub fn new(models: Option<PathBuf>, llm_name: Option<String>) -> Ctx {
        Ctx {
            store: ModelStore::open(models),
            llm_name,
        }
    }

    /// The chosen LLM, verified, not loaded.
    pub fn llm_model(&self) -> Result<VerifiedModel> {
        Ok(self.store.resolve(Role::Llm, self.llm_name.as_deref())?)
    }

    /// The answer mode when none is given: the reader if the chosen LLM is in the store
    /// (and verifies), else extractive.
    pub fn default_mode(&self) -> AnswerMode {
        sextant::protocols::default_mode(self.llm_model().is_ok())
    }

    /// Loads the chosen LLM (verified first).
    pub fn load_llm(&self) -> Result<Llm> {
        Llm::load(&self.llm_model()?, &LoadOptions::from_env()?)
    }

    /// What every command's `Service` opens: the KB and embedder `kb` names and the
    /// chosen LLM, verified now and loaded by the first request that needs it (an answer
    /// the rules give alone never loads it).
    pub fn open_options(&self, kb: &KbArg) -> OpenOptions {
        OpenOptions {
            kb: kb.kb.clone(),
            llm: self.llm_name.clone(),
            embedder: kb.embedder.clone(),
            lazy_llm: true,
            ..OpenOptions::default()
        }
    }

    /// The engine's front door, opened with `open_options`, for a command that reads a
    /// KB: one named on the command line must exist (`existing`).
    pub fn service(&self, kb: &KbArg) -> Result<Service> {
        existing(kb)?;
        Service::open(&self.store, &self.open_options(kb))
    }

    /// The service for commands that parse documents: each file in a worker run by this
    /// binary, stopped after `parse_timeout` (default: the worker's own).
    pub fn isolated_service(
        &self,
        kb: &KbArg,
        parse_timeout: Option<std::time::Duration>,
    ) -> Result<Service> {
        let mut isolation = sextant::kb::parse::worker::Isolation::current_exe()?;
        if let Some(t) = parse_timeout {
            isolation.timeout = t;
        }
        Service::open(
            &self.store,
            &OpenOptions {
                parse_isolation: Some(isolation),
                ..self.open_options(kb)
            },
        )
    }

    /// The KB alone, below the service: for `eval` and `bench`, which measure the parts.
    pub fn open_kb(&self, arg: &KbArg) -> Result<KnowledgeBase> {
        let model = self
            .store
            .resolve(Role::Embedding, arg.embedder.as_deref())?;
        existing(arg)?;
        let embedder = Arc::new(Embedder::load(&model)?);
        let dir = sextant::kb::resolve_dir(arg.kb.as_deref());
        KnowledgeBase::open(&dir, embedder)
    }
}

/// A KB named with `--kb` must already exist for a command that reads it: a mistyped
/// path or name would otherwise become a new, empty KB, and the command would say only
/// that it is empty. `ingest` creates KBs (`isolated_service` does not check).
fn existing(arg: &KbArg) -> Result<()> {
    let Some(kb) = arg.kb.as_deref() else {
        return Ok(());
    };
    let dir = sextant::kb::resolve_dir(Some(kb));
    if dir.join(sextant::kb::store::DB_FILE).is_file() {
        return Ok(());
    }
    anyhow::bail!(
        "no knowledge base at {} (nothing was created there); check the path or name given \
         to --kb, or create it with `sextant ingest --kb {kb} FOLDER`",
        dir.display()
    )
}

#[derive(Args, Default)]
pub struct KbArg {
    /// Knowledge base: a folder path, or a name under <data dir>/sextant/kb (default: "default").
    #[arg(long, value_name = "DIR|NAME")]
    pub kb: Option<String>,
    /// Embedding model, by name in the model store (default: the embedded MiniLM).
    #[arg(long, value_name = "NAME")]
    pub embedder: Option<String>,
}

/// Writes `value` as pretty JSON to `path` when one was given (`--json FILE`), and says so.
pub fn write_json(path: Option<&std::path::Path>, value: &impl serde::Serialize) -> Result<()> {
    if let Some(path) = path {
        std::fs::write(path, serde_json::to_string_pretty(value)?)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
