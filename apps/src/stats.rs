//! Sampled statistics for the client's summary.

/// Samples of a quantity (e.g. receiver out-of-order bytes).
#[derive(Clone, Debug, Default)]
pub struct Samples {
    v: Vec<u64>,
}

/// Mean, 95th percentile and maximum of [`Samples`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// 95th percentile (nearest rank).
    pub p95: u64,
    /// Maximum.
    pub max: u64,
}

impl Samples {
    /// Record one sample.
    pub fn push(&mut self, x: u64) {
        self.v.push(x);
    }
    /// Summarise (all zero when empty).
    pub fn summary(&self) -> Summary {
        if self.v.is_empty() {
            return Summary::default();
        }
        let mut s = self.v.clone();
        s.sort_unstable();
        let n = s.len();
        // Nearest rank: the smallest value with at least 95% at or below it.
        let rank = (n * 95).div_ceil(100).max(1);
        Summary {
            count: n,
            mean: s.iter().map(|&x| x as f64).sum::<f64>() / n as f64,
            p95: s.get(rank - 1).copied().unwrap_or(0),
            max: s.last().copied().unwrap_or(0),
        }
    }
}

/// `bytes` in a human unit (powers of 1000, as network rates use).
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut s = Samples::default();
        for x in 1..=100 {
            s.push(x);
        }
        let m = s.summary();
        assert_eq!((m.count, m.p95, m.max), (100, 95, 100));
        assert!((m.mean - 50.5).abs() < 1e-9);
        let mut s = Samples::default();
        s.push(7);
        assert_eq!(s.summary().p95, 7);
        assert_eq!(Samples::default().summary(), Summary::default());
        let mut s = Samples::default();
        for x in [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1000] {
            s.push(x);
        }
        // 19 of 20 are zero: exactly 95% — p95 is 0, max shows the spike.
        assert_eq!((s.summary().p95, s.summary().max), (0, 1000));
    }

    #[test]
    fn units() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(20_971_520), "20.97 MB");
    }
}
