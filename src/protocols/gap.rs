//! Saying what the documentation does not cover. A question can ask for a feature the
//! documents lack in the documents' own words ("the default retention period for files in
//! the WAL archive"): retrieval then finds neighbouring text that scores like an answer,
//! and no name rule catches it. Refusing on coverage alone would refuse answerable
//! questions too (their everyday words are as rare in a KB as a missing feature's), so the
//! answer keeps its passages and says, first, which of the question's words they do not
//! mention; its confidence is then at most low and says why.
//!
//! Which words are named is `Evidence::unmentioned_terms` (evidence/coverage.rs).

use super::evidence::Evidence;
use super::Report;

/// Puts the note in front of `answer` when the question asks about words neither the
/// documentation found nor the answer mentions, and records them in `report` (its
/// `unmentioned` and `decision`). Returns the words as the note lists them.
pub fn note_unmentioned(ev: &Evidence, answer: &mut String, report: &mut Report) -> Option<String> {
    let unmentioned = ev.unmentioned_terms(answer);
    let named = list(&unmentioned)?;
    *answer = with_note(std::mem::take(answer), &unmentioned);
    report.decision += &format!("; the documentation found does not mention {named}");
    report.unmentioned = unmentioned;
    Some(named)
}

/// How the note that names the unmentioned words starts; `sextant eval` finds it by this.
pub const NOTE_START: &str = "Note: the documentation found does not mention";

/// The note naming `terms`, or None when there are none.
pub fn note(terms: &[String]) -> Option<String> {
    let named = list(terms)?;
    Some(format!(
        "{NOTE_START} {named}, so it may not answer that part of the question."
    ))
}

/// `terms` as a reader writes them: "a", "a or b", "a, b or c"; None when empty.
pub fn list(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms.iter().map(|t| format!("“{t}”")).collect();
    match quoted.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} or {last}", rest.join(", "))),
    }
}

/// `answer` with the note in front of it (unchanged when there are no terms).
pub fn with_note(answer: String, terms: &[String]) -> String {
    match note(terms) {
        Some(note) => format!("{note}\n\n{answer}"),
        None => answer,
    }
}

/// An answer's note (if it starts with one) and the rest of it, the text the documents
/// are held to: the note names words the documents lack on purpose.
pub fn split_note(answer: &str) -> (Option<&str>, &str) {
    if !answer.starts_with(NOTE_START) {
        return (None, answer);
    }
    match answer.split_once("\n\n") {
        Some((note, rest)) => (Some(note), rest),
        None => (Some(answer), ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::evidence::coverage::Term;
    use crate::protocols::evidence::Evidence;

    fn evidence(question: &str, terms: &[(&str, usize, bool)]) -> Evidence {
        Evidence {
            question: question.into(),
            hits: Vec::new(),
            best_score: 0.8,
            sentences: Vec::new(),
            domain_score: 0.8,
            domain: Default::default(),
            unknown_terms: Vec::new(),
            unretrieved_terms: Vec::new(),
            terms: terms
                .iter()
                .map(|&(word, chunks, in_passages)| Term {
                    word: word.into(),
                    chunks,
                    specific: chunks < 10,
                    in_passages,
                    barely_known: chunks <= 2,
                    weight: (5000.0 / (1 + chunks) as f64).ln(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_asked_for_word_the_passages_lack_is_named() {
        let ev = evidence(
            "What is the default retention period for files in the WAL archive directory?",
            &[
                ("retention", 1, false),
                ("period", 40, false),
                ("wal", 300, true),
            ],
        );
        assert_eq!(ev.unmentioned_terms("Set archive_command."), ["retention"]);
        // Named by the answer itself: nothing to point out.
        assert!(ev
            .unmentioned_terms("Retention is not set by the server.")
            .is_empty());
        let answer = with_note("Set archive_command.".into(), &["retention".into()]);
        assert_eq!(
            answer,
            "Note: the documentation found does not mention “retention”, so it may not \
             answer that part of the question.\n\nSet archive_command."
        );
        assert_eq!(split_note(&answer).1, "Set archive_command.");
        assert_eq!(split_note("Set it.").0, None);
    }

    #[test]
    fn scene_setting_words_and_verb_forms_are_not_named() {
        // "hammered" sets the scene; "freshly" is an adverb; "checkpoint" is found.
        let ev = evidence(
            "Every few minutes our disks get hammered by a checkpoint. How do I spread a \
             freshly started checkpoint out?",
            &[
                ("hammered", 0, false),
                ("freshly", 3, false),
                ("checkpoint", 200, true),
                ("spread", 2, false),
            ],
        );
        assert_eq!(
            ev.unmentioned_terms("Raise checkpoint_completion_target."),
            ["spread"]
        );
        assert_eq!(
            list(&["a".into(), "b".into(), "c".into()]).unwrap(),
            "“a”, “b” or “c”"
        );
    }
}
