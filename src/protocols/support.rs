//! Every sentence of a written answer held to the text the model read. A sentence stays
//! only if the text supports it by rule:
//! - its specific tokens (paths, commands, flags, settings, numbers, ratios) occur there;
//! - at least `MIN_WORD_SHARE` of its content words occur there (word stems, so
//!   "revisions" finds "revision");
//! - it does not turn around the sentence of the text it rests on: where that sentence
//!   is negated ("… is not a good choice") the answer's may not be affirmative, and the
//!   other way round. The reader model's own yes/no judgements are near chance, so
//!   polarity is read by rule;
//! - it does not join one passage's words with another's into a claim neither makes
//!   (`joined.rs`).
//!
//! Sentences of the documentation itself (extractive answers, quotes) pass by
//! construction; the check is for text a model wrote.

use std::collections::HashSet;

use regex::Regex;
use serde::Serialize;

use super::checks::invented_tokens;
use super::evidence::Evidence;
use super::evidence::{content_words, line_sentences};
use super::grounded::{extractive_answer, join_sentences};
use super::Report;
use crate::kb::parse::excerpt;

mod cut;
mod invented_names;
mod joined;
mod links;
mod read_text;
pub use cut::without_cut_sentence;
use joined::joins_passages;
use read_text::ReadText;

/// Share of a sentence's content words (stemmed; `GENERAL` words aside) the read text
/// must hold. Chosen on git-doc's tuning half: 0.8 removed correct answers that join the
/// passage's words with a few of their own ("use git clean -d to remove them as well").
pub const MIN_WORD_SHARE: f64 = 0.7;

/// Words any answer may use without the text saying them: answer words, pronouns,
/// quantifiers, linking adverbs and the most general verbs. What a sentence claims is in
/// its other words.
pub(crate) const GENERAL: &[&str] = &[
    "yes",
    "ok",
    "okay",
    "them",
    "they",
    "those",
    "here",
    "now",
    "just",
    "only",
    "also",
    "well",
    "up",
    "out",
    "off",
    "over",
    "back",
    "down",
    "more",
    "most",
    "less",
    "any",
    "all",
    "some",
    "each",
    "every",
    "both",
    "other",
    "same",
    "such",
    "very",
    "much",
    "many",
    "one",
    "ones",
    "first",
    "then",
    "again",
    "still",
    "already",
    "instead",
    "rather",
    "whether",
    "without",
    "within",
    "after",
    "before",
    "while",
    "because",
    "since",
    "but",
    "would",
    "could",
    "might",
    "must",
    "may",
    "need",
    "needs",
    "want",
    "make",
    "makes",
    "get",
    "gets",
    "run",
    "runs",
    "set",
    "sets",
    "do",
    "done",
    "see",
    "way",
    "thing",
    "things",
    "like",
    "example",
    "case",
    "order",
    "able",
    "sure",
    "note",
    "simply",
    "directly",
    "following",
];

/// Share of a sentence's content words one sentence of the text must hold for the answer
/// to restate it, and so for their polarities to be compared: a contradiction says the
/// same thing the other way round. At 0.5, answers that merely shared a topic with a
/// negated sentence were taken for contradictions (git-doc's tuning half: 3 of 3).
const REST_ON_SHARE: f64 = 0.7;

/// Content words an answer sentence needs for its polarity to be compared: a fragment
/// ("90 days") asserts nothing a negation could turn around.
const MIN_POLARITY_WORDS: usize = 3;

/// A sentence with fewer content words says too little to check ("Yes.", "See below:").
const MIN_CHECKED_WORDS: usize = 2;

/// A sentence taken out of an answer, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Removed {
    pub sentence: String,
    pub why: String,
}

/// An answer after the check: the sentences kept, in order, and those removed.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    pub kept: Vec<String>,
    pub removed: Vec<Removed>,
}

/// What introduces the documentation's sentences when none of the model's was supported.
pub const CLOSEST_INTRO: &str =
    "The passages found do not state this directly; the closest the documentation comes:";

/// `answer` with the sentences `read` does not support removed (each noted in `report`,
/// and listed in `report.removed`); when none is left, `closest` (the documentation's
/// best sentences), introduced as such. Returns the text and whether any of the model's
/// sentences was kept.
pub fn hold_to_read(
    answer: String,
    (read, question): (&str, &str),
    closest: impl FnOnce() -> String,
    report: &mut Report,
) -> (String, bool) {
    let (answer, foreign) = links::without_foreign_targets(&answer, read);
    if !foreign.is_empty() {
        report.notes.push(format!(
            "link targets not in the passages read, unlinked: {}",
            foreign.join(", ")
        ));
    }
    let (answer, names) = invented_names::without_invented_names(&answer, read, question);
    if !names.is_empty() {
        report.notes.push(format!(
            "names neither the passages read nor the question use, dropped: {}",
            names.join(", ")
        ));
    }
    let checked = check_answer_for(&answer, read, question);
    for r in &checked.removed {
        report.notes.push(format!(
            "removed from the answer: {:?}: {}",
            r.sentence, r.why
        ));
    }
    report.removed.extend(checked.removed);
    if checked.kept.is_empty() {
        let closest = closest();
        let text = if closest.is_empty() {
            closest
        } else {
            format!("{CLOSEST_INTRO}\n\n{closest}")
        };
        return (text, false);
    }
    let kept: Vec<&str> = checked.kept.iter().map(String::as_str).collect();
    (join_sentences(&kept), true)
}

/// `hold_to_read` for a free-text answer: held to what the model was shown
/// (`report.shown_to_model`), the extractive answer's sentences as the closest.
pub fn hold_to_shown(answer: String, ev: &Evidence, report: &mut Report) -> String {
    let read = report.shown_to_model.clone();
    let closest = || {
        let best: Vec<&str> = extractive_answer(ev)
            .iter()
            .map(|s| s.text.as_str())
            .collect();
        join_sentences(&best)
    };
    hold_to_read(answer, (&read, &ev.question), closest, report).0
}

/// Checks each sentence of `answer` against `read` (what the model was shown).
pub fn check_answer(answer: &str, read: &str) -> Checked {
    check_answer_for(answer, read, "")
}

/// `check_answer` for an answer to `question`, whose words the answer may repeat.
pub fn check_answer_for(answer: &str, read: &str, question: &str) -> Checked {
    let read = ReadText::new(read, question);
    let mut checked = Checked::default();
    let mut after_removed = false;
    for sentence in answer_sentences(answer) {
        let why = unsupported(&sentence, &read).or_else(|| {
            (after_removed && refers_back(&sentence))
                .then(|| "it refers back to the sentence removed before it".to_string())
        });
        after_removed = why.is_some();
        match why {
            Some(why) => checked.removed.push(Removed { sentence, why }),
            None => checked.kept.push(sentence),
        }
    }
    checked
}

/// Words that open a sentence resting on the one before it ("This command detaches…",
/// "It also…", "Then…"): with that sentence removed, such a sentence says something of
/// nothing, or of what the removed one claimed (git-doc's git-070).
const REFERRING_OPENERS: &[&str] = &[
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "it's",
    "they",
    "them",
    "their",
    "then",
    "also",
    "otherwise",
    "so",
    "such",
    "here",
    "which",
    "both",
];

/// Whether a sentence opens by pointing at the sentence before it.
fn refers_back(sentence: &str) -> bool {
    REFERRING_OPENERS.contains(&first_word(sentence).as_str())
}

/// A text's first word, lowercased, without the punctuation around it.
pub fn first_word(text: &str) -> String {
    text.split_whitespace()
        .next()
        .unwrap_or_default()
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
}

/// An answer's sentences, nothing dropped (`split_sentences` drops fragments too short
/// for evidence, such as "Use 2:3."): a fenced code block is one unit with the line that
/// introduces it; prose lines are cut as evidence lines are (`line_sentences`).
pub fn answer_sentences(answer: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut block: Option<String> = None;
    for line in answer.lines() {
        if let Some(b) = block.as_mut() {
            b.push('\n');
            b.push_str(line);
            if crate::kb::parse::fence_of(line).is_some() {
                out.push(block.take().expect("in a block"));
            }
            continue;
        }
        if crate::kb::parse::fence_of(line).is_some() {
            // The sentence introducing the block ends with ':' or mid-sentence.
            let intro = match out.last() {
                Some(last) if !last.ends_with(['.', '?', '!']) => out.pop(),
                _ => None,
            };
            block = Some(match intro {
                Some(i) => format!("{i}\n{line}"),
                None => line.to_string(),
            });
            continue;
        }
        out.extend(line_sentences(line).into_iter().map(String::from));
    }
    out.extend(block);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// The stems of a text's content words; a hyphenated word also stands for its parts
/// ("keep-index" holds "keep").
pub fn stems_of(text: &str) -> HashSet<String> {
    content_words(text)
        .iter()
        .flat_map(|w| {
            let parts: Vec<String> = w.split('-').filter(|p| p.len() >= 2).map(stem).collect();
            std::iter::once(stem(w)).chain(parts)
        })
        .collect()
}

/// Why `sentence` is not supported by the read text, or None when it is.
fn unsupported(sentence: &str, read: &ReadText) -> Option<String> {
    if let Some(file) = super::prose_commands::file_run_as_command(sentence) {
        return Some(format!(
            "it hands over {file}, a file to read, as a command to run"
        ));
    }
    let mut missing = invented_tokens(sentence, read.text);
    missing.extend(read.foreign_script_words(sentence));
    for ratio in ratios(sentence) {
        if !read.lowered.contains(&ratio) && !missing.contains(&ratio) {
            missing.push(ratio);
        }
    }
    if !missing.is_empty() {
        return Some(format!("not in the passages read: {}", missing.join(", ")));
    }
    let words: Vec<String> = content_words(sentence)
        .into_iter()
        .filter(|w| !GENERAL.contains(&w.as_str()))
        .collect();
    if words.len() < MIN_CHECKED_WORDS {
        return None;
    }
    let absent: Vec<&String> = words
        .iter()
        .filter(|w| !read.stems.contains(&stem(w)))
        .collect();
    let share = 1.0 - absent.len() as f64 / words.len() as f64;
    if share < MIN_WORD_SHARE {
        let mut named: Vec<&str> = Vec::new();
        for w in &absent {
            if !named.contains(&w.as_str()) {
                named.push(w);
            }
        }
        return Some(format!(
            "{:.0} % of its words are in the passages read; not there: {}",
            share * 100.0,
            named.join(", ")
        ));
    }
    if let Some(why) = joins_passages(&words, &read.passages, &read.asked) {
        return Some(why);
    }
    let stems: HashSet<String> = words.iter().map(|w| stem(w)).collect();
    let (best, overlap) = read
        .sentences
        .iter()
        .map(|r| {
            let theirs: HashSet<String> = content_words(r).iter().map(|w| stem(w)).collect();
            let shared = stems.intersection(&theirs).count() as f64 / stems.len() as f64;
            (r, shared)
        })
        .fold(
            (None, 0.0),
            |acc, (r, s)| if s > acc.1 { (Some(r), s) } else { acc },
        );
    if let Some((ours, theirs)) = best
        .filter(|_| overlap >= REST_ON_SHARE)
        .and_then(|rest| invented_names::swapped_name(sentence, rest))
    {
        return Some(format!(
            "it says of {ours} what the passage it rests on says of {theirs}"
        ));
    }
    match best {
        Some(rest)
            if words.len() >= MIN_POLARITY_WORDS
                && overlap >= REST_ON_SHARE
                && negated(sentence) != negated(rest) =>
        {
            Some(format!(
                "it turns around the passage it rests on: \"{}\"",
                excerpt(rest, 120)
            ))
        }
        _ => None,
    }
}

/// Words that open a condition: a negation inside one asserts nothing negative of the
/// main clause.
const CONDITIONS: [&str; 4] = ["if ", "unless ", "when ", "whether "];

/// Whether a sentence's main clause is negated: a negating word, or a verb with "n't",
/// outside a leading condition ("If this option is not given, …" asserts nothing
/// negative) and outside a trailing one ("… is only omitted on the last line if the file
/// doesn't end in a newline").
pub fn negated(sentence: &str) -> bool {
    let lower = prose_of(sentence).trim_start().to_lowercase();
    let main = match CONDITIONS.iter().find(|c| lower.starts_with(*c)) {
        Some(_) => lower.split_once(',').map(|(_, rest)| rest).unwrap_or(""),
        None => &lower,
    };
    let main = CONDITIONS
        .iter()
        .filter_map(|c| main.find(&format!(" {c}")))
        .min()
        .map_or(main, |at| &main[..at]);
    negation_in(main)
}

/// A sentence without its code: a code block's lines and code spans are not prose, and
/// their words ("py3-none-any.whl", `--no-edit`) negate nothing.
fn prose_of(sentence: &str) -> String {
    let mut prose = String::new();
    let mut in_block = false;
    for line in sentence.lines() {
        if crate::kb::parse::fence_of(line).is_some() {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    prose.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

fn negation_in(clause: &str) -> bool {
    const NEGATIONS: &[&str] = &[
        "not", "no", "never", "cannot", "neither", "nor", "none", "nothing", "nobody", "nowhere",
    ];
    // A hyphenated token is a flag or a name ("--no-dual-color", "py3-none-any.whl"),
    // whether or not it was written as code.
    clause
        .split_whitespace()
        .filter(|token| !token.contains('-'))
        .flat_map(|token| token.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’'))
        .map(|w| w.to_lowercase().replace('’', "'"))
        .any(|w| NEGATIONS.contains(&w.as_str()) || w.ends_with("n't"))
}

/// Ratios and times written with a colon or slash between numbers ("2:3", "1/4").
fn ratios(sentence: &str) -> Vec<String> {
    static RATIO: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RATIO.get_or_init(|| Regex::new(r"\b\d+(?:\s?[:/]\s?\d+)+\b").expect("static regex"));
    re.find_iter(sentence)
        .map(|m| m.as_str().replace(' ', "").to_lowercase())
        .collect()
}

/// A word's stem for matching: a plural "s" dropped, then at most the first
/// `STEM_CHARS` characters ("revisions" → "revis", "changed" and "changing" → "chang"):
/// crude, but an answer's inflections of the text's words match, and invented content
/// words rarely share five first letters with the passage's.
pub fn stem(word: &str) -> String {
    let mut w = word.to_lowercase();
    if w.chars().count() >= 4 && w.ends_with('s') && !w.ends_with("ss") {
        w.pop();
    }
    w.chars().take(STEM_CHARS).collect()
}

const STEM_CHARS: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    const PASSAGE: &str = "Prometheus values reliability. You can always view what statistics \
        are available about your system, even under failure conditions. If you need 100% \
        accuracy, such as for per-request billing, Prometheus is not a good choice as the \
        collected data will likely not be detailed and complete enough.";

    #[test]
    fn a_sentence_that_turns_its_passage_around_is_removed() {
        let c = check_answer(
            "Yes: Prometheus is a good choice for per-request billing data.",
            PASSAGE,
        );
        assert!(c.kept.is_empty(), "{c:?}");
        assert!(c.removed[0].why.contains("turns around"), "{c:?}");
        // The same sentence with the passage's polarity stays.
        let c = check_answer(
            "No: for per-request billing, Prometheus is not a good choice.",
            PASSAGE,
        );
        assert!(c.removed.is_empty(), "{c:?}");
    }

    #[test]
    fn invented_content_is_removed_and_supported_paraphrase_kept() {
        let c = check_answer(
            "You should use 2:3. This is because the levain is a high-carb source that \
             requires more water.",
            "Metric names should have a suffix describing the unit, in plural form.",
        );
        assert!(c.kept.is_empty(), "{c:?}");
        assert!(c.removed[0].why.contains("2:3"), "{c:?}");
        assert!(c.removed[1].why.contains("levain"), "{c:?}");
        let read = "Kubernetes keeps the previous ReplicaSets of each Deployment, so rolling \
            back a deployment is a single command: `kubectl rollout undo deployment/api`.";
        let c = check_answer(
            "Rolling back reverts the deployment to its previous ReplicaSet: run \
             `kubectl rollout undo deployment/api`.",
            read,
        );
        assert!(c.removed.is_empty(), "{c:?}");
    }

    /// The reader's Chinese at the end of an English sentence, which the share of words
    /// let through: a script the passages and the question do not use is not theirs.
    #[test]
    fn a_sentence_ending_in_a_script_nobody_used_is_removed() {
        let read = "To enable the rewrite engine in this context, you need to set \
            `RewriteEngine On`. These options cannot be set in a distributed configuration \
            file unless AllowOverride permits it in the server configuration.";
        let c = check_answer(
            "You need to set `RewriteEngine On`. These options cannot be set in a \
             distributed configuration file unless AllowOverride permits it in the server配置.",
            read,
        );
        assert_eq!(c.kept.len(), 1, "{c:?}");
        assert!(c.removed[0].why.contains("server配置"), "{c:?}");
        // Where the passages are in that script, it is theirs.
        let c = check_answer("配置文件在 /etc 下。", "配置文件在 /etc 下。");
        assert!(c.removed.is_empty(), "{c:?}");
    }

    /// The sample KB's own passages (examples/kb), as the reader is shown them.
    const ALERTS: &str = "Staging alerts never page; they all go to `#lighthouse-staging`.";
    const RESTORE: &str = "A restore never overwrites the running cluster. It creates a new \
        cluster from the backup, and you then switch Lighthouse to it.";

    #[test]
    fn sample_kb_planted_negated_and_paraphrased_sentences() {
        let read = format!("[1] monitoring/alerts.md § Routing\n{ALERTS}\n[2] operations/backups-and-restore.md § Restoring\n{RESTORE}");
        // Planted: content the passages do not hold (a duration, a role).
        let c = check_answer(
            "A restore creates a new cluster. It takes about 45 minutes and needs the \
             backup-admin role.",
            &read,
        );
        assert_eq!(c.kept, vec!["A restore creates a new cluster."], "{c:?}");
        assert!(c.removed[0].why.contains("45 minutes"), "{c:?}");
        // Negated: the passage's verdict turned around.
        for wrong in [
            "Yes: staging alerts page, and they all go to `#lighthouse-staging`.",
            "A restore overwrites the running cluster from the backup.",
        ] {
            let c = check_answer(wrong, &read);
            assert!(c.kept.is_empty(), "{wrong}: {c:?}");
            assert!(c.removed[0].why.contains("turns around"), "{c:?}");
        }
        // Paraphrased, and supported: kept.
        let c = check_answer(
            "Alerts from staging don't page anyone; they go to `#lighthouse-staging`. \
             Restoring creates a new cluster from the backup rather than overwriting the \
             running one.",
            &read,
        );
        assert!(c.removed.is_empty(), "{c:?}");
        assert_eq!(c.kept.len(), 2);
    }

    #[test]
    fn an_answer_cut_at_its_bound_loses_its_unfinished_last_sentence() {
        let pad = |s: &str, bound: usize| {
            let mut a = "Run `sudo vigr` for `/etc/group`.".to_string();
            while a.chars().count() + s.chars().count() + 1 < bound {
                a.push_str(" It edits the group file.");
            }
            format!("{a} {s}")
        };
        let mut report = Report::default();
        for cut in [
            "Alternatively, add users during authentication by adding `",
            "The range is enclosed in a brace pair (e.g.",
            "The folded commit will be attributed to the **<",
            "Use the following:\n```\n[gitcvs]\n   authdb = /etc/cvsserver/passwd",
            "Set it to",
            "Here is how to loop over them in order:```\nfor key in sorted(d",
        ] {
            let answer = pad(cut, 120);
            let kept = without_cut_sentence(answer.clone(), 120, &mut report);
            assert!(!kept.contains(cut.lines().next().unwrap()), "{kept:?}");
            assert!(
                kept.starts_with("Run `sudo vigr` for `/etc/group`."),
                "{kept:?}"
            );
        }
        // The inline fence's sentence goes with the code cut after it.
        assert_eq!(report.removed.len(), 7, "{:?}", report.removed);
        // A finished last sentence at the bound, and an unfinished one below it, stay.
        let whole = pad("It needs a new login (or `exec newgrp`).", 120);
        assert_eq!(without_cut_sentence(whole.clone(), 120, &mut report), whole);
        let short = "Set it to".to_string();
        assert_eq!(without_cut_sentence(short.clone(), 120, &mut report), short);
        assert_eq!(report.removed.len(), 7);
        let intro = "Run `sudo vigr` for `/etc/group`. Here is how you can do it:";
        assert_eq!(
            without_cut_sentence(intro.to_string(), 300, &mut report),
            "Run `sudo vigr` for `/etc/group`."
        );
        // The cut item of a numbered list leaves no number behind.
        let steps = pad(
            "1. Boot from a rescue medium. 2. Mount the root partition read-wr",
            120,
        );
        let kept = without_cut_sentence(steps, 120, &mut report);
        assert!(kept.ends_with("1. Boot from a rescue medium."), "{kept:?}");
        // A template's fragment that trails off, at any length; an ellipsis in code stays.
        let fragment = "Run `sudo vigr` for `/etc/group`. $access_map_reject_code optional text...";
        assert_eq!(
            without_cut_sentence(fragment.to_string(), 300, &mut report),
            "Run `sudo vigr` for `/etc/group`."
        );
        let code = "Run `postmulti -i postfix-out -e init ...`.".to_string();
        assert_eq!(without_cut_sentence(code.clone(), 300, &mut report), code);
        // Closed early on a copied double quote: a code span left open, at any length.
        let early = "Run `sudo vigr` for `/etc/group`. Or add users at login by adding `";
        assert_eq!(
            without_cut_sentence(early.to_string(), 300, &mut report),
            "Run `sudo vigr` for `/etc/group`."
        );
    }

    #[test]
    fn a_sentence_leaning_on_a_removed_one_goes_with_it() {
        let read = format!("{RESTORE} The restore takes the backup's newest snapshot.");
        // The first sentence invents a flag; the second is supported on its own words but
        // says "this command" of the invented one (git-doc's git-070).
        let c = check_answer(
            "Run the restore with --in-place to overwrite the running cluster. This creates              a new cluster from the backup.",
            &read,
        );
        assert!(c.kept.is_empty(), "{c:?}");
        assert!(c.removed[1].why.contains("refers back"), "{c:?}");
        // After a kept sentence, the same pointer is fine.
        let c = check_answer(
            "A restore creates a new cluster from the backup. It never overwrites the              running cluster.",
            &read,
        );
        assert!(c.removed.is_empty(), "{c:?}");
        assert!(refers_back("It's the newest one."));
        assert!(!refers_back("There is a snapshot."));
    }

    #[test]
    fn answers_split_into_sentences_keeping_code_with_its_introduction() {
        let a = "Use 2:3. Run `git stash pop. Then` this:\n```sh\ngit stash\n```\nDone? Yes.";
        assert_eq!(
            answer_sentences(a),
            vec![
                "Use 2:3.",
                "Run `git stash pop. Then` this:\n```sh\ngit stash\n```",
                "Done?",
                "Yes."
            ]
        );
    }

    #[test]
    fn negation_and_stems() {
        assert!(negated("Prometheus is not a good choice."));
        assert!(negated("It doesn't retry."));
        assert!(negated("You can’t change it later."));
        assert!(!negated("Notice the nothingness of notes."));
        assert!(!negated(
            "If this option is not specified, the time defaults to 90 days."
        ));
        assert!(negated(
            "If you need accuracy, such as for billing, it is not a good choice."
        ));
        assert!(!negated(
            "The newline is only omitted on the last line if the file doesn't end in one."
        ));
        assert!(negated("It cannot be set unless AllowOverride permits it."));
        // Code negates nothing.
        assert!(!negated(
            "Give the version after `==`:\n```\n$ pip install requests-2.6.0-py3-none-any.whl\n```"
        ));
        assert!(!negated("Run `git commit --no-edit` to keep the message."));
        assert!(!negated(
            "Yes: set --no-dual-color to color all lines by the outer diff."
        ));
        assert_eq!(stem("revisions"), "revis");
        assert_eq!(stem("changed"), stem("changing"));
        assert_eq!(stem("pods"), stem("pod"));
        assert_eq!(stem("class"), "class");
        assert_ne!(stem("revert"), stem("revision"));
    }
}
