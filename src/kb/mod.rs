//! Knowledge bases: parse documents into sections, chunk them, embed the chunks, and keep
//! them in a SQLite + usearch store that survives crashes and re-ingests only what
//! changed. `search` retrieves by dense vectors, BM25, or both fused.

pub mod chunk;
pub mod conversations;
pub mod documents;
pub mod domain;
pub mod follow;
pub mod home;
pub mod index;
pub mod ingest;
pub mod lock;
pub mod parse;
pub mod search;
pub mod stopwords;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::embed::Embedder;
use store::{Consistency, Store};

/// A knowledge base directory opened with its embedder.
pub struct KnowledgeBase {
    store: Store,
    pub embedder: Arc<Embedder>,
    /// What the consistency check on open found and repaired.
    pub repaired: Consistency,
    /// The KB's domain and its topics' embeddings, computed once per open.
    domain: std::sync::OnceLock<(domain::Domain, Vec<Vec<f32>>)>,
}

/// The store's writes, for as long as the writer lock is held (`KnowledgeBase::writer`).
pub struct KbWriter<'a> {
    store: &'a mut Store,
    _lock: lock::WriterLock,
}

impl KbWriter<'_> {
    /// `Store::replace_document`: a document's rows in one transaction; the new chunks'
    /// keys, for their vectors.
    pub fn replace_document(&mut self, doc: &store::NewDocument) -> Result<Vec<u64>> {
        self.store.replace_document(doc)
    }

    pub fn add_vectors(&mut self, keys: &[u64], vectors: &[Vec<f32>]) -> Result<()> {
        self.store.add_vectors(keys, vectors)
    }

    /// Writes the vector index and commits the keyword index (also done when the writer
    /// is dropped).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.store.checkpoint(false)
    }
}

impl Drop for KbWriter<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.store.checkpoint(true) {
            tracing::error!(
                "{}: saving the vector and keyword indexes: {e:#}",
                self.store.dir().display()
            );
        }
    }
}

/// `--kb` resolution: an existing path or anything with a path separator is a directory;
/// a bare name is a named KB under `<data dir>/sextant/kb/`; nothing means "default".
pub fn resolve_dir(kb: Option<&str>) -> PathBuf {
    let base = || home::KbHome::user().dir().to_path_buf();
    match kb {
        None => base().join("default"),
        Some(s)
            if s.contains(std::path::MAIN_SEPARATOR)
                || s.contains('/')
                || Path::new(s).exists() =>
        {
            PathBuf::from(s)
        }
        Some(name) => base().join(name),
    }
}

/// Bytes of a file, or of every file under a folder.
pub fn bytes_under(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| bytes_under(&e.path())).sum(),
        Err(_) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
    }
}

/// A question asked of a knowledge base that holds no documents yet.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the knowledge base {} is empty; add documents with `sextant ingest --kb {} FOLDER` \
     (or Add folder in the app's Library)",
    dir.display(),
    dir.display()
)]
pub struct EmptyKb {
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct KbStats {
    pub path: PathBuf,
    pub documents: usize,
    pub sections: usize,
    pub chunks: usize,
    pub vectors: usize,
    pub consistent: bool,
    pub bytes_on_disk: u64,
    pub embedder: String,
}

impl KnowledgeBase {
    /// The store's reads (`store/queries.rs`); its writes stay inside `kb`, under the
    /// writer lock.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Writes outside an ingest (synthetic documents for benchmarks): the writer lock is
    /// held until the returned writer is dropped, which saves the vector index.
    pub fn writer(&mut self) -> Result<KbWriter<'_>> {
        let lock = lock::WriterLock::try_acquire(self.store.dir())?;
        Ok(KbWriter {
            store: &mut self.store,
            _lock: lock,
        })
    }

    /// Keeps a setting with the KB (`Store::setting` reads it). The one write made without
    /// the writer lock: a settings row is no part of the chunks and vectors the lock keeps
    /// consistent, and a person turning folder following on must not wait for an ingest.
    pub fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.store.set_setting(key, value)
    }

    /// Opens (or creates) the KB in `dir`, checks that chunks, vectors and keywords agree,
    /// and repairs what a crash left behind: re-embeds chunks without vectors, drops
    /// vectors without chunks, indexes the words of chunks the keyword index lacks (all of
    /// them, once, for a KB of an older format).
    ///
    /// Repair writes, so it runs only when no other process is writing the KB; a reader
    /// that opens a KB mid-ingest sees what is committed and leaves the rest to the writer.
    pub fn open(dir: &Path, embedder: Arc<Embedder>) -> Result<Self> {
        let mut store = Store::open(dir, embedder.dim, &embedder.name)?;
        let found = store.check().context("consistency check")?;
        let clean = found.missing_vectors.is_empty()
            && found.orphan_vectors_removed == 0
            && found.keywords_pending == 0;
        // A clean KB is opened without the writer lock: a reader that took it, even for a
        // moment, would make a writer starting at that moment fail as busy.
        let writer = if clean {
            None
        } else {
            lock::WriterLock::try_acquire(dir).ok()
        };
        if clean || writer.is_none() {
            if !clean {
                tracing::info!(
                    "{}: another process is writing; not repairing",
                    dir.display()
                );
            }
            return Ok(KnowledgeBase {
                store,
                embedder,
                repaired: found,
                domain: std::sync::OnceLock::new(),
            });
        }
        if !found.missing_vectors.is_empty() {
            tracing::warn!(
                "{}: {} chunks had no vector (interrupted ingest?); embedding them again",
                dir.display(),
                found.missing_vectors.len()
            );
            for keys in found.missing_vectors.chunks(256) {
                let texts = store.embed_texts(keys)?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let vectors = embedder.embed(&refs)?;
                store.add_vectors(keys, &vectors)?;
            }
        }
        store.checkpoint(true)?;
        Ok(KnowledgeBase {
            store,
            embedder,
            repaired: found,
            domain: std::sync::OnceLock::new(),
        })
    }

    /// The domain description and its embeddings, computed by `make` on first use.
    pub fn domain(
        &self,
        make: impl FnOnce() -> Result<(domain::Domain, Vec<Vec<f32>>)>,
    ) -> Result<(domain::Domain, Vec<Vec<f32>>)> {
        if let Some(d) = self.domain.get() {
            return Ok(d.clone());
        }
        let d = make()?;
        let _ = self.domain.set(d.clone());
        Ok(d)
    }

    /// Fails with `EmptyKb` (which names the fix) when nothing has been ingested.
    pub fn require_chunks(&self) -> Result<(), EmptyKb> {
        match self.store.counts() {
            Ok(c) if c.chunks > 0 => Ok(()),
            _ => Err(EmptyKb {
                dir: self.store.dir().to_path_buf(),
            }),
        }
    }

    pub fn stats(&mut self) -> Result<KbStats> {
        let counts = self.store.counts()?;
        let chunks = counts.chunks;
        let c = self.store.check()?;
        let bytes = bytes_under(self.store.dir());
        Ok(KbStats {
            path: self.store.dir().to_path_buf(),
            documents: counts.documents,
            sections: counts.sections,
            chunks,
            vectors: c.vectors,
            consistent: c.missing_vectors.is_empty()
                && c.vectors == chunks
                && c.keywords_pending == 0,
            bytes_on_disk: bytes,
            embedder: self.embedder.name.clone(),
        })
    }
}
