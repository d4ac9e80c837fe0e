//! `sextant interview`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use super::Ctx;

#[derive(Args)]
pub struct InterviewArgs {
    /// Continue a saved transcript (a JSONL file written by an earlier interview).
    #[arg(long, value_name = "FILE", conflicts_with = "transcript")]
    resume: Option<PathBuf>,
    /// Where to save the new transcript (default: interviews/interview-<time>.jsonl).
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// Print each interviewer turn as one JSON line on stdout.
    #[arg(long)]
    json: bool,
    /// Process the whole conversation again each turn instead of reusing the KV cache.
    #[arg(long)]
    no_kv_reuse: bool,
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

pub fn run(ctx: &Ctx, args: InterviewArgs) -> Result<()> {
    use sextant::protocols::interview::{self, Interview, InterviewOptions};
    use std::io::{BufRead, Write};
    let opts = InterviewOptions {
        reuse_kv: !args.no_kv_reuse,
        seed: args.seed,
        ..InterviewOptions::default()
    };
    let model = ctx.llm_model()?;
    let mut iv = match &args.resume {
        Some(path) => Interview::resume(path, opts)?,
        None => {
            let path = args
                .transcript
                .clone()
                .unwrap_or_else(interview::default_transcript_path);
            Interview::create(&path, &model.spec.name, opts)?
        }
    };
    eprintln!("transcript: {}", iv.path.display());
    if iv.is_finished() {
        eprintln!("this interview has already finished");
        return Ok(());
    }
    let mut llm = sextant::llm::Llm::load(&model, &sextant::llm::LoadOptions::from_env()?)?;
    let show = |turn: &Value| -> Result<()> {
        let mut out = std::io::stdout().lock();
        if args.json {
            writeln!(out, "{}", serde_json::to_string(turn)?)?;
        } else {
            writeln!(out, "\n{}", turn["response"].as_str().unwrap_or_default())?;
        }
        out.flush()?;
        Ok(())
    };
    if let Some(turn) = iv.waiting_turn() {
        show(turn)?;
    }
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if iv.needs_turn() {
            let (turn, stats) = iv.next_turn(&mut llm)?;
            tracing::debug!(?stats, "turn");
            show(&turn)?;
        }
        if !args.json {
            eprint!("> ");
        }
        let Some(line) = lines.next() else {
            eprintln!(
                "\nsaved; continue with: sextant interview --resume {}",
                iv.path.display()
            );
            return Ok(());
        };
        let line = line?;
        let answer = line.trim();
        if answer.is_empty() {
            continue;
        }
        iv.answer(answer)?;
        if iv.is_finished() {
            eprintln!("interview complete; transcript: {}", iv.path.display());
            return Ok(());
        }
    }
}
