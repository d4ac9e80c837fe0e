//! The reader answer mode: the model reads the best retrieved chunks, numbered, then, in
//! this order,
//! 1. lists the numbers of the passages that answer the question (`evidence`: an array of
//!    integers within the listing, so only retrieved text can be quoted),
//! 2. writes a short answer from those passages,
//! 3. says whether they answer it (`answers_question`: yes / partly / no) — last, because
//!    a verdict asked for before the model has read or written anything comes out
//!    constant.
//!
//! Quoting by number rather than by copying keeps the grammar small and the generation
//! short. Then the rules: nothing quoted means no answer; every path, command, flag, URL
//! and number in the answer must occur in the quoted chunks, otherwise the answer is
//! replaced by their best sentences (`Reading::replaced` says which tokens were missing)
//! and a "yes" becomes "partly"; an answer that adds nothing to the question ("Yes"), or
//! opens with a yes or a no to a how/what/which question, is replaced the same way; the documentation's sentences that best support the answer (the
//! quoted passages' best, alternating with those the extractive mode would answer with)
//! are quoted after it with their file and section, and cited. On git-doc's tuning half the 0.5B model's verdict
//! did not separate answered from unanswered questions, so callers use it for confidence
//! only, never to refuse.

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use super::checks::invented_tokens;
use super::evidence::{Evidence, Sentence};
use super::followup;
use super::grounded::extractive_answer;
use super::shared::llm_object_watched;
use super::support;
use super::watch::Watch;
use super::Report;
use crate::llm::Llm;

mod form;
mod passages;
use form::{
    says_nothing, says_what_to_do, verdict_for_an_open_question, verdict_once, without_header_rows,
    without_repeated_sentences,
};
use passages::{fallback_sentences, heading_asking, quote_what_the_answer_names, quoted_context};
pub use passages::{listing, passages};

/// Retrieved chunks shown to the model, best first (`evidence::PASSAGES`).
pub use super::evidence::PASSAGES;
/// Characters of each passage's sentences the model reads. Less text, fewer distractions
/// and sooner first words; chosen on git-doc's tuning half against whole chunks and 300
/// characters (docs/CHANGELOG.md).
pub const PASSAGE_CHARS: usize = 450;
/// Passages an answer may quote.
pub const MAX_QUOTES: usize = 2;
/// Longest answer the model may write (characters).
pub const MAX_ANSWER_CHARS: usize = 300;
/// Sentences of the quoted passages that replace an answer the rules refuse.
const FALLBACK_SENTENCES: usize = 2;
/// Sentences of the documentation quoted after the answer.
const SUPPORTING_QUOTES: usize = 2;
/// Shortest retrieved sentence whose appearance in an answer makes its section a source
/// ("Yes." or a bare option name is no quotation).
const MIN_CITED_SENTENCE_CHARS: usize = 20;

/// The reader's verdict on its quoted passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The passages state the answer.
    Answers,
    /// They answer part of the question.
    Partly,
    /// No passage answers it.
    DoesNotAnswer,
}

/// What the reader made of the evidence.
#[derive(Debug, Clone)]
pub struct Reading {
    pub verdict: Verdict,
    /// The quoted passages (indices into `Evidence::hits`), in the model's order.
    pub quoted: Vec<usize>,
    /// The quoted passages, then the hits of the supporting sentences after the answer.
    pub cited: Vec<usize>,
    /// The answer text (sentences of the quoted passages when the model's was refused).
    pub answer: String,
    /// Specific tokens of the model's answer the quotes lack (the answer was replaced).
    pub replaced: Vec<String>,
    /// The model wrote an answer and the passages read support none of its sentences:
    /// the answer is the documentation's closest sentences (`support::CLOSEST_INTRO`).
    pub nothing_supported: bool,
    /// The answer, before the documentation's quotes, says what to do: it names a
    /// command, option, setting, path or value, or gives an instruction
    /// (`form::says_what_to_do`).
    pub says_what_to_do: bool,
}

impl Reading {
    /// Whether the question is out of domain after all, now that the reader has written
    /// nothing its passages support (`Evidence::out_of_domain_after_reading`); if so the
    /// report's decision says what decided it.
    pub fn out_of_domain(&self, ev: &Evidence, report: &mut Report) -> bool {
        if !(self.nothing_supported && ev.out_of_domain_after_reading()) {
            return false;
        }
        report.decision = format!(
            "out of domain: {}; the passages supported nothing the reader wrote, and the \
             question is {}",
            report.decision,
            ev.why_out_of_domain_after_reading()
        );
        true
    }
}

/// How the answer string may not end: after a space, an opening bracket, a comma, `=` or
/// `-`, where a sentence or a command is cut. A `"` the model copies from a passage
/// ("taken from the "", "patch configmap … -p '{"") would otherwise close the JSON
/// string mid-sentence (3 of the three eval sets' 239 answers); here it can only be
/// written escaped, as part of the answer. A command at the end needs no full stop.
const ANSWER_ENDS: &str = r#"^[\s\S]*[^\s(\[{<,=-]$"#;

/// The decoder schema for `n` passages.
pub fn schema(n: usize) -> serde_json::Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["evidence", "answer", "answers_question"],
        "properties": {
            "evidence": {"type": "array", "minItems": 1, "maxItems": MAX_QUOTES,
                         "items": {"type": "integer", "minimum": 1, "maximum": n.max(1)}},
            "answer": {"type": "string", "maxLength": MAX_ANSWER_CHARS, "pattern": ANSWER_ENDS},
            "answers_question": {"enum": ["yes", "partly", "no"]}
        }
    })
}

/// The reader's instructions, with two worked examples (about a made-up tool, so that
/// nothing of any evaluated KB is in the prompt). The system prompt is the same for every
/// question, so its KV cache is reused and the examples cost no time after the first.
const SYSTEM: &str = r#"You answer questions about technical documentation using only the numbered passages given. Reply with JSON:
- "evidence": the numbers of the passages that answer the question, best first;
- "answer": one or two full sentences that answer the question from those passages, naming the exact command, option, setting or file to use, copied exactly as written; never just "yes" or "no";
- "answers_question": "yes" if the passages answer it, "partly" if they answer only part of it, "no" if they are about something else.

Example 1.
Passages:
[1] backup.md § Restoring
To restore a single file, run bk restore --path <file> <snapshot>. A restore overwrites the existing file unless --keep is given.

[2] backup.md § Scheduling
Backups run nightly at 02:00. Set schedule.time in bk.toml to change the time.

Question: How do I get one file back from last night's backup without clobbering my current copy?
{"evidence": [1], "answer": "Run bk restore --path <file> <snapshot> with --keep, so the existing file is not overwritten.", "answers_question": "yes"}

Example 2.
Passages:
[1] backup.md § Scheduling
Backups run nightly at 02:00. Set schedule.time in bk.toml to change the time.

[2] backup.md § Retention
Snapshots older than 30 days are deleted. Set retention.days to keep them longer.

Question: Can I keep snapshots for longer than a month?
{"evidence": [2], "answer": "Yes: set retention.days above 30; by default snapshots older than 30 days are deleted.", "answers_question": "yes"}"#;

/// Runs the reader on the evidence and applies the rules to what it wrote.
pub fn read(
    llm: &mut Llm,
    ev: &Evidence,
    report: &mut Report,
    watch: &mut Watch,
) -> Result<Reading> {
    let passages = passages(ev);
    report.shown_to_model = listing(ev, &passages);
    // A follow-up is asked in its own words, with what the conversation was about
    // apart: the reader answers the question, not the carried words.
    let question = match followup::carried_words(&ev.question) {
        Some(about) => format!(
            "{} (a follow-up; the conversation is about: {about})",
            followup::own_words(&ev.question)
        ),
        None => ev.question.clone(),
    };
    let user = format!(
        "Passages:\n{}\n\nQuestion: {question}",
        report.shown_to_model
    );
    let schema = schema(passages.len());
    let v = llm_object_watched(llm, SYSTEM, &user, schema, report, ("answer", watch))?;
    report.notes.push(format!("reader wrote {v}"));
    let mut quoted: Vec<usize> = Vec::new();
    for n in v["evidence"].as_array().into_iter().flatten() {
        if let Some(&h) = n
            .as_u64()
            .and_then(|n| passages.get((n as usize).wrapping_sub(1)))
        {
            if !quoted.contains(&h) {
                quoted.push(h);
            }
        }
    }
    let said = match v["answers_question"].as_str() {
        Some("yes") => Verdict::Answers,
        Some("partly") => Verdict::Partly,
        _ => Verdict::DoesNotAnswer,
    };
    let asking_heading = (said != Verdict::Answers)
        .then(|| heading_asking(ev, &quoted))
        .flatten()
        .map(|h| ev.hits[h].section.clone());
    let said = match &asking_heading {
        Some(heading) => {
            report.notes.push(format!(
                "reader said {said:?}, but its quoted section \"{heading}\" asks the question \
                 itself: taken as answering it"
            ));
            Verdict::Answers
        }
        None => said,
    };
    let model_answer = v["answer"].as_str().unwrap_or_default().trim().to_string();
    let model_answer = support::without_cut_sentence(model_answer, MAX_ANSWER_CHARS, report);
    let model_answer = verdict_once(model_answer);
    let model_answer = without_repeated_sentences(model_answer, report);
    let copied = model_answer.clone();
    let model_answer = without_header_rows(model_answer, &report.shown_to_model);
    if model_answer != copied {
        report.notes.push(format!(
            "reader's answer copied a table header row: left out ({copied:?})"
        ));
    }
    if said == Verdict::Answers {
        quote_what_the_answer_names(ev, &passages, &model_answer, &mut quoted, report);
    }
    let context = quoted_context(ev, &quoted);
    let fallback = || fallback_sentences(ev, &quoted, FALLBACK_SENTENCES);
    let read = report.shown_to_model.clone();
    let (verdict, mut answer, replaced, nothing_supported) = apply_rules(
        said,
        quoted.len(),
        model_answer,
        (followup::own_words(&ev.question), &context, &read),
        fallback,
        report,
    );
    // The documentation's own words after the answer, with their source: the best
    // sentence of the quoted passages, then the best of every retrieved chunk (what the
    // extractive mode answers with), alternating. The quoted passages hold the answer more
    // often; the extractive sentence catches a passage the model did not quote. Replayed
    // on git-doc's tuning half (same readings, two quotes): keyword share 0.42 with the
    // extractive sentences first, 0.49 alternating; cited file 0.84 either way, 0.82 with
    // the quoted passages' sentences only.
    let says_what_to_do = says_what_to_do(&answer);
    if let Some(heading) = asking_heading {
        report.decision += &format!("; the quoted section \"{heading}\" asks the question");
    }
    let mut cited = quoted.clone();
    // A retrieved sentence the answer repeats word for word is cited where it was found
    // (an option shared by two manual pages is often quoted from the other one).
    for s in &ev.sentences {
        if s.text.chars().count() >= MIN_CITED_SENTENCE_CHARS
            && answer.contains(&s.text)
            && !cited.contains(&s.hit)
        {
            cited.push(s.hit);
        }
    }
    let of_quoted = ev.sentences.iter().filter(|s| quoted.contains(&s.hit));
    let extractive = extractive_answer(ev);
    let supports: Vec<&Sentence> = alternate(of_quoted, extractive)
        .filter(|s| !answer.contains(&s.text))
        .fold(Vec::new(), |mut acc: Vec<&Sentence>, s| {
            if acc.len() < SUPPORTING_QUOTES && !acc.iter().any(|a| a.text == s.text) {
                acc.push(s);
            }
            acc
        });
    for s in supports {
        let h = &ev.hits[s.hit];
        answer = format!(
            "{answer}\n\n{}",
            supporting_quote(&h.file, &h.section, &s.text)
        );
        if !cited.contains(&s.hit) {
            cited.push(s.hit);
        }
    }
    Ok(Reading {
        verdict,
        quoted,
        cited,
        answer,
        replaced,
        nothing_supported,
        says_what_to_do,
    })
}

/// `a`'s first, `b`'s first, `a`'s second, …; the longer one's rest at the end.
fn alternate<'a>(
    a: impl Iterator<Item = &'a Sentence>,
    b: impl IntoIterator<Item = &'a Sentence>,
) -> impl Iterator<Item = &'a Sentence> {
    let mut a = a.fuse();
    let mut b = b.into_iter().fuse();
    let mut from_a = true;
    std::iter::from_fn(move || {
        let next = if from_a {
            a.next().or_else(|| b.next())
        } else {
            b.next().or_else(|| a.next())
        };
        from_a = !from_a;
        next
    })
}

/// The rules after reading: nothing quoted, no answer; an answer that adds nothing to the
/// question ("Yes", the question restated) is replaced by `fallback` (sentences of the
/// quoted passages); the answer's specific tokens must occur in the quoted passages
/// (`texts.1`), else `fallback` is the answer and a "yes" becomes "partly" (the model did
/// not read them); then each sentence is held to the passages read (`texts.2`, see
/// `support`): those they do not support are removed, and when none is left the answer
/// is `fallback`, introduced as the documentation's closest sentences. Returns the
/// verdict, the answer, the refused tokens, and whether that last case happened (the
/// passages supported none of the sentences the model wrote).
pub fn apply_rules(
    said: Verdict,
    n_quoted: usize,
    model_answer: String,
    texts: (&str, &str, &str),
    fallback: impl FnOnce() -> String,
    report: &mut Report,
) -> (Verdict, String, Vec<String>, bool) {
    let (question, quoted_text, read) = texts;
    let mut nothing_supported = false;
    let mut verdict = said;
    if n_quoted == 0 {
        verdict = Verdict::DoesNotAnswer;
        report
            .notes
            .push("reader quoted no passage: treated as no".into());
    }
    let replaced = invented_tokens(&model_answer, quoted_text);
    let answer = if model_answer.is_empty() {
        report
            .notes
            .push("reader wrote no answer text: sentences of its quotes are the answer".into());
        // Its "yes" was said of text the form rules left out (a template's fragment that
        // trails off): the quotes' sentences answer it only in part.
        if verdict == Verdict::Answers && !report.removed.is_empty() {
            verdict = Verdict::Partly;
        }
        fallback()
    } else if says_nothing(&model_answer, question) {
        report.notes.push(format!(
            "reader's answer {model_answer:?} adds nothing to the question: sentences of its \
             quotes are the answer"
        ));
        fallback()
    } else if verdict_for_an_open_question(&model_answer, question) {
        report.notes.push(format!(
            "reader's answer {model_answer:?} opens with a yes or a no, which answers no \
             question asking how, what or which: sentences of its quotes are the answer"
        ));
        if verdict == Verdict::Answers {
            verdict = Verdict::Partly;
        }
        fallback()
    } else if !replaced.is_empty() {
        report.notes.push(format!(
            "reader's answer named {} not in its quoted passages: sentences of the quotes are \
             the answer",
            replaced.join(", ")
        ));
        if verdict == Verdict::Answers {
            verdict = Verdict::Partly;
        }
        fallback()
    } else {
        let (answer, supported) =
            support::hold_to_read(model_answer, (read, question), fallback, report);
        if !supported && verdict == Verdict::Answers {
            verdict = Verdict::Partly;
        }
        nothing_supported = !supported && !answer.is_empty();
        answer
    };
    report.decision = format!("reader: said {said:?}, {n_quoted} passages quoted → {verdict:?}");
    if !report.removed.is_empty() {
        report.decision += &format!("; {} unsupported sentences removed", report.removed.len());
    }
    (verdict, answer, replaced, nothing_supported)
}

/// The documentation's own words after the answer, with their source: a sentence in
/// quotes; a unit holding a code block as a Markdown block quote, so its fences stay on
/// lines of their own and the code renders as code.
fn supporting_quote(file: &str, section: &str, text: &str) -> String {
    if !text.contains("```") {
        return format!("{file} § {section}: \"{text}\"");
    }
    let quoted: Vec<String> = text
        .lines()
        .map(|l| {
            if l.is_empty() {
                ">".into()
            } else {
                format!("> {l}")
            }
        })
        .collect();
    format!("{file} § {section}:\n\n{}", quoted.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_says_what_to_do_when_it_names_a_thing_to_use_or_instructs() {
        assert!(says_what_to_do("Load the `imklog` module."));
        assert!(says_what_to_do("Set SysSock.RateLimit.Interval to 5."));
        assert!(says_what_to_do(
            "To swap an on-call shift with a colleague, agree it with a colleague and create a \
             PagerDuty override for the exact hours."
        ));
        assert!(says_what_to_do(
            "You can pull them with the kernel input module."
        ));
        assert!(!says_what_to_do(
            "Defaults to sending them to a system index."
        ));
        assert!(!says_what_to_do(
            "Reads messages from the kernel log and submits them to the syslog engine."
        ));
        assert!(!says_what_to_do(
            "The module is described in [the problems](https://rainer.gerhards.net/2008/04/tcp-syslog.html)."
        ));
    }

    #[test]
    fn a_sentence_the_answer_already_said_is_left_out() {
        let mut report = Report::default();
        assert_eq!(
            without_repeated_sentences(
                "This feature is available in Postfix 2.7 and later. This feature is \
                 available in Postfix 2.7."
                    .into(),
                &mut report
            ),
            "This feature is available in Postfix 2.7 and later."
        );
        let distinct = "Set GIT_NOTES_REWRITE_REF. Set GIT_NOTES_REWRITE_MODE.";
        assert_eq!(
            without_repeated_sentences(distinct.into(), &mut report),
            distinct
        );
    }

    #[test]
    fn a_verdict_answers_no_open_question() {
        let how = "how can I run the test suite automatically after every commit is replayed";
        assert!(verdict_for_an_open_question(
            "Yes: set rebase.autoSquash to true.",
            how
        ));
        assert!(verdict_for_an_open_question(
            "No, it cannot.",
            "We rebase a lot. What runs the tests after each commit?"
        ));
        assert!(!verdict_for_an_open_question("Use --exec <cmd>.", how));
        assert!(!verdict_for_an_open_question(
            "Yes: pass --3way to git am.",
            "Can git am fall back to a three-way merge?"
        ));
        // A clause before the question is not its opening.
        assert!(!verdict_for_an_open_question(
            "Yes: use --function-context.",
            "When searching the code base, can I see the entire function around each match?"
        ));
        // A word that only starts with a verdict is none.
        assert!(!verdict_for_an_open_question("Nothing is lost.", how));
        // A statement asks nothing open.
        assert!(!verdict_for_an_open_question(
            "Yes: replace it with LH_DB_POOL_SIZE.",
            "LH_DB_MAX_CONNS is deprecated"
        ));
    }

    #[test]
    fn a_copied_table_header_row_is_no_part_of_an_answer() {
        let read = "Administrators should monitor the release notes. | Role | Allowed Access |";
        assert_eq!(
            without_header_rows("Role | Allowed Access".into(), read),
            ""
        );
        assert_eq!(
            without_header_rows("| Role | Allowed Access |".into(), ""),
            ""
        );
        // Without its bars, only a row the passages show is taken for one.
        assert_eq!(
            without_header_rows("ps aux | grep postgres".into(), read),
            "ps aux | grep postgres"
        );
        assert_eq!(
            without_header_rows(
                "Each stage lasts at least 15 minutes. | stage | weight | minimum duration |"
                    .into(),
                read
            ),
            "Each stage lasts at least 15 minutes."
        );
        // A row that says something is kept, and so is a pipe in a command.
        for kept in [
            "| `pg_monitor` | Read/execute various monitoring views and functions. |",
            "Run `ps aux | grep postgres` to see the processes.",
        ] {
            assert_eq!(without_header_rows(kept.into(), read), kept);
        }
    }

    #[test]
    fn a_verdict_is_said_once() {
        assert_eq!(
            verdict_once("Yes: Yes, the file can be placed under /etc.".into()),
            "Yes: the file can be placed under /etc."
        );
        assert_eq!(verdict_once("No: No. It cannot.".into()), "No: It cannot.");
        for kept in [
            "Yes: set retention.days above 30.",
            "Yes, Yesod is not a Git command.",
            "No: Yes is not an option.",
        ] {
            assert_eq!(verdict_once(kept.into()), kept);
        }
    }
    const QUOTED: &str =
        "git stash\n-k, --keep-index: All changes already added to the index are left intact.";

    #[test]
    fn a_supporting_code_block_is_quoted_as_a_block() {
        assert_eq!(
            supporting_quote("a.md", "Undo", "Roll back."),
            "a.md § Undo: \"Roll back.\""
        );
        let q = supporting_quote("a.md", "Undo", "Run:\n```sh\nkubectl rollout undo x\n```");
        assert_eq!(
            q,
            "a.md § Undo:\n\n> Run:\n> ```sh\n> kubectl rollout undo x\n> ```"
        );
        let html = crate::service::document::markdown_html(&q);
        assert!(
            html.contains("<blockquote>")
                && html.contains("<code class=\"language-sh\">kubectl rollout undo x\n</code>"),
            "{html}"
        );
    }

    #[test]
    fn flags_not_in_the_quotes_replace_the_answer_by_the_quotes() {
        let mut report = Report::default();
        let fallback = || "the quoted sentence".to_string();
        let ok = apply_rules(
            Verdict::Answers,
            1,
            "Use git stash push --keep-index to keep the index.".into(),
            ("How do I keep the index?", QUOTED, QUOTED),
            fallback,
            &mut report,
        );
        assert_eq!(ok.1, "Use git stash push --keep-index to keep the index.");
        assert!(ok.2.is_empty());
        let bad = apply_rules(
            Verdict::Answers,
            1,
            "Use --keep-staged to keep the index.".into(),
            ("How do I keep the index?", QUOTED, QUOTED),
            fallback,
            &mut report,
        );
        assert_eq!(bad.2, vec!["--keep-staged"]);
        assert_eq!(bad.1, "the quoted sentence");
        assert!(report.notes.iter().any(|n| n.contains("--keep-staged")));
    }

    #[test]
    fn an_answer_that_adds_nothing_to_the_question_is_replaced_by_the_quotes() {
        let q = "Can applying a patch fall back to a three-way merge?";
        assert!(says_nothing("Yes", q));
        assert!(says_nothing("No.", q));
        assert!(says_nothing(
            "Yes, applying a patch can fall back to a three-way merge.",
            q
        ));
        assert!(!says_nothing("Yes: pass --3way to git am.", q));
        assert!(!says_nothing(
            "To delete all messages in the queue, use the -d ALL option.",
            "How do I delete all messages in the queue?"
        ));
        // A longer flag counts once, as its word.
        assert!(says_nothing(
            "Yes: turn on --autosquash permanently.",
            "Can I turn the option that moves fixup commits on permanently?"
        ));
        let mut report = Report::default();
        let r = apply_rules(
            Verdict::Answers,
            1,
            "Yes.".into(),
            (q, QUOTED, QUOTED),
            || "the quoted sentence".to_string(),
            &mut report,
        );
        assert_eq!(r.1, "the quoted sentence");
        assert!(report.notes.iter().any(|n| n.contains("adds nothing")));
    }

    #[test]
    fn supporting_sentences_alternate_between_the_quoted_passages_and_all_chunks() {
        let s = |t: &str| Sentence {
            text: t.into(),
            hit: 0,
            relevance: 0.0,
        };
        let (q1, q2, q3, e1) = (s("q1"), s("q2"), s("q3"), s("e1"));
        let order: Vec<&str> = alternate([&q1, &q2, &q3].into_iter(), [&e1])
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(order, ["q1", "e1", "q2", "q3"]);
    }

    #[test]
    fn an_answer_whose_every_sentence_is_unsupported_says_so() {
        let mut report = Report::default();
        let r = apply_rules(
            Verdict::Answers,
            1,
            "Cherries are best picked in early summer.".into(),
            ("When should I pick cherries?", QUOTED, QUOTED),
            || "the quoted sentence".to_string(),
            &mut report,
        );
        assert!(r.1.starts_with(support::CLOSEST_INTRO), "{}", r.1);
        assert!(r.3);
        assert_eq!(r.0, Verdict::Partly);
    }

    #[test]
    fn a_yes_to_text_the_form_rules_left_out_is_a_partly() {
        // Nothing to begin with: the verdict stands on the quotes.
        let mut report = Report::default();
        let r = apply_rules(
            Verdict::Answers,
            1,
            String::new(),
            ("q", QUOTED, QUOTED),
            || "the quoted sentence".to_string(),
            &mut report,
        );
        assert_eq!(r.0, Verdict::Answers);
        // Its only sentence trailed off and was left out.
        let answer = support::without_cut_sentence(
            "$access_map_reject_code optional text...".into(),
            MAX_ANSWER_CHARS,
            &mut report,
        );
        let r = apply_rules(
            Verdict::Answers,
            1,
            answer,
            ("How do I reject a subject?", QUOTED, QUOTED),
            || "the quoted sentence".to_string(),
            &mut report,
        );
        assert_eq!(r.1, "the quoted sentence");
        assert_eq!(r.0, Verdict::Partly);
    }

    #[test]
    fn a_yes_without_quotes_does_not_answer() {
        let mut report = Report::default();
        let r = apply_rules(
            Verdict::Answers,
            0,
            "Yes.".into(),
            ("q", "", ""),
            String::new,
            &mut report,
        );
        assert_eq!(r.0, Verdict::DoesNotAnswer);
        let r = apply_rules(
            Verdict::Answers,
            1,
            "Use -x to drop the stashed entries.".into(),
            ("How do I keep the index?", QUOTED, QUOTED),
            String::new,
            &mut report,
        );
        assert_eq!(
            r.0,
            Verdict::Partly,
            "an answer the quotes do not hold is not a yes"
        );
        assert!(!r.3, "refused for its tokens, not for its sentences");
    }

    #[test]
    fn an_answer_cannot_end_where_a_copied_quote_would_cut_it() {
        let s = schema(3);
        let pattern = s["properties"]["answer"]["pattern"].as_str().unwrap();
        let ends = regex::Regex::new(pattern).unwrap();
        for cut in [
            "The commit's author name is taken from the ",
            "Run kubectl patch configmap lighthouse-config -p '{",
            "Set LH_LOG_LEVEL=",
            "Use the option (",
            "First stop the server,",
        ] {
            assert!(!ends.is_match(cut), "{cut:?} may end an answer");
        }
        for whole in [
            "Run helm upgrade --install lighthouse --timeout 10m",
            "Use `git log --follow <file>`",
            "The author is taken from the \"From: \" line.",
            "Yes: set retention.days above 30; snapshots are deleted after 30 days.",
            "It is the “Subject:” line’s text”",
            "Run lhctl rollback --env prod\nthen check the release log.",
        ] {
            assert!(ends.is_match(whole), "{whole:?} may not end an answer");
        }
    }

    #[test]
    fn evidence_comes_first_and_is_bounded_by_the_listing() {
        let s = schema(4);
        assert_eq!(s["properties"]["evidence"]["items"]["maximum"], 4);
        assert_eq!(
            s["required"][0], "evidence",
            "quotes come before the verdict"
        );
        assert_eq!(
            s["required"][2], "answers_question",
            "the verdict comes last"
        );
    }
}
