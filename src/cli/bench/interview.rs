//! `sextant bench interview --personas FILE`: scripted interviews on the real model, every
//! interviewer turn scored (`sextant::eval::score_turn`).

use std::path::Path;

use anyhow::Result;

use sextant::eval::{load_personas, score_turn, summarise_interviews, Share};
use sextant::llm::Llm;
use sextant::protocols::interview::{Interview, InterviewOptions};

pub fn run_personas(llm: &mut Llm, path: &Path, json: Option<&Path>, verbose: bool) -> Result<()> {
    let personas = load_personas(path)?;
    let dir = tempfile::tempdir()?;
    let mut scored = Vec::new();
    for p in &personas {
        let file = dir.path().join(format!("{}.jsonl", p.id));
        let mut iv = Interview::create(&file, &llm.name, InterviewOptions::default())?;
        let mut earlier: Vec<String> = Vec::new();
        for i in 0..=p.answers.len() {
            if iv.is_finished() {
                break;
            }
            let (turn, stats) = iv.next_turn(llm)?;
            let s = score_turn(&p.id, i, &turn, &p.answers[..i], &earlier, stats.latency_ms);
            if verbose {
                eprintln!(
                    "{} #{i} [{} d{}] {}{}{}{} {} | insights {:?}",
                    p.id,
                    s.stage,
                    s.depth,
                    if s.placeholder { "PLACEHOLDER " } else { "" },
                    if s.repeated { "REPEAT " } else { "" },
                    if s.speaks_as_person { "AS-PERSON " } else { "" },
                    if s.addressed { "" } else { "NOT-TO-YOU " },
                    s.response,
                    s.key_insights
                );
            }
            earlier.push(s.response.clone());
            scored.push(s);
            if let Some(a) = p.answers.get(i) {
                if iv.waiting_turn().is_some() {
                    iv.answer(a)?;
                }
            }
        }
    }
    let f = summarise_interviews(&scored);
    let line = |name: &str, s: &Share| println!("  {name:<32} {s}");
    println!(
        "{} · {} personas · {} interviewer turns",
        path.display(),
        f.personas,
        f.turns
    );
    line("one question", &f.one_question);
    line("question put to the person", &f.addressed);
    line("insights from the answers", &f.insights_from_answers);
    println!(
        "  placeholders {} · repeated turns {} · spoken as the person {} · fallback turns {} · turn p50 {:.2} s",
        f.placeholders,
        f.repeated,
        f.speaks_as_person,
        f.fallback_turns,
        f.latency_p50_ms / 1e3
    );
    crate::cli::write_json(json, &serde_json::json!({"figures": f, "turns": scored}))?;
    Ok(())
}
