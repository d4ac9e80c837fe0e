//! Follow-up questions made standalone before retrieval. "and how do I undo that?" is
//! searched on its own words as nothing in particular; asked after "How do I amend the
//! last commit?" it means "undo amending the last commit". By rule: a question that leans
//! on the earlier turns (it opens like a continuation, points back with "it", "that",
//! "those"…, or names nothing the KB holds as specific) carries the specific words of
//! the turn before it (and of the one before that, when that turn carried nothing); a
//! question that names its own subject and does not point back is a new topic and is
//! searched as asked. A pointer that could point into the question itself ("…create temp
//! tables on it?") carries the subject tentatively: the evidence then leads with the
//! question's own words (`is_tentative`).

use anyhow::Result;
use serde::Serialize;

use super::evidence::content_words;
use super::evidence::coverage::RARE_SHARE;
use super::support::GENERAL;
use crate::kb::KnowledgeBase;

/// Chunks counted per word, at most (as `coverage` does).
const COUNT_CAP: usize = 2000;

/// A word in at most this share of the KB's chunks names a subject of its own. Looser
/// than `coverage::RARE_SHARE`: "tag" or "index" are subjects though hundreds of git's
/// chunks hold them.
const SUBJECT_SHARE: f64 = 0.05;

/// Words a whole question opens with.
#[rustfmt::skip]
const QUESTION_OPENINGS: &[&str] = &[
    "how", "what", "which", "why", "when", "where", "who", "whom", "whose", "can", "could",
    "does", "do", "did", "is", "are", "was", "were", "should", "will", "would", "may",
    "must", "i", "i'm", "my", "we", "our", "please", "in", "explain", "show", "tell",
    "list", "give",
];

/// Content words before a pointer that make it point into its own question.
const SAID_BEFORE_INTERNAL: usize = 3;

/// A title word in at least this share of the documents' titles is not carried.
const SHARED_TITLE_SHARE: f64 = 0.5;

/// The earlier turn's words carried, at most.
const CARRIED: usize = 8;

/// Openings that continue the turn before ("and on Windows?", "what about tags?", "with
/// the timings too?").
#[rustfmt::skip]
const CONTINUATIONS: &[&str] = &[
    "and", "also", "but", "or", "then", "so", "what about", "how about", "what if", "same",
    "instead", "otherwise", "afterwards", "after that", "else", "with", "without", "just",
    "only", "even", "plus", "except", "via", "using",
];

/// Words that point back to something said before.
#[rustfmt::skip]
const POINTERS: &[&str] = &[
    "it", "its", "it's", "that", "this", "those", "these", "them", "they", "their", "there",
    "one", "ones", "same", "such", "former", "latter", "above", "previous", "again",
];

/// Words that pick from a set ("one of them", "each of those"): with "of" and a pointer
/// they point back wherever they stand, since a set named in the same question is named
/// again rather than counted out ("delete the branches I merged" not "each of them").
#[rustfmt::skip]
const PICKS: &[&str] = &[
    "one", "each", "any", "some", "all", "both", "none", "either", "neither", "which",
    "many", "most", "few", "several",
];

/// Words that open a clause's subject: "that" before them joins a clause, it does not
/// point.
#[rustfmt::skip]
const CLAUSE_SUBJECTS: &[&str] = &[
    "the", "a", "an", "it", "its", "i", "we", "you", "they", "my", "our", "your", "their",
    "this", "these", "those", "there", "he", "she", "all", "no", "every", "each",
];

/// What a follow-up's query adds to the question, before the carried words.
const CONTEXT_OPEN: &str = " (about: ";

/// The same for a question that may or may not lean on the turn before: its pointers
/// could point into it ("…insert rows into it?") or back.
const TENTATIVE_OPEN: &str = " (perhaps about: ";

/// The opening of a query's carried words and where it starts, if it has any.
fn context_open(query: &str) -> Option<(usize, &'static str)> {
    if !query.ends_with(')') {
        return None;
    }
    [CONTEXT_OPEN, TENTATIVE_OPEN]
        .into_iter()
        .filter_map(|open| Some((query.rfind(open)?, open)))
        .max_by_key(|(i, _)| *i)
}

/// The person's own words of a query `resolve` made (the whole of any other question):
/// what the evidence checks hold the passages to, since the carried words are the
/// earlier turn's and its answer already covered them.
pub fn own_words(query: &str) -> &str {
    match context_open(query) {
        Some((i, _)) => &query[..i],
        None => query,
    }
}

/// The earlier turn's words a query `resolve` made carries, if any.
pub fn carried_words(query: &str) -> Option<&str> {
    let (i, open) = context_open(query)?;
    Some(&query[i + open.len()..query.len() - 1])
}

/// Whether a query carries the earlier turn's words only in case its pointers point back.
pub fn is_tentative(query: &str) -> bool {
    context_open(query).is_some_and(|(_, open)| open == TENTATIVE_OPEN)
}

/// How a question was read in its conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    /// What is searched and answered: the question, with the carried words when it is a
    /// follow-up.
    pub query: String,
    /// The earlier turn's words added (empty: searched as asked).
    pub carried: Vec<String>,
    /// Why it was read this way, in words, for the answer's decision.
    pub why: String,
}

impl Resolved {
    fn as_asked(question: &str, why: &str) -> Resolved {
        Resolved {
            query: question.trim().to_string(),
            carried: Vec::new(),
            why: why.to_string(),
        }
    }

    pub fn is_follow_up(&self) -> bool {
        !self.carried.is_empty()
    }
}

/// Reads `question` after `earlier` (the earlier turns' resolved queries, oldest first).
pub fn resolve(kb: &KnowledgeBase, earlier: &[String], question: &str) -> Result<Resolved> {
    let Some(previous) = earlier.last() else {
        return Ok(Resolved::as_asked(question, "the first question"));
    };
    let total = kb.store().vector_count().max(1) as f64;
    let df = |w: &str| kb.store().term_chunks(w, COUNT_CAP);
    let lower = question.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    let continues = CONTINUATIONS.iter().any(|c| {
        lower.starts_with(c)
            && lower[c.len()..]
                .chars()
                .next()
                .is_none_or(|ch| !ch.is_alphanumeric())
    });
    // A pointer after the question has said enough of its own ("list the untracked
    // files in my repository, leaving out the ones that are ignored": three content
    // words, or two with a rare one) points into the question, not back.
    let share_below = |w: &str, share: f64| -> Result<bool> {
        if w.chars().count() < 3
            || GENERAL.contains(&w)
            || POINTERS.contains(&w)
            || crate::kb::stopwords::is_stopword(w)
        {
            return Ok(false);
        }
        let n = df(w)?;
        Ok(n > 0 && (n as f64) <= share * total && n < COUNT_CAP)
    };
    let mut points_back = false;
    let mut own_subject = false;
    let mut rare_before = false;
    let mut said_before = 0;
    let mut may_point_back = false;
    for (i, w) in words.iter().enumerate() {
        if POINTERS.contains(w) {
            let picked = i >= 2 && words[i - 1] == "of" && PICKS.contains(&words[i - 2]);
            let internal = said_before >= SAID_BEFORE_INTERNAL || (rare_before && said_before >= 2);
            points_back |= picked || !internal;
            // "one" and "same" are as often a number or a comparison as a pointer, and
            // "that" before a subject joins a clause ("mean that the pod…").
            let joins = *w == "that"
                && words
                    .get(i + 1)
                    .is_some_and(|n| CLAUSE_SUBJECTS.contains(n));
            may_point_back |= !joins && !matches!(*w, "one" | "ones" | "same" | "such" | "again");
            continue;
        }
        // "instead" with nothing it is instead of, in the question, means instead of
        // what was said before ("can I instead mark a named spot?").
        if *w == "instead" && words.get(i + 1).is_none_or(|n| *n != "of") {
            points_back = true;
        }
        if w.chars().count() >= 3 && !GENERAL.contains(w) && !crate::kb::stopwords::is_stopword(w) {
            said_before += 1;
        }
        if !rare_before && share_below(w, RARE_SHARE)? {
            rare_before = true;
            own_subject = true;
        } else if !own_subject && share_below(w, SUBJECT_SHARE)? {
            own_subject = true;
        }
    }
    let mut tentative = false;
    if !continues && !points_back {
        // A fragment ("owned by a different user than me?") leans on the turn before
        // unless it names a rare subject of its own ("pg_dump's compression levels?").
        let whole = words.first().is_some_and(|w| QUESTION_OPENINGS.contains(w));
        // A pointer counted as pointing into the question may still point back ("can
        // our reporting job create temp tables on it?"): carried, tentatively.
        if may_point_back {
            tentative = true;
        } else if own_subject && (rare_before || whole) {
            return Ok(Resolved::as_asked(
                question,
                "names its own subject: a new question",
            ));
        }
        // A whole question ("How do I roll back a deployment?") stands alone even in
        // the KB's everyday words.
        if whole && !tentative {
            return Ok(Resolved::as_asked(question, "a whole question of its own"));
        }
    }
    // The earlier turn's subject: the title of the document it found first, then its
    // words the KB holds, in their order (its own words before those it carried itself).
    let asked: Vec<String> = content_words(question);
    let mut carried: Vec<String> = Vec::new();
    let found = crate::kb::search::search(kb, previous, 1, crate::kb::search::SearchMode::Hybrid)?;
    let title = found
        .first()
        .and_then(|h| h.section_path.first().cloned())
        .unwrap_or_default();
    // The turn before that, after the previous turn's own: a previous turn read as a
    // question of its own ("which queries run most often?" after "How do I enable
    // pg_stat_statements?") carried nothing of it.
    let older = if carried_words(previous).is_none() && earlier.len() >= 2 {
        let before = &earlier[earlier.len() - 2];
        subject_words(own_words(before))
            .into_iter()
            .chain(subject_words(carried_words(before).unwrap_or_default()))
            .collect()
    } else {
        Vec::new()
    };
    let previous_words = subject_words(own_words(previous))
        .into_iter()
        .chain(subject_words(carried_words(previous).unwrap_or_default()))
        .chain(older);
    // Words most documents' titles share ("manual page") name none of them.
    let mut title_words = Vec::new();
    for w in subject_words(&title) {
        if kb.store().top_heading_share(&w)? < SHARED_TITLE_SHARE {
            title_words.push(w);
        }
    }
    for w in title_words.into_iter().chain(previous_words) {
        if carried.len() == CARRIED || asked.contains(&w) || carried.contains(&w) {
            continue;
        }
        if df(&w)? > 0 {
            carried.push(w);
        }
    }
    if carried.is_empty() {
        return Ok(Resolved::as_asked(
            question,
            "the earlier question names nothing to carry",
        ));
    }
    let why = match (continues, points_back, tentative) {
        (true, _, _) => "continues the earlier question",
        (_, true, _) => "points back to the earlier question",
        (_, _, true) => "may point back to the earlier question: searched on its own words first",
        _ => "names no subject of its own",
    };
    let open = if tentative {
        TENTATIVE_OPEN
    } else {
        CONTEXT_OPEN
    };
    Ok(Resolved {
        query: format!("{}{open}{})", question.trim(), carried.join(" ")),
        carried,
        why: why.to_string(),
    })
}

/// A question's words that could name what it is about: content words, the general ones
/// ("them", "work", "way") aside.
fn subject_words(text: &str) -> Vec<String> {
    content_words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !GENERAL.contains(&w.as_str()))
        .filter(|w| !POINTERS.contains(&w.as_str()))
        .collect()
}

/// The model's way, measured against the rules (`sextant eval --asked rewritten`): the
/// reader writes the follow-up out in full, under a pattern that allows one question.
pub fn rewrite(llm: &mut crate::llm::Llm, earlier: &[String], question: &str) -> Result<String> {
    use crate::llm::chat_template::Message;
    use crate::structured::{generate_structured, OutputSpec, StructuredRequest};
    let task = "Rewrite the follow-up question so that it can be understood on its own: \
                replace words such as it, that, those, them and one with what they refer to \
                in the earlier questions, and keep everything else. Do not answer it. Reply \
                with the rewritten question only.";
    let shot = |earlier: &[&str], follow: &str| {
        let list: String = earlier
            .iter()
            .enumerate()
            .map(|(i, q)| format!("{}. {q}\n", i + 1))
            .collect();
        format!("Earlier questions:\n{list}Follow-up: {follow}")
    };
    let earlier_refs: Vec<&str> = earlier.iter().map(String::as_str).collect();
    let messages = vec![
        Message::new("system", task),
        Message::new(
            "user",
            &shot(
                &["How do I add a network printer?"],
                "and how do I remove it again?",
            ),
        ),
        Message::new("assistant", "How do I remove a network printer again?"),
        Message::new(
            "user",
            &shot(
                &[
                    "Where are the backups of the mail server kept?",
                    "how long are they kept?",
                ],
                "can I restore a single mailbox from one?",
            ),
        ),
        Message::new(
            "assistant",
            "Can I restore a single mailbox from a backup of the mail server?",
        ),
        Message::new("user", &shot(&earlier_refs, question.trim())),
    ];
    let mut req =
        StructuredRequest::new(messages, OutputSpec::Regex(r"[A-Z][^\n?]{4,160}\?".into()));
    req.max_tokens = 64;
    let out = generate_structured(llm, &req, &mut |_| {})?;
    Ok(out.text.trim().to_string())
}
