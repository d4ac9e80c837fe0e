//! Steps the protocols share: retrieval with its report, the one call into the model,
//! and the grounded answer arm (the model picks evidence sentences) of both formats.

use anyhow::Result;
use serde_json::{json, Value};

use super::evidence::{Evidence, Sentence};
use super::grounded::{answer_pattern, candidates, evidence_listing, CANDIDATES, MAX_SENTENCES};
use super::watch::{FieldText, Watch};
use super::{AnswerMode, Report};
use crate::kb::KnowledgeBase;
use crate::llm::chat_template::Message;
use crate::llm::Llm;
use crate::structured::{generate_structured, OutputSpec, StructuredRequest};

/// The longest free-text answer the generative modes' schemas allow (rag's and the
/// navigator's `llm` mode); the reader's is `reader::MAX_ANSWER_CHARS`.
pub const FREE_ANSWER_CHARS: usize = 400;

/// Retrieval for one question, with the report's retrieval figures filled in.
pub(crate) fn gather(
    kb: &KnowledgeBase,
    question: &str,
    k: usize,
    mode: AnswerMode,
) -> Result<(Evidence, Report)> {
    let t = std::time::Instant::now();
    let ev = Evidence::gather(kb, question, k)?;
    let report = Report {
        mode: format!("{mode:?}").to_lowercase(),
        retrieval_ms: t.elapsed().as_secs_f64() * 1e3,
        best_score: ev.best_score,
        domain_score: ev.domain_score,
        terms: ev.terms.clone(),
        hits: ev.hits.clone(),
        ..Default::default()
    };
    Ok((ev, report))
}

/// Runs the LLM under `schema` and returns the object (parsed and validated by
/// `generate_structured`). Every protocol's model step goes through here.
pub(crate) fn llm_object(
    llm: &mut Llm,
    system: &str,
    user: &str,
    schema: Value,
    report: &mut Report,
) -> Result<Value> {
    llm_object_watched(llm, system, user, schema, report, ("", &mut Watch::none()))
}

/// `llm_object`, with the text of the string field `watched.0` handed to the watch as it
/// is generated, and the watch's cancel flag honoured.
pub(crate) fn llm_object_watched(
    llm: &mut Llm,
    system: &str,
    user: &str,
    schema: Value,
    report: &mut Report,
    watched: (&str, &mut Watch),
) -> Result<Value> {
    let (field, watch) = watched;
    let mut req = StructuredRequest::new(
        vec![Message::new("system", system), Message::new("user", user)],
        OutputSpec::JsonSchema(schema.clone()),
    );
    req.max_tokens = 512;
    // The system prompt is the same for every question of a protocol: a long-lived model
    // (server, desktop, benchmarks) keeps its KV cache and processes only what follows.
    req.reuse_kv = true;
    req.cancel = watch.cancel.clone();
    // Only a watched call follows its JSON (the CLI's and the tests' are not watched).
    let watching = !field.is_empty() && watch.on_answer_text.is_some();
    let mut field_text = FieldText::new(field);
    let out = generate_structured(llm, &req, &mut |piece| {
        if watching {
            watch.text(&field_text.push(piece));
        }
    })?;
    report.prompt_ms += out.generation.prompt_ms;
    report.generation_ms += out.generation.generate_ms;
    report.decoder_schema = Some(schema);
    Ok(out.value.expect("schema output has a value"))
}

/// The grounded answer: the model copies up to `MAX_SENTENCES` candidate sentences, in
/// its order, into `field`; the pattern admits nothing else. Returns the answer and the
/// candidates (whose hits are the citations).
pub(crate) fn grounded_answer<'e>(
    llm: &mut Llm,
    ev: &'e Evidence,
    field: &str,
    system: &str,
    report: &mut Report,
    watch: &mut Watch,
) -> Result<(String, Vec<&'e Sentence>)> {
    let cands = candidates(ev, CANDIDATES);
    let schema = json!({
        "type": "object", "additionalProperties": false, "required": [field],
        "properties": {field: {"type": "string", "pattern": answer_pattern(&cands, MAX_SENTENCES)}}
    });
    report.shown_to_model = evidence_listing(ev, &cands);
    let user = format!(
        "Sentences from the documentation:\n{}\n\nQuestion: {}\n\
         Answer with the sentence or sentences above that answer the question, most \
         important first, copied exactly.",
        report.shown_to_model, ev.question
    );
    let v = llm_object_watched(llm, system, &user, schema, report, (field, watch))?;
    let answer = v[field].as_str().unwrap_or_default().trim().to_string();
    Ok((answer, cands))
}
