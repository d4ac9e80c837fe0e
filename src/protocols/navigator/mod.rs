//! The navigator response (seeds/navigator-response-format.md).
//!
//! What the model may choose is fixed per question by the decoder schema: `sources[].file`
//! is an enum of the files actually retrieved and `sources[].section` an enum of that
//! file's retrieved headings (one `anyOf` branch per file), so a non-existent file or
//! section cannot be produced. `confidence`, `confidenceReason`, `outOfDomain`,
//! `relatedTopics` and each source's `relevance` are computed by written rules from the
//! evidence; then the seed's five validation rules run, and a failed rule lowers the
//! confidence and says so in `confidenceReason`.
//!
//! Confidence rules (normalised scores, (cos + 1) / 2, of the best cited chunk):
//! - high: best ≥ 0.78, and either one file is cited or every cited section scores
//!   ≥ 0.75 (multiple confirming sources) — a direct answer, clearly matched;
//! - medium: best ≥ 0.72, or sections from two or more files are combined (synthesis);
//! - low: anything weaker that is still answerable (≥ 0.63): partially relevant;
//! - with the reader, its verdict sets the level instead (`confidence::reader_confidence`):
//!   high when one file's passages answer and hold `HIGH_MIN_HELD` of the question's
//!   weight, medium when they answer from several files or hold less, low when partial;
//! - each failed validation rule lowers the level by one (never below low).
//!
//! No information (best < 0.63, or the question names something no document mentions):
//! empty sources, an honest answer, confidence high in the absence, `outOfDomain` false —
//! unless the question is also far from the KB's topics (< 0.69), which makes it out of
//! domain (seed Patterns 4 and 5).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::checks::{self, grounding_share};
use super::evidence::Evidence;
use super::gap;
use super::grounded::{
    candidates, evidence_listing, extractive_answer, join_sentences, CANDIDATES,
};
use super::reader::{self, Verdict};
use super::shared::{gather, grounded_answer, llm_object_watched, FREE_ANSWER_CHARS};
use super::support;
use super::watch::Watch;
use super::{AnswerMode, Pending, Report, Step};
use crate::kb::search::Hit;
use crate::kb::KnowledgeBase;
use crate::llm::Llm;
use crate::schemas::{self, SchemaId};

mod confidence;
mod refusal;

use confidence::{asks_how_to, reader_confidence, score_confidence};
pub use confidence::{
    confidence_level, Level, CONFIRMING_MIN, HIGH_MIN, HIGH_MIN_HELD, MEDIUM_MIN,
};

const MAX_SOURCES: usize = 3;
pub(crate) const MAX_RELATED: usize = 5;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Source {
    pub file: String,
    pub section: String,
    pub relevance: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigatorResponse {
    pub answer: String,
    pub sources: Vec<Source>,
    pub confidence: String,
    pub confidence_reason: String,
    pub related_topics: Vec<String>,
    pub out_of_domain: bool,
}

/// Retrieved sections grouped by file, best first: file → [(heading, best score, hit)].
fn sections_by_file(hits: &[Hit]) -> BTreeMap<String, Vec<(String, f64)>> {
    let mut m: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    for h in hits {
        let e = m.entry(h.file.clone()).or_default();
        match e.iter_mut().find(|(s, _)| *s == h.section) {
            Some(x) => x.1 = x.1.max(h.score),
            None => e.push((h.section.clone(), h.score)),
        }
    }
    m
}

/// The decoder schema for this question's evidence.
pub fn decoder_schema(hits: &[Hit], answer: Value) -> Value {
    let branches: Vec<Value> = sections_by_file(hits)
        .into_iter()
        .map(|(file, sections)| {
            let names: Vec<String> = sections.into_iter().map(|(s, _)| s).collect();
            json!({
                "type": "object", "additionalProperties": false,
                "required": ["file", "section"],
                "properties": {"file": {"const": file}, "section": {"enum": names}}
            })
        })
        .collect();
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["answer", "sources"],
        "properties": {
            "answer": answer,
            "sources": {"type": "array", "minItems": 1, "maxItems": MAX_SOURCES, "items": {"anyOf": branches}}
        }
    })
}

fn score_of(hits: &[Hit], file: &str, section: &str) -> f64 {
    hits.iter()
        .filter(|h| h.file == file && h.section == section)
        .map(|h| h.score)
        .fold(0.0, f64::max)
}

/// What the rules need to know of the KB about the retrieved sections, read before the
/// model runs so the KB can be released: which exist, and their neighbours' headings.
struct SectionFacts {
    existing: HashSet<(String, String)>,
    neighbours: HashMap<(String, String), Vec<String>>,
}

impl SectionFacts {
    fn of(kb: &KnowledgeBase, hits: &[Hit]) -> Result<SectionFacts> {
        let mut facts = SectionFacts {
            existing: HashSet::new(),
            neighbours: HashMap::new(),
        };
        for h in hits {
            let key = (h.file.clone(), h.section.clone());
            if facts.neighbours.contains_key(&key) {
                continue;
            }
            if kb.store().section_exists(&h.file, &h.section)? {
                facts.existing.insert(key.clone());
            }
            let n = kb.store().neighbour_headings(&h.file, &h.section_path)?;
            facts.neighbours.insert(key, n);
        }
        Ok(facts)
    }
}

/// The model's part of a navigator answer: the evidence, the mode, and the KB facts the
/// rules check the citations against.
pub struct PendingNavigator {
    ev: Evidence,
    mode: AnswerMode,
    report: Report,
    facts: SectionFacts,
}

/// Out of domain, not documented and extractive answers by rules; the rest is left to
/// the model.
pub fn prepare(
    kb: &KnowledgeBase,
    question: &str,
    k: usize,
    mode: AnswerMode,
) -> Result<Step<(NavigatorResponse, Report), PendingNavigator>> {
    let (ev, mut report) = gather(kb, question, k, mode)?;
    let facts = SectionFacts::of(kb, &ev.hits)?;

    if ev.out_of_domain() {
        report.decision = format!("out of domain: {}", ev.why_out_of_domain());
        return check(refusal::out_of_domain(&ev), &ev, &facts, report, None).map(Step::Done);
    }
    if !ev.answerable() {
        report.decision = format!("in domain, no answer: {}", ev.why_unanswerable());
        let why = refusal::Absence::from_evidence(&ev);
        let response = refusal::not_documented(&ev, &why);
        return check(response, &ev, &facts, report, None).map(Step::Done);
    }

    report.decision = "answer from the retrieved sections".into();
    if mode == AnswerMode::Extractive {
        // The answer's sentences are the citations: each comes from exactly one section.
        let chosen = extractive_answer(&ev);
        let mut cited = Vec::new();
        for s in &chosen {
            let h = &ev.hits[s.hit];
            let key = (h.file.clone(), h.section.clone());
            if !cited.contains(&key) {
                cited.push(key);
            }
        }
        let text = join_sentences(&chosen.iter().map(|s| s.text.as_str()).collect::<Vec<_>>());
        return cite(text, cited, Basis::Scores, &ev, &facts, report).map(Step::Done);
    }
    Ok(Step::NeedsLlm(PendingNavigator {
        ev,
        mode,
        report,
        facts,
    }))
}

impl Pending for PendingNavigator {
    type Output = (NavigatorResponse, Report);

    fn finish(self, llm: &mut Llm) -> Result<(NavigatorResponse, Report)> {
        self.finish_watched(llm, &mut Watch::none())
    }

    fn finish_watched(
        self,
        llm: &mut Llm,
        watch: &mut Watch,
    ) -> Result<(NavigatorResponse, Report)> {
        let PendingNavigator {
            ev,
            mode,
            mut report,
            facts,
        } = self;
        let (answer, cited) = match mode {
            AnswerMode::Reader => {
                let reading = reader::read(llm, &ev, &mut report, watch)?;
                if reading.out_of_domain(&ev, &mut report) {
                    let response = refusal::out_of_domain_after_reading(&ev);
                    return check(response, &ev, &facts, report, None);
                }
                let mut cited: Vec<(String, String)> = Vec::new();
                for &q in &reading.cited {
                    let h = &ev.hits[q];
                    let key = (h.file.clone(), h.section.clone());
                    if !cited.contains(&key) {
                        cited.push(key);
                    }
                }
                return cite(
                    reading.answer,
                    cited,
                    Basis::Reader(reading.verdict, reading.says_what_to_do),
                    &ev,
                    &facts,
                    report,
                );
            }
            // The LLM chooses sentences; their sections are the citations (exact by
            // construction, so the model's own citation guess is not needed).
            AnswerMode::Grounded => {
                let (answer, cands) =
                    grounded_answer(llm, &ev, "answer", SYSTEM, &mut report, watch)?;
                let mut cited: Vec<(String, String)> = Vec::new();
                for s in &cands {
                    let h = &ev.hits[s.hit];
                    let key = (h.file.clone(), h.section.clone());
                    if answer.contains(&s.text) && !cited.contains(&key) {
                        cited.push(key);
                    }
                }
                (answer, cited)
            }
            // Free text: the decoder schema ties each citation to a retrieved file and one
            // of its retrieved sections.
            _ => {
                let cands = candidates(&ev, CANDIDATES);
                let answer_schema =
                    json!({"type": "string", "minLength": 1, "maxLength": FREE_ANSWER_CHARS});
                let schema = decoder_schema(&ev.hits, answer_schema);
                report.shown_to_model = evidence_listing(&ev, &cands);
                let user = format!(
                    "Documentation sentences, with their file and section:\n{}\n\nQuestion: {}\n\
                     Answer from these sentences only, then cite the file and section of each one you used.",
                    report.shown_to_model, ev.question
                );
                let watched = ("answer", &mut *watch);
                let v = llm_object_watched(llm, SYSTEM, &user, schema, &mut report, watched)?;
                let written = v["answer"].as_str().unwrap_or_default().trim().to_string();
                let written =
                    support::without_cut_sentence(written, FREE_ANSWER_CHARS, &mut report);
                let answer = support::hold_to_shown(written, &ev, &mut report);
                let mut cited: Vec<(String, String)> = Vec::new();
                for s in v["sources"].as_array().cloned().unwrap_or_default() {
                    let key = (
                        s["file"].as_str().unwrap_or_default().to_string(),
                        s["section"].as_str().unwrap_or_default().to_string(),
                    );
                    if !cited.contains(&key) {
                        cited.push(key);
                    }
                }
                (answer, cited)
            }
        };
        cite(answer, cited, Basis::Scores, &ev, &facts, report)
    }
}

/// What a cited answer's confidence rests on.
enum Basis {
    /// The scores of the cited sections (the written rules of the module docs).
    Scores,
    /// The reader's verdict on the passages it quoted, and whether its answer says what
    /// to do (`Reading::says_what_to_do`).
    Reader(Verdict, bool),
}

/// The response around an answer and its cited sections: sources with relevance lines,
/// confidence by the written rules (or the reader's verdict), related topics, then the
/// checks.
fn cite(
    answer: String,
    cited: Vec<(String, String)>,
    basis: Basis,
    ev: &Evidence,
    facts: &SectionFacts,
    report: Report,
) -> Result<(NavigatorResponse, Report)> {
    let sources: Vec<Source> = cited
        .iter()
        .take(MAX_SOURCES)
        .map(|(file, section)| Source {
            file: file.clone(),
            section: section.clone(),
            relevance: relevance(ev, file, section),
        })
        .collect();
    let scores: Vec<f64> = sources
        .iter()
        .map(|s| score_of(&ev.hits, &s.file, &s.section))
        .collect();
    let files: std::collections::BTreeSet<&str> = sources.iter().map(|s| s.file.as_str()).collect();
    let (level, why) = match basis {
        Basis::Scores => score_confidence(&scores, files.len(), sources.len()),
        Basis::Reader(verdict, says_what_to_do) => {
            let (share, lacking) = ev.held_by_passages();
            let own_words = crate::protocols::followup::own_words(&ev.question);
            let instructs = says_what_to_do || !asks_how_to(own_words);
            reader_confidence(verdict, &sources, files.len(), (share, &lacking), instructs)
        }
    };
    let mut related: Vec<String> = Vec::new();
    for s in &sources {
        let key = (s.file.clone(), s.section.clone());
        for n in facts.neighbours.get(&key).into_iter().flatten() {
            if !related.contains(n) && !sources.iter().any(|x| x.section == *n) {
                related.push(n.clone());
            }
        }
    }
    related.truncate(MAX_RELATED);
    let response = NavigatorResponse {
        answer,
        sources,
        confidence: level.name().into(),
        confidence_reason: format!("{} confidence: {why}.", capitalise(level.name())),
        related_topics: related,
        out_of_domain: false,
    };
    check(response, ev, facts, report, Some(level))
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The relevance line of a source: the evidence itself, so it cannot be invented.
fn relevance(ev: &Evidence, file: &str, section: &str) -> String {
    let best = ev
        .sentences
        .iter()
        .find(|s| ev.hits[s.hit].file == file && ev.hits[s.hit].section == section);
    let score = score_of(&ev.hits, file, section);
    match best {
        Some(s) => format!(
            "Matches the question (score {score:.2}): \"{}\"",
            crate::kb::parse::excerpt(&s.text, 100)
        ),
        None => format!("Retrieved for the question (score {score:.2})"),
    }
}

/// Runs the five rules, lowers confidence for each failure (when the level is computed),
/// validates the schema.
fn check(
    mut response: NavigatorResponse,
    ev: &Evidence,
    facts: &SectionFacts,
    mut report: Report,
    level: Option<Level>,
) -> Result<(NavigatorResponse, Report)> {
    let t = Instant::now();
    let cited: Vec<(String, String)> = response
        .sources
        .iter()
        .map(|s| (s.file.clone(), s.section.clone()))
        .collect();
    // What the answer may draw on: the cited chunks, their file and section names, and
    // the sentences of their sections (an answer quotes whole sentences, which can run
    // past a chunk's edge).
    let is_cited = |h: &Hit| cited.iter().any(|(f, s)| *f == h.file && *s == h.section);
    let mut cited_text = String::new();
    for h in ev.hits.iter().filter(|h| is_cited(h)) {
        cited_text.push_str(&format!("{} § {}\n{}\n", h.file, h.section, h.text));
    }
    for s in ev.sentences.iter().filter(|s| is_cited(&ev.hits[s.hit])) {
        cited_text.push_str(&s.text);
        cited_text.push('\n');
    }
    let exists = |f: &str, s: &str| facts.existing.contains(&(f.to_string(), s.to_string()));
    let mut rules = vec![
        checks::source_existence(&cited, &exists),
        checks::confidence_reason_meaningful(&response.confidence_reason),
        checks::out_of_domain_logic(response.out_of_domain, response.sources.len()),
    ];
    if !response.sources.is_empty() {
        rules.push(checks::hallucination_patterns(
            &response.answer,
            &cited_text,
        ));
        let (alignment, share) = checks::source_answer_alignment(&response.answer, &cited_text);
        rules.push(alignment);
        report.grounding_share = share;
    } else {
        report.grounding_share = grounding_share(&response.answer, &response.answer);
    }
    if let Some(mut level) = level {
        let failed: Vec<&checks::RuleResult> = rules.iter().filter(|r| !r.passed).collect();
        for f in &failed {
            level = level.lower();
            response
                .confidence_reason
                .push_str(&format!(" Lowered: {} failed ({}).", f.rule, f.detail));
        }
        // What the question asks about and the documentation found does not mention: said
        // first, and the answer is at most partial (the seed's low).
        if let Some(named) = gap::note_unmentioned(ev, &mut response.answer, &mut report) {
            response.confidence_reason = format!(
                "Low confidence: the question asks about {named}, which the documentation \
                 found does not mention. Otherwise {}",
                lowercase_first(&response.confidence_reason)
            );
            level = Level::Low;
        }
        response.confidence = level.name().into();
    }
    report.rules = rules;
    schemas::validate(
        SchemaId::NavigatorResponse,
        &serde_json::to_value(&response)?,
    )?;
    report.validation_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((response, report))
}

const SYSTEM: &str = "You are a documentation navigator. Answer the question using only the \
    documentation sentences given, and cite the file and section of each sentence you use.";
