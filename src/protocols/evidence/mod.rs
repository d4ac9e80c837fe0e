//! Evidence shared by the answer formats: the retrieved chunks, their sentences ranked by
//! relevance to the question, the KB's domain, and the decisions that follow from the
//! scores alone (answerable? out of domain?).

pub mod coverage;
mod names;
mod units;

use std::collections::hash_map::{Entry, HashMap};

use anyhow::Result;
use serde::Serialize;

use crate::embed::cosine;
pub use crate::kb::domain::Domain;
use crate::kb::search::{search_with_vector, Hit, SearchMode};
use crate::kb::KnowledgeBase;
pub use names::question_names;
use names::{is_proper_name, is_subject_name};
pub use units::{line_sentences, split_sentences, units, Unit};

/// A follow-up's own words' weight, against 1 for the words with the earlier turn's, in
/// its search. Chosen on the follow-up sets' tuning halves (`sextant eval --kb K
/// eval/followups-SET.jsonl --split tune --format rag --asked history`): 0.25–1.0 trade
/// git-doc's hits for postgresql's; 0.5 lifts postgresql's hit@8 0.73 → 0.87 and leaves
/// git-doc's at 0.86 (docs/CHANGELOG.md).
const OWN_WORDS_WEIGHT: f64 = 0.5;

/// Normalised score ((cos+1)/2) below which the best chunk does not answer the question.
/// Tuned on the sample KB (`eval/sample-kb.jsonl`, the per-question `best_score` of
/// `sextant eval --json`): its 65 answerable questions score ≥ 0.632, its out-of-domain
/// questions ≤ 0.626. On git-doc's tuning half the out-of-domain questions score
/// 0.57–0.67 and the answerable ones ≥ 0.69.
pub const ANSWERABLE_MIN_SCORE: f64 = 0.63;
/// Normalised similarity to the KB's domain (its topics) below which a question that is
/// also unanswerable is out of domain rather than "in domain, not documented". Tuned the
/// same way: out-of-domain questions ≤ 0.671, not-documented ones ≥ 0.709.
pub const DOMAIN_MIN_SCORE: f64 = 0.69;

/// Share of a question's words unknown to the KB from which a question far from its
/// topics is out of domain even when its best chunk scores like an answer. Chosen on the
/// tuning halves (`sextant eval --json`, each question's `terms`): git-doc's and
/// postgresql's answerable questions stay below 0.3, their out-of-domain ones reach
/// 0.5–1.0; the sample KB's answerable questions (everyday words in a 220-chunk KB) reach
/// 0.4.
pub const UNKNOWN_SHARE_MIN: f64 = 0.5;

/// Words of the question proper that the documentation found does not mention
/// (`unmentioned_terms`) from which a question far from the KB's topics is out of domain:
/// "how do I keep a sourdough starter alive while I travel for two weeks?" names four
/// (postgresql's tuning half); no answerable or not-documented question of either tuning
/// half names more than two.
pub const UNMENTIONED_OUT_OF_DOMAIN: usize = 3;

/// Share of a question's weight on words no chunk of the KB holds
/// (`Evidence::unknown_weight`) from which its subject is not the KB's, however near its
/// topics its other words put it: an everyday question in the manual's words ("prune the
/// branches of an apple tree", "merge onto a motorway") scores like the manual's own
/// questions on similarity. On the tuning halves of git-doc and postgresql (`sextant eval
/// --json`, each question's `terms`) every out-of-domain question reaches 0.47, no
/// answerable one passes 0.42 and no not-documented one 0.48 (a psql command to draw an
/// entity-relationship diagram, then refused as out of domain instead of answered).
pub const UNKNOWN_WEIGHT_OUT_OF_DOMAIN: f64 = 0.45;

/// Best score (`ANSWERABLE_MIN_SCORE`'s scale) below which a question far from the KB's
/// topics is out of domain once the reader has written nothing its passages support
/// (`out_of_domain_after_reading`). On the tuning halves of git-doc, postgresql and the
/// sample KB (`sextant eval --kb K eval/SET.jsonl --split tune --modes reader --json`),
/// the one out-of-domain question answered that way scores 0.633 ("When is the deadline
/// for filing my personal tax return?"); the answerable ones answered that way far from
/// the topics score 0.767 and more. Above it, a word of the question the passages do
/// not mention decides instead: no answerable question of the tuning halves answered
/// that way far from the topics names one.
pub const READ_OUT_OF_DOMAIN_BELOW: f64 = 0.70;

/// Retrieved chunks the reader is shown, best first: the passages an answer is read from.
pub const PASSAGES: usize = 3;

/// A sentence of a retrieved chunk, a candidate for the answer.
#[derive(Debug, Clone, Serialize)]
pub struct Sentence {
    pub text: String,
    /// Index into `Evidence::hits`.
    pub hit: usize,
    /// Cosine to the question, plus a small bonus for shared words.
    pub relevance: f32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub question: String,
    pub hits: Vec<Hit>,
    /// Best hit's normalised score (0 when nothing was retrieved).
    pub best_score: f64,
    /// Sentences of the hits, most relevant first.
    pub sentences: Vec<Sentence>,
    /// Best normalised similarity of the question to the KB's domain topics.
    pub domain_score: f64,
    pub domain: Domain,
    /// Names in the question (capitalised, acronyms, numbers) that occur nowhere in the
    /// KB. Similarity cannot tell "how do I configure Kafka" from a documented question
    /// about the same service; a name the documents never mention can.
    pub unknown_terms: Vec<String>,
    /// Names in the question that some document mentions but none of the retrieved
    /// sections does: the passages that match the question are about something else
    /// ("open a pull request on GitHub" when GitHub is named once, elsewhere).
    pub unretrieved_terms: Vec<String>,
    /// The question's own words, each with how common it is in the KB and whether the
    /// passages the answer is read from hold it (`coverage`).
    pub terms: Vec<coverage::Term>,
}

impl Evidence {
    pub fn gather(kb: &KnowledgeBase, question: &str, k: usize) -> Result<Evidence> {
        let q = kb.embedder.embed(&[question])?.pop().unwrap_or_default();
        // A follow-up is searched with the earlier turn's words and, at half weight, on
        // its own: the carried words alone pull towards what the earlier answer said. A
        // question that only may lean on the earlier turn, the other way round.
        let own = crate::protocols::followup::own_words(question);
        let follow_up = own.len() < question.len();
        let tentative = crate::protocols::followup::is_tentative(question);
        let q_own = if follow_up {
            kb.embedder.embed(&[own])?.pop().unwrap_or_default()
        } else {
            q.clone()
        };
        let hits = if follow_up {
            crate::kb::search::search_index_weighted(
                kb.store(),
                &if tentative {
                    [(question, &q, OWN_WORDS_WEIGHT), (own, &q_own, 1.0)]
                } else {
                    [(question, &q, 1.0), (own, &q_own, OWN_WORDS_WEIGHT)]
                },
                k,
                SearchMode::Hybrid,
            )?
        } else {
            search_with_vector(kb, question, &q, k, SearchMode::Hybrid)?
        };
        let best_score = hits.iter().map(|h| h.score).fold(0.0, f64::max);
        let (domain, topic_vectors) = kb.domain(|| {
            let domain = Domain::load(kb)?;
            let mut texts: Vec<String> = domain.topics.clone();
            if !domain.description.is_empty() {
                texts.push(domain.description.clone());
            }
            let vectors = crate::kb::domain::topic_vectors(kb, &texts)?;
            Ok((domain, vectors))
        })?;
        let domain_score = topic_vectors
            .iter()
            .map(|v| crate::kb::search::normalised(cosine(&q, v)))
            .fold(0.0, f64::max);
        let mut sentences: Vec<Sentence> = Vec::new();
        let mut retrieved_text = String::new();
        // Compared with whitespace collapsed: units join lines the chunk keeps.
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let head = |t: &str| t.chars().take(40).collect::<String>();
        // A section's units with their flattened sources, split once however many of
        // its chunks were retrieved (a long OPTIONS section often gives several).
        let mut split: HashMap<String, Vec<(Unit, String)>> = HashMap::new();
        for (i, h) in hits.iter().enumerate() {
            // Sentences come from the whole section, so none is cut at a chunk edge; a
            // sentence belongs to the hit if the chunk holds its start or it holds the
            // chunk's start.
            let section = kb.store().section_text_of(h.key)?;
            retrieved_text.push_str(&format!("{}\n{}\n", h.file, h.section).to_lowercase());
            let section_units = match split.entry(section) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    retrieved_text.push_str(&format!("{}\n", e.key().to_lowercase()));
                    let units = units(e.key())
                        .into_iter()
                        .map(|u| {
                            let source = flat(&u.source);
                            (u, source)
                        })
                        .collect();
                    e.insert(units)
                }
            };
            let chunk = flat(&h.text);
            let chunk_head = head(&chunk);
            for (u, source) in section_units.iter() {
                let in_chunk = chunk.contains(&head(source)) || source.contains(&chunk_head);
                if in_chunk && !sentences.iter().any(|x| x.text == u.text) {
                    sentences.push(Sentence {
                        text: u.text.clone(),
                        hit: i,
                        relevance: 0.0,
                    });
                }
            }
        }
        if !sentences.is_empty() {
            let refs: Vec<&str> = sentences.iter().map(|s| s.text.as_str()).collect();
            let vectors = kb.embedder.embed(&refs)?;
            // A follow-up's sentences are ranked half on its own words (a tentative one's
            // on them alone): on the whole query (with the earlier turn's words) the
            // sentences about the earlier question win, and those are what its answer
            // already said.
            let qwords = content_words(if tentative { own } else { question });
            for (s, v) in sentences.iter_mut().zip(&vectors) {
                let overlap = overlap_share(&qwords, &s.text);
                let similarity = if tentative {
                    cosine(&q_own, v)
                } else {
                    0.5 * (cosine(&q, v) + cosine(&q_own, v))
                };
                s.relevance = similarity + 0.2 * overlap as f32;
            }
            sentences.sort_by(|a, b| b.relevance.partial_cmp(&a.relevance).unwrap());
        }
        let mut unknown_terms = Vec::new();
        let mut unretrieved_terms = Vec::new();
        // A follow-up's carried words are the earlier turn's: only its own are checked.
        // A name in a sentence that only sets the scene ("I'm on Windows. How can I…?")
        // must be known to the KB, but need not be in what the question retrieves.
        let asking = coverage::asking_sentence(own);
        for w in question_names(own) {
            if !kb.store().term_known(w)? {
                unknown_terms.push(w.to_string());
            } else if !hits.is_empty()
                && asking.contains(w)
                && is_proper_name(w)
                && !crate::kb::stopwords::is_stopword(&w.to_lowercase())
                && !retrieved_text.contains(&w.to_lowercase())
                && !is_subject_name(kb, w)?
            {
                unretrieved_terms.push(w.to_string());
            }
        }
        let terms = coverage::question_terms(kb, own, &hits)?;
        Ok(Evidence {
            terms,
            unknown_terms,
            unretrieved_terms,
            question: question.to_string(),
            hits,
            best_score,
            sentences,
            domain_score,
            domain,
        })
    }

    pub fn answerable(&self) -> bool {
        self.best_score >= ANSWERABLE_MIN_SCORE
            && self.unknown_terms.is_empty()
            && self.unretrieved_terms.is_empty()
            && !self.words_unknown()
    }

    /// Why the evidence does not answer: names no document mentions, or the best score.
    pub fn why_unanswerable(&self) -> String {
        if !self.unknown_terms.is_empty() {
            format!("no document mentions {}", self.unknown_terms.join(", "))
        } else if !self.unretrieved_terms.is_empty() {
            format!(
                "no retrieved section mentions {}",
                self.unretrieved_terms.join(", ")
            )
        } else if self.words_unknown() {
            if (self.terms.len() >= 2 && self.unknown_share() >= UNKNOWN_SHARE_MIN)
                || self.foreign_words()
            {
                format!(
                    "no document uses the question's words {}",
                    self.unknown_words().join(", ")
                )
            } else {
                format!(
                    "the documentation found does not mention {}",
                    self.unmentioned_terms("").join(", ")
                )
            }
        } else {
            format!("best chunk {:.3} < {ANSWERABLE_MIN_SCORE}", self.best_score)
        }
    }

    /// Refused and far from the KB's topics, unless all that refused it is a name the KB
    /// mentions elsewhere while the best chunk clears the answerable bar ("I'm on
    /// Windows…": the KB speaks of Windows, the retrieved sections do not). Such a
    /// question is in the KB's world: not documented, not out of domain.
    pub fn out_of_domain(&self) -> bool {
        let names_the_kb_knows = self.unknown_terms.is_empty()
            && !self.unretrieved_terms.is_empty()
            && self.best_score >= ANSWERABLE_MIN_SCORE;
        !self.answerable()
            && (self.domain_score < DOMAIN_MIN_SCORE || self.foreign_words())
            && !names_the_kb_knows
    }

    /// Whether a question the rules let through is out of domain after all, once the
    /// reader has written nothing its passages support: far from the KB's topics
    /// (`DOMAIN_MIN_SCORE`), and either its best passage barely clears the answerable bar
    /// (`READ_OUT_OF_DOMAIN_BELOW`) or it names a word the passages and the KB barely
    /// know (`unmentioned_terms`). Weak signals that agree: an everyday question in the
    /// manual's words ("When is the best time of year to pick cherries?" over git's
    /// cherry-pick, "the right way to tag a tree for removal in a public park") retrieves
    /// passages the model cannot answer from.
    pub fn out_of_domain_after_reading(&self) -> bool {
        self.domain_score < DOMAIN_MIN_SCORE
            && (self.best_score < READ_OUT_OF_DOMAIN_BELOW
                || !self.unmentioned_terms("").is_empty())
    }

    /// What decided `out_of_domain_after_reading`, past the reader's unsupported
    /// sentences: "far from the topics (0.668) with a best passage of 0.701 that does not
    /// mention “park”".
    pub fn why_out_of_domain_after_reading(&self) -> String {
        let lacks = if self.best_score < READ_OUT_OF_DOMAIN_BELOW {
            String::new()
        } else {
            let named =
                crate::protocols::gap::list(&self.unmentioned_terms("")).unwrap_or_default();
            format!(" that does not mention {named}")
        };
        format!(
            "far from the topics ({:.3}) with a best passage of {:.3}{lacks}",
            self.domain_score, self.best_score
        )
    }

    /// Why `out_of_domain` holds: why it is unanswerable, and what puts it outside the
    /// KB's world (its distance from the topics, or the weight of words no chunk holds).
    pub fn why_out_of_domain(&self) -> String {
        if self.domain_score < DOMAIN_MIN_SCORE {
            return format!(
                "{} and domain similarity {:.3} < {DOMAIN_MIN_SCORE}",
                self.why_unanswerable(),
                self.domain_score
            );
        }
        format!(
            "{}; {:.2} of the question's weight is on words no document uses ({}), though its domain similarity is {:.3}",
            self.why_unanswerable(),
            self.unknown_weight(),
            self.unknown_words().join(", "),
            self.domain_score
        )
    }

    /// The question's words that no chunk of the KB holds.
    fn unknown_words(&self) -> Vec<&str> {
        self.terms
            .iter()
            .filter(|t| t.chunks == 0)
            .map(|t| t.word.as_str())
            .collect()
    }

    /// Whether most of the question's weight is on words the KB has never seen
    /// (`UNKNOWN_WEIGHT_OUT_OF_DOMAIN`), two at least: one unknown word is a turn of
    /// phrase or a typo ("our disks get hammered").
    fn foreign_words(&self) -> bool {
        self.unknown_words().len() >= 2 && self.unknown_weight() >= UNKNOWN_WEIGHT_OUT_OF_DOMAIN
    }

    /// Whether the question's subject is not the KB's: far from its topics with at least
    /// `UNKNOWN_SHARE_MIN` of its words, or three words of the question proper
    /// (`UNMENTIONED_OUT_OF_DOMAIN`), unknown to it; or, near its topics or not, with most
    /// of its weight on words the KB has never seen (`foreign_words`). An everyday
    /// question whose other words the documents happen to use ("what flour-to-water ratio
    /// for bread dough", "how many grams of butter in a tablespoon") retrieves passages
    /// that score like an answer, but the KB has never seen its subject.
    pub fn words_unknown(&self) -> bool {
        (self.domain_score < DOMAIN_MIN_SCORE
            && ((self.terms.len() >= 2 && self.unknown_share() >= UNKNOWN_SHARE_MIN)
                || self.unmentioned_terms("").len() >= UNMENTIONED_OUT_OF_DOMAIN))
            || self.foreign_words()
    }
}

/// Lowercased words of 2+ characters that carry meaning.
pub fn content_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .map(|w| w.trim_matches('-').to_lowercase())
        .filter(|w| w.chars().count() >= 2 && !crate::kb::stopwords::is_stopword(w))
        .collect()
}

/// Share of `words` that occur in `text` (as words).
pub fn overlap_share(words: &[String], text: &str) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let have: std::collections::HashSet<String> = content_words(text).into_iter().collect();
    words.iter().filter(|w| have.contains(*w)).count() as f64 / words.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A question's word, held by `chunks` chunks and by none of the passages read.
    fn term(word: &str, chunks: usize) -> coverage::Term {
        coverage::Term {
            word: word.into(),
            chunks,
            specific: chunks < 10,
            in_passages: false,
            barely_known: chunks <= coverage::BARELY_KNOWN_CHUNKS,
            weight: (5000.0 / (1 + chunks) as f64).ln(),
        }
    }

    /// Evidence whose best chunk clears the answerable bar, for `question` and its words.
    fn scored(domain_score: f64, question: &str, terms: Vec<coverage::Term>) -> Evidence {
        Evidence {
            question: question.into(),
            hits: Vec::new(),
            best_score: ANSWERABLE_MIN_SCORE + 0.05,
            sentences: Vec::new(),
            domain_score,
            domain: Domain::default(),
            unknown_terms: Vec::new(),
            unretrieved_terms: Vec::new(),
            terms,
        }
    }

    #[test]
    fn a_question_in_words_the_kb_never_uses_is_out_of_domain() {
        let ev = |domain_score, terms| scored(domain_score, "q", terms);
        // "How many grams of butter are in a tablespoon?": no chunk holds any of them.
        let butter = || vec![term("grams", 0), term("butter", 0), term("tablespoon", 0)];
        assert!(ev(0.64, butter()).out_of_domain());
        // However close to the KB's topics: the KB has never seen any of them.
        assert!(ev(DOMAIN_MIN_SCORE + 0.1, butter()).out_of_domain());
        // One unknown word of three is a turn of phrase ("hammered"), though it weighs
        // the most.
        let hammered = vec![
            term("hammered", 0),
            term("checkpoints", 40),
            term("wal", 300),
        ];
        assert!(ev(0.64, hammered).answerable());
    }

    #[test]
    fn a_question_in_the_kbs_words_about_something_it_never_mentions_is_out_of_domain() {
        // git-doc knows pruning, branches and trees, never apples or winter.
        let q = "How do I prune the branches of an apple tree in late winter?";
        let words = || {
            vec![
                term("prune", 129),
                term("branches", 1022),
                term("apple", 0),
                term("tree", 945),
                term("late", 4),
                term("winter", 0),
            ]
        };
        let near = scored(DOMAIN_MIN_SCORE + 0.02, q, words());
        assert!(near.unknown_weight() >= UNKNOWN_WEIGHT_OUT_OF_DOMAIN);
        assert!(!near.answerable());
        assert!(near.out_of_domain());
        assert!(near.why_out_of_domain().contains("(apple, winter)"));
        // A documented question with one word the KB lacks stays answerable.
        let mut documented = words();
        documented[5] = term("reflog", 40);
        let documented = scored(DOMAIN_MIN_SCORE + 0.02, q, documented);
        assert!(documented.answerable());
    }

    #[test]
    fn a_question_far_from_the_topics_naming_three_things_the_passages_lack_is_out_of_domain() {
        let ev = scored;
        // The KB knows "sourdough" and "travel" once or twice (an example, a setting's
        // description), so under half the words are unknown; the passages read hold none.
        let q = "How do I keep a sourdough starter alive while I travel for two weeks?";
        let words = || {
            vec![
                term("sourdough", 0),
                term("starter", 1),
                term("alive", 2),
                term("travel", 2),
                term("weeks", 30),
            ]
        };
        let far = ev(0.65, q, words());
        assert_eq!(
            far.unmentioned_terms(""),
            ["sourdough", "starter", "alive", "travel"]
        );
        assert!(far.out_of_domain());
        assert!(far
            .why_unanswerable()
            .contains("does not mention sourdough"));
        // Near the topics it is a gap to name, not another domain.
        assert!(ev(0.72, q, words()).answerable());
        // Two such words are a feature the documents lack ("per-role", "caps").
        let q = "Is there a per-role setting that caps the CPU share?";
        let two = vec![term("per-role", 1), term("caps", 1), term("setting", 400)];
        assert!(ev(0.65, q, two).answerable());
    }

    #[test]
    fn far_from_the_topics_and_barely_answerable_is_out_of_domain_after_reading() {
        let ev = |domain_score, best_score| Evidence {
            best_score,
            ..scored(domain_score, "q", Vec::new())
        };
        assert!(ev(DOMAIN_MIN_SCORE - 0.02, READ_OUT_OF_DOMAIN_BELOW - 0.05)
            .out_of_domain_after_reading());
        assert!(
            !ev(DOMAIN_MIN_SCORE + 0.02, READ_OUT_OF_DOMAIN_BELOW - 0.05)
                .out_of_domain_after_reading()
        );
        assert!(
            !ev(DOMAIN_MIN_SCORE - 0.02, READ_OUT_OF_DOMAIN_BELOW + 0.05)
                .out_of_domain_after_reading()
        );
    }

    #[test]
    fn a_word_the_passages_lack_decides_out_of_domain_after_reading_above_the_bar() {
        let q = "What's the right way to tag a tree for removal in a public park?";
        let ev = |domain_score, park_chunks| Evidence {
            best_score: READ_OUT_OF_DOMAIN_BELOW + 0.01,
            ..scored(
                domain_score,
                q,
                vec![
                    term("tag", 416),
                    term("tree", 939),
                    term("park", park_chunks),
                ],
            )
        };
        let park = ev(DOMAIN_MIN_SCORE - 0.02, 0);
        assert!(park.out_of_domain_after_reading());
        assert!(
            park.why_out_of_domain_after_reading()
                .ends_with("that does not mention “park”"),
            "{}",
            park.why_out_of_domain_after_reading()
        );
        // Every word known to the KB: the bar decides, and the passage clears it.
        assert!(!ev(DOMAIN_MIN_SCORE - 0.02, 300).out_of_domain_after_reading());
        // Near the KB's topics, a missing word is a gap, not another subject.
        assert!(!ev(DOMAIN_MIN_SCORE + 0.02, 0).out_of_domain_after_reading());
    }

    #[test]
    fn a_name_the_kb_mentions_elsewhere_is_not_out_of_domain() {
        let ev = |best_score, unknown: &[&str], unretrieved: &[&str]| Evidence {
            question: "q".into(),
            hits: Vec::new(),
            best_score,
            sentences: Vec::new(),
            domain_score: DOMAIN_MIN_SCORE - 0.05,
            domain: Domain::default(),
            unknown_terms: unknown.iter().map(|s| s.to_string()).collect(),
            unretrieved_terms: unretrieved.iter().map(|s| s.to_string()).collect(),
            terms: Vec::new(),
        };
        let windows = ev(ANSWERABLE_MIN_SCORE + 0.05, &[], &["Windows"]);
        assert!(!windows.answerable() && !windows.out_of_domain());
        // A name no document mentions, or a weak best chunk, is still out of domain.
        assert!(ev(ANSWERABLE_MIN_SCORE + 0.05, &["Lightroom"], &[]).out_of_domain());
        assert!(ev(ANSWERABLE_MIN_SCORE - 0.05, &[], &["Windows"]).out_of_domain());
        assert!(ev(ANSWERABLE_MIN_SCORE - 0.05, &[], &[]).out_of_domain());
    }

    #[test]
    fn content_words_drop_stopwords() {
        assert_eq!(
            content_words("How do I roll back the API?"),
            vec!["roll", "back", "api"]
        );
        let w = content_words("roll back api");
        assert!((overlap_share(&w, "To roll back the API, run x.") - 1.0).abs() < 1e-9);
        assert!((overlap_share(&w, "unrelated words") - 0.0).abs() < 1e-9);
    }
}
