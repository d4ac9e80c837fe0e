//! Retrieval: dense (cosine), BM25, or hybrid — both lists fused by reciprocal-rank
//! fusion — over any `ChunkIndex` (the KB's own store: usearch and tantivy). Every hit's `score` is the dense cosine normalised to 0..1
//! as `(cosine + 1) / 2` (the RAG format's formula), whichever list found it.

use std::collections::HashMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::index::ChunkIndex;
use super::KnowledgeBase;
use crate::embed::cosine;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    Hybrid,
    Dense,
    Bm25,
}

#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub id: String,
    pub file: String,
    pub section: String,
    pub section_path: Vec<String>,
    pub anchor: String,
    pub page: Option<u32>,
    pub text: String,
    pub score: f64,
    #[serde(skip)]
    pub key: u64,
    #[serde(skip)]
    pub cosine: f32,
    /// The reciprocal-rank fusion score that ordered the hits (its scale is ranks, not
    /// similarity: compare it only within one search).
    #[serde(skip)]
    pub fused: f64,
}

/// RRF's damping constant (the usual 60): ranks matter, raw scores of different scales
/// do not.
const RRF_K: f64 = 60.0;
/// Candidates taken from each list before fusing.
const CANDIDATES: usize = 40;

pub fn search(kb: &KnowledgeBase, query: &str, k: usize, mode: SearchMode) -> Result<Vec<Hit>> {
    let qv = kb.embedder.embed(&[query])?.pop().unwrap_or_default();
    search_with_vector(kb, query, &qv, k, mode)
}

/// `search` with the query's embedding already computed.
pub fn search_with_vector(
    kb: &KnowledgeBase,
    query: &str,
    qv: &[f32],
    k: usize,
    mode: SearchMode,
) -> Result<Vec<Hit>> {
    search_index(&kb.store, query, qv, k, mode)
}

/// `search_with_vector` over any engine's index.
pub fn search_index(
    index: &dyn ChunkIndex,
    query: &str,
    qv: &[f32],
    k: usize,
    mode: SearchMode,
) -> Result<Vec<Hit>> {
    search_index_weighted(index, &[(query, qv, 1.0)], k, mode)
}

/// Several queries' rankings fused into one, each weighted (a follow-up's words with
/// and without the earlier turn's). A hit's score is its cosine with the first query.
pub fn search_index_weighted(
    index: &dyn ChunkIndex,
    queries: &[(&str, &[f32], f64)],
    k: usize,
    mode: SearchMode,
) -> Result<Vec<Hit>> {
    let pool = CANDIDATES.max(k);
    let mut fused: HashMap<u64, f64> = HashMap::new();
    let mut cosines: HashMap<u64, f32> = HashMap::new();
    for (n, (query, qv, weight)) in queries.iter().enumerate() {
        let dense = if mode != SearchMode::Bm25 {
            index.dense(qv, pool)?
        } else {
            Vec::new()
        };
        let bm25 = if mode != SearchMode::Dense {
            index.keywords(query, pool)?
        } else {
            Vec::new()
        };
        for (rank, (key, _)) in dense.iter().enumerate() {
            *fused.entry(*key).or_default() += weight / (RRF_K + rank as f64 + 1.0);
        }
        for (rank, (key, _)) in bm25.iter().enumerate() {
            *fused.entry(*key).or_default() += weight / (RRF_K + rank as f64 + 1.0);
        }
        if n == 0 {
            cosines = dense.iter().copied().collect();
        }
    }
    let qv = queries.first().map(|q| q.1).unwrap_or_default();
    let mut ranked: Vec<(u64, f64)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(a.0.cmp(&b.0)));
    let mut hits: Vec<Hit> = Vec::with_capacity(k);
    for (key, fused) in ranked.into_iter() {
        if hits.len() >= k {
            break;
        }
        let Some(c) = index.chunk(key)? else {
            continue;
        };
        // A text already among the hits (a file included by several pages: git's diff
        // options in six manual pages) is read once; the next hit takes its place.
        if hits.iter().any(|h| h.text == c.text) {
            continue;
        }
        let cos = match cosines.get(&key) {
            Some(c) => *c,
            None => index.vector(key).map(|v| cosine(qv, &v)).unwrap_or(0.0),
        };
        hits.push(Hit {
            id: c.chunk_id,
            file: c.file,
            section: c.heading,
            section_path: c.section_path,
            anchor: c.anchor,
            page: c.page,
            text: c.text,
            score: normalised(cos),
            key,
            cosine: cos,
            fused,
        });
    }
    Ok(hits)
}

/// `(cosine + 1) / 2`, clamped to 0..1, rounded to 3 decimals.
pub fn normalised(cosine: f32) -> f64 {
    let s = ((cosine as f64 + 1.0) / 2.0).clamp(0.0, 1.0);
    (s * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::store::ChunkRecord;

    /// Four chunks, the first two with the same text (one file included by two pages).
    struct Included;

    impl ChunkIndex for Included {
        fn dense(&self, _: &[f32], k: usize) -> Result<Vec<(u64, f32)>> {
            Ok([(1, 0.9), (2, 0.9), (3, 0.8), (4, 0.7)]
                .into_iter()
                .take(k)
                .collect())
        }
        fn keywords(&self, _: &str, k: usize) -> Result<Vec<(u64, f64)>> {
            Ok([(1, 3.0), (2, 3.0), (4, 2.0)].into_iter().take(k).collect())
        }
        fn chunk(&self, key: u64) -> Result<Option<ChunkRecord>> {
            let text = if key <= 2 {
                "--stat: a diffstat".into()
            } else {
                format!("text {key}")
            };
            Ok(Some(ChunkRecord {
                key,
                chunk_id: format!("c{key}"),
                file: format!("page-{key}.html"),
                kind: "html".into(),
                heading: "OPTIONS".into(),
                section_path: vec!["OPTIONS".into()],
                anchor: "options".into(),
                page: None,
                text,
            }))
        }
        fn vector(&self, _: u64) -> Option<Vec<f32>> {
            Some(vec![1.0])
        }
    }

    #[test]
    fn a_text_already_among_the_hits_is_read_once_and_the_next_takes_its_place() {
        let hits = search_index(&Included, "diffstat", &[1.0], 3, SearchMode::Hybrid).unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c4", "c3"]);
    }
}
