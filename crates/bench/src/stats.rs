//! Summaries of samples: median, quartiles (IQR), min, max.

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
}
