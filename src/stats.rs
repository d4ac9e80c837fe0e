//! Summary statistics of measurements (benchmarks, `sextant eval`).

/// The value at quantile `p` (0..=1) of `xs` (nearest rank; 0 for no values).
pub fn percentile(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(((xs.len() as f64 * p) as usize).min(xs.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0)
}

pub fn median(xs: Vec<f64>) -> f64 {
    percentile(xs, 0.5)
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// z of a two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// The 95 % Wilson score interval of a share: `successes` of `n`. Unlike p ± z·se it stays
/// within 0..=1 and is honest at the small counts an evaluation has (5 of 7 → 0.36–0.92);
/// (0, 1) when there is nothing to count.
pub fn wilson_interval(successes: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p) = (n as f64, successes as f64 / n as f64);
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A 95 % interval of the mean of `xs`, each within 0..=1 (per-question shares such as
/// the keyword share): the normal approximation with the sample variance, clamped to
/// 0..=1; (0, 1) for fewer than two values.
pub fn share_mean_interval(xs: &[f64]) -> (f64, f64) {
    if xs.len() < 2 {
        return (0.0, 1.0);
    }
    let n = xs.len() as f64;
    let m = mean(xs);
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    let half = Z95 * (var / n).sqrt();
    ((m - half).max(0.0), (m + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_of_shares() {
        let close = |a: (f64, f64), b: (f64, f64)| {
            assert!(
                (a.0 - b.0).abs() < 1e-3 && (a.1 - b.1).abs() < 1e-3,
                "{a:?} ≠ {b:?}"
            )
        };
        // Published Wilson intervals (95 %).
        close(wilson_interval(5, 7), (0.359, 0.918));
        close(wilson_interval(7, 7), (0.646, 1.0));
        close(wilson_interval(0, 10), (0.0, 0.278));
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
        // Sixteen values, half 0 and half 1: sample variance 4 / 15, so 0.5 ± 1.96 ·
        // √(4 / 15 / 16); four are too few to say anything within 0..=1.
        let halves: Vec<f64> = (0..16).map(|i| f64::from(i % 2)).collect();
        close(share_mean_interval(&halves), (0.247, 0.753));
        close(share_mean_interval(&[0.0, 0.0, 1.0, 1.0]), (0.0, 1.0));
        close(share_mean_interval(&[0.2, 0.2, 0.2]), (0.2, 0.2));
        assert_eq!(share_mean_interval(&[1.0]), (0.0, 1.0));
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median(xs.clone()), 51.0);
        assert_eq!(percentile(xs.clone(), 0.99), 100.0);
        assert_eq!(percentile(vec![], 0.5), 0.0);
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
    }
}
