//! How much of the question the passages hold. The reader model's own judgement of
//! whether a passage answers is near chance on git-doc's tuning half (its P(yes) for
//! "does this passage answer?", measured with llama.cpp on the same file); what separates answered from not-documented
//! questions there is the share of the question's specific words found in the passages
//! read. So each word of the question is looked up: how many chunks of the KB hold it
//! (none: the KB does not know it; few: it names something specific), and whether the
//! passages the answer is read from hold it.

use anyhow::Result;
use serde::Serialize;

use super::{content_words, Evidence, PASSAGES};
use crate::kb::search::Hit;
use crate::kb::KnowledgeBase;
use crate::protocols::support::{stem, stems_of, GENERAL};

/// Chunks counted per word, at most: enough to tell a rare word from a common one.
const COUNT_CAP: usize = 2000;

/// A word held by at most this share of the KB's chunks (and at most `COUNT_CAP`) names
/// something specific: an option, a command, a concept the question asks about.
pub const RARE_SHARE: f64 = 0.01;

/// A word of the question, looked up.
#[derive(Debug, Clone, Serialize)]
pub struct Term {
    pub word: String,
    /// Chunks of the KB that hold it (by stem), up to `COUNT_CAP`.
    pub chunks: usize,
    /// Rare in the KB (`RARE_SHARE`), or unknown to it.
    pub specific: bool,
    /// Found in the passages the answer is read from (the first `PASSAGES` hits).
    pub in_passages: bool,
}

/// The question's content words (general words aside), each looked up in the KB and in
/// the first `PASSAGES` hits.
pub fn question_terms(kb: &KnowledgeBase, question: &str, hits: &[Hit]) -> Result<Vec<Term>> {
    // The vector count (one per chunk) costs nothing; COUNT(*) would scan the table.
    let total = kb.store().vector_count().max(1);
    let passages: String = hits
        .iter()
        .take(PASSAGES)
        .map(|h| format!("{} {}\n", h.section, h.text))
        .collect();
    let passage_stems = stems_of(&passages);
    let mut terms: Vec<Term> = Vec::new();
    for word in content_words(question) {
        if word.chars().count() < 3
            || GENERAL.contains(&word.as_str())
            || terms.iter().any(|t| t.word == word)
        {
            continue;
        }
        let chunks = kb.store().term_chunks(&word, COUNT_CAP)?;
        let specific = chunks < COUNT_CAP && chunks as f64 <= RARE_SHARE * total as f64;
        let in_passages = passage_stems.contains(&stem(&word))
            || word
                .split('-')
                .filter(|p| p.len() >= 3)
                .all(|p| passage_stems.contains(&stem(p)));
        terms.push(Term {
            word,
            chunks,
            specific,
            in_passages,
        });
    }
    Ok(terms)
}

impl Evidence {
    /// The question's specific words that the passages read do not hold: what an answer
    /// from them cannot speak to ("retention", "xlsx").
    pub fn missing_terms(&self) -> Vec<&str> {
        self.terms
            .iter()
            .filter(|t| t.specific && !t.in_passages)
            .map(|t| t.word.as_str())
            .collect()
    }

    /// Share of the question's words that no chunk of the KB holds.
    pub fn unknown_share(&self) -> f64 {
        if self.terms.is_empty() {
            return 0.0;
        }
        self.terms.iter().filter(|t| t.chunks == 0).count() as f64 / self.terms.len() as f64
    }
}
