//! The decoding loop shared by every caller: prompt → (mask → penalties → sample →
//! consume → forced tokens) until the grammar completes, an end token, or the budget.
//!
//! Forced tokens (the only continuation the grammar allows, e.g. `{"answer":"`) are fed to
//! the model in one forward together with the sampled token instead of one step each.

use std::time::Instant;

use anyhow::{bail, Result};
use tokenizers::Tokenizer;

use super::sampling::{Sampler, SamplingParams};
use super::CausalLm;
use crate::constrain::Constraint;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The grammar accepted a complete output.
    GrammarComplete,
    /// The model emitted an end token (for constrained output: where the grammar allowed it).
    EndToken,
    /// `max_tokens` ran out first.
    MaxTokens,
    /// The model's context window filled up first.
    ContextFull,
}

impl StopReason {
    /// The output was cut short (by the budget or the context window).
    pub fn truncated(self) -> bool {
        matches!(self, StopReason::MaxTokens | StopReason::ContextFull)
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Generation {
    pub text: String,
    pub tokens: Vec<u32>,
    pub stop: StopReason,
    pub prompt_tokens: usize,
    /// Tokens the grammar forced (included in `tokens`).
    pub forced_tokens: usize,
    /// Prompt tokens found already in the KV cache (not processed again).
    pub reused_tokens: usize,
    pub prompt_ms: f64,
    pub generate_ms: f64,
}

impl Generation {
    /// Generated tokens per second after the prompt (forced tokens included: they are
    /// output the caller gets).
    pub fn tokens_per_s(&self) -> f64 {
        self.tokens.len() as f64 / (self.generate_ms / 1e3).max(1e-9)
    }
}

pub struct GenerateRequest<'a> {
    pub prompt: &'a [u32],
    pub max_tokens: usize,
    pub sampling: SamplingParams,
    pub eos: &'a [u32],
    /// Keep the longest prefix of the prompt that the model's KV cache already holds
    /// (a conversation's earlier turns) instead of processing the whole prompt again.
    pub reuse_prefix: bool,
    /// Checked before every step: when set, generation stops with an error.
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Runs one generation. `on_text` receives each new piece of decoded text as it appears.
pub fn generate(
    model: &mut dyn CausalLm,
    tokenizer: &Tokenizer,
    req: &GenerateRequest,
    mut constraint: Option<&mut Constraint>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Generation> {
    if req.prompt.is_empty() {
        bail!("empty prompt");
    }
    let mut sampler = Sampler::new(req.sampling.clone());
    let mut out: Vec<u32> = Vec::new();
    let mut forced_total = 0usize;
    let mut emitted = 0usize; // bytes of decoded text already passed to on_text
    let mut emit = |out: &[u32], emitted: &mut usize| {
        if let Ok(text) = tokenizer.decode(out, false) {
            // Hold back a trailing partial UTF-8 sequence (decoded as U+FFFD).
            if text.len() > *emitted && !text.ends_with('\u{FFFD}') {
                on_text(&text[*emitted..]);
                *emitted = text.len();
            }
        }
    };

    // At least the prompt's last token is fed again: its logits start the generation.
    let reused = if req.reuse_prefix {
        common_prefix(model.cached_tokens(), req.prompt).min(req.prompt.len() - 1)
    } else {
        0
    };
    model.truncate(reused);
    let start = Instant::now();
    // Tokens the grammar forces at the very start ride along with the prompt.
    let mut feed: Vec<u32> = req.prompt[reused..].to_vec();
    let mut mask = None;
    // A grammar with one possible output (a `const`) is complete after its forced tokens.
    let mut complete_at_start = false;
    if let Some(c) = constraint.as_deref_mut() {
        let ff = c.take_forced()?;
        forced_total += ff.len();
        out.extend_from_slice(&ff);
        feed.extend_from_slice(&ff);
        complete_at_start = c.is_stopped();
        if !complete_at_start {
            mask = Some(c.compute_mask()?);
        }
    }
    let mut logits = model.forward(&feed, reused)?;
    let mut pos = reused + feed.len();
    let prompt_ms = start.elapsed().as_secs_f64() * 1e3;
    let gen_start = Instant::now();
    emit(&out, &mut emitted);

    let stop = loop {
        if complete_at_start {
            break StopReason::GrammarComplete;
        }
        if req
            .cancel
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        {
            bail!(Cancelled);
        }
        if out.len() >= req.max_tokens {
            break StopReason::MaxTokens;
        }
        if let (Some(c), Some(m)) = (constraint.as_deref(), mask.as_ref()) {
            c.apply_mask(m, &mut logits);
        }
        sampler.apply_penalties(&mut logits, &out);
        let Some(tok) = sampler.sample(&logits) else {
            bail!("no token is allowed: the grammar admits no continuation");
        };
        if req.eos.contains(&tok) {
            if let Some(c) = constraint.as_deref_mut() {
                c.consume(tok)?;
            }
            break StopReason::EndToken;
        }
        let mut step = vec![tok];
        if let Some(c) = constraint.as_deref_mut() {
            c.consume(tok)?;
            let ff = c.take_forced()?;
            forced_total += ff.len();
            step.extend_from_slice(&ff);
        }
        out.extend_from_slice(&step);
        emit(&out, &mut emitted);
        if let Some(c) = constraint.as_deref_mut() {
            // Decide completion before paying for another forward pass.
            if c.is_stopped() {
                break StopReason::GrammarComplete;
            }
            let m = c.compute_mask()?;
            if Constraint::only_end_allowed(&m, req.eos) {
                break StopReason::GrammarComplete;
            }
            mask = Some(m);
        }
        if out.len() >= req.max_tokens {
            break StopReason::MaxTokens;
        }
        if pos + step.len() >= model.n_ctx() {
            break StopReason::ContextFull;
        }
        logits = model.forward(&step, pos)?;
        pos += step.len();
    };
    let text = tokenizer
        .decode(&out, false)
        .map_err(|e| anyhow::anyhow!("detokenize: {e}"))?;
    Ok(Generation {
        text,
        tokens: out,
        stop,
        prompt_tokens: req.prompt.len(),
        forced_tokens: forced_total,
        reused_tokens: reused,
        prompt_ms,
        generate_ms: gen_start.elapsed().as_secs_f64() * 1e3,
    })
}

/// Generation was stopped by its `cancel` flag.
#[derive(Debug, thiserror::Error)]
#[error("generation cancelled")]
pub struct Cancelled;

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
