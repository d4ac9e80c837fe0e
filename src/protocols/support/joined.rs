//! A sentence that joins one passage's words with another's: each word is in the text
//! the model read, so the word check passes it; only the passages' boundaries show that
//! no passage makes the claim.

use std::collections::HashSet;

use super::{stem, stems_of};

/// Share of a sentence's content words the one passage it rests on must hold when it
/// also takes words found only in other passages.
const JOINED_SHARE: f64 = 0.8;

/// Words a sentence may take from passages other than the one it rests on.
const BORROWED_MAX: usize = 1;

/// Auxiliaries, which any sentence may use without a passage saying them (the stopword
/// list keeps "was" and "has", not these).
const AUXILIARIES: &[&str] = &[
    "were", "being", "had", "did", "would", "could", "might", "must", "shall",
];

/// Why a sentence joins one passage's words with another's into a claim neither makes
/// ("copy the current password to `lighthouse_app_b`": the database rotation's role and
/// the JWT rotation's "copy the current key"), or None. `words` are the sentence's
/// content words, `passages` what the model read (`passages_of`); the question's own
/// words (`asked`, stems) may be said again whatever passage holds them ("the branch I
/// was on" in a bisect answer).
pub(super) fn joins_passages(
    words: &[String],
    passages: &[(String, HashSet<String>)],
    asked: &HashSet<String>,
) -> Option<String> {
    if passages.len() < 2 {
        return None;
    }
    let mut stems: Vec<(String, &str)> = Vec::new();
    for w in words.iter().filter(|w| !AUXILIARIES.contains(&w.as_str())) {
        let s = stem(w);
        if asked.contains(&s) {
            continue;
        }
        if !stems.iter().any(|(t, _)| *t == s) {
            stems.push((s, w));
        }
    }
    let held = |p: &HashSet<String>| stems.iter().filter(|(s, _)| p.contains(s)).count();
    let (label, best) = passages.iter().max_by_key(|(_, p)| held(p))?;
    if held(best) as f64 >= JOINED_SHARE * stems.len() as f64 {
        return None;
    }
    let borrowed: Vec<&str> = stems
        .iter()
        .filter(|(s, _)| !best.contains(s) && passages.iter().any(|(_, p)| p.contains(s)))
        .map(|(_, w)| *w)
        .collect();
    (borrowed.len() > BORROWED_MAX).then(|| {
        format!(
            "it joins {label} with words of other passages: {}",
            borrowed.join(", ")
        )
    })
}

/// The read text's passages: each `[n] file § section` (the reader's listing) or
/// `[n] (file § section) sentence` (the evidence listing) with what follows it, those
/// of one section together; the stems of each, its heading included.
pub(super) fn passages_of(read: &str) -> Vec<(String, HashSet<String>)> {
    let mut passages: Vec<(String, String)> = Vec::new();
    let mut current = None;
    for line in read.lines() {
        let numbered = line
            .strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        match numbered {
            Some((_, rest)) => {
                let (label, text) = match rest.strip_prefix('(').and_then(|r| r.split_once(") ")) {
                    Some((label, text)) => (label, text),
                    None => (rest, ""),
                };
                let i = match passages.iter().position(|(l, _)| l == label) {
                    Some(i) => i,
                    None => {
                        passages.push((label.to_string(), label.to_string()));
                        passages.len() - 1
                    }
                };
                passages[i].1.push('\n');
                passages[i].1.push_str(text);
                current = Some(i);
            }
            None => {
                if let Some(i) = current {
                    passages[i].1.push('\n');
                    passages[i].1.push_str(line);
                }
            }
        }
    }
    passages
        .into_iter()
        .map(|(label, text)| (label, stems_of(&text)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{check_answer, check_answer_for};

    /// The sample KB's two rotations, as the reader is shown them.
    const READ: &str = "[1] security/secrets.md § Rotating the database password\n\
        The database password is rotated every 90 days. Rotation without downtime uses \
        two roles: create the new password on the standby role `lighthouse_app_b` in \
        PostgreSQL, then write a `db_url` that uses `lighthouse_app_b`.\n\n\
        [2] security/secrets.md § Rotating the JWT signing key\n\
        To rotate, copy the current key to `jwt_previous_key` in Vault, write a new \
        `jwt_signing_key`, sync and restart.";

    #[test]
    fn a_sentence_joining_two_passages_into_a_claim_neither_makes_is_removed() {
        // Seen from the default reader on the sample KB.
        let c = check_answer(
            "To rotate the database credentials, copy the current password to \
             `lighthouse_app_b` in PostgreSQL and write a new `db_url`.",
            READ,
        );
        assert!(c.kept.is_empty(), "{c:?}");
        assert!(c.removed[0].why.contains("joins"), "{c:?}");
        // Each passage's own claim stays, in one answer.
        let c = check_answer(
            "Create the new password on the standby role `lighthouse_app_b` in PostgreSQL, \
             then write a new `db_url`. For the JWT key, copy the current key to \
             `jwt_previous_key` and write a new `jwt_signing_key`.",
            READ,
        );
        assert!(c.removed.is_empty(), "{c:?}");
        // One passage alone cannot be joined with anything.
        let one = READ.split("\n\n").next().unwrap();
        let c = check_answer(
            "Create the new password on the standby role `lighthouse_app_b` in PostgreSQL \
             and write a `db_url` that uses it.",
            one,
        );
        assert!(c.removed.is_empty(), "{c:?}");
        // The question's words are the answer's to repeat: "branch" is only in the
        // other passage, "were" is an auxiliary.
        let read = "[1] git-bisect.html § Bisect reset\n\
            After a bisect session, to clean up the bisection state and return to the \
            original HEAD, issue `git bisect reset`.\n\n\
            [2] git-bisect-lk2009.html § Driving a bisection manually\n\
            We can use `git bisect reset` to go back to the branch we were in before we \
            started bisecting.";
        let answer = "To get back to the branch you were on before bisecting, issue \
            `git bisect reset`.";
        let c = check_answer_for(
            answer,
            read,
            "finished bisecting, how do I get back to the branch I was on before I started",
        );
        assert!(c.removed.is_empty(), "{c:?}");
    }
}
