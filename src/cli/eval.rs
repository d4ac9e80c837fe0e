//! `sextant eval`: runs a labelled question set against a KB in one or more answer modes
//! and prints (and with `--json` writes) the figures of `sextant::eval`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use sextant::eval::{self, EvalQuestion, Figures, Scored, Share};
use sextant::llm::Llm;
use sextant::protocols::watch::Watch;
use sextant::protocols::{prepare_ask, AnswerFormat, AnswerMode, AskRequest, Pending, Step};

use super::{Ctx, KbArg};

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    kb: KbArg,
    /// The question set: JSONL, one {"id", "split", "kind", "question", "file", "section",
    /// "keywords"} a line (see eval/README.md).
    questions: PathBuf,
    #[arg(long, value_enum, default_value_t = AnswerFormat::Navigator)]
    format: AnswerFormat,
    /// Answer modes to run, comma-separated (default: the format's default mode).
    #[arg(long, value_enum, value_delimiter = ',')]
    modes: Vec<AnswerMode>,
    /// Which half of the set: tune, report or all.
    #[arg(long, default_value = "all", value_parser = ["tune", "report", "all"])]
    split: String,
    /// Chunks retrieved per question (hit@k).
    #[arg(long, default_value_t = sextant::protocols::DEFAULT_K)]
    k: usize,
    /// Only the first N questions of the split (0 = all).
    #[arg(long, default_value_t = 0)]
    limit: usize,
    /// Also write the figures and every question's result to this JSON file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print each question's outcome and answer.
    #[arg(long)]
    verbose: bool,
    /// Score `navigate` instead of answers: where navigate_to_section lands (file, and
    /// file and section) next to search's first hit, on the answerable questions.
    #[arg(long, conflicts_with_all = ["modes", "format"])]
    navigate: bool,
}

#[derive(Serialize)]
struct ModeRun {
    format: AnswerFormat,
    mode: AnswerMode,
    figures: Figures,
    questions: Vec<Scored>,
}

pub fn run(ctx: &Ctx, args: EvalArgs) -> Result<()> {
    let mut questions: Vec<EvalQuestion> = eval::load_questions(&args.questions)?
        .into_iter()
        .filter(|q| args.split == "all" || q.split.as_deref() == Some(args.split.as_str()))
        .collect();
    if questions.is_empty() {
        bail!(
            "{} has no questions in split {:?}; use --split all, tune or report",
            args.questions.display(),
            args.split
        );
    }
    if args.limit > 0 {
        questions.truncate(args.limit);
    }
    let kb = ctx.open_kb(&args.kb)?;
    if args.navigate {
        return run_navigation(ctx, &kb, &args, &questions);
    }
    let modes = if args.modes.is_empty() {
        vec![ctx.default_mode()]
    } else {
        args.modes.clone()
    };
    let mut llm: Option<Llm> = None;
    let mut runs = Vec::new();
    for mode in modes {
        if mode.needs_llm() && llm.is_none() {
            llm = Some(ctx.load_llm()?);
        }
        let mut scored = Vec::new();
        for q in &questions {
            let request = AskRequest {
                question: q.question.clone(),
                format: args.format,
                mode: Some(mode),
                k: args.k,
            };
            let t = Instant::now();
            let mut first_words: Option<f64> = None;
            let answer = match prepare_ask(&kb, &request)? {
                Step::Done(answer) => answer,
                Step::NeedsLlm(pending) => {
                    let Some(llm) = llm.as_mut() else {
                        bail!("the rules did not decide and no LLM is loaded");
                    };
                    // As the API and the desktop stream it: the first piece of answer text.
                    let mut on_text = |piece: &str| {
                        if first_words.is_none() && !piece.trim().is_empty() {
                            first_words = Some(t.elapsed().as_secs_f64() * 1e3);
                        }
                    };
                    let mut watch = Watch {
                        on_answer_text: Some(&mut on_text),
                        cancel: None,
                    };
                    pending.finish_watched(llm, &mut watch)?
                }
            };
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let s = eval::score(&kb, q, &answer, ms, first_words.unwrap_or(ms))?;
            if args.verbose {
                eprintln!(
                    "{} [{:?} → {:?}] kw {} cited {} {:.1}s: {}",
                    s.id,
                    s.kind,
                    s.outcome,
                    s.keyword_share
                        .map(|k| format!("{k:.2}"))
                        .unwrap_or("-".into()),
                    s.cited_expected,
                    ms / 1e3,
                    s.answer
                        .chars()
                        .take(160)
                        .collect::<String>()
                        .replace('\n', " ")
                );
            }
            scored.push(s);
        }
        runs.push(ModeRun {
            format: args.format,
            mode,
            figures: eval::summarise(&scored, args.format),
            questions: scored,
        });
    }
    print_table(&args, &runs);
    super::write_json(args.json.as_deref(), &runs)?;
    Ok(())
}

/// A run's name as the table prints it: "navigator · reader".
fn run_name(r: &ModeRun) -> String {
    format!("{:?} · {:?}", r.format, r.mode).to_lowercase()
}

fn print_table(args: &EvalArgs, runs: &[ModeRun]) {
    let f0 = &runs[0].figures;
    println!(
        "{} · split {} · {} questions ({} answerable, {} not documented, {} out of domain) · k={}",
        args.questions.display(),
        args.split,
        f0.questions,
        f0.answerable,
        f0.not_documented,
        f0.out_of_domain,
        args.k
    );
    println!(
        "{:<22} {:>6} {:>6} {:>6} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "format · mode",
        "hit@k",
        "mrr",
        "cited",
        "kw-found",
        "kw-read",
        "keywords",
        "grounded",
        "refused",
        "honesty",
        "ood",
        "invented",
        "p50 s",
        "p95 s",
        "first50",
        "first95"
    );
    for r in runs {
        let f = &r.figures;
        println!(
            "{:<22} {:>6.2} {:>6.2} {:>6.2} {:>8.2} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6.2} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            run_name(r),
            f.hit_at_k,
            f.expected_file_mrr,
            f.cited_expected_file,
            f.keyword_retrieved,
            f.keyword_shown
                .map_or_else(|| "—".to_string(), |k| format!("{k:.2}")),
            f.keyword_share,
            f.grounded_share,
            f.answerable_refused,
            f.not_documented_honesty,
            f.out_of_domain_accuracy,
            f.invented_answers,
            f.latency_p50_ms / 1e3,
            f.latency_p95_ms / 1e3,
            f.first_words_p50_ms / 1e3,
            f.first_words_p95_ms / 1e3
        );
    }
    println!("95 % intervals (the question counts say no more than this):");
    for r in runs {
        let i = &r.figures.intervals;
        let span = |(lo, hi): (f64, f64)| format!("{lo:.2}–{hi:.2}");
        println!(
            "  {:<22} cited {} · keywords {} · honesty {} · ood {}",
            run_name(r),
            span(i.cited_expected_file),
            span(i.keyword_share),
            span(i.not_documented_honesty),
            span(i.out_of_domain_accuracy)
        );
    }
}

/// `sextant eval --navigate`: each answerable question through navigate_to_section, scored
/// against its label and against search's first hit for the same question.
fn run_navigation(
    ctx: &Ctx,
    kb: &sextant::kb::KnowledgeBase,
    args: &EvalArgs,
    questions: &[EvalQuestion],
) -> Result<()> {
    use sextant::kb::search::{search, SearchMode};
    use sextant::protocols::section_tool;
    let mut llm: Option<Llm> = None;
    let mut scored = Vec::new();
    // Only answerable questions name a place to land on.
    for q in questions.iter().filter(|q| q.file.is_some()) {
        let t = Instant::now();
        let (nav, report) = match section_tool::prepare(kb, &q.question)? {
            Step::Done(done) => done,
            Step::NeedsLlm(pending) => {
                if llm.is_none() {
                    llm = Some(ctx.load_llm()?);
                }
                pending.finish(llm.as_mut().expect("loaded above"))?
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let first = search(kb, &q.question, 1, SearchMode::Hybrid)?;
        let Some(s) = eval::score_navigation(q, &nav, &report.decision, first.first(), ms) else {
            continue;
        };
        if args.verbose {
            eprintln!(
                "{} [{:?}] file {} section {} → {} (first hit {})",
                s.id, s.decided_by, s.file_right, s.section_right, s.target, s.first_hit
            );
        }
        scored.push(s);
    }
    let f = eval::summarise_navigation(&scored);
    let line = |name: &str, s: &Share| println!("  {name:<28} {s}");
    println!(
        "{} · split {} · navigate over {} answerable questions",
        args.questions.display(),
        args.split,
        f.questions
    );
    line("target file", &f.file);
    line("target file and section", &f.file_and_section);
    line("search's first hit: file", &f.first_hit_file);
    line("first hit: file and section", &f.first_hit_file_and_section);
    println!(
        "  decided by: fast path {}, retrieval {}, LLM {} (LLM file right {}/{}) · p50 {:.2} s, p95 {:.2} s",
        f.by_fast_path,
        f.by_retrieval,
        f.by_llm,
        f.llm_file.right,
        f.llm_file.of,
        f.latency_p50_ms / 1e3,
        f.latency_p95_ms / 1e3
    );
    super::write_json(
        args.json.as_deref(),
        &serde_json::json!({"figures": f, "questions": scored}),
    )?;
    Ok(())
}
