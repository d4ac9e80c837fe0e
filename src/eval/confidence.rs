//! How often each confidence level is right: the navigator format's `high`, `medium` and
//! `low` read against the labels. The seed's levels promise that `high` is a direct
//! answer from one authoritative source, so a person may act on it; this is the figure
//! that says whether they can.
//!
//! Only answers given are counted (a refusal's level is its confidence in the absence). An
//! answer is right when its question is answerable, it cites the expected file, and it
//! holds at least `RIGHT_MIN_KEYWORDS` of the question's keywords; an answer to a
//! not-documented or out-of-domain question is wrong at any level.

use serde::Serialize;

use super::{Outcome, QuestionKind, Scored, Share};

/// Share of a question's keywords an answer must hold to count as right.
pub const RIGHT_MIN_KEYWORDS: f64 = 0.5;

/// The levels, most confident first, as the navigator format writes them.
pub const LEVELS: [&str; 3] = ["high", "medium", "low"];

/// Each level's answers and how many of them were right.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Calibration {
    pub levels: Vec<(String, Share)>,
}

/// Whether an answer given is right by the labels (module docs).
pub fn answer_is_right(s: &Scored) -> bool {
    s.outcome == Outcome::Answered
        && s.kind == QuestionKind::Answerable
        && s.cited_expected
        && s.keyword_share.unwrap_or(1.0) >= RIGHT_MIN_KEYWORDS
}

/// The calibration of a run's answers; None when no answer carries a level (RAG's
/// confidence is a score, not a level).
pub fn calibrate(scored: &[Scored]) -> Option<Calibration> {
    let given: Vec<&Scored> = scored
        .iter()
        .filter(|s| s.outcome == Outcome::Answered && s.confidence.is_some())
        .collect();
    if given.is_empty() {
        return None;
    }
    let levels = LEVELS
        .iter()
        .map(|&level| {
            let at: Vec<&&Scored> = given
                .iter()
                .filter(|s| s.confidence.as_deref() == Some(level))
                .collect();
            let right = at.iter().filter(|s| answer_is_right(s)).count();
            (level.to_string(), Share::count(right, at.len()))
        })
        .collect();
    Some(Calibration { levels })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::score::tests::scored;

    #[test]
    fn each_level_counts_its_right_answers() {
        let answer = |kind, level: &str, cited, kw| {
            let mut s = scored(kind, Outcome::Answered);
            s.confidence = Some(level.to_string());
            s.cited_expected = cited;
            s.keyword_share = kw;
            s
        };
        use QuestionKind as K;
        let run = [
            answer(K::Answerable, "high", true, Some(1.0)),
            // The right file without the facts asked for is not an answer.
            answer(K::Answerable, "high", true, Some(0.0)),
            answer(K::NotDocumented, "high", false, None),
            answer(K::Answerable, "low", true, None),
            // A refusal has no level to be right or wrong at.
            scored(K::NotDocumented, Outcome::NotDocumented),
        ];
        let c = calibrate(&run).expect("levels given");
        let share = |l: &str| c.levels.iter().find(|(n, _)| n == l).unwrap().1.clone();
        assert_eq!((share("high").right, share("high").of), (1, 3));
        assert_eq!((share("medium").right, share("medium").of), (0, 0));
        assert_eq!((share("low").right, share("low").of), (1, 1));
        assert_eq!(calibrate(&run[4..]), None);
    }
}
