//! Choosing the next token from logits: greedy or temperature + top-p with a seeded RNG,
//! after a repetition penalty and a no-repeat-n-gram ban.
//!
//! Why the penalties are on by default: under a JSON grammar a 135M model tends to loop
//! inside a string ("… because … because …") until the token budget runs out; the grammar
//! cannot end a string for it. Penalties break the loop; schema bounds (see `constrain`)
//! guarantee the object closes regardless.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, serde::Serialize)]
pub struct SamplingParams {
    /// 0 = greedy.
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    /// CTRL-style penalty (>1 discourages) on tokens sampled in the last `repeat_last_n`.
    pub repetition_penalty: f32,
    pub repeat_last_n: usize,
    /// Ban a token that would repeat an n-gram already produced (0 = off).
    pub no_repeat_ngram: usize,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 0.0,
            top_p: 0.95,
            seed: 42,
            repetition_penalty: 1.2,
            repeat_last_n: 64,
            no_repeat_ngram: 8,
        }
    }
}

pub struct Sampler {
    params: SamplingParams,
    rng: StdRng,
    /// Scratch for candidate (id, prob) pairs, reused across steps.
    scratch: Vec<(u32, f32)>,
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Self {
        let rng = StdRng::seed_from_u64(params.seed);
        Sampler {
            params,
            rng,
            scratch: Vec::new(),
        }
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// Applies the penalties to `logits` in place. `history` is every token produced so far
    /// (sampled and forced). Never bans the last finite token: the grammar's choice wins.
    pub fn apply_penalties(&self, logits: &mut [f32], history: &[u32]) {
        let p = self.params.repetition_penalty;
        if p != 1.0 && p > 0.0 {
            let start = history.len().saturating_sub(self.params.repeat_last_n);
            let mut seen: Vec<u32> = history[start..].to_vec();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                if let Some(l) = logits.get_mut(t as usize) {
                    *l = if *l > 0.0 { *l / p } else { *l * p };
                }
            }
        }
        let n = self.params.no_repeat_ngram;
        if n >= 2 && history.len() >= n {
            let tail = &history[history.len() - (n - 1)..];
            let mut banned = Vec::new();
            for w in history.windows(n) {
                if &w[..n - 1] == tail {
                    banned.push(w[n - 1]);
                }
            }
            if !banned.is_empty() {
                let finite_left = logits
                    .iter()
                    .enumerate()
                    .filter(|(i, l)| l.is_finite() && !banned.contains(&(*i as u32)))
                    .take(1)
                    .count();
                if finite_left > 0 {
                    for t in banned {
                        if let Some(l) = logits.get_mut(t as usize) {
                            *l = f32::NEG_INFINITY;
                        }
                    }
                }
            }
        }
    }

    /// Picks a token among the finite logits. Returns None when every logit is -inf.
    pub fn sample(&mut self, logits: &[f32]) -> Option<u32> {
        let (best, max) = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .fold((None, f32::NEG_INFINITY), |(bi, bl), (i, &l)| {
                if l > bl {
                    (Some(i as u32), l)
                } else {
                    (bi, bl)
                }
            });
        let best = best?;
        if self.params.temperature <= 0.0 {
            return Some(best);
        }
        let t = self.params.temperature;
        // Tokens below max - 30·T carry < e^-30 of the mass: skip them before sorting.
        let floor = max - 30.0 * t;
        self.scratch.clear();
        let mut total = 0.0f32;
        for (i, &l) in logits.iter().enumerate() {
            if l.is_finite() && l >= floor {
                let p = ((l - max) / t).exp();
                total += p;
                self.scratch.push((i as u32, p));
            }
        }
        self.scratch
            .sort_unstable_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        let cutoff = self.params.top_p.clamp(0.0, 1.0) * total;
        let mut acc = 0.0;
        let mut keep = self.scratch.len();
        for (k, (_, p)) in self.scratch.iter().enumerate() {
            acc += p;
            if acc >= cutoff {
                keep = k + 1;
                break;
            }
        }
        let kept = &self.scratch[..keep];
        let mass: f32 = kept.iter().map(|x| x.1).sum();
        let mut r = self.rng.random::<f32>() * mass;
        for (id, p) in kept {
            if r < *p {
                return Some(*id);
            }
            r -= p;
        }
        Some(kept.last().map(|x| x.0).unwrap_or(best))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_argmax_of_finite_logits() {
        let mut s = Sampler::new(SamplingParams::default());
        assert_eq!(s.sample(&[1.0, f32::NEG_INFINITY, 3.0, 2.0]), Some(2));
        assert_eq!(s.sample(&[f32::NEG_INFINITY; 3]), None);
    }

    #[test]
    fn sampling_never_picks_a_masked_token_and_is_seeded() {
        let params = SamplingParams {
            temperature: 1.0,
            top_p: 1.0,
            ..Default::default()
        };
        let logits = [0.0, f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, 0.0];
        let run = |seed| {
            let mut s = Sampler::new(SamplingParams {
                seed,
                ..params.clone()
            });
            (0..200)
                .map(|_| s.sample(&logits).unwrap())
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert!(a.iter().all(|t| [0, 2, 4].contains(t)));
        assert!(
            [0, 2, 4].iter().all(|t| a.contains(t)),
            "all allowed tokens appear"
        );
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
    }

    #[test]
    fn top_p_drops_the_tail() {
        let mut s = Sampler::new(SamplingParams {
            temperature: 1.0,
            top_p: 0.5,
            ..Default::default()
        });
        let logits = [5.0, 0.0, 0.0, 0.0];
        assert!((0..100).all(|_| s.sample(&logits) == Some(0)));
    }

    #[test]
    fn no_repeat_ngram_bans_the_repeat_but_never_the_only_choice() {
        let s = Sampler::new(SamplingParams {
            repetition_penalty: 1.0,
            no_repeat_ngram: 3,
            ..Default::default()
        });
        // History "1 2 3 1 2": the next 3 would repeat the trigram "1 2 3".
        let mut logits = vec![0.0; 5];
        s.apply_penalties(&mut logits, &[1, 2, 3, 1, 2]);
        assert_eq!(logits[3], f32::NEG_INFINITY);
        assert!(logits[4].is_finite());
        // If 3 is the only token the grammar allows, it stays allowed.
        let mut only = vec![f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0];
        s.apply_penalties(&mut only, &[1, 2, 3, 1, 2]);
        assert_eq!(only[3], 0.0);
    }

    #[test]
    fn repetition_penalty_lowers_recent_tokens() {
        let s = Sampler::new(SamplingParams {
            repetition_penalty: 2.0,
            no_repeat_ngram: 0,
            ..Default::default()
        });
        let mut logits = vec![4.0, 4.0, -1.0];
        s.apply_penalties(&mut logits, &[0, 2]);
        assert_eq!(logits, vec![2.0, 4.0, -2.0]);
    }
}
