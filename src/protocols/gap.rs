//! Saying what the documentation does not cover. A question can ask for a feature the
//! documents lack in the documents' own words ("the default retention period for files in
//! the WAL archive"): retrieval then finds neighbouring text that scores like an answer,
//! and no name rule catches it. Refusing on coverage alone would refuse answerable
//! questions too (their everyday words are as rare in a KB as a missing feature's), so the
//! answer keeps its passages and says, first, which of the question's words they do not
//! mention; its confidence is then at most low and says why.
//!
//! A word is named when all of these hold (chosen on the tuning halves of git-doc and
//! postgresql, docs/EVALUATION.md):
//! - it is in the question proper: the last sentence that asks (the sentences before it
//!   set the scene: "our disks get hammered");
//! - the KB barely knows it: at most `BARELY_KNOWN_CHUNKS` chunks hold it;
//! - it is not an adverb or a verb form in -ed / -ing ("freshly", "saturated"): what is
//!   asked for is named by its nouns;
//! - neither the passages read nor the answer hold it.

use super::evidence::{content_words, Evidence};
use super::followup;
use super::support::{stem, stems_of};

/// Chunks of the KB holding a word, at most, for the word to count as barely known.
pub const BARELY_KNOWN_CHUNKS: usize = 2;

/// How the note that names the unmentioned words starts; `sextant eval` finds it by this.
pub const NOTE_START: &str = "Note: the documentation found does not mention";

/// The question's words the documentation found does not speak to (module docs), in the
/// question's order.
pub fn unmentioned_terms(ev: &Evidence, answer: &str) -> Vec<String> {
    let asked = asking_sentence(followup::own_words(&ev.question));
    let asked: Vec<String> = content_words(&asked);
    let answered = stems_of(answer);
    ev.terms
        .iter()
        .filter(|t| {
            t.chunks <= BARELY_KNOWN_CHUNKS
                && !t.in_passages
                && asked.contains(&t.word)
                && !is_adverb_or_participle(&t.word)
                && !answered.contains(&stem(&t.word))
        })
        .map(|t| t.word.clone())
        .collect()
}

/// The last sentence of a question that asks (ends with '?'), else its last sentence.
fn asking_sentence(question: &str) -> String {
    let mut sentences: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, c) in question.char_indices() {
        if matches!(c, '.' | '?' | '!')
            && question[i + c.len_utf8()..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        {
            sentences.push(&question[start..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    if !question[start..].trim().is_empty() {
        sentences.push(&question[start..]);
    }
    sentences
        .iter()
        .rev()
        .find(|s| s.trim_end().ends_with('?'))
        .or(sentences.last())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn is_adverb_or_participle(word: &str) -> bool {
    word.len() > 4 && (word.ends_with("ly") || word.ends_with("ed") || word.ends_with("ing"))
}

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
        assert_eq!(
            unmentioned_terms(&ev, "Set archive_command."),
            ["retention"]
        );
        // Named by the answer itself: nothing to point out.
        assert!(unmentioned_terms(&ev, "Retention is not set by the server.").is_empty());
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
            unmentioned_terms(&ev, "Raise checkpoint_completion_target."),
            ["spread"]
        );
        assert_eq!(
            list(&["a".into(), "b".into(), "c".into()]).unwrap(),
            "“a”, “b” or “c”"
        );
    }
}
