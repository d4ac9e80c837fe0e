//! What hybrid search reads and what an ingest writes, as traits with one implementation
//! per engine. `Store` (SQLite rows, a usearch vector index, a tantivy keyword index) is
//! the one Sextant ships. docs/DISTRIBUTED.md maps each method onto a distributed search
//! engine for a collection that outgrows one machine; `tests/engine.rs` ingests into and
//! searches through a second implementation. Fusion, scores and everything above stay in
//! `search.rs`, and parsing, chunking and embedding in `ingest`, so an engine only
//! answers these questions and keeps these writes.

use anyhow::Result;

use super::store::{ChunkRecord, DocRecord, NewDocument, Store};

pub trait ChunkIndex {
    /// The `k` chunks nearest to a unit-length query vector, by cosine, best first:
    /// `(key, cosine)`.
    fn dense(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>>;
    /// The `k` best chunks for the query's words by BM25, best first: `(key, score)`.
    fn keywords(&self, query: &str, k: usize) -> Result<Vec<(u64, f64)>>;
    /// A chunk with its place (file, section, anchor, page), by key; `None` once removed.
    fn chunk(&self, key: u64) -> Result<Option<ChunkRecord>>;
    /// A chunk's stored vector (for the cosine of a hit only the keywords found).
    fn vector(&self, key: u64) -> Option<Vec<f32>>;
}

/// The documents an ingest has read, by `(root, path)`: what lets a second ingest skip
/// unchanged files and remove the ones a folder no longer has.
pub trait DocumentLedger {
    /// The stored document, if any (its hash says whether the file changed).
    fn document(&self, root: &str, path: &str) -> Result<Option<DocRecord>>;
    /// Every stored document ingested under `root`.
    fn documents_under(&self, root: &str) -> Result<Vec<DocRecord>>;
    /// Whether a person removed this document, so that ingests leave it out.
    fn is_excluded(&self, root: &str, path: &str) -> Result<bool>;
    /// Records a file's new modification time when its bytes are unchanged.
    fn touch(&mut self, doc_id: i64, mtime_ns: i64) -> Result<()>;
    /// Records that `root` was ingested as a folder (followed for changes).
    fn record_folder(&mut self, root: &str) -> Result<()>;
}

/// An ingest's writes. Between two checkpoints a crash may lose writes but must leave
/// what was checkpointed searchable; `Store` replays or redoes the rest on open.
pub trait ChunkWrites {
    /// Replaces the document at `(doc.root, doc.path)` (its chunks, their place and their
    /// keywords) with `doc`; the new chunks' keys, in `doc.chunks`' order. Keys are never
    /// reused, so a stale vector cannot be taken for a new chunk's.
    fn replace_document(&mut self, doc: &NewDocument) -> Result<Vec<u64>>;
    /// The vectors of chunks `replace_document` just keyed.
    fn add_vectors(&mut self, keys: &[u64], vectors: &[Vec<f32>]) -> Result<()>;
    /// Removes a document with its chunks and their vectors.
    fn remove_document(&mut self, root: &str, path: &str) -> Result<()>;
    /// Makes what was written durable and searchable; `close` ends a writer's work.
    fn checkpoint(&mut self, close: bool) -> Result<()>;
}

impl ChunkIndex for Store {
    fn dense(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
        Store::dense(self, query, k)
    }
    fn keywords(&self, query: &str, k: usize) -> Result<Vec<(u64, f64)>> {
        Store::bm25(self, query, k)
    }
    fn chunk(&self, key: u64) -> Result<Option<ChunkRecord>> {
        Store::chunk(self, key)
    }
    fn vector(&self, key: u64) -> Option<Vec<f32>> {
        Store::vector(self, key)
    }
}

impl DocumentLedger for Store {
    fn document(&self, root: &str, path: &str) -> Result<Option<DocRecord>> {
        Store::document(self, root, path)
    }
    fn documents_under(&self, root: &str) -> Result<Vec<DocRecord>> {
        Store::documents_under(self, root)
    }
    fn is_excluded(&self, root: &str, path: &str) -> Result<bool> {
        Store::is_excluded(self, root, path)
    }
    fn touch(&mut self, doc_id: i64, mtime_ns: i64) -> Result<()> {
        Store::touch(self, doc_id, mtime_ns)
    }
    fn record_folder(&mut self, root: &str) -> Result<()> {
        Store::record_folder(self, root)
    }
}

impl ChunkWrites for Store {
    fn replace_document(&mut self, doc: &NewDocument) -> Result<Vec<u64>> {
        Store::replace_document(self, doc)
    }
    fn add_vectors(&mut self, keys: &[u64], vectors: &[Vec<f32>]) -> Result<()> {
        Store::add_vectors(self, keys, vectors)
    }
    fn remove_document(&mut self, root: &str, path: &str) -> Result<()> {
        Store::remove_document(self, root, path)
    }
    fn checkpoint(&mut self, close: bool) -> Result<()> {
        Store::checkpoint(self, close)
    }
}
