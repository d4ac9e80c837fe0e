//! Knowledge bases: parse documents into sections, chunk them, embed the chunks, and keep
//! them in a SQLite + usearch store that survives crashes and re-ingests only what
//! changed. `search` retrieves by dense vectors, BM25, or both fused.

pub mod chunk;
pub mod documents;
pub mod domain;
pub mod follow;
pub mod home;
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
    pub store: Store,
    pub embedder: Arc<Embedder>,
    /// What the consistency check on open found and repaired.
    pub repaired: Consistency,
    /// The KB's domain and its topics' embeddings, computed once per open.
    domain: std::sync::OnceLock<(domain::Domain, Vec<Vec<f32>>)>,
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
    /// Opens (or creates) the KB in `dir`, checks that chunks and vectors agree, and
    /// repairs what a crash left behind: re-embeds chunks without vectors, drops vectors
    /// without chunks.
    ///
    /// Repair writes, so it runs only when no other process is writing the KB; a reader
    /// that opens a KB mid-ingest sees what is committed and leaves the rest to the writer.
    pub fn open(dir: &Path, embedder: Arc<Embedder>) -> Result<Self> {
        let mut store = Store::open(dir, embedder.dim, &embedder.name)?;
        let found = store.check().context("consistency check")?;
        let Ok(_writer) = lock::WriterLock::try_acquire(dir) else {
            tracing::info!(
                "{}: another process is writing; not repairing",
                dir.display()
            );
            return Ok(KnowledgeBase {
                store,
                embedder,
                repaired: found,
                domain: std::sync::OnceLock::new(),
            });
        };
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
        store.save_index()?;
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
        let bytes = std::fs::read_dir(self.store.dir())?
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        Ok(KbStats {
            path: self.store.dir().to_path_buf(),
            documents: counts.documents,
            sections: counts.sections,
            chunks,
            vectors: c.vectors,
            consistent: c.missing_vectors.is_empty() && c.vectors == chunks,
            bytes_on_disk: bytes,
            embedder: self.embedder.name.clone(),
        })
    }
}
