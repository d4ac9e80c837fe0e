//! Watching an answer being generated: its text as the model writes it, and a way to stop.
//!
//! The model writes a JSON object; `FieldText` follows it token by token and hands on
//! the decoded text of the one string field that holds the answer, so a shell can show
//! the first words long before the object is complete. What streams is the model's
//! draft: the rules still check the finished object, and the final answer (which the
//! shell shows in its place) may differ, for example when an invented flag replaced it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What a caller of `Pending::finish_watched` watches with.
#[derive(Default)]
pub struct Watch<'a> {
    /// Receives the answer's text as it is generated, in pieces.
    pub on_answer_text: Option<&'a mut dyn FnMut(&str)>,
    /// Set to stop the generation at its next token (`StructuredError::Cancelled`).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl<'a> Watch<'a> {
    pub fn none() -> Watch<'static> {
        Watch::default()
    }

    pub fn new(on_answer_text: &'a mut dyn FnMut(&str), cancel: Arc<AtomicBool>) -> Self {
        Watch {
            on_answer_text: Some(on_answer_text),
            cancel: Some(cancel),
        }
    }

    pub(crate) fn text(&mut self, piece: &str) {
        if let Some(f) = self.on_answer_text.as_mut() {
            if !piece.is_empty() {
                f(piece);
            }
        }
    }
}

/// Follows generated JSON and yields the decoded text of the string field `field` (the
/// first occurrence of `"field":` followed by a string) as it arrives.
pub struct FieldText {
    key: String,
    seen: String,
    state: State,
}

enum State {
    /// Looking for `"field"`, `:` and the opening quote.
    Seeking,
    /// Inside the string; holds an escape sequence still incomplete.
    Inside(String),
    Done,
}

impl FieldText {
    pub fn new(field: &str) -> Self {
        FieldText {
            key: format!("\"{field}\""),
            seen: String::new(),
            state: State::Seeking,
        }
    }

    /// The field's text decoded from `piece` (the next generated text), if any.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::new();
        let mut rest = piece;
        if let State::Seeking = self.state {
            self.seen.push_str(piece);
            let Some(start) = self.value_start() else {
                return out;
            };
            // Checked at every piece, so the opening quote is in this one.
            let already = self.seen.len() - piece.len();
            rest = &piece[start.saturating_sub(already)..];
            self.state = State::Inside(String::new());
            self.seen.clear();
        }
        self.decode(rest, &mut out);
        out
    }

    /// Byte offset in `seen` just past the opening quote of the field's value.
    fn value_start(&self) -> Option<usize> {
        let at = self.seen.find(&self.key)? + self.key.len();
        let after = &self.seen[at..];
        let colon = after.trim_start();
        let colon = colon.strip_prefix(':')?;
        let value = colon.trim_start();
        let quote = value.strip_prefix('"')?;
        Some(self.seen.len() - quote.len())
    }

    fn decode(&mut self, text: &str, out: &mut String) {
        for c in text.chars() {
            let State::Inside(escape) = &mut self.state else {
                return;
            };
            if escape.is_empty() {
                match c {
                    '\\' => escape.push(c),
                    '"' => self.state = State::Done,
                    c => out.push(c),
                }
                continue;
            }
            escape.push(c);
            let complete = match escape.as_bytes()[1] {
                b'u' => escape.len() == 6,
                _ => true,
            };
            if complete {
                // serde_json knows JSON's escapes; a lone surrogate becomes U+FFFD.
                let decoded: String = serde_json::from_str(&format!("\"{escape}\""))
                    .unwrap_or_else(|_| "\u{FFFD}".into());
                out.push_str(&decoded);
                escape.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_s_text_comes_out_decoded_whatever_the_pieces() {
        let json = r#"{"evidence": [1, 2], "answer": "Run `git stash` \"now\":\n\u00e9 done", "answers_question": "yes"}"#;
        let expected = "Run `git stash` \"now\":\né done";
        for size in [1, 2, 3, 5, 7, 64] {
            let mut f = FieldText::new("answer");
            let chars: Vec<char> = json.chars().collect();
            let text: String = chars
                .chunks(size)
                .map(|c| f.push(&c.iter().collect::<String>()))
                .collect();
            assert_eq!(text, expected, "pieces of {size}");
        }
    }

    #[test]
    fn other_fields_and_a_missing_field_give_nothing() {
        let mut f = FieldText::new("final_answer");
        assert_eq!(f.push(r#"{"answer": "not this", "n": 3}"#), "");
    }
}
