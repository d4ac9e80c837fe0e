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
    /// The writing systems other than Latin that the text or the question uses.
    scripts: HashSet<&'static str>,
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
            scripts: text
                .chars()
                .chain(question.chars())
                .filter_map(script)
                .collect(),
        }
    }

    /// The words of `sentence` written partly in a script that neither the text read nor
    /// the question uses: the reader, trained on Chinese too, sometimes ends an English
    /// sentence in it ("…unless `AllowOverride` permits it in the server配置."), and one
    /// such word among many supported ones passed the share of words.
    pub(super) fn foreign_script_words(&self, sentence: &str) -> Vec<String> {
        sentence
            .split_whitespace()
            .filter(|w| {
                w.chars()
                    .filter_map(script)
                    .any(|s| !self.scripts.contains(s))
            })
            .map(str::to_string)
            .collect()
    }
}

/// The writing system of a letter outside Latin (and its accented forms), by Unicode
/// block: those a documentation set and a model trained on many languages may bring in.
fn script(c: char) -> Option<&'static str> {
    Some(match c as u32 {
        0x0370..=0x03FF => "Greek",
        0x0400..=0x052F => "Cyrillic",
        0x0590..=0x05FF => "Hebrew",
        0x0600..=0x06FF | 0x0750..=0x077F => "Arabic",
        0x0900..=0x097F => "Devanagari",
        0x0E00..=0x0E7F => "Thai",
        0x3040..=0x30FF | 0x31F0..=0x31FF => "Kana",
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => "Han",
        0xAC00..=0xD7AF | 0x1100..=0x11FF => "Hangul",
        // Fullwidth Latin and CJK punctuation ("，", "。") come with Chinese text.
        0x3000..=0x303F | 0xFF00..=0xFFEF => "CJK punctuation",
        _ => return None,
    })
}
