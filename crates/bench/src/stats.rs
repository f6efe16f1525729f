//! Summaries of samples: median with its distribution-free 95 % confidence interval,
//! quartiles (IQR), min, max.

/// A summary of one mode's samples (milliseconds).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub p25_ms: f64,
    pub p75_ms: f64,
    pub iqr_ms: f64,
    /// The median's 95 % confidence interval from order statistics ([`median_ci`]); `None`
    /// with fewer than 6 samples (no pair of order statistics reaches 95 % below that).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ci95: Option<MedianCi>,
}

/// A distribution-free confidence interval of the median: `[x(l), x(n+1-l)]`, the `l`-th
/// smallest and `l`-th largest samples, which hold the true median with probability
/// `coverage` = 1 − 2·P(B ≤ l − 1), B ~ Binomial(n, ½), for any continuous distribution.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MedianCi {
    pub lo_ms: f64,
    pub hi_ms: f64,
    /// The order statistic's rank `l` (1-based).
    pub rank: usize,
    /// The interval's exact coverage (≥ the level asked for).
    pub coverage: f64,
}

/// P(B ≤ k) for B ~ Binomial(n, ½), summed in log space (exact to rounding for any n here).
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_c = 0.0f64; // ln C(n, 0)
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_c + ln_half_n).exp();
    }
    sum.min(1.0)
}

/// The narrowest order-statistic interval of the median of the sorted `samples` with
/// coverage ≥ `level` (e.g. 0.95); `None` if even `[min, max]` covers less.
pub fn median_ci(sorted: &[f64], level: f64) -> Option<MedianCi> {
    let n = sorted.len();
    let coverage = |l: usize| 1.0 - 2.0 * binom_half_cdf(n, l - 1);
    if n == 0 || coverage(1) < level {
        return None;
    }
    let mut l = 1;
    while l < n.div_ceil(2) && coverage(l + 1) >= level {
        l += 1;
    }
    Some(MedianCi { lo_ms: sorted[l - 1], hi_ms: sorted[n - l], rank: l, coverage: coverage(l) })
}

/// Quantile by linear interpolation between closest ranks (the common "type 7").
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty());
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let (p25, p75) = (quantile(&s, 0.25), quantile(&s, 0.75));
    Some(Summary {
        n: s.len(),
        median_ms: quantile(&s, 0.5),
        min_ms: s[0],
        max_ms: s[s.len() - 1],
        p25_ms: p25,
        p75_ms: p75,
        iqr_ms: p75 - p25,
        median_ci95: median_ci(&s, 0.95),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts() {
        let s = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms), (3.0, 1.0, 5.0));
        assert_eq!((s.p25_ms, s.p75_ms, s.iqr_ms), (2.0, 4.0, 2.0));
        let s = summarize(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median_ms, 2.5);
        assert_eq!(s.iqr_ms, 1.5);
        assert!(summarize(&[]).is_none());
        assert_eq!(summarize(&[7.0]).unwrap().iqr_ms, 0.0);
    }

    #[test]
    fn median_interval_from_order_statistics() {
        // n = 5: [min, max] covers 1 − 2/32 = 93.75 % < 95 %: no interval.
        assert!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).is_none());
        assert!(summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap().median_ci95.is_none());
        // n = 6: [x(1), x(6)], 1 − 2/64 = 96.875 %.
        let s: Vec<f64> = (1..=6).map(f64::from).collect();
        let ci = median_ci(&s, 0.95).unwrap();
        assert_eq!((ci.lo_ms, ci.hi_ms, ci.rank), (1.0, 6.0, 1));
        assert!((ci.coverage - 0.968_75).abs() < 1e-12, "{}", ci.coverage);
        // n = 10: the table value is [x(2), x(9)], coverage 1 − 2·11/1024 = 97.85 %.
        let s: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = median_ci(&s, 0.95).unwrap();
        assert_eq!((ci.lo_ms, ci.hi_ms, ci.rank), (2.0, 9.0, 2));
        assert!((ci.coverage - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        // n = 20: [x(6), x(15)] (coverage 95.86 %; x(7)..x(14) would be 88.5 %).
        let s: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = median_ci(&s, 0.95).unwrap();
        assert_eq!((ci.lo_ms, ci.hi_ms), (6.0, 15.0));
        assert!(ci.coverage >= 0.95 && 1.0 - 2.0 * binom_half_cdf(20, 6) < 0.95);
        // Large n stays finite and brackets the median; 0.5 of coverage gives the median pair.
        let s: Vec<f64> = (1..=1000).map(f64::from).collect();
        let ci = median_ci(&s, 0.95).unwrap();
        assert!(ci.lo_ms < 500.5 && ci.hi_ms > 500.5 && ci.hi_ms - ci.lo_ms < 80.0, "{ci:?}");
        assert!((binom_half_cdf(1000, 1000) - 1.0).abs() < 1e-9);
    }
}
