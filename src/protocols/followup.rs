//! Follow-up questions made standalone before retrieval. "and how do I undo that?" is
//! searched on its own words as nothing in particular; asked after "How do I amend the
//! last commit?" it means "undo amending the last commit". By rule: a question that leans
//! on the earlier turns (it opens like a continuation, points back with "it", "that",
//! "those"…, or names nothing the KB holds as specific) carries the specific words of
//! the turn before it; a question that names its own subject and does not point back is
//! a new topic and is searched as asked.

use anyhow::Result;
use serde::Serialize;

use super::evidence::content_words;
use super::support::GENERAL;
use crate::kb::KnowledgeBase;

/// Chunks counted per word, at most (as `coverage` does).
const COUNT_CAP: usize = 2000;

/// A word in at most this share of the KB's chunks names a subject of its own. Looser
/// than `coverage::RARE_SHARE`: "tag" or "index" are subjects though hundreds of git's
/// chunks hold them.
const SUBJECT_SHARE: f64 = 0.05;

/// The earlier turn's words carried, at most.
const CARRIED: usize = 5;

/// Openings that continue the turn before ("and on Windows?", "what about tags?").
const CONTINUATIONS: &[&str] = &[
    "and",
    "also",
    "but",
    "or",
    "then",
    "so",
    "what about",
    "how about",
    "what if",
    "same",
    "instead",
    "otherwise",
    "afterwards",
    "after that",
    "else",
];

/// Words that point back to something said before.
const POINTERS: &[&str] = &[
    "it", "its", "it's", "that", "this", "those", "these", "them", "they", "their", "there", "one",
    "ones", "same", "such", "former", "latter", "above", "previous", "again",
];

/// How a question was read in its conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    /// What is searched and answered: the question, with the carried words when it is a
    /// follow-up.
    pub query: String,
    /// The earlier turn's words added (empty: searched as asked).
    pub carried: Vec<String>,
    /// Why it was read this way, in words, for the answer's decision.
    pub why: String,
}

impl Resolved {
    fn as_asked(question: &str, why: &str) -> Resolved {
        Resolved {
            query: question.trim().to_string(),
            carried: Vec::new(),
            why: why.to_string(),
        }
    }

    pub fn is_follow_up(&self) -> bool {
        !self.carried.is_empty()
    }
}

/// Reads `question` after `earlier` (the earlier turns' resolved queries, oldest first).
pub fn resolve(kb: &KnowledgeBase, earlier: &[String], question: &str) -> Result<Resolved> {
    let Some(previous) = earlier.last() else {
        return Ok(Resolved::as_asked(question, "the first question"));
    };
    let total = kb.store().vector_count().max(1) as f64;
    let df = |w: &str| kb.store().term_chunks(w, COUNT_CAP);
    let lower = question.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let continues = CONTINUATIONS.iter().any(|c| {
        lower.starts_with(c)
            && lower[c.len()..]
                .chars()
                .next()
                .is_none_or(|ch| !ch.is_alphanumeric())
    });
    let points_back = words.iter().any(|w| POINTERS.contains(w));
    let mut own_subject = false;
    for w in subject_words(question) {
        let n = df(&w)?;
        if n > 0 && (n as f64) <= SUBJECT_SHARE * total && n < COUNT_CAP {
            own_subject = true;
            break;
        }
    }
    if own_subject && !continues && !points_back {
        return Ok(Resolved::as_asked(
            question,
            "names its own subject: a new question",
        ));
    }
    // The earlier turn's subject: its words the KB holds, rarest first, in their order.
    let asked: Vec<String> = content_words(question);
    let mut candidates: Vec<(usize, usize, String)> = Vec::new();
    for (i, w) in subject_words(previous).into_iter().enumerate() {
        if asked.contains(&w) || candidates.iter().any(|(_, _, c)| *c == w) {
            continue;
        }
        let n = df(&w)?;
        if n > 0 {
            candidates.push((n, i, w));
        }
    }
    candidates.sort();
    candidates.truncate(CARRIED);
    candidates.sort_by_key(|(_, i, _)| *i);
    let carried: Vec<String> = candidates.into_iter().map(|(_, _, w)| w).collect();
    if carried.is_empty() {
        return Ok(Resolved::as_asked(
            question,
            "the earlier question names nothing to carry",
        ));
    }
    let why = match (continues, points_back) {
        (true, _) => "continues the earlier question",
        (_, true) => "points back to the earlier question",
        _ => "names no subject of its own",
    };
    Ok(Resolved {
        query: format!("{} (about: {})", question.trim(), carried.join(" ")),
        carried,
        why: why.to_string(),
    })
}

/// A question's words that could name what it is about: content words, the general ones
/// ("them", "work", "way") aside.
fn subject_words(text: &str) -> Vec<String> {
    content_words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !GENERAL.contains(&w.as_str()))
        .filter(|w| !POINTERS.contains(&w.as_str()))
        .collect()
}
