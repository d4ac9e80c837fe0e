//! `sextant bench generate`: speed and reliability figures of the LLM runtime on this
//! machine. A benchmark prints numbers; it does not pass or fail.

use std::process::Command;
use std::time::Instant;

use anyhow::Result;
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
        llama_cpp: llama_cpp_bench(&model.main_file(), sextant::llm::threads(), args),
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
