//! Rules on the form of what the reader wrote, before its content is held to the
//! passages: an answer that adds nothing to the question, a verdict where none was asked
//! or said twice, a sentence said twice, a table's header row copied as an answer.

use std::collections::HashSet;

use crate::protocols::evidence::content_words;
use crate::protocols::Report;

/// Content words an answer must add to the question's to say something. The 0.5B model
/// answers a yes/no question with a bare "Yes" or "No", or copies the question (git-doc's
/// tuning half: 8 of 51 answerable questions).
const MIN_NEW_WORDS: usize = 2;

/// Whether an answer names fewer than `MIN_NEW_WORDS` content words the question lacks.
pub(super) fn says_nothing(answer: &str, question: &str) -> bool {
    // "no" is a stopword already; "yes" is not.
    let asked: HashSet<String> = content_words(question).into_iter().collect();
    let new: HashSet<String> = content_words(answer)
        .into_iter()
        .filter(|w| !asked.contains(w) && w != "yes")
        .collect();
    // A one-letter flag is no content word, but it is what the answer says ("To delete
    // all messages in the queue, use the -d ALL option."). A longer one already counts
    // as its word.
    let one_letter_flags = answer
        .split(|c: char| c.is_whitespace() || "`\"'(),;:".contains(c))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| {
            let letter = t.strip_prefix('-').unwrap_or_default();
            letter.chars().count() == 1
                && letter.chars().all(char::is_alphanumeric)
                && !question.contains(*t)
        })
        .collect::<HashSet<&str>>()
        .len();
    new.len() + one_letter_flags < MIN_NEW_WORDS
}

/// Words that open a question asking for a way, a thing, a place, a time or a reason.
#[rustfmt::skip]
const OPEN_QUESTION_WORDS: &[&str] = &[
    "how", "what", "what's", "which", "where", "why", "when", "who", "whom", "whose",
];

/// Whether the answer opens with a verdict ("Yes: set rebase.autoSquash to true.") where
/// the question asks how, what, which…: a yes or a no answers none of those, so the model
/// answered a question shaped like its worked example ("Can I …?"), not the one asked.
/// Seen on git-doc's report half at `high`: "how can I run the test suite automatically
/// after every commit is replayed during a rebase" answered with autosquash.
pub(super) fn verdict_for_an_open_question(answer: &str, question: &str) -> bool {
    let asking = crate::protocols::evidence::coverage::asking_sentence(question);
    let first = crate::protocols::support::first_word(&asking);
    let opens_with_verdict = ["Yes", "No"].iter().any(|v| {
        answer
            .strip_prefix(v)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', ',', '.', ';', '!']))
    });
    // "When searching the code base, can I see the whole function?" asks yes or no in
    // its main clause.
    let yes_no_clause = asking.split(", ").skip(1).any(|clause| {
        let word = clause.split_whitespace().next().unwrap_or_default();
        YES_NO_OPENINGS.contains(&word.to_lowercase().as_str())
    });
    opens_with_verdict && OPEN_QUESTION_WORDS.contains(&first.as_str()) && !yes_no_clause
}

/// Words that open a question asking yes or no.
#[rustfmt::skip]
const YES_NO_OPENINGS: &[&str] = &[
    "can", "could", "does", "do", "did", "is", "are", "was", "were", "will", "would",
    "should", "shall", "may", "might", "must", "has", "have", "had",
];

/// "Yes: Yes, the file can…": the model opens as its worked example does ("Yes: …") and
/// then as it would on its own; the verdict is said once.
pub(super) fn verdict_once(answer: String) -> String {
    for verdict in ["Yes", "No"] {
        let Some(rest) = answer
            .strip_prefix(verdict)
            .and_then(|r| r.strip_prefix(": "))
        else {
            continue;
        };
        let again = rest.strip_prefix(verdict).and_then(|r| {
            [", ", ": ", ". ", "; "]
                .iter()
                .find_map(|sep| r.strip_prefix(sep))
        });
        if let Some(claim) = again {
            return format!("{verdict}: {claim}");
        }
    }
    answer
}

/// The model's answer without a sentence whose words an earlier one already says
/// ("This feature is available in Postfix 2.7 and later. This feature is available in
/// Postfix 2.7."): the 0.5B model repeats itself to fill its answer, and a repeat adds
/// nothing but the look of a longer answer.
pub(super) fn without_repeated_sentences(answer: String, report: &mut Report) -> String {
    let words = |s: &str| -> HashSet<String> {
        s.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let sentences = crate::protocols::evidence::split_sentences(&answer);
    if sentences.len() < 2 || answer.contains("```") {
        return answer;
    }
    let mut kept: Vec<(&str, HashSet<String>)> = Vec::new();
    let mut repeated = false;
    for s in &sentences {
        let w = words(s);
        if !w.is_empty() && kept.iter().any(|k| w.is_subset(&k.1)) {
            report
                .notes
                .push(format!("reader repeated itself: {s:?} left out"));
            repeated = true;
        } else {
            kept.push((s, w));
        }
    }
    if repeated {
        kept.iter().map(|k| k.0).collect::<Vec<_>>().join(" ")
    } else {
        answer
    }
}

/// The answer without table header rows copied from a passage ("| Role | Allowed Access
/// |"): a passage shows a table's rows as its sentences, and the model copies a header
/// row as its answer or after it, though a header names columns and answers nothing. A
/// row counts as a header when each of its cells is a short label (at most four words,
/// no sentence punctuation); copied without its outer bars ("Role | Allowed Access"), it
/// counts where the passages read (`read`) show it as a row. What is left may be empty:
/// the rules then treat it as no answer.
pub(super) fn without_header_rows(answer: String, read: &str) -> String {
    static ROW: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\|(?:[^|\n]*\|)+").expect("a valid pattern")
    });
    let is_header = |row: &str| {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        cells.len() >= 2
            && cells.iter().all(|c| {
                !c.is_empty()
                    && c.split_whitespace().count() <= 4
                    && !c.contains(['.', ':', ';', '`', '?', '!'])
            })
    };
    let bare = answer.trim();
    if bare.contains('|') && is_header(bare) && read.contains(&format!("| {bare} |")) {
        return String::new();
    }
    if !ROW.find_iter(&answer).any(|m| is_header(m.as_str())) {
        return answer;
    }
    let kept = ROW.replace_all(&answer, |c: &regex::Captures| {
        if is_header(&c[0]) {
            String::new()
        } else {
            c[0].to_string()
        }
    });
    kept.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}
/// Whether an answer says what to do (`Reading::says_what_to_do`): it names something
/// specific to use (`checks::specific_tokens`; a link's target names where to read more,
/// not what to use, so it is left out first), or one of its sentences is an instruction.
pub(super) fn says_what_to_do(answer: &str) -> bool {
    static LINK_TARGET: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let target = LINK_TARGET
        .get_or_init(|| regex::Regex::new(r"\]\([^)\s]*\)|https?://\S+").expect("static regex"));
    let unlinked = target.replace_all(answer, "]");
    !crate::protocols::checks::specific_tokens(&unlinked).is_empty()
        || crate::protocols::support::answer_sentences(&unlinked)
            .iter()
            .any(|s| instructs(s))
}

/// Words a sentence opens with that are not a verb in its base form.
#[rustfmt::skip]
const NOT_BASE_VERBS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "it", "its", "they", "them", "there",
    "here", "he", "she", "we", "i", "my", "our", "your", "their", "his", "her", "in", "on",
    "at", "for", "from", "by", "with", "of", "into", "over", "under", "about", "as", "after",
    "before", "since", "because", "although", "though", "if", "when", "while", "where",
    "which", "who", "what", "how", "why", "whether", "and", "but", "or", "so", "yes", "no",
    "not", "only", "also", "just", "each", "every", "all", "some", "any", "both", "either",
    "neither", "one", "none", "most", "many", "much", "more", "less", "other", "such", "same",
    "another", "then", "thus", "however", "instead", "otherwise", "be", "is", "are", "was",
    "were", "been", "can", "could", "will", "would", "should", "may", "might", "must",
    "shall", "has", "have", "had", "do", "does", "did", "default", "note",
];

/// Whether a sentence tells the reader what to do: after a purpose clause ("To swap a
/// shift, …") it opens with a verb in its base form ("agree it with a colleague", "Run
/// …") or with "you can / should / need to …". "Defaults to sending them to a system
/// index." and "Reads messages from the kernel log …" describe instead.
fn instructs(sentence: &str) -> bool {
    let s = sentence.trim();
    let s = match s.strip_prefix("To ") {
        Some(rest) => rest.split_once(", ").map_or(s, |(_, after)| after),
        None => s,
    };
    let words: Vec<String> = s
        .split_whitespace()
        .take(2)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    let Some(first) = words.first() else {
        return false;
    };
    if first == "you" {
        return words.get(1).is_some_and(|w| {
            [
                "can", "should", "need", "must", "may", "have", "could", "will",
            ]
            .contains(&w.as_str())
        });
    }
    // "Reads", "Defaults", "Added", "Using", "Usually" are not a base form; "Pass" is.
    let inflected = ["ed", "ing", "ly"].iter().any(|end| first.ends_with(end))
        || (first.ends_with('s') && !first.ends_with("ss"));
    first.len() > 1
        && first.chars().all(|c| c.is_ascii_alphabetic())
        && !NOT_BASE_VERBS.contains(&first.as_str())
        && !inflected
}
