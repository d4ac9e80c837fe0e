//! `sextant ask` and `sextant navigate`.

use anyhow::Result;
use clap::Args;

use sextant::protocols::{AnswerFormat, AnswerMode, Report};
use sextant::service::AskParams;

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct AskArgs {
    #[command(flatten)]
    kb: KbArg,
    /// The response format (default: rag, as on every surface).
    #[arg(long, value_enum)]
    format: Option<AnswerFormat>,
    /// How the answer text is made (default: reader when the LLM is pulled, else
    /// extractive; see docs/ANSWERS.md).
    #[arg(long, value_enum)]
    mode: Option<AnswerMode>,
    /// Chunks retrieved, 1 to 20 (default: 8).
    #[arg(long)]
    k: Option<usize>,
    /// Print timings, decisions and the validation report to stderr.
    #[arg(long)]
    explain: bool,
    question: String,
}

#[derive(Args)]
pub struct NavigateArgs {
    #[command(flatten)]
    kb: KbArg,
    /// Print the tool definition built from the KB's headings (OpenAI function format)
    /// instead of navigating.
    #[arg(long)]
    tool_json: bool,
    /// With --tool-json: Gemini's functionDeclarations format instead.
    #[arg(long, requires = "tool_json")]
    gemini: bool,
    #[arg(long)]
    explain: bool,
    #[arg(required_unless_present = "tool_json")]
    question: Option<String>,
}

pub fn ask(ctx: &Ctx, args: AskArgs) -> Result<()> {
    let svc = ctx.service(&args.kb)?;
    if args.mode.is_none() && !svc.llm_available() {
        eprintln!(
            "note: no LLM in the model store, so the answer is extractive (the best-matching \
             sentences); run `sextant models pull` for answers read by the model"
        );
    }
    let answer = svc.answer(AskParams {
        question: args.question,
        format: args.format,
        mode: args.mode,
        k: args.k,
        ..AskParams::default()
    })?;
    if args.explain {
        explain(&answer.report)?;
        eprintln!("validation: the object is valid against its schema in schemas/");
    }
    println!("{}", serde_json::to_string_pretty(&answer.value)?);
    Ok(())
}

pub fn navigate(ctx: &Ctx, args: NavigateArgs) -> Result<()> {
    let svc = ctx.service(&args.kb)?;
    if args.tool_json {
        let tool = svc.section_tool(args.gemini)?;
        println!("{}", serde_json::to_string_pretty(&tool)?);
        return Ok(());
    }
    let (nav, report) = svc.navigate(args.question.as_deref().unwrap_or_default())?;
    if args.explain {
        explain(&report)?;
    }
    println!("{}", serde_json::to_string_pretty(&nav)?);
    Ok(())
}

/// `--explain`: what the protocol decided and measured, on stderr.
pub fn explain(report: &Report) -> Result<()> {
    eprintln!("mode: {}; decision: {}", report.mode, report.decision);
    if !report.hits.is_empty() {
        eprintln!(
            "best chunk score {:.3}; domain similarity {:.3}",
            report.best_score, report.domain_score
        );
        eprintln!(
            "retrieval {:.0} ms, prompt {:.0} ms, generation {:.0} ms, validation {:.1} ms",
            report.retrieval_ms, report.prompt_ms, report.generation_ms, report.validation_ms
        );
        eprintln!(
            "grounding: {:.0}% of the answer's content words occur in the evidence",
            report.grounding_share * 100.0
        );
    }
    for r in &report.rules {
        eprintln!(
            "rule {:<30} {}  {}",
            r.rule,
            if r.passed { "pass" } else { "FAIL" },
            r.detail
        );
    }
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    // What the model answered from: an answer is judged against these, not the hits.
    if !report.shown_to_model.is_empty() {
        eprintln!("the model read:");
        for line in report.shown_to_model.lines() {
            eprintln!("  {line}");
        }
    }
    if let Some(s) = &report.decoder_schema {
        eprintln!("decoder schema: {}", serde_json::to_string(s)?);
    }
    Ok(())
}
