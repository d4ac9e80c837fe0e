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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median(xs.clone()), 51.0);
        assert_eq!(percentile(xs.clone(), 0.99), 100.0);
        assert_eq!(percentile(vec![], 0.5), 0.0);
        assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
    }
}
