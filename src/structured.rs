//! Structured generation, the engine's front door for every protocol: bound the schema,
//! compile it, decode under the mask, parse, and validate again independently.
//!
//! Invariant: `generate_structured` returns an object only if it parsed and passed the
//! `jsonschema` check against the caller's schema; otherwise it returns an error
//! (`StructuredError::Incomplete` when the budget ran out), never invalid JSON.

use anyhow::Result;
use serde_json::Value;

use crate::constrain::bounds::{bound_schema, BoundedSchema, Bounds};
use crate::constrain::validate::{SchemaValidator, ValidationFailure};
use crate::constrain::Grammar;
use crate::llm::chat_template::Message;
use crate::llm::generate::{generate, GenerateRequest, Generation, StopReason};
use crate::llm::sampling::SamplingParams;
use crate::llm::Llm;

/// Default token budget of one structured response.
pub const DEFAULT_MAX_TOKENS: usize = 512;

#[derive(Debug, Clone)]
pub enum OutputSpec {
    JsonSchema(Value),
    Lark(String),
    Regex(String),
}

#[derive(Debug, Clone)]
pub struct StructuredRequest {
    pub messages: Vec<Message>,
    pub output: OutputSpec,
    pub max_tokens: usize,
    pub sampling: SamplingParams,
    pub bounds: Bounds,
}

impl StructuredRequest {
    pub fn new(messages: Vec<Message>, output: OutputSpec) -> Self {
        StructuredRequest {
            messages,
            output,
            max_tokens: DEFAULT_MAX_TOKENS,
            sampling: SamplingParams::default(),
            bounds: Bounds::default(),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StructuredOutput {
    /// The parsed object (JSON Schema output only).
    pub value: Option<Value>,
    pub text: String,
    pub generation: Generation,
    /// The schema actually compiled, with the bounds the engine added.
    pub bounded: Option<BoundedSchema>,
    pub compile_ms: f64,
    pub mask_us: Vec<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    #[error(
        "incomplete: the budget of {max_tokens} tokens ran out before the output was complete \
         (raise --max-tokens, or tighten the schema's maxLength/maxItems). Partial output: {partial}"
    )]
    Incomplete { max_tokens: usize, partial: String },
    #[error("the model ended its turn before the output was complete. Partial output: {partial}")]
    EndedEarly { partial: String },
    #[error(transparent)]
    Invalid(#[from] ValidationFailure),
    #[error("the output is not valid JSON ({error}): {text}")]
    NotJson { error: String, text: String },
}

pub fn generate_structured(
    llm: &mut Llm,
    req: &StructuredRequest,
    on_text: &mut dyn FnMut(&str),
) -> Result<StructuredOutput> {
    let (grammar, bounded, validator) = match &req.output {
        OutputSpec::JsonSchema(schema) => {
            // Validate the caller's schema first: a schema error must name the schema,
            // not surface as a grammar failure.
            let validator = SchemaValidator::new(schema)?;
            let bounded = bound_schema(schema, &req.bounds, req.max_tokens);
            (
                Grammar::JsonSchema(bounded.schema.clone()),
                Some(bounded),
                Some(validator),
            )
        }
        OutputSpec::Lark(g) => (Grammar::Lark(g.clone()), None, None),
        OutputSpec::Regex(r) => (Grammar::Regex(r.clone()), None, None),
    };
    let mut constraint = llm.grammar.compile(&grammar)?;
    let prompt = llm.chat_tokens(&req.messages)?;
    let gen_req = GenerateRequest {
        prompt: &prompt,
        max_tokens: req.max_tokens,
        sampling: req.sampling.clone(),
        eos: &llm.eos,
    };
    let generation = generate(
        llm.model.as_mut(),
        &llm.tokenizer,
        &gen_req,
        Some(&mut constraint),
        on_text,
    )?;
    let text = generation.text.clone();
    match generation.stop {
        StopReason::MaxTokens => {
            return Err(StructuredError::Incomplete {
                max_tokens: req.max_tokens,
                partial: text,
            }
            .into())
        }
        StopReason::EndToken if !constraint.is_stopped() && validator.is_some() => {
            // The grammar only allows an end token where the output is complete, so this
            // is reached only when the JSON closed and the model then ended its turn.
        }
        _ => {}
    }
    let value = match validator {
        Some(v) => {
            let value: Value = serde_json::from_str(&text).map_err(|e| match generation.stop {
                StopReason::EndToken => StructuredError::EndedEarly {
                    partial: text.clone(),
                },
                _ => StructuredError::NotJson {
                    error: e.to_string(),
                    text: text.clone(),
                },
            })?;
            v.validate(&value)?;
            Some(value)
        }
        None => None,
    };
    Ok(StructuredOutput {
        value,
        text,
        generation,
        bounded,
        compile_ms: constraint.compile_us / 1e3,
        mask_us: std::mem::take(&mut constraint.mask_us),
    })
}
