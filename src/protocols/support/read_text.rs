//! The text a model read, taken apart once (its words, sentences and passages) and held
//! beside the question, for every sentence of its answer to be checked against.

use std::collections::HashSet;

use super::joined::passages_of;
use super::stems_of;
use crate::protocols::evidence::split_sentences;

/// What the model read, taken apart once for all of an answer's sentences.
pub(super) struct ReadText<'a> {
    pub(super) text: &'a str,
    pub(super) lowered: String,
    pub(super) stems: HashSet<String>,
    pub(super) sentences: Vec<String>,
    /// Each passage's label and stems (`joined.rs`).
    pub(super) passages: Vec<(String, HashSet<String>)>,
    /// The question's stems, which an answer may repeat from any passage.
    pub(super) asked: HashSet<String>,
}

impl<'a> ReadText<'a> {
    pub(super) fn new(text: &'a str, question: &str) -> Self {
        ReadText {
            text,
            lowered: text.to_lowercase(),
            stems: stems_of(text),
            sentences: split_sentences(text),
            passages: passages_of(text),
            asked: stems_of(question),
        }
    }
}
