//! Structured generation, the engine's front door for every protocol: bound the schema,
//! compile it, decode under the mask, parse, and validate again independently.
//!
//! Invariant: `generate_structured` returns an object only if it parsed and passed the
//! `jsonschema` check against the caller's schema; otherwise it returns an error
//! (`StructuredError::Incomplete` when the budget ran out), never invalid JSON.

use serde_json::Value;

use crate::constrain::bounds::{bound_schema, minimal_instance, BoundedSchema, Bounds};
use crate::constrain::compat;
use crate::constrain::narrow::narrow;
use crate::constrain::validate::{SchemaValidator, ValidationFailure};
use crate::constrain::Grammar;
use crate::llm::chat_template::Message;
use crate::llm::generate::{generate, Cancelled, GenerateRequest, Generation, StopReason};
use crate::llm::sampling::SamplingParams;
use crate::llm::Llm;

/// Default token budget of one structured response.
pub const DEFAULT_MAX_TOKENS: usize = 1024;

#[derive(Debug, Clone)]
pub enum OutputSpec {
    /// Free text (no grammar): running out of budget is then a normal stop, not an error.
    Text,
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
    /// Reuse the KV cache for the prompt prefix it already holds (multi-turn chats).
    pub reuse_kv: bool,
    /// The prompt, already tokenized (`messages` are then not rendered). Lets a chat
    /// carry its earlier turns' exact tokens, so its KV cache stays a prefix.
    pub prompt_tokens: Option<Vec<u32>>,
    /// Set from another thread to stop generation early (a client went away).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl StructuredRequest {
    pub fn new(messages: Vec<Message>, output: OutputSpec) -> Self {
        StructuredRequest {
            messages,
            output,
            max_tokens: DEFAULT_MAX_TOKENS,
            sampling: SamplingParams::default(),
            bounds: Bounds::default(),
            reuse_kv: false,
            prompt_tokens: None,
            cancel: None,
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
    /// What the grammar could not enforce exactly (then the full schema was checked).
    pub approximations: Vec<String>,
    /// Generations it took (more than one only for approximated schemas).
    pub attempts: u32,
}

/// Why structured generation returned no object. Callers map these to their own terms
/// (exit codes, HTTP statuses) without inspecting messages.
#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    /// The caller's schema, grammar or regex is invalid or uses what the grammar engine
    /// cannot compile; the message names the keyword.
    #[error("{0:#}")]
    Unsupported(anyhow::Error),
    #[error(
        "incomplete: the budget of {max_tokens} tokens ran out before the output was complete, \
         while writing {at} (raise the token budget: --max-tokens, or max_tokens in the API; \
         or tighten that part's maxLength/maxItems). Partial output: {partial}"
    )]
    Incomplete {
        max_tokens: usize,
        partial: String,
        /// The JSON pointer of the value being written when the budget ran out: the part of
        /// the schema that needs the tokens.
        at: String,
    },
    #[error(
        "incomplete: the model's context window of {n_ctx} tokens filled up before the output \
         was complete (shorten the prompt, or use a model with a longer context). Partial \
         output: {partial}"
    )]
    ContextFull { n_ctx: usize, partial: String },
    #[error("cancelled")]
    Cancelled,
    #[error("the model ended its turn before the output was complete. Partial output: {partial}")]
    EndedEarly { partial: String },
    #[error(transparent)]
    Invalid(#[from] ValidationFailure),
    #[error("the output is not valid JSON ({error}): {text}")]
    NotJson { error: String, text: String },
    /// The token budget is below what the smallest valid output takes.
    #[error(
        "the token budget of {given} is too small for this schema: its smallest valid output \
         ({minimal:.200}) takes {needed} tokens; raise --max-tokens (max_tokens in the API) to \
         at least {needed}, better twice that"
    )]
    BudgetTooSmall {
        needed: usize,
        given: usize,
        minimal: String,
    },
    /// The grammar could only approximate the schema, and no try satisfied it.
    #[error(
        "no output satisfied the full schema in {attempts} tries ({failure}); the grammar \
         could not enforce: {}. Simplify those parts of the schema, or raise the budget",
        approximations.join("; ")
    )]
    Unsatisfied {
        attempts: u32,
        approximations: Vec<String>,
        failure: ValidationFailure,
    },
    /// The prompt could not be rendered or tokenized, or the model failed.
    #[error("{0:#}")]
    Engine(anyhow::Error),
}

type Result<T, E = StructuredError> = std::result::Result<T, E>;

impl StructuredError {
    /// A short name for the kind of failure (benchmarks and tests count by it).
    pub fn kind(&self) -> &'static str {
        match self {
            StructuredError::Unsupported(_) => "unsupported schema",
            StructuredError::Incomplete { .. } => "budget",
            StructuredError::BudgetTooSmall { .. } => "budget too small",
            StructuredError::ContextFull { .. } => "context",
            StructuredError::Cancelled => "cancelled",
            StructuredError::EndedEarly { .. } => "ended early",
            StructuredError::Invalid(_) => "invalid",
            StructuredError::NotJson { .. } => "not JSON",
            StructuredError::Unsatisfied { .. } => "not satisfied",
            StructuredError::Engine(_) => "engine",
        }
    }
}

/// Most a schema's default budget is raised to (`default_budget`).
pub const RAISED_MAX_TOKENS: usize = 4096;

/// The token budget for `schema` when the caller gives none: `DEFAULT_MAX_TOKENS`, or
/// more (up to `RAISED_MAX_TOKENS`) when even its required structure at the smallest
/// added bounds would not fit the default. Reported by `--explain`.
pub fn default_budget(schema: &Value, bounds: &Bounds) -> usize {
    let (mut grammar_copy, _) = compat::for_grammar(schema);
    narrow(&mut grammar_copy);
    let fitted = bound_schema(&grammar_copy, bounds, DEFAULT_MAX_TOKENS);
    let needed = fitted
        .worst_case_chars
        .map_or(0, |w| (w as f64 / bounds.chars_per_token).ceil() as usize);
    needed.clamp(DEFAULT_MAX_TOKENS, RAISED_MAX_TOKENS)
}

/// A request for one value of `schema` with a plain instruction, as `sextant bench
/// schemas` and the schema corpus test send it.
pub fn schema_request(schema: &Value, description: &str, max_tokens: usize) -> StructuredRequest {
    let mut req = StructuredRequest::new(
        vec![
            Message::new(
                "system",
                "Reply with one JSON value that matches the JSON Schema you are given.",
            ),
            Message::new(
                "user",
                &format!("Schema ({description}):\n{schema}\nWrite a matching JSON value."),
            ),
        ],
        OutputSpec::JsonSchema(schema.clone()),
    );
    req.max_tokens = max_tokens;
    req
}

pub fn generate_structured(
    llm: &mut Llm,
    req: &StructuredRequest,
    on_text: &mut dyn FnMut(&str),
) -> Result<StructuredOutput> {
    let (grammar, bounded, validator, compat_notes) = match &req.output {
        OutputSpec::JsonSchema(schema) => {
            // Validate the caller's schema first: a schema error must name the schema,
            // not surface as a grammar failure.
            let validator = SchemaValidator::new(schema).map_err(StructuredError::Unsupported)?;
            if let Some(at) = crate::constrain::conflicts::admits_nothing(schema) {
                return Err(StructuredError::Unsupported(anyhow::anyhow!(
                    "the schema admits no value, so no output can satisfy it ({at}); remove \
                     or loosen that part"
                )));
            }
            // A budget below what the smallest valid output needs can only run out:
            // say so before decoding, with the figure.
            if let Some(minimal) = minimal_instance(schema) {
                let text = serde_json::to_string(&minimal).unwrap_or_default();
                let needed = crate::llm::tokenizer::encode(&llm.tokenizer, &text)
                    .map_err(StructuredError::Engine)?
                    .len();
                if needed > req.max_tokens {
                    return Err(StructuredError::BudgetTooSmall {
                        needed,
                        given: req.max_tokens,
                        minimal: text,
                    });
                }
            }
            let (mut for_grammar, notes) = compat::for_grammar(schema);
            let narrowed = narrow(&mut for_grammar);
            let mut bounded = bound_schema(&for_grammar, &req.bounds, req.max_tokens);
            bounded.narrowed.splice(0..0, narrowed);
            (
                Some(Grammar::JsonSchema(bounded.schema.clone())),
                Some(bounded),
                Some(validator),
                notes,
            )
        }
        OutputSpec::Lark(g) => (Some(Grammar::Lark(g.clone())), None, None, Vec::new()),
        OutputSpec::Regex(r) => (Some(Grammar::Regex(r.clone())), None, None, Vec::new()),
        OutputSpec::Text => (None, None, None, Vec::new()),
    };
    let prompt = match &req.prompt_tokens {
        Some(t) => t.clone(),
        None => llm
            .chat_tokens(&req.messages)
            .map_err(StructuredError::Engine)?,
    };
    let n_ctx = llm.model.n_ctx();
    // A `oneOf`: each try decodes under one branch (crate::constrain::one_of), so a retry
    // tries another branch instead of sampling the same grammar again.
    let branches = match &grammar {
        Some(Grammar::JsonSchema(s)) => match &req.output {
            OutputSpec::JsonSchema(original) => {
                crate::constrain::one_of::branch_grammars(s, original)
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let max_attempts = APPROXIMATION_ATTEMPTS.max(branches.len() as u32);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let branch =
            (!branches.is_empty()).then(|| &branches[(attempt as usize - 1) % branches.len()]);
        let this_grammar = match branch {
            Some((schema, _)) => Some(Grammar::JsonSchema(schema.clone())),
            None => grammar.clone(),
        };
        let mut constraint = match &this_grammar {
            Some(g) => Some(llm.grammar.compile(g).map_err(|e| {
                // An unsatisfiable schema: say which keywords conflict, where the
                // engine's reason does not.
                let conflict = match &req.output {
                    OutputSpec::JsonSchema(original)
                        if format!("{e:#}").contains("nsatisfiable") =>
                    {
                        crate::constrain::conflicts::find_conflict(original)
                    }
                    _ => None,
                };
                StructuredError::Unsupported(match conflict {
                    Some(c) => e.context(format!("the schema contradicts itself at {c}")),
                    None => e,
                })
            })?),
            None => None,
        };
        let mut approximations = compat_notes.clone();
        approximations.extend(branch.map(|(_, note)| note.clone()));
        approximations.extend(
            constraint
                .as_ref()
                .map(|c| c.approximations.clone())
                .unwrap_or_default(),
        );
        // An approximated grammar may produce output the full schema rejects: another
        // try then samples differently (greedy decoding would repeat itself).
        let mut sampling = req.sampling.clone();
        if attempt > 1 {
            sampling.seed = req.sampling.seed.wrapping_add(attempt as u64 - 1);
            sampling.temperature = sampling.temperature.max(RETRY_TEMPERATURE);
        }
        let gen_req = GenerateRequest {
            prompt: &prompt,
            max_tokens: req.max_tokens,
            sampling,
            eos: &llm.eos,
            reuse_prefix: req.reuse_kv || attempt > 1,
            cancel: req.cancel.as_deref(),
        };
        // Output that may be retried is not streamed until it is known to be valid.
        let live = approximations.is_empty();
        let mut quiet = |_: &str| {};
        let sink: &mut dyn FnMut(&str) = if live { &mut *on_text } else { &mut quiet };
        let generation = generate(
            llm.model.as_mut(),
            &llm.tokenizer,
            &gen_req,
            constraint.as_mut(),
            sink,
        )
        .map_err(|e| match e.downcast_ref::<Cancelled>() {
            Some(_) => StructuredError::Cancelled,
            None => StructuredError::Engine(e),
        })?;
        let text = generation.text.clone();
        if grammar.is_some() {
            match generation.stop {
                StopReason::MaxTokens => {
                    return Err(StructuredError::Incomplete {
                        max_tokens: req.max_tokens,
                        at: pointer_at_end(&text),
                        partial: text,
                    })
                }
                StopReason::ContextFull => {
                    return Err(StructuredError::ContextFull {
                        n_ctx,
                        partial: text,
                    })
                }
                _ => {}
            }
        }
        // An end token is only allowed where the grammar accepts, so output that ended on
        // one parses; if it does not, say that the model stopped early rather than
        // "invalid".
        let value = match &validator {
            Some(v) => {
                let value: Value =
                    serde_json::from_str(&text).map_err(|e| match generation.stop {
                        StopReason::EndToken => StructuredError::EndedEarly {
                            partial: text.clone(),
                        },
                        _ => StructuredError::NotJson {
                            error: e.to_string(),
                            text: text.clone(),
                        },
                    })?;
                match v.validate(&value) {
                    Ok(()) => Some(value),
                    Err(failure) if approximations.is_empty() => return Err(failure.into()),
                    Err(_) if attempt < max_attempts => continue,
                    Err(failure) => {
                        return Err(StructuredError::Unsatisfied {
                            attempts: attempt,
                            approximations,
                            failure,
                        })
                    }
                }
            }
            None => None,
        };
        if !live {
            on_text(&text);
        }
        return Ok(StructuredOutput {
            value,
            text,
            generation,
            bounded,
            compile_ms: constraint.as_ref().map_or(0.0, |c| c.compile_us / 1e3),
            mask_us: constraint.map(|c| c.mask_us).unwrap_or_default(),
            approximations,
            attempts: attempt,
        });
    }
}

/// Tries of a schema the grammar only approximates, before giving up.
pub const APPROXIMATION_ATTEMPTS: u32 = 3;

/// The JSON pointer of the value a cut-off JSON text was writing when it ended
/// (`{"spec": {"containers": [{"env": [` → `/spec/containers/0/env`; `/` for the top).
pub fn pointer_at_end(partial: &str) -> String {
    // One frame per open container: an object's current key, or an array's index.
    enum Frame {
        Object(Option<String>),
        Array(usize),
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut chars = partial.chars().peekable();
    // Whether the next string in the current object is a key.
    let mut expect_key = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut text = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                text.push(e);
                            }
                        }
                        '"' => break,
                        d => text.push(d),
                    }
                }
                if expect_key {
                    if let Some(Frame::Object(key)) = stack.last_mut() {
                        *key = Some(text);
                    }
                    expect_key = false;
                }
            }
            '{' => {
                stack.push(Frame::Object(None));
                expect_key = true;
            }
            '[' => stack.push(Frame::Array(0)),
            '}' | ']' => {
                stack.pop();
            }
            ',' => match stack.last_mut() {
                Some(Frame::Array(i)) => *i += 1,
                Some(Frame::Object(_)) => expect_key = true,
                None => {}
            },
            _ => {}
        }
    }
    let parts: Vec<String> = stack
        .iter()
        .filter_map(|f| match f {
            Frame::Object(Some(k)) => Some(k.replace('~', "~0").replace('/', "~1")),
            Frame::Object(None) => None,
            Frame::Array(i) => Some(i.to_string()),
        })
        .collect();
    format!("/{}", parts.join("/"))
}

/// Sampling temperature of the retries (the first try keeps the caller's).
const RETRY_TEMPERATURE: f32 = 0.8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::tiny::tiny_llm;
    use crate::schemas::BUILTIN;

    #[test]
    fn the_default_budget_grows_only_for_schemas_that_need_it() {
        let small = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(
            default_budget(&small, &Bounds::default()),
            DEFAULT_MAX_TOKENS
        );
        let mut props = serde_json::Map::new();
        for i in 0..80 {
            props.insert(
                format!("f{i}"),
                serde_json::json!({"type": "string", "minLength": 40}),
            );
        }
        let names: Vec<String> = props.keys().cloned().collect();
        let big = serde_json::json!({"type": "object", "required": names, "properties": props});
        let n = default_budget(&big, &Bounds::default());
        assert!(n > DEFAULT_MAX_TOKENS && n <= RAISED_MAX_TOKENS, "{n}");
    }

    /// One output of `s` from `llm` at temperature 1.0: it parses, validates, and is the
    /// value returned.
    fn assert_random_output_valid(
        llm: &mut Llm,
        s: &crate::schemas::BuiltinSchema,
        validator: &jsonschema::Validator,
        seed: u64,
        bounds: &Bounds,
    ) {
        let mut req = StructuredRequest::new(
            vec![Message::new("user", s.example_prompt)],
            OutputSpec::JsonSchema(s.schema()),
        );
        req.sampling.temperature = 1.0;
        req.sampling.top_p = 1.0;
        req.sampling.seed = seed;
        req.bounds = bounds.clone();
        req.max_tokens = 4096;
        let out = generate_structured(llm, &req, &mut |_| {})
            .unwrap_or_else(|e| panic!("{} ({}) seed {seed}: {e}", s.name, llm.architecture));
        let v: Value = serde_json::from_str(&out.text).unwrap();
        assert!(validator.is_valid(&v), "{} seed {seed}: {v}", s.name);
        assert_eq!(Some(&v), out.value.as_ref());
    }

    /// The same property for each model family's block (Q/K/V biases and NeoX RoPE for
    /// qwen2, per-head Q/K norms for qwen3, fused projections for phi3, post-norms, GELU and
    /// a sliding window for gemma3): fewer seeds, as the decoding loop and the grammar are
    /// shared.
    #[test]
    fn every_family_s_random_model_gives_valid_objects() {
        use crate::llm::decoder::Variant;
        let bounds = Bounds {
            chars_per_token: 0.25,
            ..Bounds::default()
        };
        for (architecture, variant) in [
            ("qwen2", Variant::QWEN2),
            ("qwen3", Variant::QWEN3),
            ("phi3", Variant::PHI3),
            ("gemma3", Variant::GEMMA3),
        ] {
            let mut llm = crate::llm::tiny::tiny_llm_of(17, architecture, variant).unwrap();
            for s in &BUILTIN {
                let validator = jsonschema::validator_for(&s.schema()).unwrap();
                for seed in 0..6 {
                    assert_random_output_valid(&mut llm, s, &validator, seed, &bounds);
                }
            }
        }
    }

    /// The property the product promises: whatever the model's weights, every output of
    /// every seed schema parses and validates. A random model at temperature 1.0 is the
    /// most adversarial "model" there is. Its vocabulary is byte-level, so one character
    /// can cost up to four tokens (4-byte UTF-8): the bounds are fitted at 0.25 characters
    /// per token, which makes completion within the budget certain.
    #[test]
    fn every_output_of_a_random_model_validates_for_every_seed_schema() {
        const SEEDS: u64 = 104;
        let bounds = Bounds {
            chars_per_token: 0.25,
            ..Bounds::default()
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = [0usize, 1]
                .into_iter()
                .map(|half| {
                    let bounds = bounds.clone();
                    scope.spawn(move || {
                        let mut llm = tiny_llm(11).unwrap();
                        let mut checked = 0;
                        for (i, s) in BUILTIN.iter().enumerate() {
                            let validator = jsonschema::validator_for(&s.schema()).unwrap();
                            for seed in (0..SEEDS).filter(|k| (*k as usize + i) % 2 == half) {
                                assert_random_output_valid(&mut llm, s, &validator, seed, &bounds);
                                checked += 1;
                            }
                        }
                        checked
                    })
                })
                .collect();
            let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(total, 5 * SEEDS as usize);
        });
    }

    #[test]
    fn a_budget_too_small_gives_incomplete_not_invalid_json() {
        // No minimal size can be told for a formatted string, so decoding starts and the
        // budget runs out inside the object.
        let mut llm = tiny_llm(12).unwrap();
        let mut req = StructuredRequest::new(
            vec![Message::new("user", "hi")],
            OutputSpec::JsonSchema(serde_json::json!({
                "type": "object", "required": ["mail"],
                "properties": {"mail": {"type": "string", "format": "email"}}
            })),
        );
        req.max_tokens = 6;
        let err = generate_structured(&mut llm, &req, &mut |_| {}).unwrap_err();
        match &err {
            StructuredError::Incomplete {
                max_tokens,
                partial,
                ..
            } => {
                assert_eq!(*max_tokens, 6);
                assert!(serde_json::from_str::<Value>(partial).is_err());
            }
            other => panic!("expected Incomplete, got {other:?}"),
        }
    }

    #[test]
    fn a_budget_below_the_smallest_valid_output_is_refused_before_decoding() {
        let mut llm = tiny_llm(12).unwrap();
        let s = crate::schemas::find("navigator-response").unwrap();
        let mut req = StructuredRequest::new(
            vec![Message::new("user", "hi")],
            OutputSpec::JsonSchema(s.schema()),
        );
        req.max_tokens = 6;
        match generate_structured(&mut llm, &req, &mut |_| {}) {
            Err(StructuredError::BudgetTooSmall { needed, given, .. }) => {
                assert_eq!(given, 6);
                assert!(needed > 6, "{needed}");
            }
            other => panic!("expected BudgetTooSmall, got {:?}", other.map(|o| o.text)),
        }
    }

    #[test]
    fn a_cut_off_output_says_which_part_it_was_writing() {
        assert_eq!(
            pointer_at_end(r#"{"spec": {"name": "a,b{", "containers": [{"x": 1}, {"env": ["#),
            "/spec/containers/1/env/0"
        );
        assert_eq!(pointer_at_end(r#"{"a": "say \"hi\""#), "/a");
        assert_eq!(pointer_at_end(""), "/");
    }

    #[test]
    fn an_unsatisfiable_schema_is_refused_with_the_keywords_that_conflict() {
        let mut llm = tiny_llm(12).unwrap();
        let req = StructuredRequest::new(
            vec![Message::new("user", "hi")],
            OutputSpec::JsonSchema(
                serde_json::json!({"properties": {"n": {"allOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["n"]}),
            ),
        );
        match generate_structured(&mut llm, &req, &mut |_| {}) {
            Err(e @ StructuredError::Unsupported(_)) => {
                let m = format!("{e:#}");
                assert!(
                    m.contains("/properties/n: `allOf` branch 1 says type string"),
                    "{m}"
                );
            }
            other => panic!("expected Unsupported, got {:?}", other.map(|o| o.text)),
        }
    }

    #[test]
    fn lark_and_regex_outputs_match_their_grammar() {
        let mut llm = tiny_llm(13).unwrap();
        let rx = regex_lite_check();
        for seed in 0..20 {
            let mut req = StructuredRequest::new(
                vec![Message::new("user", "a date")],
                OutputSpec::Regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}".into()),
            );
            req.sampling.temperature = 1.0;
            req.sampling.seed = seed;
            let out = generate_structured(&mut llm, &req, &mut |_| {}).unwrap();
            assert!(rx(&out.text), "{:?}", out.text);
            let mut req = StructuredRequest::new(
                vec![Message::new("user", "yes or no")],
                OutputSpec::Lark("start: (\"yes\" | \"no\") \".\"".into()),
            );
            req.sampling.temperature = 1.0;
            req.sampling.seed = seed;
            let out = generate_structured(&mut llm, &req, &mut |_| {}).unwrap();
            assert!(out.text == "yes." || out.text == "no.", "{:?}", out.text);
        }
    }

    fn regex_lite_check() -> impl Fn(&str) -> bool {
        |s: &str| {
            let b = s.as_bytes();
            b.len() == 10
                && b.iter().enumerate().all(|(i, c)| {
                    if i == 4 || i == 7 {
                        *c == b'-'
                    } else {
                        c.is_ascii_digit()
                    }
                })
        }
    }

    #[test]
    fn a_keyword_the_grammar_cannot_enforce_is_named_and_checked_by_validation() {
        let schema = serde_json::json!({
            "type": "array", "items": {"type": "integer"}, "minItems": 2, "uniqueItems": true
        });
        let validator = SchemaValidator::new(&schema).unwrap();
        let (mut valid, mut unsatisfied) = (0, 0);
        for seed in 0..12 {
            let mut llm = tiny_llm(14).unwrap();
            let mut req = StructuredRequest::new(
                vec![Message::new("user", "x")],
                OutputSpec::JsonSchema(schema.clone()),
            );
            req.sampling.temperature = 1.0;
            req.sampling.seed = seed;
            match generate_structured(&mut llm, &req, &mut |_| {}) {
                Ok(out) => {
                    assert!(validator.validate(out.value.as_ref().unwrap()).is_ok());
                    assert!(out.approximations.join(" ").contains("uniqueItems"));
                    valid += 1;
                }
                Err(StructuredError::Unsatisfied {
                    attempts,
                    approximations,
                    ..
                }) => {
                    assert_eq!(attempts, APPROXIMATION_ATTEMPTS);
                    assert!(approximations.join(" ").contains("uniqueItems"));
                    unsatisfied += 1;
                }
                Err(StructuredError::Incomplete { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        // Duplicates are likely from a random model: some tries fail and are retried.
        assert!(valid + unsatisfied > 0);
    }

    #[test]
    fn an_invalid_schema_is_reported_as_such() {
        let mut llm = tiny_llm(15).unwrap();
        let req = StructuredRequest::new(
            vec![Message::new("user", "x")],
            OutputSpec::JsonSchema(serde_json::json!({"type": "nonsense"})),
        );
        let err = generate_structured(&mut llm, &req, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid JSON Schema"), "{err}");
    }
}
