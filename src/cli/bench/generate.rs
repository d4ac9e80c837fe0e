//! `sextant bench generate`: speed and reliability figures of the LLM runtime on this
//! machine. A benchmark prints numbers; it does not pass or fail.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use sextant::constrain::bounds::{bound_schema, Bounds};
use sextant::constrain::Grammar;
use sextant::llm::chat_template::Message;
use sextant::llm::generate::{generate, GenerateRequest, StopReason};
use sextant::llm::sampling::SamplingParams;
use sextant::llm::{tokenizer, Llm, LoadOptions};
use sextant::models::VerifiedModel;
use sextant::schemas;
use sextant::structured::{generate_structured, StructuredRequest, DEFAULT_MAX_TOKENS};

use sextant::stats::{mean, median, percentile};

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
    /// llama.cpp's `llama-bench` binary, run on the same file, threads, prompt and
    /// generation lengths for a side-by-side table with ratios (default: `llama-bench` on
    /// PATH when there is one; a dev-time peer, never a dependency).
    #[arg(long, value_name = "PATH/llama-bench")]
    pub compare: Option<PathBuf>,
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
    /// Of the whole benchmark process (model, KV cache, grammar).
    pub peak_rss_mb: f64,
    pub file_mb: f64,
    pub llama_cpp: Option<PeerFigures>,
}

/// llama.cpp's figures on the same file and settings.
#[derive(Debug, Serialize)]
pub struct PeerFigures {
    pub binary: String,
    pub prompt_tok_s: f64,
    pub gen_tok_s: f64,
    pub peak_rss_mb: f64,
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
    let mask_mean = mean(&masks);
    let mask_p99 = percentile(masks, 0.99);

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
                sextant::structured::OutputSpec::JsonSchema(s.schema()),
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
        decode_dtype: llm.model.weights_summary(),
        threads: sextant::llm::threads(),
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
        peak_rss_mb: super::peak_rss_mb(),
        file_mb: std::fs::metadata(model.main_file()).map_or(0, |m| m.len()) as f64 / 1e6,
        llama_cpp: llama_cpp_bench(&model.main_file(), sextant::llm::threads(), args)?,
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
    println!(
        "{:<44} {:>10}",
        "peak RSS",
        format!("{:.0} MB (file {:.0} MB)", r.peak_rss_mb, r.file_mb)
    );
    match &r.llama_cpp {
        Some(peer) => {
            println!("\nside by side with llama.cpp ({}):", peer.binary);
            println!(
                "{:<24} {:>10} {:>10} {:>7}",
                "figure", "Sextant", "llama.cpp", "ratio"
            );
            for (name, ours, theirs) in [
                ("prompt tok/s", r.prompt_tok_s, peer.prompt_tok_s),
                ("generation tok/s", r.gen_tok_s, peer.gen_tok_s),
                ("peak RSS MB", r.peak_rss_mb, peer.peak_rss_mb),
            ] {
                println!(
                    "{name:<24} {ours:>10.1} {theirs:>10.1} {:>7.2}",
                    ours / theirs.max(1e-9)
                );
            }
        }
        None => println!("llama.cpp: llama-bench not on PATH and no --compare given, skipped"),
    }
}

/// Runs llama.cpp's own benchmark on the same file: the binary given with `--compare`
/// (an error if it fails), else `llama-bench` on PATH if there is one.
fn llama_cpp_bench(path: &Path, threads: usize, args: &BenchArgs) -> Result<Option<PeerFigures>> {
    let binary = match &args.compare {
        Some(b) => b.clone(),
        None => match std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("llama-bench"))
            .find(|b| b.is_file())
        {
            Some(b) => b,
            None => return Ok(None),
        },
    };
    let mut child = Command::new(&binary)
        .arg("-m")
        .arg(path)
        .args(["-p", &args.prompt_tokens.to_string()])
        .args(["-n", &args.gen_tokens.to_string()])
        .args(["-t", &threads.to_string()])
        .args(["-r", &args.runs.max(1).to_string(), "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {} (--compare)", binary.display()))?;
    // Its peak RSS: its own /proc status, read until it exits (the rusage of children would
    // also count this process's memory, which the child shares until its exec).
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = pipe(Box::new(child.stdout.take().expect("piped")));
    let stderr = pipe(Box::new(child.stderr.take().expect("piped")));
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0f64;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_hwm_kb(&s))
        {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (stdout, stderr) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if !status.success() {
        bail!(
            "{} failed on {}: {}",
            binary.display(),
            path.display(),
            String::from_utf8_lossy(&stderr).trim()
        );
    }
    let rows: serde_json::Value = serde_json::from_slice(&stdout)
        .with_context(|| format!("{} did not print JSON (-o json)", binary.display()))?;
    let rate = |prompt: bool| -> Result<f64> {
        rows.as_array()
            .into_iter()
            .flatten()
            .find(|r| (r["n_prompt"].as_u64().unwrap_or(0) > 0) == prompt)
            .and_then(|r| r["avg_ts"].as_f64())
            .with_context(|| {
                format!(
                    "no {} row in llama-bench's output",
                    if prompt { "prompt" } else { "generation" }
                )
            })
    };
    Ok(Some(PeerFigures {
        binary: binary.display().to_string(),
        prompt_tok_s: rate(true)?,
        gen_tok_s: rate(false)?,
        peak_rss_mb: peak_kb / 1024.0,
    }))
}

/// `VmHWM` (peak resident set, kB) from a /proc status file.
pub(super) fn vm_hwm_kb(status: &str) -> Option<f64> {
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}
