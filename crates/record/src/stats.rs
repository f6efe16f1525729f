//! The one percentile every latency figure of a run uses (`fg_p50_ms`, `fg_p99_ms`, the
//! interactivity latencies, the report's comparison): nearest rank on sorted samples.
//!
//! Nearest rank returns a sample that was actually observed, never an interpolation between
//! two, which is what a latency tail should quote. (`forefront bench` summarises real-kernel
//! samples with the interpolated median and quartiles of `forefront_bench::stats` instead:
//! medians of few noisy samples, a different question.)
//!
//! ```
//! use forefront_record::stats::percentile;
//! let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
//! assert_eq!(percentile(&xs, 50.0), Some(5.0));
//! assert_eq!(percentile(&xs, 99.0), Some(10.0));
//! assert_eq!(percentile(&[], 50.0), None);
//! ```

/// Nearest-rank percentile (`q` in 0..=100) of already sorted values; `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}
