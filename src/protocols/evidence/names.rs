//! Words of a question that name something (a product, an option, a version): what the
//! KB must mention for the question to be about it.

use anyhow::Result;

use crate::kb::KnowledgeBase;

/// Share of the KB's chunks from which a name is the KB's own subject ("Apache" in
/// Apache's manual, in 1,495 of 26,090 chunks of it and Django's; "PostgreSQL" in 631 of
/// 3,019), which a question may name without the sections it retrieves repeating it. A
/// name the KB mentions now and then must still be in them: "GitHub" (11 of git-doc's
/// 5,587 chunks), "Windows" (37; 76 of postgresql's).
pub const SUBJECT_NAME_SHARE: f64 = 0.05;

/// Whether `name` is the KB's own subject: in `SUBJECT_NAME_SHARE` of its chunks or more,
/// and in three at least (in a KB of a few chunks one mention is a share).
pub fn is_subject_name(kb: &KnowledgeBase, name: &str) -> Result<bool> {
    let total = kb.store().vector_count();
    let needed = ((SUBJECT_NAME_SHARE * total as f64).ceil() as usize).max(3);
    Ok(kb.store().term_chunks(name, needed)? >= needed)
}

/// Words of the question that name something: capitalised inside a sentence, with a
/// capital after the first letter (acronyms, camelCase), or with digits; at least two
/// characters. A sentence's first word is capitalised by grammar, not because it names
/// anything ("How …? Could …"), and so are question words written in capitals. The
/// person's own data names nothing the documents should hold: a time of day ("dropped a
/// table at 14:05") or a value given after `=` ("say region = 'EU'"). An acronym's
/// plural is its singular ("INSERTs" → "INSERT"): the documents write the word, not the
/// plural.
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
        // A function word names nothing however it is written ("Is it OK…", "NOT").
        let named = !is_function_word(&lower)
            && ((capitalised && !sentence_start)
                || w.chars().skip(1).any(char::is_uppercase)
                || w.chars().any(|c| c.is_ascii_digit()));
        let preceding = &question[..question.len() - rest.len() + start];
        let own_data = is_clock_part(preceding, w, &tail[end..])
            || is_assigned_value(preceding)
            || is_ordinal(&lower);
        if named && !own_data && w.chars().count() >= 2 {
            names.push(acronym_singular(w));
        }
        sentence_start = false;
        rest = &tail[end..];
    }
    names
}

/// Whether `w` is the hours or minutes of a time of day ("14:05"), with the question's
/// text before and after it.
fn is_clock_part(preceding: &str, w: &str, following: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.chars().all(|c| c.is_ascii_digit());
    let after_colon = preceding
        .strip_suffix(':')
        .is_some_and(|p| p.ends_with(|c: char| c.is_ascii_digit()));
    let before_colon = following
        .strip_prefix(':')
        .is_some_and(|f| f.starts_with(|c: char| c.is_ascii_digit()));
    digits(w) && (after_colon || before_colon)
}

/// Whether `lower` counts rather than names: "10th", "2nd", "3rd-party", "10th-last".
fn is_ordinal(lower: &str) -> bool {
    let first = lower.split('-').next().unwrap_or(lower);
    let digits = first.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(&first[digits.len()..], "st" | "nd" | "rd" | "th")
}

/// Whether the word after `preceding` is a value given with `=` (quoted or not).
fn is_assigned_value(preceding: &str) -> bool {
    preceding
        .trim_end_matches(['\'', '"', '`', ' '])
        .ends_with('=')
}

/// "INSERTs" → "INSERT", "APIs" → "API": an acronym of two or more capitals and a plural
/// `s`. Other words are returned as they are.
fn acronym_singular(w: &str) -> &str {
    match w.strip_suffix('s') {
        Some(stem) if stem.chars().count() >= 2 && stem.chars().all(|c| c.is_ascii_uppercase()) => {
            stem
        }
        _ => w,
    }
}

/// Words that grammar, not meaning, capitalises mid-question (a question restarted after
/// a comma, a quoted question): stopwords and the modal verbs.
fn is_function_word(lower: &str) -> bool {
    crate::kb::stopwords::is_stopword(lower)
        || matches!(
            lower,
            "could"
                | "would"
                | "might"
                | "must"
                | "shall"
                | "may"
                | "please"
                | "also"
                | "but"
                | "ok"
                | "okay"
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

    #[test]
    fn the_persons_own_data_and_plain_words_are_not_names() {
        // Each was refused as "no document mentions …" on the PostgreSQL set.
        assert!(question_names("Is it OK to just tar up the data directory?").is_empty());
        assert!(
            question_names("Someone dropped a table at 14:05. How do I stop before it?").is_empty()
        );
        assert!(question_names("Can it send only rows where, say, region = 'EU'?").is_empty());
        assert!(
            question_names("How do I print a file in the 10th-last commit or the 2nd one?")
                .is_empty()
        );
        assert_eq!(
            question_names("INSERTs replicate, but UPDATE is rejected. Do the URLs matter?"),
            vec!["INSERT", "UPDATE", "URL"]
        );
        // Names still count: a version, a year, a ratio, a product, an acronym.
        assert_eq!(
            question_names("Does PostgreSQL 15 on Windows read a 2:3 ratio from 2023 in CSV?"),
            vec!["PostgreSQL", "15", "Windows", "2023", "CSV"]
        );
        assert_eq!(
            question_names("What is Kubernetes' status?"),
            vec!["Kubernetes"]
        );
    }
}
