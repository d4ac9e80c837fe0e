//! `sextant bench kb --kb DIR --questions FILE.jsonl`: a knowledge base already ingested
//! (a real corpus, not synthetic chunks): its size on disk, search latency for real
//! questions, and recall@10 of its vector index against exact search over the vectors it
//! stores.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use super::{dir_mb, peak_rss_mb};
use sextant::kb::search::{search, SearchMode};
use sextant::kb::store::{search_expansion_for, ExactSearch, DB_FILE, INDEX_FILE, KEYWORDS_DIR};
use sextant::kb::KnowledgeBase;
use sextant::stats::percentile;

#[derive(Debug, Serialize)]
pub struct RealKbReport {
    pub kb: String,
    pub documents: u64,
    pub chunks: u64,
    pub index_mb: f64,
    pub db_mb: f64,
    pub keywords_mb: f64,
    pub open_ms: f64,
    pub questions: usize,
    /// recall@10 of the HNSW search against exact search over the stored (f16) vectors,
    /// at the store's search expansion for this size.
    pub recall_at_10: f64,
    /// The same, a returned chunk as near as the exact tenth counted (equal vectors).
    pub recall_at_10_ties: f64,
    /// The store's search expansion for this size.
    pub expansion: usize,
    /// Recall and dense latency at other search expansions.
    pub expansions: Vec<ExpansionFigures>,
    pub dense_ms_p50: f64,
    pub dense_ms_p99: f64,
    pub bm25_ms_p50: f64,
    pub bm25_ms_p99: f64,
    pub hybrid_ms_p50: f64,
    pub hybrid_ms_p99: f64,
    pub peak_rss_mb: f64,
}

#[derive(Debug, Serialize)]
pub struct ExpansionFigures {
    pub expansion: usize,
    pub recall_at_10: f64,
    pub recall_at_10_ties: f64,
    pub dense_ms_p50: f64,
    pub dense_ms_p99: f64,
}

/// Search expansions measured besides the store's own.
const EXPANSIONS: [usize; 5] = [128, 256, 512, 768, 1024];

/// The `question` of each line of an eval set.
fn questions(file: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the questions in {}", file.display()))?;
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON line", file.display(), i + 1))?;
        if let Some(q) = v["question"].as_str() {
            out.push(q.to_string());
        }
    }
    if out.is_empty() {
        anyhow::bail!("{} holds no lines with a \"question\"", file.display());
    }
    Ok(out)
}

pub fn run(
    embedding_model: &sextant::models::VerifiedModel,
    dir: &Path,
    question_file: &Path,
    queries: usize,
    json: bool,
) -> Result<()> {
    let questions = questions(question_file)?;
    let embedder = std::sync::Arc::new(sextant::embed::Embedder::load(embedding_model)?);
    let t = Instant::now();
    let kb = KnowledgeBase::open(dir, embedder.clone())?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    kb.require_chunks()?;
    let counts = kb.store().counts()?;
    let refs: Vec<&str> = questions.iter().map(String::as_str).collect();
    let mut exact = ExactSearch::new(embedder.embed(&refs)?, 10);
    for key in kb.store().chunk_keys()? {
        if let Some(v) = kb.store().vector(key) {
            exact.offer(key, &v);
        }
    }
    let lat = |mode: SearchMode| -> Result<(f64, f64)> {
        let mut ms = Vec::new();
        for i in 0..queries {
            let t = Instant::now();
            search(&kb, &questions[i % questions.len()], 8, mode)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok((percentile(ms.clone(), 0.5), percentile(ms, 0.99)))
    };
    let (d50, d99) = lat(SearchMode::Dense)?;
    let (b50, b99) = lat(SearchMode::Bm25)?;
    let (h50, h99) = lat(SearchMode::Hybrid)?;
    let (recall, recall_ties) = exact.recall_both(kb.store())?;
    let expansion = search_expansion_for(kb.store().vector_count());
    let mut expansions = Vec::new();
    for e in EXPANSIONS.into_iter().filter(|e| *e != expansion) {
        kb.store().set_search_expansion(e);
        let (r, ties) = exact.recall_both(kb.store())?;
        let (p50, p99) = lat(SearchMode::Dense)?;
        expansions.push(ExpansionFigures {
            expansion: e,
            recall_at_10: r,
            recall_at_10_ties: ties,
            dense_ms_p50: p50,
            dense_ms_p99: p99,
        });
    }
    kb.store().set_search_expansion(expansion);
    let r = RealKbReport {
        kb: dir.display().to_string(),
        documents: counts.documents as u64,
        chunks: counts.chunks as u64,
        index_mb: dir_mb(dir, INDEX_FILE),
        db_mb: dir_mb(dir, DB_FILE),
        keywords_mb: dir_mb(dir, KEYWORDS_DIR),
        open_ms,
        questions: questions.len(),
        recall_at_10: recall,
        recall_at_10_ties: recall_ties,
        expansion,
        expansions,
        dense_ms_p50: d50,
        dense_ms_p99: d99,
        bm25_ms_p50: b50,
        bm25_ms_p99: b99,
        hybrid_ms_p50: h50,
        hybrid_ms_p99: h99,
        peak_rss_mb: peak_rss_mb(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "{}: {} documents, {} chunks; index {:.1} MB, db {:.1} MB, keywords {:.1} MB; opened in {:.0} ms",
        r.kb, r.documents, r.chunks, r.index_mb, r.db_mb, r.keywords_mb, r.open_ms
    );
    println!(
        "{queries} searches of {} questions, p50/p99 ms: dense {:.2}/{:.2}, bm25 {:.2}/{:.2}, hybrid {:.2}/{:.2}; recall@10 {:.3}",
        r.questions, r.dense_ms_p50, r.dense_ms_p99, r.bm25_ms_p50, r.bm25_ms_p99, r.hybrid_ms_p50, r.hybrid_ms_p99, r.recall_at_10
    );
    println!(
        "search expansion {} (the store's): recall@10 {:.3}, {:.3} with equal vectors counted",
        r.expansion, r.recall_at_10, r.recall_at_10_ties
    );
    for e in &r.expansions {
        println!(
            "search expansion {}: recall@10 {:.3} ({:.3} with ties), dense p50/p99 ms {:.2}/{:.2}",
            e.expansion, e.recall_at_10, e.recall_at_10_ties, e.dense_ms_p50, e.dense_ms_p99
        );
    }
    println!("peak memory: {:.0} MB", r.peak_rss_mb);
    Ok(())
}
