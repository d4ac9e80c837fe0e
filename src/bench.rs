//! `sextant bench generate`: speed and reliability figures of the LLM runtime on this
//! machine. A benchmark prints numbers; it does not pass or fail.

use std::process::Command;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::constrain::bounds::{bound_schema, Bounds};
use crate::constrain::Grammar;
use crate::llm::chat_template::Message;
use crate::llm::generate::{generate, GenerateRequest, StopReason};
use crate::llm::sampling::SamplingParams;
use crate::llm::{tokenizer, Llm, LoadOptions};
use crate::models::VerifiedModel;
use crate::schemas;
use crate::structured::{generate_structured, StructuredRequest, DEFAULT_MAX_TOKENS};

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Repetitions of each speed measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Sampled generations per seed schema for the completion rate (plus one greedy).
    #[arg(long, default_value_t = 3)]
    pub seeds: usize,
    /// Prompt length for the prompt-processing figure.
    #[arg(long, default_value_t = 512)]
    pub prompt_tokens: usize,
    /// Tokens generated for the unconstrained generation figure.
    #[arg(long, default_value_t = 128)]
    pub gen_tokens: usize,
}

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub model: String,
    pub decode_dtype: String,
    pub threads: usize,
    pub load_ms: f64,
    pub prompt_tokens: usize,
    pub prompt_tok_s: f64,
    pub gen_tok_s: f64,
    pub constrained_gen_tok_s: f64,
    /// Constrained throughput counting only sampled tokens (forced ones excluded).
    pub constrained_sampled_tok_s: f64,
    pub constrained_ratio: f64,
    pub compile_ms: f64,
    pub mask_us_mean: f64,
    pub mask_us_p99: f64,
    pub completion_runs: usize,
    pub completion_rate: f64,
    pub completion_failures: Vec<String>,
    pub llama_cpp: Option<serde_json::Value>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if xs.is_empty() {
        return 0.0;
    }
    xs[xs.len() / 2]
}

pub fn run_generate(model: &VerifiedModel, args: &BenchArgs) -> Result<()> {
    let opts = LoadOptions::from_env()?;
    let t = Instant::now();
    let mut llm = Llm::load(model, &opts)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let runs = args.runs.max(1);

    // Prompt processing: one forward over a long prompt.
    let filler: String = schemas::BUILTIN
        .iter()
        .map(|s| format!("{} {}\n", s.system, s.example_prompt))
        .collect::<Vec<_>>()
        .join("")
        .repeat(8);
    let mut long = tokenizer::encode(&llm.tokenizer, &filler)?;
    long.truncate(args.prompt_tokens);
    let mut prompt_rates = Vec::new();
    for _ in 0..runs {
        llm.model.reset();
        let t = Instant::now();
        llm.model.forward(&long, 0)?;
        prompt_rates.push(long.len() as f64 / t.elapsed().as_secs_f64());
    }

    // Unconstrained generation: no end token, so every run makes gen_tokens tokens.
    let nav = schemas::find("navigator-response").unwrap();
    let chat = llm.chat_tokens(&[
        Message::new("system", nav.system),
        Message::new("user", nav.example_prompt),
    ])?;
    let mut gen_rates = Vec::new();
    for _ in 0..runs {
        let req = GenerateRequest {
            prompt: &chat,
            max_tokens: args.gen_tokens,
            sampling: SamplingParams::default(),
            eos: &[],
            reuse_prefix: false,
            cancel: None,
        };
        let g = generate(llm.model.as_mut(), &llm.tokenizer, &req, None, &mut |_| {})?;
        gen_rates.push(g.tokens_per_s());
    }

    // Constrained generation under the navigator schema.
    let bounded = bound_schema(&nav.schema(), &Bounds::default(), DEFAULT_MAX_TOKENS);
    let grammar = Grammar::JsonSchema(bounded.schema);
    let mut compile = Vec::new();
    for _ in 0..20 {
        compile.push(llm.grammar.compile(&grammar)?.compile_us / 1e3);
    }
    let mut con_rates = Vec::new();
    let mut sampled_rates = Vec::new();
    let mut masks = Vec::new();
    for _ in 0..runs {
        let mut c = llm.grammar.compile(&grammar)?;
        let req = GenerateRequest {
            prompt: &chat,
            max_tokens: DEFAULT_MAX_TOKENS,
            sampling: SamplingParams::default(),
            eos: &llm.eos.clone(),
            reuse_prefix: false,
            cancel: None,
        };
        let g = generate(
            llm.model.as_mut(),
            &llm.tokenizer,
            &req,
            Some(&mut c),
            &mut |_| {},
        )?;
        con_rates.push(g.tokens_per_s());
        sampled_rates
            .push((g.tokens.len() - g.forced_tokens) as f64 / (g.generate_ms / 1e3).max(1e-9));
        masks.extend(c.mask_us.iter().copied());
    }
    masks.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mask_mean = masks.iter().sum::<f64>() / masks.len().max(1) as f64;
    let mask_p99 = masks
        .get(((masks.len() as f64 * 0.99) as usize).min(masks.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);

    // Completion rate on the five seed schemas: greedy plus sampled seeds.
    let mut total = 0;
    let mut complete = 0;
    let mut failures = Vec::new();
    for s in &schemas::BUILTIN {
        for k in 0..=args.seeds {
            let mut req = StructuredRequest::new(
                vec![
                    Message::new("system", s.system),
                    Message::new("user", s.example_prompt),
                ],
                crate::structured::OutputSpec::JsonSchema(s.schema()),
            );
            if k > 0 {
                req.sampling.temperature = 0.7;
                req.sampling.seed = k as u64;
            }
            total += 1;
            match generate_structured(&mut llm, &req, &mut |_| {}) {
                Ok(out) if out.generation.stop != StopReason::MaxTokens => complete += 1,
                Ok(_) => failures.push(format!("{} seed {k}: budget", s.name)),
                Err(e) => failures.push(format!("{} seed {k}: {e}", s.name)),
            }
        }
    }

    let gen_tok_s = median(gen_rates);
    let constrained = median(con_rates);
    let report = BenchReport {
        model: llm.name.clone(),
        decode_dtype: format!("{:?}", opts.decode_dtype),
        threads: crate::llm::threads(),
        load_ms,
        prompt_tokens: long.len(),
        prompt_tok_s: median(prompt_rates),
        gen_tok_s,
        constrained_gen_tok_s: constrained,
        constrained_sampled_tok_s: median(sampled_rates),
        constrained_ratio: constrained / gen_tok_s,
        compile_ms: median(compile),
        mask_us_mean: mask_mean,
        mask_us_p99: mask_p99,
        completion_runs: total,
        completion_rate: complete as f64 / total.max(1) as f64,
        completion_failures: failures,
        llama_cpp: llama_cpp_bench(&model.main_file(), crate::llm::threads(), args),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn print_table(r: &BenchReport) {
    println!(
        "model {} (decode weights {}), {} threads",
        r.model, r.decode_dtype, r.threads
    );
    println!("{:<44} {:>10}", "load", format!("{:.0} ms", r.load_ms));
    println!(
        "{:<44} {:>10.1}",
        format!("prompt tok/s ({} tokens)", r.prompt_tokens),
        r.prompt_tok_s
    );
    println!(
        "{:<44} {:>10.1}",
        "generation tok/s (unconstrained)", r.gen_tok_s
    );
    println!(
        "{:<44} {:>10.1}",
        "generation tok/s (navigator schema)", r.constrained_gen_tok_s
    );
    println!(
        "{:<44} {:>10.1}",
        "  of which sampled (forced excluded)", r.constrained_sampled_tok_s
    );
    println!(
        "{:<44} {:>10.2}",
        "constrained / unconstrained", r.constrained_ratio
    );
    println!("{:<44} {:>10.2}", "schema compile ms", r.compile_ms);
    println!("{:<44} {:>10.1}", "mask µs mean", r.mask_us_mean);
    println!("{:<44} {:>10.1}", "mask µs p99", r.mask_us_p99);
    println!(
        "{:<44} {:>10}",
        "completion (5 seed schemas)",
        format!("{:.0}% of {}", r.completion_rate * 100.0, r.completion_runs)
    );
    for f in &r.completion_failures {
        println!("  incomplete: {f}");
    }
    match &r.llama_cpp {
        Some(v) => println!("llama.cpp (llama-bench): {v}"),
        None => println!("llama.cpp: not installed (llama-bench not on PATH), skipped"),
    }
}

/// Runs llama.cpp's own benchmark on the same file when it happens to be installed.
fn llama_cpp_bench(
    path: &std::path::Path,
    threads: usize,
    args: &BenchArgs,
) -> Option<serde_json::Value> {
    let out = Command::new("llama-bench")
        .arg("-m")
        .arg(path)
        .args(["-p", &args.prompt_tokens.to_string()])
        .args(["-n", &args.gen_tokens.to_string()])
        .args(["-t", &threads.to_string(), "-o", "json"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let rates: Vec<serde_json::Value> = rows
        .as_array()?
        .iter()
        .map(|r| {
            serde_json::json!({
                "n_prompt": r["n_prompt"], "n_gen": r["n_gen"], "avg_ts": r["avg_ts"]
            })
        })
        .collect();
    Some(serde_json::Value::Array(rates))
}

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
}

#[derive(Debug, Serialize)]
pub struct ScaleReport {
    pub chunks: usize,
    pub build_s: f64,
    pub vectors_added_per_s: f64,
    pub index_mb: f64,
    pub db_mb: f64,
    pub dense_ms_p50: f64,
    pub dense_ms_p99: f64,
    pub bm25_ms_p50: f64,
    pub bm25_ms_p99: f64,
    pub hybrid_ms_p50: f64,
    pub hybrid_ms_p99: f64,
}

#[derive(Debug, Serialize)]
pub struct KbBenchReport {
    pub threads: usize,
    pub embed_sentences_per_s: f64,
    pub embed_mean_tokens: f64,
    pub ingest_files: usize,
    pub ingest_chunks: usize,
    pub ingest_chunks_per_s: f64,
    pub sample_kb_mb: f64,
    pub scale: Vec<ScaleReport>,
    pub peak_rss_mb: f64,
}

fn percentile(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs.get(((xs.len() as f64 * p) as usize).min(xs.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0)
}

fn dir_mb(dir: &std::path::Path, name: &str) -> f64 {
    std::fs::metadata(dir.join(name))
        .map(|m| m.len())
        .unwrap_or(0) as f64
        / 1e6
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// `sextant bench kb`: embedding and ingest speed on the sample KB, then search latency
/// over synthetic indexes of the given sizes (chunk texts recombined from the sample KB's
/// words, vectors = real chunk vectors plus noise, so both retrievers see realistic data).
pub fn run_kb(
    embedding_model: &VerifiedModel,
    sample_kb: &std::path::Path,
    args: &KbBenchArgs,
) -> Result<()> {
    use crate::embed::Embedder;
    use crate::kb::ingest::{ingest, IngestOptions};
    use crate::kb::parse::{DocKind, Section};
    use crate::kb::search::{search, SearchMode};
    use crate::kb::store::NewChunk;
    use crate::kb::KnowledgeBase;
    use rand::{Rng, SeedableRng};
    use std::sync::Arc;

    let embedder = Arc::new(Embedder::load(embedding_model)?);
    // Ingest the sample KB end to end.
    let tmp = tempfile::tempdir()?;
    let mut kb = KnowledgeBase::open(tmp.path(), embedder.clone())?;
    let report = ingest(
        &mut kb,
        &[sample_kb.to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let sample_kb_mb = dir_mb(tmp.path(), crate::kb::store::DB_FILE)
        + dir_mb(tmp.path(), crate::kb::store::INDEX_FILE);

    // Embedding throughput on the sample KB's chunk texts.
    let texts: Vec<String> = kb
        .store
        .conn
        .prepare("SELECT text FROM chunks ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
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

    let mut scale = Vec::new();
    for &n in &args.scale {
        let dir = tempfile::tempdir()?;
        let mut kb = KnowledgeBase::open(dir.path(), embedder.clone())?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
        let start = Instant::now();
        let per_doc = 500;
        let mut add_secs = 0.0;
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
            let keys = kb.store.replace_document(
                "/synthetic",
                &format!("doc{d}.md"),
                DocKind::Markdown,
                "synthetic",
                "0",
                0,
                0,
                &sections,
                &chunks,
            )?;
            let vectors: Vec<Vec<f32>> = (0..count)
                .map(|_| {
                    let base = &base_vectors[rng.random_range(0..base_vectors.len())];
                    let mut v: Vec<f32> = base
                        .iter()
                        .map(|x| x + rng.random_range(-0.05..0.05))
                        .collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    v.iter_mut().for_each(|x| *x /= norm);
                    v
                })
                .collect();
            let t = Instant::now();
            kb.store.add_vectors(&keys, &vectors)?;
            add_secs += t.elapsed().as_secs_f64();
        }
        kb.store.save_index()?;
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
        let (d50, d99) = lat(SearchMode::Dense)?;
        let (b50, b99) = lat(SearchMode::Bm25)?;
        let (h50, h99) = lat(SearchMode::Hybrid)?;
        scale.push(ScaleReport {
            chunks: n,
            build_s,
            vectors_added_per_s: n as f64 / add_secs.max(1e-9),
            index_mb: dir_mb(dir.path(), crate::kb::store::INDEX_FILE),
            db_mb: dir_mb(dir.path(), crate::kb::store::DB_FILE),
            dense_ms_p50: d50,
            dense_ms_p99: d99,
            bm25_ms_p50: b50,
            bm25_ms_p99: b99,
            hybrid_ms_p50: h50,
            hybrid_ms_p99: h99,
        });
    }
    let r = KbBenchReport {
        threads: crate::llm::threads(),
        embed_sentences_per_s: embed_rate,
        embed_mean_tokens: mean_tokens,
        ingest_files: report.added.len(),
        ingest_chunks: report.chunks_embedded,
        ingest_chunks_per_s: report.chunks_embedded as f64 / report.seconds.max(1e-9),
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
        "embedding: {:.1} chunks/s (mean {:.0} tokens)",
        r.embed_sentences_per_s, r.embed_mean_tokens
    );
    println!(
        "ingest of the sample KB: {} files, {} chunks, {:.1} chunks/s end to end, {:.2} MB on disk",
        r.ingest_files, r.ingest_chunks, r.ingest_chunks_per_s, r.sample_kb_mb
    );
    for s in &r.scale {
        println!(
            "{:>7} chunks: built in {:.1} s ({:.0} vectors/s added), index {:.1} MB, db {:.1} MB; \
             search p50/p99 ms: dense {:.2}/{:.2}, bm25 {:.2}/{:.2}, hybrid {:.2}/{:.2}",
            s.chunks,
            s.build_s,
            s.vectors_added_per_s,
            s.index_mb,
            s.db_mb,
            s.dense_ms_p50,
            s.dense_ms_p99,
            s.bm25_ms_p50,
            s.bm25_ms_p99,
            s.hybrid_ms_p50,
            s.hybrid_ms_p99
        );
    }
    println!("peak memory: {:.0} MB", r.peak_rss_mb);
    Ok(())
}

#[derive(Debug, Clone, clap::Args)]
pub struct AskBenchArgs {
    #[arg(long)]
    pub json: bool,
    /// Modes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![
        crate::protocols::AnswerMode::Extractive,
        crate::protocols::AnswerMode::Grounded,
        crate::protocols::AnswerMode::Llm,
    ])]
    pub modes: Vec<crate::protocols::AnswerMode>,
    /// Use only the first N labelled questions (0 = all).
    #[arg(long, default_value_t = 0)]
    pub limit: usize,
    /// Labelled questions.
    #[arg(long, default_value = "tests/fixtures/kb_questions.json")]
    pub questions: std::path::PathBuf,
    /// Out-of-domain and unanswerable probes.
    #[arg(long, default_value = "tests/fixtures/ask_probes.json")]
    pub probes: std::path::PathBuf,
}

#[derive(Debug, Serialize)]
pub struct AskModeReport {
    pub format: String,
    pub mode: String,
    pub questions: usize,
    pub total_ms_p50: f64,
    pub total_ms_p95: f64,
    pub retrieval_ms_p50: f64,
    pub prompt_ms_p50: f64,
    pub generation_ms_p50: f64,
    pub validation_ms_p50: f64,
    /// Answers containing a sentence of (or, for free text, mostly words of) the expected section.
    pub answer_from_expected_section: f64,
    /// Navigator answers citing the expected file.
    pub cites_expected_file: f64,
    pub mean_grounding_share: f64,
    /// Labelled (answerable) questions wrongly refused.
    pub refused: f64,
}

#[derive(Debug, Serialize)]
pub struct AskBenchReport {
    pub retrieval_hit_at_5_file: f64,
    pub labelled_best_score_min: f64,
    pub labelled_best_score_p10: f64,
    pub probe_best_score_max: f64,
    pub ood_domain_score_max: f64,
    pub in_domain_probe_domain_score_min: f64,
    pub out_of_domain_accuracy: f64,
    pub no_answer_accuracy: f64,
    pub modes: Vec<AskModeReport>,
}

/// `sextant bench ask`: latency and answer quality of both formats in each mode over the
/// sample KB's labelled questions, and the out-of-domain / no-answer decisions on probes.
pub fn run_ask(kb: &crate::kb::KnowledgeBase, llm: &mut Llm, args: &AskBenchArgs) -> Result<()> {
    use crate::protocols::evidence::{content_words, overlap_share, Evidence};
    use crate::protocols::{navigator, rag};
    let mut qs: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&args.questions)?)?;
    if args.limit > 0 {
        qs.truncate(args.limit);
    }
    let probes: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args.probes)?)?;
    let strs = |k: &str| -> Vec<String> {
        probes[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (ood, no_answer) = (strs("out_of_domain"), strs("no_answer_in_domain"));

    // Decisions from the evidence alone.
    let mut labelled_best = Vec::new();
    let mut file_hits = 0;
    let mut section_text: Vec<String> = Vec::new();
    for q in &qs {
        let ev = Evidence::gather(kb, q["question"].as_str().unwrap_or_default(), 5)?;
        labelled_best.push(ev.best_score);
        if ev
            .hits
            .iter()
            .any(|h| h.file == q["file"].as_str().unwrap_or_default())
        {
            file_hits += 1;
        }
        let text: String = kb
            .store
            .conn
            .query_row(
                "SELECT group_concat(s.text, '\n') FROM sections s JOIN documents d ON d.id = s.doc_id
                 WHERE d.path = ?1 AND s.heading = ?2",
                rusqlite::params![q["file"].as_str(), q["section"].as_str()],
                |r| r.get::<_, Option<String>>(0),
            )?
            .unwrap_or_default();
        section_text.push(text);
    }
    let mut probe_best: f64 = 0.0;
    let mut ood_dom: f64 = 0.0;
    let mut ood_ok = 0;
    for q in &ood {
        let ev = Evidence::gather(kb, q, 5)?;
        probe_best = probe_best.max(ev.best_score);
        ood_dom = ood_dom.max(ev.domain_score);
        ood_ok += ev.out_of_domain() as usize;
    }
    let mut in_dom_min: f64 = 1.0;
    let mut na_ok = 0;
    for q in &no_answer {
        let ev = Evidence::gather(kb, q, 5)?;
        probe_best = probe_best.max(ev.best_score);
        in_dom_min = in_dom_min.min(ev.domain_score);
        na_ok += (!ev.answerable() && !ev.out_of_domain()) as usize;
    }

    let mut modes = Vec::new();
    for format in ["rag", "navigator"] {
        for &mode in &args.modes {
            let mut totals = Vec::new();
            let (mut ret, mut pro, mut gen, mut val) = (vec![], vec![], vec![], vec![]);
            let (mut from_expected, mut cites, mut refused) = (0, 0, 0);
            let mut grounding = 0.0;
            for (i, q) in qs.iter().enumerate() {
                let question = q["question"].as_str().unwrap_or_default();
                let llm_opt = if mode.needs_llm() {
                    Some(&mut *llm)
                } else {
                    None
                };
                let t = Instant::now();
                let (answer, files, report) = if format == "rag" {
                    let (r, rep) = rag::answer(kb, llm_opt, question, 5, mode)?;
                    (r.final_answer, Vec::new(), rep)
                } else {
                    let (r, rep) = navigator::answer(kb, llm_opt, question, 5, mode)?;
                    let files: Vec<String> = r.sources.iter().map(|s| s.file.clone()).collect();
                    (r.answer, files, rep)
                };
                totals.push(t.elapsed().as_secs_f64() * 1e3);
                ret.push(report.retrieval_ms);
                pro.push(report.prompt_ms);
                gen.push(report.generation_ms);
                val.push(report.validation_ms);
                grounding += report.grounding_share;
                if report.decision.starts_with("not answerable")
                    || report.decision.starts_with("in domain, no")
                    || report.decision.starts_with("out of domain")
                {
                    refused += 1;
                }
                let expected = &section_text[i];
                let sentences = crate::protocols::evidence::split_sentences(expected);
                let contains = sentences.iter().any(|s| answer.contains(s.as_str()));
                let words = content_words(&answer);
                if contains || (!words.is_empty() && overlap_share(&words, expected) >= 0.6) {
                    from_expected += 1;
                }
                if files
                    .iter()
                    .any(|f| f == q["file"].as_str().unwrap_or_default())
                {
                    cites += 1;
                }
            }
            let n = qs.len().max(1) as f64;
            modes.push(AskModeReport {
                format: format.into(),
                mode: format!("{mode:?}").to_lowercase(),
                questions: qs.len(),
                total_ms_p50: percentile(totals.clone(), 0.5),
                total_ms_p95: percentile(totals, 0.95),
                retrieval_ms_p50: percentile(ret, 0.5),
                prompt_ms_p50: percentile(pro, 0.5),
                generation_ms_p50: percentile(gen, 0.5),
                validation_ms_p50: percentile(val, 0.5),
                answer_from_expected_section: from_expected as f64 / n,
                cites_expected_file: if format == "navigator" {
                    cites as f64 / n
                } else {
                    f64::NAN
                },
                mean_grounding_share: grounding / n,
                refused: refused as f64 / n,
            });
        }
    }
    let report = AskBenchReport {
        retrieval_hit_at_5_file: file_hits as f64 / qs.len().max(1) as f64,
        labelled_best_score_min: labelled_best.iter().copied().fold(1.0, f64::min),
        labelled_best_score_p10: percentile(labelled_best, 0.1),
        probe_best_score_max: probe_best,
        ood_domain_score_max: ood_dom,
        in_domain_probe_domain_score_min: in_dom_min,
        out_of_domain_accuracy: ood_ok as f64 / ood.len().max(1) as f64,
        no_answer_accuracy: na_ok as f64 / no_answer.len().max(1) as f64,
        modes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "retrieval: expected file in top 5 for {:.0}% of {} questions",
        report.retrieval_hit_at_5_file * 100.0,
        qs.len()
    );
    println!(
        "best-chunk score: labelled min {:.3}, p10 {:.3}; probes max {:.3}",
        report.labelled_best_score_min, report.labelled_best_score_p10, report.probe_best_score_max
    );
    println!(
        "domain score: out-of-domain probes max {:.3}; in-domain probes min {:.3}",
        report.ood_domain_score_max, report.in_domain_probe_domain_score_min
    );
    println!(
        "decisions: out of domain {:.0}% of {}, in-domain no answer {:.0}% of {}",
        report.out_of_domain_accuracy * 100.0,
        ood.len(),
        report.no_answer_accuracy * 100.0,
        no_answer.len()
    );
    println!(
        "{:<10} {:<11} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>9} {:>7} {:>7} {:>7}",
        "format",
        "mode",
        "p50 ms",
        "p95 ms",
        "retr",
        "prompt",
        "gen",
        "valid",
        "expected",
        "cites",
        "ground",
        "refused"
    );
    for m in &report.modes {
        println!(
            "{:<10} {:<11} {:>9.0} {:>9.0} {:>8.0} {:>8.0} {:>8.0} {:>7.1} {:>8.0}% {:>6.0}% {:>6.0}% {:>6.0}%",
            m.format,
            m.mode,
            m.total_ms_p50,
            m.total_ms_p95,
            m.retrieval_ms_p50,
            m.prompt_ms_p50,
            m.generation_ms_p50,
            m.validation_ms_p50,
            m.answer_from_expected_section * 100.0,
            m.cites_expected_file * 100.0,
            m.mean_grounding_share * 100.0,
            m.refused * 100.0
        );
    }
    Ok(())
}

/// `sextant bench agents`: navigate_to_section over the labelled questions (latency, share
/// routed without the LLM, expected file reached) and the routing navigator over a spread
/// of forensic summaries built from the example (latency per stage, share without the LLM).
pub fn run_agents(
    kb: &crate::kb::KnowledgeBase,
    llm: &mut Llm,
    questions: &std::path::Path,
    flow_path: &std::path::Path,
    forensics: &std::path::Path,
) -> Result<()> {
    use crate::protocols::navigate::navigate;
    use crate::protocols::routing::{route, Flow, ForensicSummary};
    let qs: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(questions)?)?;
    let (mut fast_ms, mut retrieval_ms, mut llm_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut right = 0;
    for q in &qs {
        let t = Instant::now();
        let (nav, report) = navigate(
            kb,
            Some(&mut *llm),
            q["question"].as_str().unwrap_or_default(),
        )?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if report.decision.starts_with("fast path") {
            fast_ms.push(ms);
        } else if report.decision.starts_with("retrieval") {
            retrieval_ms.push(ms);
        } else {
            llm_ms.push(ms);
        }
        right += (nav.target.file == q["file"].as_str().unwrap_or_default()) as usize;
    }
    println!(
        "navigate_to_section over {} questions: {} by the fast path (p50 {:.0} ms), {} by retrieval (p50 {:.0} ms), {} by the LLM (p50 {:.0} ms); expected file reached {:.0}%",
        qs.len(),
        fast_ms.len(),
        percentile(fast_ms.clone(), 0.5),
        retrieval_ms.len(),
        percentile(retrieval_ms.clone(), 0.5),
        llm_ms.len(),
        percentile(llm_ms.clone(), 0.5),
        right as f64 * 100.0 / qs.len().max(1) as f64
    );
    let flow = Flow::load(flow_path)?;
    let base: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(forensics)?)?;
    let mut by_stage: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut n = 0;
    for status in ["VERIFIED", "UNVERIFIED", "FAILED"] {
        for iteration in 1..=3 {
            for (failed, lint, sig) in [
                (0, 0, None),
                (2, 0, None),
                (0, 4, None),
                (3, 0, Some("missing_import")),
            ] {
                let mut v = base.clone();
                v["status"] = status.into();
                v["iteration"]["current"] = iteration.into();
                v["forensics"]["tests"]["failed"] = failed.into();
                v["forensics"]["lint"]["errors"] = lint.into();
                v["failure_signature"] = sig.into();
                if failed == 0 && lint == 0 {
                    v["forensics"]["concerns"] = serde_json::json!([]);
                }
                let s = ForensicSummary::parse(&v.to_string(), &flow)?;
                let t = Instant::now();
                let d = route(
                    &flow,
                    &s,
                    Some(&mut *llm),
                    &mut crate::protocols::AskReport::default(),
                )?;
                by_stage
                    .entry(d.decided_by)
                    .or_default()
                    .push(t.elapsed().as_secs_f64() * 1e3);
                n += 1;
            }
        }
    }
    let llm_count = by_stage.get("navigator").map(Vec::len).unwrap_or(0)
        + by_stage.get("escalate").map(Vec::len).unwrap_or(0);
    println!(
        "routing over {n} summaries: {:.0}% decided without the LLM",
        (n - llm_count) as f64 * 100.0 / n.max(1) as f64
    );
    for (stage, ms) in by_stage {
        println!(
            "  {stage:<14} {:>3} decisions, p50 {:.2} ms",
            ms.len(),
            percentile(ms, 0.5)
        );
    }
    run_interview(llm)
}

/// Scripted answers for the interview benchmark (one per turn after the first).
const INTERVIEW_ANSWERS: &[&str] = &[
    "I am a site reliability engineer at a payments company; I run the on-call rotation.",
    "Eight years now. Before that I was a Linux sysadmin at a university.",
    "Keeping checkout up. Everything else is secondary to customers being able to pay.",
    "Mornings I read the overnight alerts, then the change calendar, then capacity graphs.",
    "Last month a certificate expired on the load balancer and checkout was down for twenty minutes.",
    "We now alert thirty days before expiry and review the expiry list every Monday.",
    "Postgres failover is my strongest area; I wrote our runbook for it.",
    "Kubernetes networking is where I am weakest; I lean on the platform team there.",
    "People restart services before capturing logs, and the evidence is gone.",
    "Write the timeline while it happens, not after; memory is unreliable at 3 a.m.",
    "Shadow the on-call for a month before taking the pager alone.",
];

/// Interview turn latency over a scripted session, with and without KV-cache reuse. Both
/// runs use the same seeds, so they ask for the same amount of work per turn.
pub fn run_interview(llm: &mut Llm) -> Result<()> {
    use crate::protocols::interview::{Interview, InterviewOptions};
    const TURNS: usize = 10;
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    for reuse_kv in [true, false] {
        let opts = InterviewOptions {
            reuse_kv,
            ..InterviewOptions::default()
        };
        let path = dir.path().join(format!("bench-{reuse_kv}.jsonl"));
        let mut iv = Interview::create(&path, &llm.name, opts)?;
        let mut stats = Vec::new();
        for answer in INTERVIEW_ANSWERS.iter().take(TURNS) {
            let (_, s) = iv.next_turn(llm)?;
            stats.push(s);
            iv.answer(answer)?;
        }
        rows.push((reuse_kv, stats));
    }
    println!("interview, {TURNS} turns of a scripted session:");
    for (reuse_kv, stats) in &rows {
        let last = stats.last().expect("turns ran");
        let ms: Vec<f64> = stats.iter().map(|s| s.latency_ms).collect();
        println!(
            "  KV reuse {:<3}  median turn {:>5.0} ms; turn {TURNS}: {:>5.0} ms, prompt {} tokens of which {} reused",
            if *reuse_kv { "on" } else { "off" },
            percentile(ms, 0.5),
            last.latency_ms,
            last.prompt_tokens,
            last.reused_tokens
        );
    }
    let (on, off) = (&rows[0].1[TURNS - 1], &rows[1].1[TURNS - 1]);
    println!(
        "  turn {TURNS} with reuse takes {:.2}x the time without",
        on.latency_ms / off.latency_ms.max(1e-9)
    );
    Ok(())
}
