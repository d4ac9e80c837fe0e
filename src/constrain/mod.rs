//! Grammar-constrained decoding: llguidance compiles a JSON Schema, a Lark grammar or a
//! regex into a matcher over the LLM's vocabulary; the decoding loop (`llm::generate`)
//! masks the logits with it at every step and feeds it every token. A second, independent
//! check (`validate`) runs the `jsonschema` crate over every object before it is returned.

pub mod bounds;
pub mod compat;
pub mod conflicts;
pub mod narrow;
pub mod one_of;
mod patterns;
mod token_env;
pub mod validate;

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::SimpleVob;
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

/// What the output must match.
#[derive(Debug, Clone)]
pub enum Grammar {
    JsonSchema(Value),
    Lark(String),
    Regex(String),
}

impl Grammar {
    /// The grammar handed to llguidance. JSON output is compact: without this, the default
    /// flexible whitespace lets a small model pad objects with `\n\t` until the budget ends.
    /// Schemas compile leniently: what the grammar cannot express exactly (`oneOf`, `not`,
    /// `if`/`then`/`else`, `dependencies`, `contains`, unknown formats, …) is approximated
    /// or left out, with a warning (`Constraint::approximations`); the caller validates
    /// against the full schema afterwards and retries or fails.
    fn to_llg(&self) -> TopLevelGrammar {
        match self {
            Grammar::JsonSchema(schema) => {
                let mut schema = schema.clone();
                if let Value::Object(obj) = &mut schema {
                    let xg = obj
                        .entry("x-guidance")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Value::Object(xg) = xg {
                        xg.entry("whitespace_flexible")
                            .or_insert(Value::Bool(false));
                        xg.entry("lenient").or_insert(Value::Bool(true));
                    }
                }
                TopLevelGrammar::from_json_schema(schema)
            }
            Grammar::Lark(text) => TopLevelGrammar::from_lark(text.clone()),
            Grammar::Regex(rx) => TopLevelGrammar::from_regex(rx),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Grammar::JsonSchema(_) => "JSON Schema",
            Grammar::Lark(_) => "Lark grammar",
            Grammar::Regex(_) => "regex",
        }
    }
}

/// Compiles grammars for one tokenizer. Building it costs ~0.2 s (token trie and slices),
/// so it is built once per model and shared.
#[derive(Clone)]
pub struct GrammarEngine {
    factory: Arc<ParserFactory>,
    n_vocab: usize,
}

impl GrammarEngine {
    pub fn new(
        tokenizer: &Arc<tokenizers::Tokenizer>,
        eos: &[u32],
        n_vocab: usize,
    ) -> Result<Self> {
        let env = token_env::token_env(tokenizer, eos, n_vocab)?;
        let mut factory = ParserFactory::new_simple(&env)?;
        factory.set_stderr_log_level(0);
        Ok(GrammarEngine {
            factory: Arc::new(factory),
            n_vocab,
        })
    }

    /// Compiles `grammar` into a fresh matcher.
    pub fn compile(&self, grammar: &Grammar) -> Result<Constraint> {
        let start = Instant::now();
        let mut parser = self
            .factory
            .create_parser(grammar.to_llg())
            .map_err(|e| anyhow!("cannot compile the {}: {e}", grammar.kind()))?;
        let approximations = parser.grammar_warnings();
        let matcher = Matcher::new(Ok(parser));
        if let Some(e) = matcher.get_error() {
            bail!("cannot compile the {}: {e}", grammar.kind());
        }
        Ok(Constraint {
            matcher,
            compile_us: start.elapsed().as_secs_f64() * 1e6,
            mask_us: Vec::new(),
            n_vocab: self.n_vocab,
            approximations,
        })
    }
}

/// One generation's matcher, with timings.
pub struct Constraint {
    matcher: Matcher,
    pub compile_us: f64,
    /// Time of each mask computation, for the benchmark.
    pub mask_us: Vec<f64>,
    n_vocab: usize,
    /// What the grammar could not enforce exactly (llguidance's warnings): the output must
    /// then be validated against the full schema, and may need another try.
    pub approximations: Vec<String>,
}

impl Constraint {
    pub fn is_stopped(&self) -> bool {
        self.matcher.is_stopped()
    }

    /// Tokens the grammar forces next (nothing else could follow); consumed by the matcher.
    pub fn take_forced(&mut self) -> Result<Vec<u32>> {
        let toks = self.matcher.consume_ff_tokens();
        self.check()?;
        Ok(toks)
    }

    /// The tokens the grammar allows next.
    pub fn compute_mask(&mut self) -> Result<SimpleVob> {
        let start = Instant::now();
        let mask = self.matcher.compute_mask().context("grammar mask")?;
        self.mask_us.push(start.elapsed().as_secs_f64() * 1e6);
        Ok(mask)
    }

    /// True when the grammar is complete: only end tokens (or nothing) may follow.
    pub fn only_end_allowed(mask: &SimpleVob, eos: &[u32]) -> bool {
        mask.num_set() <= eos.len() && {
            let mut others = false;
            mask.iter_set_entries(|i| others |= !eos.contains(&(i as u32)));
            !others
        }
    }

    /// Sets every logit the mask forbids to -inf.
    pub fn apply_mask(&self, mask: &SimpleVob, logits: &mut [f32]) {
        let n = logits.len().min(self.n_vocab);
        mask.iter_unset_entries(|i| {
            if i < n {
                logits[i] = f32::NEG_INFINITY;
            }
        });
        // Logits beyond the tokenizer's vocabulary (padding rows) are never valid.
        for l in logits.iter_mut().skip(mask.len()) {
            *l = f32::NEG_INFINITY;
        }
    }

    pub fn consume(&mut self, token: u32) -> Result<()> {
        self.matcher
            .consume_token(token)
            .context("the grammar rejected a token")?;
        self.check()
    }

    fn check(&self) -> Result<()> {
        match self.matcher.get_error() {
            Some(e) => bail!("grammar matcher error: {e}"),
            None => Ok(()),
        }
    }
}
