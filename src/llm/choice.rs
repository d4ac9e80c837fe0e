//! Measured choice among a closed set of answers: the log-probability the model gives
//! each option as the start of its reply, instead of the one option greedy decoding
//! happens to take first. A caller that must decide (the routing stage) can then see how
//! far ahead the best option is, and refuse to decide when none is clearly ahead.

use anyhow::{bail, Result};

use super::chat_template::Message;
use super::tokenizer::encode;
use super::Llm;

/// The log-probability of each option as the continuation of the chat's assistant turn
/// after `prefix` (the options' text, tokenised together with the prompt so that a word
/// merged with the prefix's last character is scored as the model would write it).
///
/// The prompt is processed once (reusing what the KV cache already holds); each option
/// then costs one forward step per token.
pub fn option_logprobs(
    llm: &mut Llm,
    messages: &[Message],
    prefix: &str,
    options: &[&str],
) -> Result<Vec<f64>> {
    let prompt = format!("{}{prefix}", llm.template.render(messages, true)?);
    let base = encode(&llm.tokenizer, &prompt)?;
    if base.is_empty() {
        bail!("empty prompt");
    }
    let mut scores = Vec::with_capacity(options.len());
    for option in options {
        let full = encode(&llm.tokenizer, &format!("{prompt}{option}"))?;
        // Where the option's own tokens start: after the longest prefix shared with the
        // prompt alone (at least one prompt token must precede it).
        let start = common_prefix(&base, &full).clamp(1, full.len().saturating_sub(1));
        if start >= full.len() {
            bail!("option {option:?} adds no tokens to the prompt");
        }
        if full.len() >= llm.model.n_ctx() {
            bail!(
                "the prompt and option need {} tokens; the model's context holds {}",
                full.len(),
                llm.model.n_ctx()
            );
        }
        // The KV cache must hold full[..start - 1]; feeding full[start - 1] gives the
        // distribution of full[start].
        let cached = common_prefix(llm.model.cached_tokens(), &full[..start - 1]);
        llm.model.truncate(cached);
        let mut logits = llm.model.forward(&full[cached..start], cached)?;
        let mut logprob = 0.0;
        for i in start..full.len() {
            logprob += log_softmax_at(&logits, full[i] as usize);
            if i + 1 < full.len() {
                logits = llm.model.forward(&full[i..i + 1], i)?;
            }
        }
        scores.push(logprob);
    }
    Ok(scores)
}

/// Probabilities of the options relative to each other (a softmax over their
/// log-probabilities).
pub fn relative_probabilities(logprobs: &[f64]) -> Vec<f64> {
    let max = logprobs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = logprobs.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter()
        .map(|e| e / sum.max(f64::MIN_POSITIVE))
        .collect()
}

fn log_softmax_at(logits: &[f32], i: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    logits
        .get(i)
        .map_or(f64::NEG_INFINITY, |&l| l as f64 - max - sum.ln())
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_probabilities_sum_to_one_and_keep_the_order() {
        let p = relative_probabilities(&[-1.0, -2.0, -4.0]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(p[0] > p[1] && p[1] > p[2]);
        assert!((p[0] / p[1] - 1f64.exp()).abs() < 1e-9);
    }

    #[test]
    fn log_softmax_is_a_log_probability() {
        let logits = [1.0f32, 2.0, 3.0];
        let total: f64 = (0..3).map(|i| log_softmax_at(&logits, i).exp()).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(log_softmax_at(&logits, 9), f64::NEG_INFINITY);
    }

    #[test]
    fn options_are_scored_on_the_tiny_model() {
        let mut llm = crate::llm::tiny::tiny_llm(7).unwrap();
        let messages = [Message::new("user", "pick one")];
        let a = option_logprobs(&mut llm, &messages, "", &["yes", "no"]).unwrap();
        // The same options again, in the other order, from a warm KV cache: the same scores
        // (to the rounding of a batched against a one-token forward).
        let b = option_logprobs(&mut llm, &messages, "", &["no", "yes"]).unwrap();
        assert!(
            (a[0] - b[1]).abs() < 1e-2 && (a[1] - b[0]).abs() < 1e-2,
            "{a:?} {b:?}"
        );
        assert!(a.iter().all(|l| l.is_finite() && *l < 0.0));
    }
}
