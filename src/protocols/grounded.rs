//! Grounded answers: the LLM chooses and orders evidence sentences, and the grammar
//! guarantees that nothing else can be written. The answer field's JSON Schema `pattern`
//! is an alternation of the candidate sentences, copied verbatim, so an ungrounded
//! sentence (an invented command, say) is not a possible output at all.

use super::evidence::{Evidence, Sentence};

/// Candidate sentences offered to the model.
pub const CANDIDATES: usize = 6;
/// Sentences an answer may chain.
pub const MAX_SENTENCES: usize = 3;

/// Escapes a literal for llguidance's regex syntax.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The most relevant sentences that can be copied verbatim into a JSON string under a
/// pattern (no quotes, backslashes or control characters).
pub fn candidates(ev: &Evidence, n: usize) -> Vec<&Sentence> {
    ev.sentences
        .iter()
        .filter(|s| !s.text.contains(['"', '\\']) && !s.text.chars().any(char::is_control))
        .take(n)
        .collect()
}

/// A pattern admitting 1..=`max_sentences` distinct candidate sentences joined by single
/// spaces, in the candidates' order (most relevant first): the model chooses which
/// sentences to use, it cannot repeat one or write anything else.
pub fn answer_pattern(sentences: &[&Sentence], max_sentences: usize) -> String {
    fn chain(s: &[String], start: usize, depth: usize) -> String {
        (start..s.len())
            .map(|i| {
                if depth > 1 && i + 1 < s.len() {
                    format!("{}( ({}))?", s[i], chain(s, i + 1, depth - 1))
                } else {
                    s[i].clone()
                }
            })
            .collect::<Vec<_>>()
            .join("|")
    }
    let escaped: Vec<String> = sentences.iter().map(|s| regex_escape(&s.text)).collect();
    format!("^({})$", chain(&escaped, 0, max_sentences.max(1)))
}

/// The evidence as the prompt shows it: numbered sentences with their source.
pub fn evidence_listing(ev: &Evidence, sentences: &[&Sentence]) -> String {
    sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let h = &ev.hits[s.hit];
            format!("[{}] ({} § {}) {}", i + 1, h.file, h.section, s.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Joins answer sentences: a space after a sentence, a line break after a line that does
/// not end one (a command), a blank line around a code block, so the text reads as
/// written and renders as the Markdown it is.
pub fn join_sentences(sentences: &[&str]) -> String {
    let mut out = String::new();
    let mut after_block = false;
    for s in sentences {
        let block = s.contains("```");
        if !out.is_empty() {
            out.push_str(if block || after_block {
                "\n\n"
            } else if out.ends_with(['.', '!', '?']) {
                " "
            } else {
                "\n"
            });
        }
        out.push_str(s);
        after_block = block;
    }
    out
}

/// The extractive answer: the best sentence and those nearly as relevant (up to
/// `MAX_SENTENCES`), most relevant first.
pub fn extractive_answer(ev: &Evidence) -> Vec<&Sentence> {
    let Some(top) = ev.sentences.first() else {
        return Vec::new();
    };
    ev.sentences
        .iter()
        .filter(|s| s.relevance >= top.relevance - 0.12)
        .take(MAX_SENTENCES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_admits_only_the_sentences_in_any_order() {
        let s = |t: &str| Sentence {
            text: t.into(),
            hit: 0,
            relevance: 0.0,
        };
        let a = s("Run kubectl rollout undo deployment/api (see v1.2).");
        let b = s("Check the status afterwards.");
        let c = s("A third sentence here.");
        let p = answer_pattern(&[&a, &b, &c], 2);
        let rx = regex::Regex::new(&p).unwrap();
        assert!(rx.is_match(&a.text));
        assert!(rx.is_match(&b.text));
        assert!(rx.is_match(&format!("{} {}", a.text, c.text)));
        assert!(rx.is_match(&format!("{} {}", b.text, c.text)));
        assert!(
            !rx.is_match(&format!("{} {}", a.text, a.text)),
            "no repeats"
        );
        assert!(
            !rx.is_match(&format!("{} {} {}", a.text, b.text, c.text)),
            "at most 2"
        );
        assert!(!rx.is_match("Run kubelet-tls-re-renew."));
        assert!(!rx.is_match(&a.text[..20]), "no fragments");
    }
}
