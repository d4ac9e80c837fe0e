//! `sextant bench …`: figures, not pass/fail. Each benchmark measures through the library's
//! public API and prints here; nothing in the library prints.

mod agents;
mod generate;
mod gpu;
mod interview;
mod kb;
mod kb_real;
mod routing;
mod schemas;

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use sextant::models::Role;

use super::{Ctx, KbArg};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Load time, prompt and generation speed, grammar overhead, completion rate.
    Generate(generate::BenchArgs),
    /// Interview turn latency at turn 10, with and without KV-cache reuse; with
    /// `--personas`, scripted interviews scored turn by turn instead (docs/AGENTS.md).
    Interview {
        /// Scripted personas (JSONL, `{"id", "answers": [...]}` a line).
        #[arg(long)]
        personas: Option<PathBuf>,
        /// With --personas: also write every turn's scores to this JSON file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// With --personas: print every turn.
        #[arg(long)]
        verbose: bool,
    },
    /// Latency and LLM share of navigate_to_section and the routing navigator (and the
    /// interview figures).
    Agents {
        #[command(flatten)]
        kb: KbArg,
        #[arg(long, default_value = "tests/fixtures/kb_questions.json")]
        questions: PathBuf,
        /// Flow file (default: the built-in example flow).
        #[arg(long)]
        flow: Option<PathBuf>,
        #[arg(long, default_value = "examples/forensics.json")]
        forensics: PathBuf,
    },
    /// The labelled routing set on the real model: decision accuracy (by rules, by the
    /// model), detours without their signature, escalations, latency (docs/AGENTS.md).
    Routing {
        #[arg(long, default_value = "eval/routing.jsonl")]
        set: PathBuf,
        /// Which half: tune, report or all.
        #[arg(long, default_value = "all", value_parser = ["tune", "report", "all"])]
        split: String,
        /// Also write the figures and every case's decision to this JSON file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Print each case's decision and reason.
        #[arg(long)]
        verbose: bool,
    },
    /// Every JSON Schema in a folder decoded once: share valid, reasons for the rest.
    Schemas {
        /// Folder of schemas (`*.json`, or corpus files with a `schemas` list).
        #[arg(default_value = "tests/fixtures/schema_corpus")]
        dir: PathBuf,
        #[arg(long, default_value_t = 400)]
        max_tokens: usize,
    },
    /// The CUDA path without model files: CPU-vs-GPU logits of every family's tiny random
    /// model, and speed on random models of the default LLMs' shapes (docs/GPU.md).
    Gpu(gpu::GpuArgs),
    /// Embedding and ingest speed, index size, search latency at 10k and 100k chunks.
    Kb {
        #[command(flatten)]
        args: kb::KbBenchArgs,
        /// Folder to ingest for the ingest figures.
        #[arg(long, default_value = "examples/kb")]
        sample: PathBuf,
    },
}

pub fn run(ctx: &Ctx, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Generate(args) => generate::run_generate(&ctx.llm_model()?, &args),
        BenchCommand::Interview { personas: None, .. } => {
            agents::run_interview(&mut ctx.load_llm()?)
        }
        BenchCommand::Interview {
            personas: Some(personas),
            json,
            verbose,
        } => interview::run_personas(&mut ctx.load_llm()?, &personas, json.as_deref(), verbose),
        BenchCommand::Agents {
            kb,
            questions,
            flow,
            forensics,
        } => {
            let kb = ctx.open_kb(&kb)?;
            agents::run_agents(
                &kb,
                &mut ctx.load_llm()?,
                &questions,
                flow.as_deref(),
                &forensics,
            )
        }
        BenchCommand::Routing {
            set,
            split,
            json,
            verbose,
        } => routing::run_routing(&mut ctx.load_llm()?, &set, &split, json.as_deref(), verbose),
        BenchCommand::Schemas { dir, max_tokens } => {
            schemas::run_schemas(&mut ctx.load_llm()?, &dir, max_tokens)
        }
        BenchCommand::Gpu(args) => gpu::run_gpu(&args),
        BenchCommand::Kb { args, sample } => match (&args.kb, &args.questions) {
            (Some(dir), Some(questions)) => kb_real::run(
                &ctx.store.resolve(Role::Embedding, None)?,
                dir,
                questions,
                args.queries,
                args.json,
            ),
            (Some(_), None) => anyhow::bail!(
                "--kb needs --questions FILE.jsonl (an eval set: each line's \"question\" is searched)"
            ),
            _ => kb::run_kb(&ctx.store.resolve(Role::Embedding, None)?, &sample, &args),
        },
    }
}

/// Megabytes of `dir/name`: a file, or a folder's files summed.
fn dir_mb(dir: &std::path::Path, name: &str) -> f64 {
    sextant::kb::bytes_under(&dir.join(name)) as f64 / 1e6
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| generate::vm_hwm_kb(&s))
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}
