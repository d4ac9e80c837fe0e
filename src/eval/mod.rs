//! `sextant eval`: a labelled question set run against a knowledge base, scored.
//!
//! A question set is JSONL, one question a line (`eval/*.jsonl`):
//! `{"id", "split": "tune"|"report", "kind": "answerable"|"not_documented"|"out_of_domain",
//! "question", "file", "section", "keywords": [...]}`. Answerable questions name the file
//! (and section) that answers them and the keywords a correct answer contains; the other
//! kinds name nothing. The caller runs each question through `protocols::prepare_ask` and
//! its model step, times it, and hands the answer to [`score`]; [`summarise`] turns the
//! scored questions into the figures `sextant eval` prints. The scoring reads only the
//! response as a user sees it (its format's fields) and the knowledge base.

mod confidence;
mod interview;
mod navigation;
mod routing;
mod score;

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub use confidence::{answer_is_right, calibrate, Calibration, RIGHT_MIN_KEYWORDS};
pub use interview::{
    load_personas, score_turn, summarise_interviews, InterviewFigures, Persona, TurnScored,
};
pub use navigation::{score_navigation, summarise_navigation, NavigationFigures, NavigationScored};
pub use routing::{
    load_routing_set, score_routing, summarise_routing, LoadedCase, RoutingCase, RoutingFigures,
    RoutingScored,
};
pub use score::{classify, score, summarise, Figures, Outcome, Scored};

/// What a question is, as labelled in the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// The documents answer it.
    Answerable,
    /// In the knowledge base's domain, but no document answers it.
    NotDocumented,
    /// Outside the knowledge base's domain.
    OutOfDomain,
}

/// A counted share with its 95 % Wilson interval (navigation, routing and interview
/// figures).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Share {
    pub right: usize,
    pub of: usize,
    pub share: f64,
    pub interval: (f64, f64),
}

impl Share {
    /// `right` of `of`; a share of nothing is 0.
    pub fn count(right: usize, of: usize) -> Share {
        Share {
            right,
            of,
            share: if of == 0 {
                0.0
            } else {
                right as f64 / of as f64
            },
            interval: crate::stats::wilson_interval(right, of),
        }
    }
}

/// "11/12 0.92 (95 % 0.65–0.99)", as the shells print a share.
impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>3}/{:<3} {:.2}  (95 % {:.2}–{:.2})",
            self.right, self.of, self.share, self.interval.0, self.interval.1
        )
    }
}

/// One labelled question.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalQuestion {
    pub id: String,
    /// "tune" or "report": thresholds and prompts are chosen on the tuning half only.
    #[serde(default)]
    pub split: Option<String>,
    pub kind: QuestionKind,
    pub question: String,
    /// Answerable: the document that answers it (path relative to the KB root).
    #[serde(default)]
    pub file: Option<String>,
    /// Answerable: the section heading that answers it.
    #[serde(default)]
    pub section: Option<String>,
    /// Answerable: strings a correct answer contains (compared case-insensitively).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// A conversation: the questions asked before this one, oldest first. `question` is
    /// then a follow-up, scored with this history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<String>,
    /// A follow-up written out in full: what it should be searched and answered as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone: Option<String>,
    /// The follow-up starts a new topic: the history should not change it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub topic_change: bool,
}

/// Reads a question set, naming the file and line of anything malformed.
pub fn load_questions(path: &Path) -> Result<Vec<EvalQuestion>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the question set {}", path.display()))?;
    parse_questions(&text).with_context(|| format!("in the question set {}", path.display()))
}

/// Parses JSONL questions (blank lines and lines starting with `//` are skipped).
pub fn parse_questions(text: &str) -> Result<Vec<EvalQuestion>> {
    let mut out: Vec<EvalQuestion> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let q: EvalQuestion = serde_json::from_str(line).with_context(|| {
            format!(
                "line {}: not a question object ({{\"id\", \"kind\", \"question\", \"file\", \
                 \"section\", \"keywords\"}}); fix or remove the line",
                n + 1
            )
        })?;
        if q.kind == QuestionKind::Answerable && q.file.is_none() {
            bail!(
                "line {}: answerable question {} names no \"file\"; add the file that answers it",
                n + 1,
                q.id
            );
        }
        if let Some(split) = q.split.as_deref() {
            if split != "tune" && split != "report" {
                bail!(
                    "line {}: question {} has split {split:?}; use \"tune\" or \"report\"",
                    n + 1,
                    q.id
                );
            }
        }
        if out.iter().any(|x| x.id == q.id) {
            bail!("line {}: question id {} is used twice", n + 1, q.id);
        }
        out.push(q);
    }
    if out.is_empty() {
        bail!("no questions (one JSON object a line)");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_are_named() {
        let ok = r#"{"id":"a","kind":"out_of_domain","question":"q"}"#;
        assert_eq!(parse_questions(ok).unwrap().len(), 1);
        let e = parse_questions(&format!("{ok}\n{{\"id\":\"b\"")).unwrap_err();
        assert!(format!("{e:#}").contains("line 2"), "{e:#}");
        let e = parse_questions(r#"{"id":"a","kind":"answerable","question":"q"}"#).unwrap_err();
        assert!(format!("{e:#}").contains("names no \"file\""), "{e:#}");
        let e = parse_questions(&format!("{ok}\n{ok}")).unwrap_err();
        assert!(format!("{e:#}").contains("used twice"), "{e:#}");
        let e = parse_questions(r#"{"id":"a","kind":"maybe","question":"q"}"#).unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
    }
}
