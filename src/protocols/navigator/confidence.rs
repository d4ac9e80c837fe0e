//! The navigator's confidence levels (the written rules of the module docs): from the
//! cited sections' scores, or from the reader's verdict on its quoted passages.

use super::Source;
use crate::protocols::reader::Verdict;

pub const HIGH_MIN: f64 = 0.78;
pub const CONFIRMING_MIN: f64 = 0.75;
pub const MEDIUM_MIN: f64 = 0.72;
/// Share of the question's weight the passages read must hold
/// (`Evidence::held_by_passages`) for the reader's "they answer it" to be `high`: below
/// it the passages may answer a neighbouring question. On the tuning halves (`sextant
/// eval --kb K eval/SET.jsonl --split tune --modes reader`) `high` was right for 20 of 31
/// answers before, 16 of 18 with 0.5 (0.4: 17 of 23; 0.6: 14 of 16).
pub const HIGH_MIN_HELD: f64 = 0.5;

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
/// `held` is the share of the question's weight the passages read hold and the words
/// they lack (`Evidence::held_by_passages`): a verdict of one file's passages answering
/// is `high` only when they hold `HIGH_MIN_HELD` of it.
/// `instructs`: the question does not ask how to do something (`asks_how_to`), or the
/// answer says what to do (`Reading::says_what_to_do`); a one-file answer that does not
/// is `medium`.
pub(super) fn reader_confidence(
    verdict: Verdict,
    sources: &[Source],
    files: usize,
    held: (f64, &[&str]),
    instructs: bool,
) -> (Level, String) {
    let named = sources
        .iter()
        .map(|s| format!("{} § {}", s.file, s.section))
        .collect::<Vec<_>>()
        .join("; ");
    let (share, lacking) = held;
    match verdict {
        Verdict::Answers if files <= 1 && share < HIGH_MIN_HELD => (
            Level::Medium,
            format!(
                "the quoted passages of {named} state an answer, but they hold only {:.0} % of \
                 the question's key words (not {}), so they may answer a neighbouring question",
                share * 100.0,
                lacking
                    .iter()
                    .take(3)
                    .map(|w| format!("“{w}”"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Verdict::Answers if files <= 1 && !instructs => (
            Level::Medium,
            format!(
                "the quoted passages of {named} state an answer, but to a question asking how it \
                 gives no instruction and names no command, option or setting to use, so it \
                 may describe rather than say what to do"
            ),
        ),
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

/// Words after "how" that ask for an amount or an explanation, not a way to do something.
#[rustfmt::skip]
const HOW_NOT_TO: &[&str] = &[
    "many", "much", "long", "often", "old", "big", "large", "far", "fast", "soon", "does",
    "is", "are", "was", "were",
];

/// Whether the question asks how to do something ("How do I forward logs over TCP?",
/// "how can I …"), not how much, how long or how a thing works: an answer to it names
/// what to use. Seen on rsyslog's manual at `high`: "How do I send messages to
/// Elasticsearch?" answered "Defaults to sending them to a system index.", and "How can I
/// log kernel messages?" with "Reads messages from the kernel log and submits them to the
/// syslog engine.", neither naming the module.
pub(super) fn asks_how_to(question: &str) -> bool {
    let asking = crate::protocols::evidence::coverage::asking_sentence(question).to_lowercase();
    let mut words = asking
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
    let opens_with_how = words.next() == Some("how")
        && words
            .next()
            .is_some_and(|second| !HOW_NOT_TO.contains(&second));
    opens_with_how || asking.contains(" how do i ") || asking.contains(" how can i ")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Vec<Source> {
        vec![Source {
            file: "deploy.md".into(),
            section: "Rollback".into(),
            relevance: String::new(),
        }]
    }

    #[test]
    fn one_files_answer_is_high_only_when_its_passages_hold_the_questions_words() {
        let (level, _) =
            reader_confidence(Verdict::Answers, &source(), 1, (0.8, &["canary"]), true);
        assert_eq!(level, Level::High);
        let (level, why) = reader_confidence(
            Verdict::Answers,
            &source(),
            1,
            (0.3, &["retention", "flag", "default", "days"]),
            true,
        );
        assert_eq!(level, Level::Medium);
        assert!(why.contains("30 %"), "{why}");
        assert!(why.contains("“retention”, “flag”, “default”"), "{why}");
        assert!(!why.contains("days"), "{why}");
        let (level, _) = reader_confidence(Verdict::Partly, &source(), 1, (0.9, &[]), true);
        assert_eq!(level, Level::Low);
    }

    #[test]
    fn an_answer_to_how_that_names_nothing_to_use_is_not_high() {
        let (level, why) = reader_confidence(Verdict::Answers, &source(), 1, (0.8, &[]), false);
        assert_eq!(level, Level::Medium);
        assert!(why.contains("no instruction"), "{why}");
        for q in [
            "How do I send messages to Elasticsearch?",
            "how can I log kernel messages",
            "Our disk is full. How should I rotate the logs?",
            "I lost my work, how do I get it back?",
        ] {
            assert!(asks_how_to(q), "{q}");
        }
        for q in [
            "How many connections can a role open?",
            "How does autovacuum decide when to run?",
            "What does the property replacer do?",
            "Can I cap how many sessions a role may open?",
        ] {
            assert!(!asks_how_to(q), "{q}");
        }
    }
}
