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

/// Chunks of the KB holding a word, at most, for the word to count as barely known.
pub const BARELY_KNOWN_CHUNKS: usize = 2;

/// Chunks a KB needs before a word's absence says something of its subject: in the
/// sample KB's 220 chunks everyday words ("outage", "gave", "sit") are absent by chance,
/// and a note on them marked 15 of its 51 answerable questions; git-doc (5,748) and
/// postgresql (3,019) marked 6 of 51 and 6 of 39 on their tuning halves.
pub const BARELY_KNOWN_MIN_KB_CHUNKS: usize = 1000;

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
    /// At most `BARELY_KNOWN_CHUNKS` chunks hold it, in a KB of at least
    /// `BARELY_KNOWN_MIN_KB_CHUNKS`: its absence from the passages names a gap.
    pub barely_known: bool,
    /// How much the word says about what is asked: ln(KB chunks / (1 + chunks holding
    /// it)), its inverse document frequency.
    pub weight: f64,
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
            barely_known: chunks <= BARELY_KNOWN_CHUNKS && total >= BARELY_KNOWN_MIN_KB_CHUNKS,
            weight: (total as f64 / (1 + chunks) as f64).ln().max(0.0),
        });
    }
    Ok(terms)
}

impl Evidence {
    /// The question's words the documentation found does not speak to, in the question's
    /// order: what an answer from it cannot cover ("retention", "subcommand"). A word is
    /// named when all of these hold (chosen on the tuning halves of git-doc and postgresql,
    /// docs/EVALUATION.md):
    /// - it is in the question proper: the last sentence that asks (the sentences before
    ///   it set the scene: "our disks get hammered");
    /// - the KB barely knows it: at most `BARELY_KNOWN_CHUNKS` chunks hold it, in a KB
    ///   large enough for that to mean something (`Term::barely_known`);
    /// - it is not an adverb or a verb form in -ed / -ing ("freshly", "saturated"): what
    ///   is asked for is named by its nouns;
    /// - neither the passages read nor `answer` hold it.
    pub fn unmentioned_terms(&self, answer: &str) -> Vec<String> {
        let own = crate::protocols::followup::own_words(&self.question);
        let asked: Vec<String> = content_words(&asking_sentence(own));
        let answered = stems_of(answer);
        self.terms
            .iter()
            .filter(|t| {
                t.barely_known
                    && !t.in_passages
                    && asked.contains(&t.word)
                    && !is_adverb_or_participle(&t.word)
                    && !answered.contains(&stem(&t.word))
            })
            .map(|t| t.word.clone())
            .collect()
    }

    /// Share of the question's weight (`Term::weight`) on words the passages read hold
    /// (`Term::in_passages`: the first `PASSAGES` hits, which a follow-up's reader may
    /// rank differently), and the words they lack, heaviest first. A reader that says its passages answer
    /// is right for 16 of the 18 such answers on the tuning halves where this is at least
    /// `navigator::HIGH_MIN_HELD`, and for 4 of 13 where it is below (docs/EVALUATION.md).
    pub fn held_by_passages(&self) -> (f64, Vec<&str>) {
        let total: f64 = self.terms.iter().map(|t| t.weight).sum();
        if total <= 0.0 {
            return (1.0, Vec::new());
        }
        let held: f64 = self
            .terms
            .iter()
            .filter(|t| t.in_passages)
            .map(|t| t.weight)
            .sum();
        let mut missing: Vec<&Term> = self.terms.iter().filter(|t| !t.in_passages).collect();
        missing.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        (
            held / total,
            missing.iter().map(|t| t.word.as_str()).collect(),
        )
    }

    /// Share of the question's weight (`Term::weight`) on words that no chunk of the KB
    /// holds, in a KB large enough for an absent word to say something of its subject
    /// (`Term::barely_known`); 0 in a smaller one.
    pub fn unknown_weight(&self) -> f64 {
        let total: f64 = self.terms.iter().map(|t| t.weight).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let unknown: f64 = self
            .terms
            .iter()
            .filter(|t| t.chunks == 0 && t.barely_known)
            .map(|t| t.weight)
            .sum();
        unknown / total
    }

    /// Share of the question's words that no chunk of the KB holds.
    pub fn unknown_share(&self) -> f64 {
        if self.terms.is_empty() {
            return 0.0;
        }
        self.terms.iter().filter(|t| t.chunks == 0).count() as f64 / self.terms.len() as f64
    }
}

/// The last sentence of a question that asks (ends with '?'), else its last sentence.
pub fn asking_sentence(question: &str) -> String {
    let mut sentences: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, c) in question.char_indices() {
        let end = i + c.len_utf8();
        if matches!(c, '.' | '?' | '!')
            && question[end..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        {
            sentences.push(&question[start..end]);
            start = end;
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
