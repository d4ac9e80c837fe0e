//! `sextant bench agents` and `sextant bench interview`.

use std::time::Instant;

use anyhow::Result;

use sextant::llm::Llm;

use sextant::stats::percentile;

/// `sextant bench agents`: navigate_to_section over the labelled questions (latency, share
/// routed without the LLM, expected file reached) and the routing navigator over a spread
/// of forensic summaries built from the example (latency per stage, share without the LLM).
pub fn run_agents(
    kb: &sextant::kb::KnowledgeBase,
    llm: &mut Llm,
    questions: &std::path::Path,
    flow_path: Option<&std::path::Path>,
    forensics: &std::path::Path,
) -> Result<()> {
    use sextant::protocols::routing::{route, Flow, ForensicSummary};
    use sextant::protocols::section_tool::{navigate, NavigatedBy};
    let qs: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(questions)?)?;
    let (mut fast_ms, mut retrieval_ms, mut llm_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut right = 0;
    for q in &qs {
        let t = Instant::now();
        let (nav, _) = navigate(
            kb,
            Some(&mut *llm),
            q["question"].as_str().unwrap_or_default(),
        )?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match nav.decided_by {
            NavigatedBy::FastPath => fast_ms.push(ms),
            NavigatedBy::Retrieval => retrieval_ms.push(ms),
            NavigatedBy::Llm => llm_ms.push(ms),
        }
        right += (nav.target.file == q["file"].as_str().unwrap_or_default()) as usize;
    }
    println!(
        "navigate_to_section over {} questions: {} by the fast path (p50 {:.0} ms), {} by retrieval (p50 {:.0} ms), {} by the LLM (p50 {:.0} ms); expected file reached {:.0}%",
        qs.len(),
        fast_ms.len(),
        percentile(fast_ms.clone(), 0.5),
        retrieval_ms.len(),
        percentile(retrieval_ms.clone(), 0.5),
        llm_ms.len(),
        percentile(llm_ms.clone(), 0.5),
        right as f64 * 100.0 / qs.len().max(1) as f64
    );
    let flow = match flow_path {
        Some(p) => Flow::load(p)?,
        None => Flow::example(),
    };
    let base: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(forensics)?)?;
    let mut by_stage: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut n = 0;
    for status in ["VERIFIED", "UNVERIFIED", "FAILED"] {
        for iteration in 1..=3 {
            for (failed, lint, sig) in [
                (0, 0, None),
                (2, 0, None),
                (0, 4, None),
                (3, 0, Some("missing_import")),
            ] {
                let mut v = base.clone();
                v["status"] = status.into();
                v["iteration"]["current"] = iteration.into();
                v["forensics"]["tests"]["failed"] = failed.into();
                v["forensics"]["lint"]["errors"] = lint.into();
                v["failure_signature"] = sig.into();
                if failed == 0 && lint == 0 {
                    v["forensics"]["concerns"] = serde_json::json!([]);
                }
                let s = ForensicSummary::parse(&v.to_string(), &flow)?;
                let t = Instant::now();
                let (d, _) = route(&flow, &s, Some(&mut *llm))?;
                by_stage
                    .entry(d.decided_by.to_string())
                    .or_default()
                    .push(t.elapsed().as_secs_f64() * 1e3);
                n += 1;
            }
        }
    }
    let llm_count = by_stage.get("llm").map(Vec::len).unwrap_or(0)
        + by_stage.get("escalate").map(Vec::len).unwrap_or(0);
    println!(
        "routing over {n} summaries: {:.0}% decided without the LLM",
        (n - llm_count) as f64 * 100.0 / n.max(1) as f64
    );
    for (stage, ms) in by_stage {
        println!(
            "  {stage:<14} {:>3} decisions, p50 {:.2} ms",
            ms.len(),
            percentile(ms, 0.5)
        );
    }
    run_interview(llm)
}

/// Scripted answers for the interview benchmark (one per turn after the first).
const INTERVIEW_ANSWERS: &[&str] = &[
    "I am a site reliability engineer at a payments company; I run the on-call rotation.",
    "Eight years now. Before that I was a Linux sysadmin at a university.",
    "Keeping checkout up. Everything else is secondary to customers being able to pay.",
    "Mornings I read the overnight alerts, then the change calendar, then capacity graphs.",
    "Last month a certificate expired on the load balancer and checkout was down for twenty minutes.",
    "We now alert thirty days before expiry and review the expiry list every Monday.",
    "Postgres failover is my strongest area; I wrote our runbook for it.",
    "Kubernetes networking is where I am weakest; I lean on the platform team there.",
    "People restart services before capturing logs, and the evidence is gone.",
    "Write the timeline while it happens, not after; memory is unreliable at 3 a.m.",
    "Shadow the on-call for a month before taking the pager alone.",
];

/// Interview turn latency over a scripted session, with and without KV-cache reuse. Both
/// runs use the same seeds, so they ask for the same amount of work per turn.
pub fn run_interview(llm: &mut Llm) -> Result<()> {
    use sextant::protocols::interview::{Interview, InterviewOptions};
    const TURNS: usize = 10;
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    for reuse_kv in [true, false] {
        let opts = InterviewOptions {
            reuse_kv,
            ..InterviewOptions::default()
        };
        let path = dir.path().join(format!("bench-{reuse_kv}.jsonl"));
        let mut iv = Interview::create(&path, &llm.name, opts)?;
        let mut stats = Vec::new();
        for answer in INTERVIEW_ANSWERS.iter().take(TURNS) {
            let (_, s) = iv.next_turn(llm)?;
            stats.push(s);
            iv.answer(answer)?;
        }
        rows.push((reuse_kv, stats));
    }
    println!("interview, {TURNS} turns of a scripted session:");
    for (reuse_kv, stats) in &rows {
        let last = stats.last().expect("turns ran");
        let ms: Vec<f64> = stats.iter().map(|s| s.latency_ms).collect();
        println!(
            "  KV reuse {:<3}  median turn {:>5.0} ms; turn {TURNS}: {:>5.0} ms, prompt {} tokens of which {} reused",
            if *reuse_kv { "on" } else { "off" },
            percentile(ms, 0.5),
            last.latency_ms,
            last.prompt_tokens,
            last.reused_tokens
        );
    }
    let (on, off) = (&rows[0].1[TURNS - 1], &rows[1].1[TURNS - 1]);
    println!(
        "  turn {TURNS} with reuse takes {:.2}x the time without",
        on.latency_ms / off.latency_ms.max(1e-9)
    );
    Ok(())
}
