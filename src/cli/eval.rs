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
use sextant::protocols::{
    followup, prepare_ask, AnswerFormat, AnswerMode, AskRequest, Pending, Step,
};

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
    /// How a conversation's last question is put, comma-separated (default: all three when
    /// the set has conversations): with its history, written out in full, or alone.
    #[arg(long, value_enum, value_delimiter = ',')]
    asked: Vec<Asked>,
}

/// How a conversation's follow-up is put to the engine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
enum Asked {
    /// After its earlier turns, resolved as a conversation resolves it.
    History,
    /// Its `standalone` version, written out in full.
    Standalone,
    /// On its own words, without the earlier turns.
    Alone,
    /// After its earlier turns, written out in full by the LLM (measured against the
    /// rules of `history`).
    Rewritten,
}

#[derive(Serialize)]
struct ModeRun {
    format: AnswerFormat,
    mode: AnswerMode,
    /// Conversation sets: how the follow-ups were put.
    asked: Option<Asked>,
    figures: Figures,
    /// Conversation sets: the follow-ups, and the questions that change topic, apart.
    follow_ups: Option<Figures>,
    topic_changes: Option<Figures>,
    /// Conversation sets asked with history: reading the follow-up in its conversation.
    resolve_p50_ms: Option<f64>,
    /// Navigator: how often each confidence level's answers were right.
    confidence: Option<eval::Calibration>,
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
    let conversations = questions.iter().any(|q| !q.turns.is_empty());
    let askings: Vec<Option<Asked>> = match (conversations, args.asked.is_empty()) {
        (false, _) => vec![None],
        (true, true) => vec![
            Some(Asked::History),
            Some(Asked::Standalone),
            Some(Asked::Alone),
        ],
        (true, false) => args.asked.iter().copied().map(Some).collect(),
    };
    let mut llm: Option<Llm> = None;
    let mut runs = Vec::new();
    for (mode, asked) in modes
        .iter()
        .flat_map(|m| askings.iter().map(move |a| (*m, *a)))
    {
        if mode.needs_llm() && llm.is_none() {
            llm = Some(ctx.load_llm()?);
        }
        let mut scored = Vec::new();
        let mut resolve_ms = Vec::new();
        for q in &questions {
            let question = match asked {
                None | Some(Asked::Alone) => q.question.clone(),
                Some(Asked::Standalone) => q.standalone.clone().unwrap_or(q.question.clone()),
                Some(Asked::History) => {
                    let (query, ms) = with_history(&kb, q)?;
                    resolve_ms.push(ms);
                    query
                }
                Some(Asked::Rewritten) => {
                    if llm.is_none() {
                        llm = Some(ctx.load_llm()?);
                    }
                    let llm = llm.as_mut().expect("loaded above");
                    let t = Instant::now();
                    let query = if q.turns.is_empty() {
                        q.question.clone()
                    } else {
                        followup::rewrite(llm, &q.turns, &q.question)?
                    };
                    resolve_ms.push(t.elapsed().as_secs_f64() * 1e3);
                    query
                }
            };
            let asked_as = (question != q.question).then(|| question.clone());
            if let Some(asked_as) = asked_as.as_ref().filter(|_| args.verbose) {
                eprintln!("{} asked as: {asked_as}", q.id);
            }
            let request = AskRequest {
                question,
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
            let mut s = eval::score(&kb, q, &answer, ms, first_words.unwrap_or(ms))?;
            s.asked_as = asked_as;
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
        let part = |topic: bool| {
            let rows: Vec<Scored> = scored
                .iter()
                .filter(|s| {
                    questions
                        .iter()
                        .any(|q| q.id == s.id && !q.turns.is_empty() && q.topic_change == topic)
                })
                .cloned()
                .collect();
            (!rows.is_empty()).then(|| eval::summarise(&rows, args.format))
        };
        runs.push(ModeRun {
            format: args.format,
            mode,
            asked,
            figures: eval::summarise(&scored, args.format),
            follow_ups: part(false),
            topic_changes: part(true),
            resolve_p50_ms: (!resolve_ms.is_empty())
                .then(|| sextant::stats::percentile(resolve_ms.clone(), 0.5)),
            confidence: eval::calibrate(&scored),
            questions: scored,
        });
    }
    print_table(&args, "", &runs, |r| Some(&r.figures));
    print_calibration(&runs);
    if conversations {
        print_table(&args, "follow-ups", &runs, |r| r.follow_ups.as_ref());
        print_table(&args, "topic changes", &runs, |r| r.topic_changes.as_ref());
        for r in runs.iter().filter(|r| r.resolve_p50_ms.is_some()) {
            println!(
                "{}: reading the follow-up in its conversation, p50 {:.0} ms",
                run_name(r),
                r.resolve_p50_ms.unwrap_or_default()
            );
        }
    }
    super::write_json(args.json.as_deref(), &runs)?;
    Ok(())
}

/// Each confidence level's answers and the share right, for the runs that give levels.
fn print_calibration(runs: &[ModeRun]) {
    let given: Vec<(&ModeRun, &eval::Calibration)> = runs
        .iter()
        .filter_map(|r| Some((r, r.confidence.as_ref()?)))
        .collect();
    if given.is_empty() {
        return;
    }
    println!(
        "confidence of the answers given: right / at the level (right: cites the expected file, \
         ≥ {:.0} % of its keywords)",
        eval::RIGHT_MIN_KEYWORDS * 100.0
    );
    for (r, c) in given {
        let levels: Vec<String> = c
            .levels
            .iter()
            .map(|(level, share)| format!("{level} {share}"))
            .collect();
        println!("  {:<32} {}", run_name(r), levels.join(" · "));
    }
}

/// A conversation's last question after its earlier turns, as a conversation reads it,
/// with the time reading it took (the earlier turns were read when they were asked).
fn with_history(kb: &sextant::kb::KnowledgeBase, q: &EvalQuestion) -> Result<(String, f64)> {
    let mut earlier = Vec::new();
    for turn in &q.turns {
        earlier.push(followup::resolve(kb, &earlier, turn)?.query);
    }
    let t = Instant::now();
    let resolved = followup::resolve(kb, &earlier, &q.question)?;
    Ok((resolved.query, t.elapsed().as_secs_f64() * 1e3))
}

/// A run's name as the table prints it: "navigator · reader" (· "history").
fn run_name(r: &ModeRun) -> String {
    let asked = r.asked.map(|a| format!(" · {a:?}")).unwrap_or_default();
    format!("{:?} · {:?}{asked}", r.format, r.mode).to_lowercase()
}

/// The table of `figures` for each run (a part of the set when `part` names one).
fn print_table(
    args: &EvalArgs,
    part: &str,
    runs: &[ModeRun],
    figures: impl Fn(&ModeRun) -> Option<&Figures>,
) {
    let runs: Vec<(&ModeRun, &Figures)> =
        runs.iter().filter_map(|r| Some((r, figures(r)?))).collect();
    let Some((_, f0)) = runs.first() else {
        return;
    };
    let part = if part.is_empty() {
        String::new()
    } else {
        format!(" · {part}")
    };
    println!(
        "{}{part} · split {} · {} questions ({} answerable, {} not documented, {} out of domain) · k={}",
        args.questions.display(),
        args.split,
        f0.questions,
        f0.answerable,
        f0.not_documented,
        f0.out_of_domain,
        args.k
    );
    println!(
        "{:<32} {:>6} {:>6} {:>6} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}",
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
        "gap",
        "noted",
        "ood",
        "invented",
        "p50 s",
        "p95 s",
        "first50",
        "first95"
    );
    for (r, f) in &runs {
        println!(
            "{:<32} {:>6.2} {:>6.2} {:>6.2} {:>8.2} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>5.2} {:>5.2} {:>6.2} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
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
            f.gap_stated,
            f.answerable_noted,
            f.out_of_domain_accuracy,
            f.invented_answers,
            f.latency_p50_ms / 1e3,
            f.latency_p95_ms / 1e3,
            f.first_words_p50_ms / 1e3,
            f.first_words_p95_ms / 1e3
        );
    }
    println!("95 % intervals (the question counts say no more than this):");
    for (r, f) in &runs {
        let i = &f.intervals;
        let span = |(lo, hi): (f64, f64)| format!("{lo:.2}–{hi:.2}");
        println!(
            "  {:<32} cited {} · keywords {} · honesty {} · ood {}",
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
