//! The navigator's confidence levels (the written rules of the module docs): from the
//! cited sections' scores, or from the reader's verdict on its quoted passages.

use super::Source;
use crate::protocols::reader::Verdict;

pub const HIGH_MIN: f64 = 0.78;
pub const CONFIRMING_MIN: f64 = 0.75;
pub const MEDIUM_MIN: f64 = 0.72;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Low,
    Medium,
    High,
}

impl Level {
    pub(super) fn name(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
        }
    }
    pub(super) fn lower(self) -> Level {
        match self {
            Level::High => Level::Medium,
            _ => Level::Low,
        }
    }
}

/// Confidence from the cited sections' scores, with its reason.
pub(super) fn score_confidence(scores: &[f64], files: usize, n_sources: usize) -> (Level, String) {
    let best = scores.iter().copied().fold(0.0, f64::max);
    let level = confidence_level(scores, files);
    let confirming = scores.len() >= 2 && scores.iter().all(|s| *s >= CONFIRMING_MIN);
    let why = match level {
        Level::High if confirming => format!(
            "{n_sources} cited sections all match the question closely (best {best:.2}) and agree"
        ),
        Level::High => format!(
            "the cited section matches the question closely (score {best:.2}) and answers it directly"
        ),
        Level::Medium if files >= 2 => {
            format!("the answer combines sections from {files} files (best score {best:.2})")
        }
        Level::Medium => {
            format!("the cited section is relevant (score {best:.2}) but not an exact match")
        }
        Level::Low => format!("the closest section is only partially relevant (score {best:.2})"),
    };
    (level, why)
}

/// Confidence from the reader's verdict (the seed's levels): the quoted passages state
/// the answer in one file (high: one authoritative source), in several files (medium:
/// synthesis), or answer only part of the question (low: partial).
pub(super) fn reader_confidence(
    verdict: Verdict,
    sources: &[Source],
    files: usize,
) -> (Level, String) {
    let named = sources
        .iter()
        .map(|s| format!("{} § {}", s.file, s.section))
        .collect::<Vec<_>>()
        .join("; ");
    match verdict {
        Verdict::Answers if files <= 1 => (
            Level::High,
            format!("the quoted passages of {named} state the answer directly, one authoritative source"),
        ),
        Verdict::Answers => (
            Level::Medium,
            format!("the answer combines passages from {files} files ({named})"),
        ),
        Verdict::Partly => (
            Level::Low,
            format!("the quoted passages of {named} answer only part of the question"),
        ),
        Verdict::DoesNotAnswer => (
            Level::Low,
            format!(
                "the closest passages ({named}) may not answer the question: the reader judged \
                 that they do not; check the cited sections"
            ),
        ),
    }
}

/// The written confidence rules (module docs) over the cited sections' scores and the
/// number of distinct files cited.
pub fn confidence_level(scores: &[f64], files: usize) -> Level {
    let best = scores.iter().copied().fold(0.0, f64::max);
    let confirming = scores.len() >= 2 && scores.iter().all(|s| *s >= CONFIRMING_MIN);
    if best >= HIGH_MIN && (files <= 1 || confirming) {
        Level::High
    } else if best >= MEDIUM_MIN || files >= 2 {
        Level::Medium
    } else {
        Level::Low
    }
}
