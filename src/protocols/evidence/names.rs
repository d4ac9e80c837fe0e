//! Words of a question that name something (a product, an option, a version): what the
//! KB must mention for the question to be about it.

/// Words of the question that name something: capitalised inside a sentence, with a
/// capital after the first letter (acronyms, camelCase), or with digits; at least two
/// characters. A sentence's first word is capitalised by grammar, not because it names
/// anything ("How …? Could …"), and so are question words written in capitals.
pub fn question_names(question: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut sentence_start = true;
    let mut rest = question;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric()) {
        let before = &rest[..start];
        if before.contains(['.', '?', '!', ':', ';', '\n']) {
            sentence_start = true;
        }
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
            .unwrap_or(tail.len());
        let w = tail[..end].trim_matches('-');
        let lower = w.to_lowercase();
        let capitalised = w.chars().next().is_some_and(char::is_uppercase);
        let named = (capitalised && !sentence_start && !is_function_word(&lower))
            || w.chars().skip(1).any(char::is_uppercase)
            || w.chars().any(|c| c.is_ascii_digit());
        if named && w.chars().count() >= 2 {
            names.push(w);
        }
        sentence_start = false;
        rest = &tail[end..];
    }
    names
}

/// Words that grammar, not meaning, capitalises mid-question (a question restarted after
/// a comma, a quoted question): stopwords and the modal verbs.
fn is_function_word(lower: &str) -> bool {
    crate::kb::stopwords::is_stopword(lower)
        || matches!(
            lower,
            "could" | "would" | "might" | "must" | "shall" | "may" | "please" | "also" | "but"
        )
}

/// A name as products and projects are written (`GitHub`, `Tested-by`): letters with at
/// least one lowercase, no digits. Acronyms and numbers are left out of the retrieved-
/// sections check: documents spell them differently (HTTPS / TLS) and error messages
/// carry numbers that no section repeats.
pub(super) fn is_proper_name(w: &str) -> bool {
    w.chars().any(char::is_lowercase) && !w.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_words_that_start_a_sentence_are_not_names() {
        // The reported case: "Could" restarting the question was taken for a name.
        assert!(question_names("My rollout hangs. Could I roll it back?").is_empty());
        assert!(question_names("Could I roll back a deployment?").is_empty());
        for q in [
            "Can I restart the ingress?",
            "What if, Would it help to scale up?",
            "Should I page someone? Please advise.",
            "Is there a runbook? May I skip the canary?",
            "\"Could\" the handover move?",
        ] {
            assert_eq!(question_names(q), Vec::<&str>::new(), "{q}");
        }
        // Names still count: inside a sentence, acronyms, camelCase, digits.
        assert_eq!(
            question_names("How do I rotate TLS certificates on Windows with kubectl v1.29?"),
            vec!["TLS", "Windows", "v1", "29"]
        );
        assert_eq!(
            question_names("Does Lightroom export RAW?"),
            vec!["Lightroom", "RAW"]
        );
        assert_eq!(
            question_names("Where is serviceAccount set?"),
            vec!["serviceAccount"]
        );
    }
}
