//! Scoring one answer against its label, and the figures of a run.
//!
//! Definitions (docs/EVALUATION.md):
//! - **hit@k**: the expected file is among the retrieved chunks (answerable questions);
//! - **cited expected file**: a navigator answer lists the expected file in `sources`; a
//!   RAG answer's best retrieved chunk (the one `confidence` is taken from) is in it;
//! - **keyword share**: the share of a question's keywords found in the answer
//!   (case-insensitive, in the text as rendered: no Markdown markup), averaged over
//!   answerable questions; a refusal scores 0;
//! - **grounded share**: of all sentences of given answers (`claims_of`: the gap note and
//!   the closest-passages introduction aside), those whose content words occur in the
//!   retrieved sections for at least `GROUNDED_MIN_WORDS`;
//! - **not-documented honesty**: not-documented questions answered with no sources and
//!   `outOfDomain: false` (RAG: the not-found answer);
//! - **gap stated**: not-documented questions refused, or answered with the note naming
//!   what the documentation found does not mention (`protocols::gap`); **noted**:
//!   answerable questions answered with that note (the price of stating gaps);
//! - **out-of-domain accuracy**: out-of-domain questions answered `outOfDomain: true`
//!   with no sources (RAG, whose format has no such field: the not-found answer);
//! - **invented**: answers citing a file or section the KB lacks, or writing a path,
//!   command, flag, URL or quantity the retrieved sections do not contain.

use anyhow::Result;
use serde::Serialize;

use super::{EvalQuestion, QuestionKind};
use crate::kb::KnowledgeBase;
use crate::protocols::checks::invented_tokens;
use crate::protocols::evidence::{content_words, overlap_share, split_sentences};
use crate::protocols::{gap, rag, support, Answer, AnswerFormat};
use crate::stats::{mean, percentile, share_mean_interval, wilson_interval};

/// Share of a sentence's content words that must occur in the retrieved sections for the
/// sentence to count as grounded: a sentence copied or closely paraphrased passes, one
/// that adds its own claims does not.
pub const GROUNDED_MIN_WORDS: f64 = 0.8;

/// What an answer says, read from its format's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Answered,
    NotDocumented,
    OutOfDomain,
}

/// What an answer says: navigator from `outOfDomain` and `sources`, RAG from its
/// not-found text (the RAG format cannot say "out of domain").
pub fn classify(answer: &Answer) -> Outcome {
    match answer.format {
        AnswerFormat::Navigator => {
            if answer.value["outOfDomain"].as_bool() == Some(true) {
                Outcome::OutOfDomain
            } else if answer.value["sources"]
                .as_array()
                .is_none_or(|s| s.is_empty())
            {
                Outcome::NotDocumented
            } else {
                Outcome::Answered
            }
        }
        AnswerFormat::Rag => {
            if rag::is_not_found(answer.value["final_answer"].as_str().unwrap_or_default()) {
                Outcome::NotDocumented
            } else {
                Outcome::Answered
            }
        }
    }
}

/// One question's result.
#[derive(Debug, Clone, Serialize)]
pub struct Scored {
    pub id: String,
    pub kind: QuestionKind,
    pub outcome: Outcome,
    pub answer: String,
    /// Answerable: the expected file was retrieved.
    pub retrieved_expected: bool,
    /// Answerable: the 1-based rank of the first retrieved chunk of the expected file
    /// (the answer modes read the first few, so rank matters beyond hit@k).
    pub expected_rank: Option<usize>,
    /// The retrieved chunks, best first, as `file § section`: what a miss retrieved.
    pub retrieved: Vec<String>,
    /// Answerable: the answer cites the expected file.
    pub cited_expected: bool,
    /// Answerable with keywords: the share found in the answer.
    pub keyword_share: Option<f64>,
    /// Answerable with keywords: the share found in the retrieved chunks (what any mode
    /// could at best put in the answer).
    pub keyword_retrieved: Option<f64>,
    /// Answerable with keywords, when a model answered: the share found in the text the
    /// model was shown (the reader's passages: fewer chunks, and parts of them).
    pub keyword_shown: Option<f64>,
    pub sentences: usize,
    pub grounded_sentences: usize,
    /// Invented citations and tokens (empty when none).
    pub invented: Vec<String>,
    pub latency_ms: f64,
    /// When the first words of the answer were shown: the model's first answer text
    /// when it streams one, else the whole answer (a rule's answer comes at once).
    pub first_words_ms: f64,
    /// The protocol's decision and retrieval scores (for reading a run, not scored).
    pub decision: String,
    pub best_score: f64,
    pub domain_score: f64,
    /// The question's words with how common each is in the KB and whether the passages
    /// read hold it.
    pub terms: Vec<crate::protocols::evidence::coverage::Term>,
    /// The navigator format's confidence level (`high`, `medium`, `low`); None for RAG.
    pub confidence: Option<String>,
    /// The question's words the answer's note says the documentation found does not
    /// mention (empty: no note).
    pub unmentioned: Vec<String>,
    /// What was put to the engine when it differs from the question as written: a
    /// follow-up as its conversation read it, or its standalone version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_as: Option<String>,
}

/// The part of an answer's text that speaks for the documentation: without the note
/// that names words the documents lack (on purpose: it is not held to them) and without
/// the line that introduces the passages' own sentences when nothing the model wrote was
/// supported (`support::CLOSEST_INTRO`, which says so of the passages, not of the
/// subject). Both are the product's framing, fixed texts; the sentences after them are
/// scored.
pub fn claims_of(text: &str) -> &str {
    let claims = gap::split_note(text).1.trim_start();
    claims
        .strip_prefix(support::CLOSEST_INTRO)
        .unwrap_or(claims)
}

/// Scores one answer (given in `latency_ms`, its first words in `first_words_ms`)
/// against its labelled question.
pub fn score(
    kb: &KnowledgeBase,
    q: &EvalQuestion,
    answer: &Answer,
    latency_ms: f64,
    first_words_ms: f64,
) -> Result<Scored> {
    let outcome = classify(answer);
    let text = match answer.format {
        AnswerFormat::Navigator => answer.value["answer"].as_str(),
        AnswerFormat::Rag => answer.value["final_answer"].as_str(),
    }
    .unwrap_or_default()
    .to_string();
    let claims = claims_of(&text);
    let hits = &answer.report.hits;
    let expected = q.file.as_deref().unwrap_or_default();
    let cited_files: Vec<String> = match answer.format {
        AnswerFormat::Navigator => answer.value["sources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["file"].as_str().map(String::from))
            .collect(),
        AnswerFormat::Rag if outcome == Outcome::Answered => hits
            .iter()
            .max_by(|a, b| a.score.total_cmp(&b.score))
            .map(|h| vec![h.file.clone()])
            .unwrap_or_default(),
        AnswerFormat::Rag => Vec::new(),
    };
    let answerable = q.kind == QuestionKind::Answerable;
    let keyword_share = (answerable && !q.keywords.is_empty()).then(|| {
        if outcome == Outcome::Answered {
            share_found(&q.keywords, &text)
        } else {
            0.0
        }
    });
    let retrieved: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    let keyword_retrieved = (answerable && !q.keywords.is_empty())
        .then(|| share_found(&q.keywords, &retrieved.join("\n")));
    let shown = &answer.report.shown_to_model;
    let keyword_shown = (answerable && !q.keywords.is_empty() && !shown.is_empty())
        .then(|| share_found(&q.keywords, shown));
    let mut sentences = 0;
    let mut grounded_sentences = 0;
    let mut invented = Vec::new();
    if outcome == Outcome::Answered {
        let mut evidence = String::new();
        for h in hits {
            evidence.push_str(&format!("{} § {}\n", h.file, h.section));
            evidence.push_str(&kb.store().section_text_of(h.key)?);
            evidence.push('\n');
        }
        for s in split_sentences(claims) {
            sentences += 1;
            if overlap_share(&content_words(&s), &evidence) >= GROUNDED_MIN_WORDS {
                grounded_sentences += 1;
            }
        }
        if let Some(sources) = answer.value["sources"].as_array() {
            for s in sources {
                let (f, sec) = (
                    s["file"].as_str().unwrap_or_default(),
                    s["section"].as_str().unwrap_or_default(),
                );
                if !kb.store().section_exists(f, sec)? {
                    invented.push(format!("{f} § {sec}"));
                }
            }
        }
        invented.extend(invented_tokens(claims, &evidence));
    }
    let expected_rank = hits
        .iter()
        .position(|h| answerable && h.file == expected)
        .map(|i| i + 1);
    Ok(Scored {
        id: q.id.clone(),
        kind: q.kind,
        outcome,
        retrieved_expected: expected_rank.is_some(),
        expected_rank,
        retrieved: hits
            .iter()
            .map(|h| format!("{} § {}", h.file, h.section))
            .collect(),
        cited_expected: answerable && cited_files.iter().any(|f| f == expected),
        keyword_share,
        keyword_retrieved,
        keyword_shown,
        sentences,
        grounded_sentences,
        invented,
        latency_ms,
        first_words_ms,
        answer: text,
        decision: answer.report.decision.clone(),
        best_score: answer.report.best_score,
        domain_score: answer.report.domain_score,
        terms: answer.report.terms.clone(),
        confidence: answer.value["confidence"].as_str().map(String::from),
        unmentioned: answer.report.unmentioned.clone(),
        asked_as: None,
    })
}

/// Share of `keywords` that occur in `text` as a reader sees it (Markdown rendered),
/// case-insensitively.
fn share_found(keywords: &[String], text: &str) -> f64 {
    let text = crate::kb::parse::visible_text(text).to_lowercase();
    let found = keywords
        .iter()
        .filter(|k| text.contains(&k.to_lowercase()))
        .count();
    found as f64 / keywords.len().max(1) as f64
}

/// The figures of one run (one format and mode over a question set).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    pub questions: usize,
    pub answerable: usize,
    pub not_documented: usize,
    pub out_of_domain: usize,
    pub hit_at_k: f64,
    /// Mean over answerable questions of 1 / the expected file's rank (0 when it was not
    /// retrieved).
    pub expected_file_mrr: f64,
    pub cited_expected_file: f64,
    pub keyword_share: f64,
    /// Keyword share of the retrieved chunks: the ceiling of `keyword_share`.
    pub keyword_retrieved: f64,
    /// Keyword share of the text the model was shown, over the questions it was shown
    /// any (`None` for a mode with no model).
    pub keyword_shown: Option<f64>,
    pub grounded_share: f64,
    /// Answerable questions refused (said not documented or out of domain).
    pub answerable_refused: f64,
    pub not_documented_honesty: f64,
    /// Not-documented questions refused or answered with the gap named.
    pub gap_stated: f64,
    /// Answerable questions answered with a note of what the documentation lacks.
    pub answerable_noted: f64,
    pub out_of_domain_accuracy: f64,
    /// Answers with an invented citation or token.
    pub invented_answers: usize,
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
    pub first_words_p50_ms: f64,
    pub first_words_p95_ms: f64,
    /// 95 % intervals of the targeted shares: what the question counts allow one to say.
    pub intervals: Intervals,
}

/// 95 % intervals `(low, high)` of a run's shares: Wilson's for counted shares, the normal
/// approximation for the mean keyword share.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Intervals {
    pub cited_expected_file: (f64, f64),
    pub keyword_share: (f64, f64),
    pub not_documented_honesty: (f64, f64),
    pub out_of_domain_accuracy: (f64, f64),
}

/// The run's figures; a share over no questions is 0.
pub fn summarise(scored: &[Scored], format: AnswerFormat) -> Figures {
    let of = |k: QuestionKind| scored.iter().filter(move |s| s.kind == k);
    let share = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let answerable = of(QuestionKind::Answerable).count();
    let not_documented = of(QuestionKind::NotDocumented).count();
    let out_of_domain = of(QuestionKind::OutOfDomain).count();
    let sentences: usize = scored.iter().map(|s| s.sentences).sum();
    let grounded: usize = scored.iter().map(|s| s.grounded_sentences).sum();
    let ood_ok = of(QuestionKind::OutOfDomain)
        .filter(|s| match format {
            AnswerFormat::Navigator => s.outcome == Outcome::OutOfDomain,
            AnswerFormat::Rag => s.outcome != Outcome::Answered,
        })
        .count();
    let cited = of(QuestionKind::Answerable)
        .filter(|s| s.cited_expected)
        .count();
    let keywords: Vec<f64> = scored.iter().filter_map(|s| s.keyword_share).collect();
    let honest = of(QuestionKind::NotDocumented)
        .filter(|s| s.outcome == Outcome::NotDocumented)
        .count();
    let latencies: Vec<f64> = scored.iter().map(|s| s.latency_ms).collect();
    let first_words: Vec<f64> = scored.iter().map(|s| s.first_words_ms).collect();
    Figures {
        questions: scored.len(),
        answerable,
        not_documented,
        out_of_domain,
        hit_at_k: share(
            of(QuestionKind::Answerable)
                .filter(|s| s.retrieved_expected)
                .count(),
            answerable,
        ),
        expected_file_mrr: if answerable == 0 {
            0.0
        } else {
            of(QuestionKind::Answerable)
                .filter_map(|s| s.expected_rank)
                .map(|r| 1.0 / r as f64)
                .sum::<f64>()
                / answerable as f64
        },
        cited_expected_file: share(cited, answerable),
        keyword_share: mean(&keywords),
        keyword_retrieved: mean(
            &scored
                .iter()
                .filter_map(|s| s.keyword_retrieved)
                .collect::<Vec<_>>(),
        ),
        keyword_shown: {
            let shown: Vec<f64> = scored.iter().filter_map(|s| s.keyword_shown).collect();
            (!shown.is_empty()).then(|| mean(&shown))
        },
        grounded_share: share(grounded, sentences),
        answerable_refused: share(
            of(QuestionKind::Answerable)
                .filter(|s| s.outcome != Outcome::Answered)
                .count(),
            answerable,
        ),
        not_documented_honesty: share(honest, not_documented),
        gap_stated: share(
            of(QuestionKind::NotDocumented)
                .filter(|s| s.outcome != Outcome::Answered || !s.unmentioned.is_empty())
                .count(),
            not_documented,
        ),
        answerable_noted: share(
            of(QuestionKind::Answerable)
                .filter(|s| s.outcome == Outcome::Answered && !s.unmentioned.is_empty())
                .count(),
            answerable,
        ),
        out_of_domain_accuracy: share(ood_ok, out_of_domain),
        invented_answers: scored.iter().filter(|s| !s.invented.is_empty()).count(),
        latency_p50_ms: percentile(latencies.clone(), 0.5),
        latency_p95_ms: percentile(latencies, 0.95),
        first_words_p50_ms: percentile(first_words.clone(), 0.5),
        first_words_p95_ms: percentile(first_words, 0.95),
        intervals: Intervals {
            cited_expected_file: wilson_interval(cited, answerable),
            keyword_share: share_mean_interval(&keywords),
            not_documented_honesty: wilson_interval(honest, not_documented),
            out_of_domain_accuracy: wilson_interval(ood_ok, out_of_domain),
        },
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::eval) fn scored(kind: QuestionKind, outcome: Outcome) -> Scored {
        Scored {
            id: String::new(),
            kind,
            outcome,
            answer: String::new(),
            retrieved_expected: false,
            expected_rank: None,
            retrieved: Vec::new(),
            cited_expected: false,
            keyword_share: None,
            keyword_retrieved: None,
            keyword_shown: None,
            sentences: 0,
            grounded_sentences: 0,
            invented: Vec::new(),
            latency_ms: 0.0,
            first_words_ms: 0.0,
            decision: String::new(),
            best_score: 0.0,
            domain_score: 0.0,
            terms: Vec::new(),
            confidence: None,
            unmentioned: Vec::new(),
            asked_as: None,
        }
    }

    #[test]
    fn the_products_framing_is_not_scored_as_a_claim() {
        let closest = format!(
            "{} “x”, so it may not answer that part of the question.\n\n{}\n\nRun `a`.",
            gap::NOTE_START,
            support::CLOSEST_INTRO
        );
        assert_eq!(claims_of(&closest).trim(), "Run `a`.");
        assert_eq!(claims_of("Run `a`. Then `b`."), "Run `a`. Then `b`.");
        // Only as the opening: the same words inside an answer are the answer's.
        let inside = format!("Run `a`. {}", support::CLOSEST_INTRO);
        assert_eq!(claims_of(&inside), inside);
    }

    #[test]
    fn figures_of_a_known_run() {
        use Outcome as O;
        use QuestionKind as K;
        let mut a1 = scored(K::Answerable, O::Answered);
        a1.retrieved_expected = true;
        a1.expected_rank = Some(1);
        a1.cited_expected = true;
        a1.keyword_share = Some(1.0);
        a1.keyword_shown = Some(1.0);
        a1.sentences = 3;
        a1.grounded_sentences = 3;
        a1.latency_ms = 100.0;
        a1.first_words_ms = 40.0;
        let mut a2 = scored(K::Answerable, O::Answered);
        a2.retrieved_expected = true;
        a2.expected_rank = Some(4);
        a2.keyword_share = Some(0.5);
        a2.keyword_shown = Some(0.0);
        a2.sentences = 1;
        a2.invented = vec!["--force".into()];
        a2.latency_ms = 300.0;
        a2.first_words_ms = 60.0;
        let mut a3 = scored(K::Answerable, O::NotDocumented);
        a3.keyword_share = Some(0.0);
        a3.latency_ms = 200.0;
        a2.unmentioned = vec!["retention".into()];
        let nd1 = scored(K::NotDocumented, O::NotDocumented);
        let nd2 = scored(K::NotDocumented, O::OutOfDomain);
        let ood1 = scored(K::OutOfDomain, O::OutOfDomain);
        let ood2 = scored(K::OutOfDomain, O::NotDocumented);
        let mut all = [a1, a2, a3, nd1, nd2, ood1, ood2];
        all[2].first_words_ms = 200.0;
        for s in &mut all[3..] {
            s.latency_ms = 50.0;
            s.first_words_ms = 50.0;
        }
        let f = summarise(&all, AnswerFormat::Navigator);
        assert_eq!((f.answerable, f.not_documented, f.out_of_domain), (3, 2, 2));
        assert!((f.hit_at_k - 2.0 / 3.0).abs() < 1e-9);
        // (1 + 1/4 + 0) / 3: the question whose file was not retrieved counts as 0.
        assert!((f.expected_file_mrr - 1.25 / 3.0).abs() < 1e-9);
        assert!((f.cited_expected_file - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.keyword_share - 0.5).abs() < 1e-9);
        // Over the two questions the model was shown text for; a3 was refused unread.
        assert_eq!(f.keyword_shown, Some(0.5));
        assert!((f.grounded_share - 0.75).abs() < 1e-9);
        assert!((f.answerable_refused - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.not_documented_honesty - 0.5).abs() < 1e-9);
        // Both not-documented questions were refused (one as out of domain); a2's note.
        assert!((f.gap_stated - 1.0).abs() < 1e-9);
        assert!((f.answerable_noted - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.out_of_domain_accuracy - 0.5).abs() < 1e-9);
        assert_eq!(f.invented_answers, 1);
        assert_eq!((f.latency_p50_ms, f.latency_p95_ms), (50.0, 300.0));
        assert_eq!((f.first_words_p50_ms, f.first_words_p95_ms), (50.0, 200.0));
        // 1 of 3 cited, 1 of 2 honest: Wilson's intervals of those counts.
        assert_eq!(f.intervals.cited_expected_file, wilson_interval(1, 3));
        assert_eq!(f.intervals.not_documented_honesty, wilson_interval(1, 2));
        assert_eq!(
            f.intervals.keyword_share,
            share_mean_interval(&[1.0, 0.5, 0.0])
        );
        // RAG cannot say out of domain: any refusal of an out-of-domain question counts.
        let f = summarise(&all, AnswerFormat::Rag);
        assert!((f.out_of_domain_accuracy - 1.0).abs() < 1e-9);
        for s in &mut all {
            s.keyword_shown = None;
        }
        let f = summarise(&all, AnswerFormat::Navigator);
        assert_eq!(f.keyword_shown, None, "no model, no figure");
    }
}
