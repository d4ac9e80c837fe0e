//! `sextant ask` and `sextant navigate`.

use anyhow::Result;
use clap::Args;

use sextant::protocols::section_tool::{self, HeadingTree};
use sextant::protocols::{prepare_ask, AnswerFormat, AnswerMode, AskRequest, Report};

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct AskArgs {
    #[command(flatten)]
    kb: KbArg,
    #[arg(long, value_enum, default_value_t = AnswerFormat::Navigator)]
    format: AnswerFormat,
    /// How the answer text is made (default: reader when the LLM is pulled, else
    /// extractive; see README, Answers).
    #[arg(long, value_enum)]
    mode: Option<AnswerMode>,
    /// Chunks retrieved.
    #[arg(long, default_value_t = sextant::protocols::DEFAULT_K)]
    k: usize,
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
    let kb = ctx.open_kb(&args.kb)?;
    let mode = args.mode.unwrap_or_else(|| ctx.default_mode());
    if args.mode.is_none() && mode == AnswerMode::Extractive {
        eprintln!(
            "note: no LLM in the model store, so the answer is extractive (the best-matching \
             sentences); run `sextant models pull` for answers read by the model"
        );
    }
    let request = AskRequest {
        question: args.question,
        format: args.format,
        mode: Some(mode),
        k: args.k,
    };
    let answer = ctx.finish(prepare_ask(&kb, &request)?)?;
    if args.explain {
        explain(&answer.report)?;
        eprintln!("validation: the object is valid against its schema in schemas/");
    }
    println!("{}", serde_json::to_string_pretty(&answer.value)?);
    Ok(())
}

pub fn navigate(ctx: &Ctx, args: NavigateArgs) -> Result<()> {
    let kb = ctx.open_kb(&args.kb)?;
    if args.tool_json {
        let tree = HeadingTree::load(&kb)?;
        let tool = if args.gemini {
            tree.gemini_declaration()
        } else {
            tree.tool_definition()
        };
        println!("{}", serde_json::to_string_pretty(&tool)?);
        return Ok(());
    }
    let question = args.question.unwrap_or_default();
    let (nav, report) = ctx.finish(section_tool::prepare(&kb, &question)?)?;
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
    if let Some(s) = &report.decoder_schema {
        eprintln!("decoder schema: {}", serde_json::to_string(s)?);
    }
    Ok(())
}
