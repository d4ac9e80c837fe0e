//! Several knowledge bases: the ones in the KB home (`kb::home`) listed with what each
//! holds, created, opened in place of the current one, renamed and removed.
//!
//! The open KB changes only under its mutex and only while nobody writes it (its writer
//! lock is free), so an ingest never commits into a KB other than the one it started on.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Service, ServiceError};
use crate::kb::home::{self, BadKbName, KbExists, NoSuchKb};
use crate::kb::lock::{LockError, WriterLock};
use crate::kb::KnowledgeBase;

impl Service {
    /// The open KB's folder.
    pub fn kb_dir(&self) -> PathBuf {
        self.kb().store().dir().to_path_buf()
    }

    /// The open KB's name: its folder name under the KB home, else its path.
    pub fn kb_name(&self) -> String {
        let dir = self.kb_dir();
        self.config
            .home
            .name_of(&dir)
            .unwrap_or_else(|| dir.display().to_string())
    }

    /// Every KB in the home, and the open one (first when it lives elsewhere), each with
    /// its documents and folders; the open one with its live-folder status.
    pub(super) fn list_kbs(&self) -> Result<Value, ServiceError> {
        let current = self.kb_dir();
        let current_name = self.kb_name();
        let mut entries = self.config.home.list()?;
        // The KB the service started with stays listed when it lives elsewhere, so that
        // it can be opened again.
        for dir in [&self.config.started_kb, &current] {
            let name = self
                .config
                .home
                .name_of(dir)
                .unwrap_or_else(|| dir.display().to_string());
            if !entries.iter().any(|e| e.name == name) && dir.exists() {
                entries.insert(0, home::entry_for(name, dir.clone()));
            }
        }
        let live = self.live_status();
        let kbs: Vec<Value> = entries
            .into_iter()
            .map(|e| {
                let is_current = e.name == current_name;
                let mut v = serde_json::to_value(&e).unwrap_or_default();
                v["current"] = json!(is_current);
                // Outside the home it can be opened again by its path only, not renamed.
                v["in_home"] = json!(self.config.home.name_of(&e.path).is_some());
                if is_current {
                    v["live"] = live.clone();
                }
                v
            })
            .collect();
        Ok(json!({"current": current_name, "home": self.config.home.dir(), "kbs": kbs}))
    }

    pub(super) fn create_kb(&self, name: &str) -> Result<Value, ServiceError> {
        let name = name.trim();
        let dir = self.config.home.create(name).map_err(home_error)?;
        // Its store now, so that the list shows it and it opens like any other.
        drop(KnowledgeBase::open(&dir, self.embedder.clone())?);
        Ok(json!({"created": name, "path": dir}))
    }

    /// Opens the KB `name` (one in the home, or the one the service started with, by its
    /// path) in place of the current one.
    pub(super) fn switch_kb(&self, name: &str) -> Result<Value, ServiceError> {
        let name = name.trim();
        let dir = self.kb_dir_named(name)?;
        let opened = KnowledgeBase::open(&dir, self.embedder.clone())?;
        {
            let mut kb = self.kb_slot();
            let current = slot_dir(&kb);
            let _quiet = writer_free(&current)?;
            *kb = Some(opened);
        }
        self.after_switch();
        if let Some(name) = self.config.home.name_of(&dir) {
            self.config.home.set_last_used(&name)?;
        }
        // Catch up with what changed in its folders while it was closed.
        self.sync_live_in_background();
        Ok(json!({"current": self.kb_name(), "path": dir}))
    }

    pub(super) fn rename_kb(&self, name: &str, to: &str) -> Result<Value, ServiceError> {
        let (name, to) = (name.trim(), to.trim());
        home::check_name(to).map_err(|e| ServiceError::BadRequest(e.to_string()))?;
        let renaming = self.kb_dir_named(name)?;
        if self.config.home.name_of(&renaming).is_none() {
            return Err(ServiceError::BadRequest(format!(
                "{name} is not in the knowledge base folder {}: rename its folder yourself",
                self.config.home.dir().display()
            )));
        }
        let mut kb = self.kb_slot();
        let current = slot_dir(&kb);
        if !same_dir(&current, &renaming) {
            drop(kb);
            let path = self.config.home.rename(name, to).map_err(home_error)?;
            return Ok(json!({"renamed": name, "to": to, "path": path}));
        }
        // The open KB: closed (its SQLite and vectors released), moved, opened again.
        drop(writer_free(&current)?);
        self.stop_live();
        drop(kb.take());
        let renamed = self.config.home.rename(name, to).map_err(home_error);
        let dir = renamed.as_ref().unwrap_or(&current).clone();
        // Some KB must be open when the lock is released: this one where it now is, or
        // failing that the one the service started with.
        let reopened = KnowledgeBase::open(&dir, self.embedder.clone()).or_else(|e| {
            tracing::error!("{}: cannot open it again: {e:#}", dir.display());
            KnowledgeBase::open(&self.config.started_kb, self.embedder.clone())
        });
        let reopened = match reopened {
            Ok(k) => k,
            Err(e) => panic!("no knowledge base can be opened after a rename: {e:#}"),
        };
        *kb = Some(reopened);
        drop(kb);
        self.after_switch();
        let path = renamed?;
        Ok(json!({"renamed": name, "to": to, "path": path}))
    }

    /// Moves a KB out of the home (into its `.removed` folder); never the open one.
    pub(super) fn remove_kb(&self, name: &str) -> Result<Value, ServiceError> {
        let name = name.trim();
        let dir = self.kb_dir_named(name)?;
        if same_dir(&dir, &self.kb_dir()) {
            return Err(ServiceError::BadRequest(format!(
                "{name} is the open knowledge base: open another one first, then remove it"
            )));
        }
        let moved = self.config.home.remove(name).map_err(home_error)?;
        Ok(json!({"removed": name, "moved_to": moved}))
    }

    /// The folder of the KB a request names.
    fn kb_dir_named(&self, name: &str) -> Result<PathBuf, ServiceError> {
        if Path::new(name) == self.config.started_kb {
            return Ok(self.config.started_kb.clone());
        }
        self.config.home.existing(name).map_err(home_error)
    }

    /// What a new open KB resets: interviews (kept in its folder), the re-index folder,
    /// the live folders.
    fn after_switch(&self) {
        self.interviews
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.last_ingested.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.refresh_live();
    }
}

/// Holds `dir`'s writer lock, or says that an ingest is writing it.
fn writer_free(dir: &Path) -> Result<WriterLock, ServiceError> {
    WriterLock::try_acquire(dir).map_err(|e| {
        ServiceError::KbBusy(format!(
            "{e}; wait for the ingest into {} to end",
            dir.display()
        ))
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// A KB-home failure as the shells report it.
fn home_error(e: anyhow::Error) -> ServiceError {
    if e.downcast_ref::<NoSuchKb>().is_some() {
        return ServiceError::NotFound(e.to_string());
    }
    if e.downcast_ref::<BadKbName>().is_some() || e.downcast_ref::<KbExists>().is_some() {
        return ServiceError::BadRequest(e.to_string());
    }
    if e.downcast_ref::<LockError>().is_some() {
        return ServiceError::KbBusy(e.to_string());
    }
    ServiceError::Internal(e)
}

/// The folder of the KB in the service's slot (open outside a rename).
fn slot_dir(slot: &Option<KnowledgeBase>) -> PathBuf {
    slot.as_ref()
        .expect("a KB is open")
        .store()
        .dir()
        .to_path_buf()
}
