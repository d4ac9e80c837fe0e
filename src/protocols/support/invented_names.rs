//! Names an answer gets wrong while every word is the documents'.
//!
//! A name the answer places itself in that neither the documents nor the question use:
//! over bind9's `arm/reference.html` the reader wrote "To set up a forwarding zone in
//! Armada, …" and "…rate limiting in Arm Reference HTML, …", making a product of a
//! passage's path. The sentence's words were otherwise the passages', so the word checks
//! kept it. The phrase ("in Armada") is dropped; the rest of the sentence stands or falls
//! by those checks. And a neighbouring name put in the place of the one the passage
//! says it of (`swapped_name`).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// A preposition, then a capitalised word with lower-case letters ("Armada", "Arm"),
/// then up to two more capitalised or upper-case words ("Reference HTML"). An
/// upper-case first word ("for AXFR", "in DNS") is a term, not a made-up product.
static PLACED_IN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?i:in|on|with|using|within|inside|for)\s+([A-Z][a-z][A-Za-z0-9+]*(?:\s+[A-Z][A-Za-z0-9+]*){0,2})\b",
    )
    .expect("a valid pattern")
});

/// Words written as paths or file names ("arm/reference.html"): their parts are not
/// words the documents use.
static PATHS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\S*[/\\]\S*|\S+\.[A-Za-z]{2,5}\b").expect("a valid pattern"));

/// `answer` without the phrases that place it in a name `read` and `question` never
/// use as words, and the names so removed.
pub fn without_invented_names(answer: &str, read: &str, question: &str) -> (String, Vec<String>) {
    let known = words_of(&PATHS.replace_all(read, " "))
        .union(&words_of(question))
        .cloned()
        .collect::<HashSet<_>>();
    let mut removed = Vec::new();
    let mut out = String::with_capacity(answer.len());
    let mut at = 0;
    for c in PLACED_IN.captures_iter(answer) {
        let (phrase, name) = (c.get(0).expect("a match"), &c[1]);
        let in_code = answer[..phrase.start()].matches('`').count() % 2 == 1;
        if in_code || words_of(name).is_subset(&known) || phrase.start() < at {
            continue;
        }
        removed.push(name.to_string());
        let before = &answer[at..phrase.start()];
        let prior = answer[..phrase.start()].trim_end_matches(' ');
        if prior.is_empty() || prior.ends_with(['.', '!', '?', '\n']) {
            // "In Armada, to set up…" → "To set up…".
            out.push_str(before);
            let rest = answer[phrase.end()..].trim_start_matches([',', ' ']);
            let mut chars = rest.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
            }
            at = answer.len() - chars.as_str().len();
        } else {
            // "…zone in Armada, you need…" → "…zone, you need…".
            out.push_str(before.trim_end());
            at = phrase.end();
        }
    }
    out.push_str(&answer[at..]);
    (out, removed)
}

/// The name `sentence` puts where the passage sentence it copies (`rest`) has a
/// neighbouring one, as (the answer's, the passage's): "max-cache-ttl cannot exceed 90
/// seconds …" over bind9's "`min-cache-ttl` cannot exceed 90 seconds …". Both are the
/// documents' names, so no word check caught the swap. Names are words joined by hyphens
/// or underscores; neighbours share a part and differ.
pub fn swapped_name(sentence: &str, rest: &str) -> Option<(String, String)> {
    let (ours, theirs) = (names_of(sentence), names_of(rest));
    ours.iter().filter(|a| !theirs.contains(*a)).find_map(|a| {
        let parts: HashSet<&str> = a.split(['-', '_']).collect();
        theirs
            .iter()
            .filter(|b| !ours.contains(*b))
            .find(|b| b.split(['-', '_']).any(|p| parts.contains(p)))
            .map(|b| (a.clone(), b.clone()))
    })
}

/// The hyphen- or underscore-joined names of a text ("max-cache-ttl", "log_line_prefix"),
/// lower-cased; a link's target is one ("#namedconf-statement-min-cache-ttl"), a flag's
/// leading hyphens are not part of it.
fn names_of(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "[]()`,;:\"'#<>{}|=".contains(c)) {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        let parts = word
            .split(['-', '_'])
            .filter(|p| p.chars().any(char::is_alphabetic));
        if parts.count() >= 2 && !names.contains(&word) {
            names.push(word);
        }
    }
    names
}

/// A text's words, lower-cased.
fn words_of(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ: &str = "[1] arm/reference.html § 8.2.34.1. Zone Types\nA forward zone \
        is a way to configure forwarding on a per-domain basis. BIND 9 supports DNS over \
        TLS. The forwarders list is used.";

    #[test]
    fn a_product_made_of_a_path_is_dropped_with_its_preposition() {
        let question = "How do I set up a forwarding zone?";
        for (answer, want, name) in [
            (
                "To set up a forwarding zone in Armada, you need to specify the forwarders.",
                "To set up a forwarding zone, you need to specify the forwarders.",
                "Armada",
            ),
            (
                "To configure forwarding in Arm Reference HTML, you can use the list.",
                "To configure forwarding, you can use the list.",
                "Arm Reference HTML",
            ),
            (
                "In Armada, a forward zone configures forwarding.",
                "A forward zone configures forwarding.",
                "Armada",
            ),
        ] {
            let (got, removed) = without_invented_names(answer, READ, question);
            assert_eq!(got, want);
            assert_eq!(removed, [name]);
        }
    }

    #[test]
    fn a_neighbouring_option_put_in_the_passages_place_is_a_swap() {
        let rest = "[`min-cache-ttl`](#namedconf-statement-min-cache-ttl) cannot exceed 90 \
            seconds and is truncated to 90 seconds if set to a greater value.";
        assert_eq!(
            swapped_name("max-cache-ttl cannot exceed 90 seconds.", rest),
            Some(("max-cache-ttl".into(), "min-cache-ttl".into()))
        );
        for (sentence, rest) in [
            // The passage's own name, however written.
            ("`min-cache-ttl` cannot exceed 90 seconds.", rest),
            // Names with no part in common are not neighbours.
            ("Use the read-only mode.", "Use the write-protected mode."),
            // A flag's spelling is no name.
            (
                "Run git add --patch to pick hunks.",
                "Run git add -p to pick hunks.",
            ),
        ] {
            assert_eq!(swapped_name(sentence, rest), None, "{sentence}");
        }
    }

    #[test]
    fn names_the_documents_or_the_question_use_stay() {
        for (answer, question) in [
            (
                "Forwarding in BIND 9 is set per domain.",
                "How is forwarding set?",
            ),
            (
                "Forwarding with Unbound differs.",
                "Is forwarding in Unbound the same?",
            ),
            ("Configure it for AXFR transfers.", "How?"),
            ("Use `forward in Armada` literally.", "How?"),
            ("Forwarding is set per domain.", "How?"),
        ] {
            let (got, removed) = without_invented_names(answer, READ, question);
            assert_eq!(got, answer);
            assert!(removed.is_empty(), "{removed:?}");
        }
    }
}
