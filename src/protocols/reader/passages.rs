//! What the reader reads and quotes: the passages offered (numbered in the prompt), the
//! text each one shows, and the quoted passages an answer's specific tokens are checked
//! against.

use std::collections::HashSet;

use super::{PASSAGES, PASSAGE_CHARS};
use crate::protocols::checks::invented_tokens;
use crate::protocols::evidence::{content_words, Evidence, Sentence};
use crate::protocols::followup;
use crate::protocols::grounded::join_sentences;
use crate::protocols::support;
use crate::protocols::Report;

/// The passages offered: the first retrieved chunks in the hybrid ranking (indices into
/// `Evidence::hits`). Not re-sorted by cosine, which dropped chunks BM25 ranks high for
/// the question's exact words. Against the cosine order on git-doc it moved the figures
/// by one question either way (docs/CHANGELOG.md); kept because the passages are then
/// the ones retrieval ranks first. Chosen by best sentence for every question, they lost
/// keywords on both sets; for follow-ups they gained (docs/CHANGELOG.md, 2026-11-27).
pub fn passages(ev: &Evidence) -> Vec<usize> {
    if followup::carried_words(&ev.question).is_none() {
        return (0..ev.hits.len().min(PASSAGES)).collect();
    }
    // A follow-up's hits are ranked with the earlier turn's words, which favour what the
    // earlier answer already said: its passages are the chunks whose best sentence
    // answers its own words best, in the order retrieved.
    let mut best: Vec<(usize, f32)> = (0..ev.hits.len())
        .map(|h| {
            let top = ev
                .sentences
                .iter()
                .filter(|s| s.hit == h)
                .map(|s| s.relevance)
                .fold(f32::MIN, f32::max);
            (h, top)
        })
        .collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut chosen: Vec<usize> = best.iter().take(PASSAGES).map(|b| b.0).collect();
    chosen.sort_unstable();
    chosen
}

/// The numbered listing the prompt shows.
pub fn listing(ev: &Evidence, passages: &[usize]) -> String {
    passages
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let h = &ev.hits[n];
            format!(
                "[{}] {} § {}\n{}",
                i + 1,
                h.file,
                h.section,
                passage_text(ev, n)
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A passage as the model reads it: the chunk's most relevant sentences, up to
/// `PASSAGE_CHARS` (at least one), in the chunk's order; the whole chunk when it has no
/// sentence. A definition's unit ("-B: If given") is not found in its chunk's lines
/// ("-B\n: If given") and sorts last; found where it stands, five answers of the tuning
/// halves lost their keyword and none gained (docs/CHANGELOG.md, sixteenth sitting).
fn passage_text(ev: &Evidence, hit: usize) -> String {
    let h = &ev.hits[hit];
    let flat = h.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut chosen: Vec<(usize, &str)> = Vec::new();
    let mut used = 0;
    for s in ev.sentences.iter().filter(|s| s.hit == hit) {
        // With the separator join_sentences puts before it.
        let len = s.text.chars().count() + usize::from(!chosen.is_empty());
        if used + len > PASSAGE_CHARS && !chosen.is_empty() {
            continue;
        }
        used += len;
        let head: String = s.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let head: String = head.chars().take(30).collect();
        chosen.push((flat.find(&head).unwrap_or(usize::MAX), s.text.as_str()));
    }
    if chosen.is_empty() {
        return h.text.trim().to_string();
    }
    chosen.sort_by_key(|c| c.0);
    let texts: Vec<&str> = chosen.iter().map(|c| c.1).collect();
    join_sentences(&texts)
}

/// What replaces an answer the rules refuse: the best sentences of the quoted passages,
/// else, when those have none (a manual page's NAME line is a fragment, not a sentence),
/// the best sentences of everything retrieved. Without the second, "I'm on Windows. How
/// can I mark a shell script as executable?", quoting git-sh-setup's NAME line, was
/// answered with nothing but the supporting quotes.
pub(super) fn fallback_sentences(ev: &Evidence, quoted: &[usize], n: usize) -> String {
    // A quoted section whose heading asks the question answers it before its neighbours
    // ("How do I convert a string to a number?" before "… a number to a string?", whose
    // sentences share every word).
    let asking = heading_asking(ev, quoted);
    let mut of_quoted: Vec<&Sentence> = ev
        .sentences
        .iter()
        .filter(|s| quoted.contains(&s.hit))
        .collect();
    of_quoted.sort_by_key(|s| Some(s.hit) != asking);
    let of_quoted: Vec<&str> = of_quoted
        .into_iter()
        .take(n)
        .map(|s| s.text.as_str())
        .collect();
    if !of_quoted.is_empty() {
        return join_sentences(&of_quoted);
    }
    let best: Vec<&str> = ev
        .sentences
        .iter()
        .take(n)
        .map(|s| s.text.as_str())
        .collect();
    if !best.is_empty() {
        return join_sentences(&best);
    }
    // No retrieved text splits into sentences (preformatted text, code): the quoted
    // passage's first lines, so that the answer is never empty.
    let hit = quoted.first().copied().unwrap_or(0);
    ev.hits
        .get(hit)
        .map(|h| first_lines(&h.text, PASSAGE_CHARS))
        .unwrap_or_default()
}

/// `text`'s first non-blank lines, trimmed, up to `max` characters (at least one line).
fn first_lines(text: &str, max: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        used += line.chars().count() + 1;
        if used > max && !out.is_empty() {
            break;
        }
        out.push(line);
    }
    out.join("\n")
}

/// When the model says its passages answer (the caller checks): the passages it read but
/// did not list that hold the specific tokens (paths, commands, flags, numbers) its
/// answer names and the listed ones lack are quoted too, first, where together they hold
/// all of them: the answer rests on them. Without this an answer taken from the third passage
/// while the model listed the first two ("roll back with `lhctl rollback --env prod`")
/// was replaced by the listed passages' sentences and marked partial. Not after a
/// "partly" or "no": on the tuning halves those answers, kept, were wrong ("run lhctl db
/// backups" for break-glass access).
pub(super) fn quote_what_the_answer_names(
    ev: &Evidence,
    shown: &[usize],
    answer: &str,
    quoted: &mut Vec<usize>,
    report: &mut Report,
) {
    if quoted.is_empty() || answer.is_empty() {
        return;
    }
    let missing = invented_tokens(answer, &quoted_context(ev, quoted));
    if missing.is_empty() {
        return;
    }
    let holding: Vec<usize> = shown
        .iter()
        .copied()
        .filter(|p| !quoted.contains(p))
        .filter(|&p| {
            // Checked within the answer: a number or name is looked for as the answer
            // writes it (whole, or a piece of a longer one).
            let lacking = invented_tokens(answer, &quoted_context(ev, &[p]));
            missing.iter().any(|t| !lacking.contains(t))
        })
        .collect();
    let extended: Vec<usize> = holding.iter().chain(quoted.iter()).copied().collect();
    // Only where they hold all of it: an answer that names something no passage read
    // holds is replaced by the rules as before.
    if holding.is_empty() || !invented_tokens(answer, &quoted_context(ev, &extended)).is_empty() {
        return;
    }
    report.notes.push(format!(
        "reader's answer named {} from passages it did not list: they are quoted too",
        missing.join(", ")
    ));
    *quoted = extended;
}

/// What the answer's specific tokens are checked against: the quoted chunks, and each
/// one's document as a command name (`git-stash.html` → `git stash`), since a manual
/// page's option entries never repeat the command.
pub(super) fn quoted_context(ev: &Evidence, quoted: &[usize]) -> String {
    let mut context = String::new();
    for &q in quoted {
        let h = &ev.hits[q];
        let stem = h.file.rsplit('/').next().unwrap_or(&h.file);
        let stem = stem.split('.').next().unwrap_or(stem);
        context.push_str(&format!("{}\n{}\n", stem.replace('-', " "), h.text));
    }
    context
}

/// Content words a question needs for a heading that holds them all to be asking it.
const MIN_ASKED_WORDS: usize = 2;

/// The quoted passage whose section's heading asks the question itself: a question (it
/// ends in '?') holding every content word of the one asked (by stem, general words
/// aside), as a FAQ's entry does ("How do I make a Python script executable on Unix?"
/// for "How do I make a script executable on Unix?"). A heading that only names the
/// topic ("The kernel message") says nothing of whether its text answers. The reader's
/// "no" for such a passage is its near-chance verdict, not the text's (Python's FAQ); the
/// support check still holds its sentences to the passages. None of the eval sets'
/// tuning or report questions has one.
pub(super) fn heading_asking(ev: &Evidence, quoted: &[usize]) -> Option<usize> {
    let asked: HashSet<String> = content_words(followup::own_words(&ev.question))
        .iter()
        .filter(|w| !support::GENERAL.contains(&w.as_str()))
        .map(|w| support::stem(w))
        .collect();
    if asked.len() < MIN_ASKED_WORDS {
        return None;
    }
    quoted.iter().copied().find(|&h| {
        ev.hits.get(h).is_some_and(|hit| {
            hit.section.trim_end().ends_with('?')
                && asked.is_subset(&support::stems_of(&hit.section))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::search::Hit;
    use crate::protocols::evidence::{Domain, Sentence};

    fn hit(text: &str) -> Hit {
        Hit {
            id: "c".into(),
            file: "f.md".into(),
            section: "S".into(),
            section_path: vec!["S".into()],
            anchor: "s".into(),
            page: None,
            text: text.into(),
            score: 0.8,
            key: 0,
            cosine: 0.6,
            fused: 0.03,
        }
    }

    fn evidence(hits: Vec<Hit>, sentences: Vec<Sentence>) -> Evidence {
        Evidence {
            question: "q".into(),
            hits,
            best_score: 0.8,
            sentences,
            domain_score: 0.8,
            domain: Domain::default(),
            unknown_terms: Vec::new(),
            unretrieved_terms: Vec::new(),
            terms: Vec::new(),
        }
    }

    #[test]
    fn a_passage_the_answer_names_but_the_model_did_not_list_is_quoted_first() {
        let ev = evidence(
            vec![
                hit("Roll back with kubectl rollout undo deployment/api."),
                hit("The undo keeps maxSurge at 25%."),
                hit("lhctl rollback --env prod wraps the same steps."),
            ],
            Vec::new(),
        );
        let mut report = Report::default();
        let mut quoted = vec![0, 1];
        let answer = "Run `lhctl rollback --env prod` to roll back.";
        quote_what_the_answer_names(&ev, &[0, 1, 2], answer, &mut quoted, &mut report);
        assert_eq!(quoted, vec![2, 0, 1]);
        assert!(invented_tokens(answer, &quoted_context(&ev, &quoted)).is_empty());
        // A token that no passage read holds quotes nothing more: the rules replace it.
        let mut quoted = vec![0];
        let answer = "Run `lhctl restore --env prod` instead.";
        quote_what_the_answer_names(&ev, &[0, 1, 2], answer, &mut quoted, &mut report);
        assert_eq!(quoted, vec![0]);
        // Nor does a passage retrieved but not shown to the model.
        let answer = "Run `lhctl rollback --env prod` to roll back.";
        quote_what_the_answer_names(&ev, &[0, 1], answer, &mut quoted, &mut report);
        assert_eq!(quoted, vec![0]);
    }

    #[test]
    fn an_answer_replaced_from_quotes_without_sentences_takes_the_best_retrieved() {
        let sentence = |text: &str, hit, relevance| Sentence {
            text: text.into(),
            hit,
            relevance,
        };
        let ev = evidence(
            vec![
                hit("git-sh-setup - Common Git shell script setup code"),
                hit("b"),
            ],
            vec![
                sentence("Use git add --chmod=+x to mark it executable.", 1, 0.9),
                sentence("Another sentence of the second chunk.", 1, 0.5),
            ],
        );
        assert_eq!(
            fallback_sentences(&ev, &[0], 1),
            "Use git add --chmod=+x to mark it executable."
        );
        assert_eq!(
            fallback_sentences(&ev, &[1], 2),
            "Use git add --chmod=+x to mark it executable. Another sentence of the second chunk."
        );
    }

    #[test]
    fn a_fallback_without_sentences_is_the_quoted_passages_first_lines() {
        let ev = evidence(
            vec![
                hit("ignored"),
                hit("  Specify \"-d ALL\" to remove all messages;\n\n  for example, \"-d ALL deferred\"."),
            ],
            Vec::new(),
        );
        assert_eq!(
            fallback_sentences(&ev, &[1], 2),
            "Specify \"-d ALL\" to remove all messages;\nfor example, \"-d ALL deferred\"."
        );
    }

    #[test]
    fn a_passage_is_its_chunks_best_sentences_in_the_chunks_order() {
        let filler = "An unrelated sentence that pads the chunk out to some length.";
        let a = "First, stop the service with svc stop.";
        let b = "Then restore the snapshot with svc restore --snapshot <id>.";
        let chunk = format!("{a}\n{b} {}", [filler; 8].join(" "));
        let sentence = |text: &str, relevance| Sentence {
            text: text.into(),
            hit: 0,
            relevance,
        };
        let mut sentences = vec![sentence(b, 0.9), sentence(a, 0.8)];
        sentences.extend((0..9).map(|i| sentence(filler, 0.5 - i as f32 * 0.01)));
        let ev = evidence(
            vec![hit(&chunk), hit("No sentence of this chunk was kept.")],
            sentences,
        );
        let text = passage_text(&ev, 0);
        assert!(text.starts_with(&format!("{a} {b}")), "{text}");
        assert!(text.chars().count() <= PASSAGE_CHARS, "{text}");
        assert!(text.contains(filler), "filled up to the limit: {text}");
        assert_eq!(passage_text(&ev, 1), "No sentence of this chunk was kept.");
    }

    #[test]
    fn a_quoted_heading_that_asks_the_question_is_found() {
        let mut faq = hit("Make the file's mode executable and start it with #!.");
        faq.section = "How do I make a Python script executable on Unix?".into();
        let mut ev = evidence(vec![hit("Python runs on Unix."), faq], Vec::new());
        ev.question = "How do I make a script executable on Unix?".into();
        assert_eq!(heading_asking(&ev, &[0, 1]), Some(1));
        // Its sentences replace a refused answer before better-ranked neighbours'.
        ev.sentences = vec![
            Sentence {
                text: "Python runs on most Unix variants.".into(),
                hit: 0,
                relevance: 0.9,
            },
            Sentence {
                text: "Make the file's mode executable and start it with #!.".into(),
                hit: 1,
                relevance: 0.7,
            },
        ];
        assert_eq!(
            fallback_sentences(&ev, &[0, 1], 1),
            "Make the file's mode executable and start it with #!."
        );
        // Only a quoted passage's heading counts, it must hold every word asked, and ask.
        assert_eq!(heading_asking(&ev, &[0]), None);
        ev.hits[1].section = "Making a Python script executable on Unix".into();
        assert_eq!(heading_asking(&ev, &[0, 1]), None);
        ev.hits[1].section = "How do I make a Python script executable on Unix?".into();
        ev.question = "How do I make a script executable on Windows?".into();
        assert_eq!(heading_asking(&ev, &[0, 1]), None);
    }
}
