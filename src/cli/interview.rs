//! `sextant interview`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use super::{Ctx, KbArg};

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
    use sextant::protocols::interview::{self, InterviewOptions};
    use sextant::service::InterviewFile;
    use std::io::{BufRead, Write};
    let opts = InterviewOptions {
        reuse_kv: !args.no_kv_reuse,
        seed: args.seed,
        ..InterviewOptions::default()
    };
    let svc = ctx.service(&KbArg::default())?;
    let new_path;
    let file = match &args.resume {
        Some(path) => InterviewFile::Resume(path),
        None => {
            new_path = args
                .transcript
                .clone()
                .unwrap_or_else(interview::default_transcript_path);
            InterviewFile::New(&new_path)
        }
    };
    let (id, path) = svc.open_interview(file, opts)?;
    eprintln!("transcript: {}", path.display());
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
    // The turn waiting for an answer (a resumed one), or the model's first.
    let mut step = svc.interview_step(&id, None)?;
    if step.done {
        eprintln!("this interview has already finished");
        return Ok(());
    }
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if let Some(turn) = step.turn.take() {
            if let Some(stats) = &step.stats {
                tracing::debug!(?stats, "turn");
            }
            show(&turn)?;
        }
        if !args.json {
            eprint!("> ");
        }
        let Some(line) = lines.next() else {
            eprintln!(
                "\nsaved; continue with: sextant interview --resume {}",
                path.display()
            );
            return Ok(());
        };
        let line = line?;
        let answer = line.trim();
        if answer.is_empty() {
            continue;
        }
        step = svc.interview_step(&id, Some(answer))?;
        if step.done {
            eprintln!("interview complete; transcript: {}", path.display());
            return Ok(());
        }
    }
}
