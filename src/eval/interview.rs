//! Scripted interviews (`eval/interview-personas.jsonl`): each persona's answers fed to
//! the interviewer in turn, every interviewer turn scored — one question, put to the
//! person, no placeholder, not a repeat, not spoken as the person, insights from what the
//! person said. `sextant bench interview --personas` runs them on the real model.
//!
//! A line: `{"id", "answers": ["…", …]}`; a persona with n answers gives n + 1 turns.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocols::interview::checks::{
    addressed_to_the_person, has_placeholder, insight_from_answers, speaks_as_the_person,
};
use crate::stats::percentile;

use super::Share;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    pub id: String,
    pub answers: Vec<String>,
}

pub fn load_personas(path: &Path) -> Result<Vec<Persona>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the personas {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: Persona = serde_json::from_str(line).with_context(|| {
            format!(
                "{} line {}: not a persona ({{\"id\", \"answers\": [...]}})",
                path.display(),
                n + 1
            )
        })?;
        if p.answers.is_empty() {
            bail!(
                "{} line {}: persona {} has no answers",
                path.display(),
                n + 1,
                p.id
            );
        }
        out.push(p);
    }
    if out.is_empty() {
        bail!("{}: no personas", path.display());
    }
    Ok(out)
}

/// One interviewer turn, scored.
#[derive(Debug, Clone, Serialize)]
pub struct TurnScored {
    pub persona: String,
    pub index: usize,
    pub stage: String,
    pub depth: u64,
    pub response: String,
    pub key_insights: Vec<String>,
    pub one_question: bool,
    pub addressed: bool,
    pub placeholder: bool,
    pub repeated: bool,
    pub speaks_as_person: bool,
    /// After the first answer: the turn notes at least one insight and each holds
    /// something the person said.
    pub insights_from_answers: Option<bool>,
    /// The turn is the fallback built without the model.
    pub fallback: bool,
    pub latency_ms: f64,
}

/// Scores a turn given the answers before it and the earlier turns' responses.
pub fn score_turn(
    persona: &str,
    index: usize,
    turn: &Value,
    answers: &[String],
    earlier: &[String],
    latency_ms: f64,
) -> TurnScored {
    let response = turn["response"].as_str().unwrap_or_default().to_string();
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let insights: Vec<String> = turn["internal_tracking"]["key_insights"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    TurnScored {
        persona: persona.to_string(),
        index,
        stage: turn["interview_stage"].as_str().unwrap_or_default().into(),
        depth: turn["metadata"]["question_depth"].as_u64().unwrap_or(0),
        one_question: response.matches('?').count() == 1,
        addressed: addressed_to_the_person(&response),
        placeholder: has_placeholder(&response),
        repeated: earlier.iter().any(|e| norm(e) == norm(&response)),
        speaks_as_person: speaks_as_the_person(&response, answers),
        insights_from_answers: (!answers.is_empty()).then(|| {
            !insights.is_empty() && insights.iter().all(|i| insight_from_answers(i, answers))
        }),
        fallback: turn.get("error").is_some(),
        key_insights: insights,
        response,
        latency_ms,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct InterviewFigures {
    pub personas: usize,
    pub turns: usize,
    pub one_question: Share,
    pub addressed: Share,
    pub placeholders: usize,
    pub repeated: usize,
    pub speaks_as_person: usize,
    pub insights_from_answers: Share,
    pub fallback_turns: usize,
    pub latency_p50_ms: f64,
}

pub fn summarise_interviews(scored: &[TurnScored]) -> InterviewFigures {
    let share = Share::count;
    let n = scored.len();
    let count = |f: &dyn Fn(&TurnScored) -> bool| scored.iter().filter(|s| f(s)).count();
    let personas: std::collections::BTreeSet<&str> =
        scored.iter().map(|s| s.persona.as_str()).collect();
    InterviewFigures {
        personas: personas.len(),
        turns: n,
        one_question: share(count(&|s| s.one_question), n),
        addressed: share(count(&|s| s.addressed), n),
        placeholders: count(&|s| s.placeholder),
        repeated: count(&|s| s.repeated),
        speaks_as_person: count(&|s| s.speaks_as_person),
        insights_from_answers: share(
            count(&|s| s.insights_from_answers == Some(true)),
            count(&|s| s.insights_from_answers.is_some()),
        ),
        fallback_turns: count(&|s| s.fallback),
        latency_p50_ms: percentile(scored.iter().map(|s| s.latency_ms).collect(), 0.5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_turn_with_every_defect_is_counted() {
        let answers =
            vec!["I run the on-call rotation for a payments platform, ten years now.".to_string()];
        let bad = json!({"interview_stage": "profiling", "response": "I'm [insert name here], and I've been running the on-call rotation for a payments platform for ten years now.",
            "metadata": {"question_depth": 1}, "internal_tracking": {"key_insights": ["Follow-up on same topic"]}});
        let s = score_turn(
            "p",
            1,
            &bad,
            &answers,
            &[bad["response"].as_str().unwrap().into()],
            1.0,
        );
        assert!(
            !s.one_question && !s.addressed && s.placeholder && s.repeated && s.speaks_as_person
        );
        assert_eq!(s.insights_from_answers, Some(false));
        let good = json!({"interview_stage": "profiling", "response": "Ten years is a long run. What does a hard week on your rotation look like?",
            "metadata": {"question_depth": 2}, "internal_tracking": {"key_insights": ["Ten years running payments on-call"]}});
        let g = score_turn("p", 1, &good, &answers, &[], 1.0);
        assert!(
            g.one_question && g.addressed && !g.placeholder && !g.repeated && !g.speaks_as_person
        );
        assert_eq!(g.insights_from_answers, Some(true));
        let f = summarise_interviews(&[s, g]);
        assert_eq!(
            (f.placeholders, f.repeated, f.insights_from_answers.right),
            (1, 1, 1)
        );
    }

    #[test]
    fn the_committed_personas_have_six_answers_or_more() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/interview-personas.jsonl");
        let p = load_personas(&path).unwrap();
        assert!(p.len() >= 10);
        assert!(p.iter().all(|p| p.answers.len() >= 6));
    }
}
