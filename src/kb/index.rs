//! What hybrid search reads, as a trait with one implementation per engine. `Store`
//! (SQLite rows, a usearch vector index, a tantivy keyword index) is the one Sextant
//! ships. docs/DISTRIBUTED.md maps each method onto a distributed search engine for a
//! collection that outgrows one machine; `tests/kb.rs` runs the same search through a
//! second implementation. Fusion, scores and everything above stay in `search.rs`, so an
//! engine only answers these four questions.

use anyhow::Result;

use super::store::{ChunkRecord, Store};

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
