//! `sextant bench ask`: latency and answer quality of each format and mode.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use sextant::llm::Llm;

use crate::cli::stats::percentile;

#[derive(Debug, Clone, clap::Args)]
pub struct AskBenchArgs {
    #[arg(long)]
    pub json: bool,
    /// Modes to measure.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![
        sextant::protocols::AnswerMode::Extractive,
        sextant::protocols::AnswerMode::Grounded,
        sextant::protocols::AnswerMode::Llm,
    ])]
    pub modes: Vec<sextant::protocols::AnswerMode>,
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
pub fn run_ask(kb: &sextant::kb::KnowledgeBase, llm: &mut Llm, args: &AskBenchArgs) -> Result<()> {
    use sextant::protocols::evidence::{content_words, overlap_share, Evidence};
    use sextant::protocols::{navigator, rag};
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
        let text = kb.store.section_text(
            q["file"].as_str().unwrap_or_default(),
            q["section"].as_str().unwrap_or_default(),
        )?;
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
                let sentences = sextant::protocols::evidence::split_sentences(expected);
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
