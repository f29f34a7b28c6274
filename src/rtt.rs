//! RTT estimation (RFC 9002 §5), one estimator per path.

use std::time::Duration;

/// RFC 9002's initial RTT before any sample.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// Timer granularity (RFC 9002 §6.1.2).
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// Smoothed RTT, RTT variation, min RTT and latest sample of one path.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Duration,
    var: Duration,
    min: Duration,
    has_sample: bool,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(INITIAL_RTT)
    }
}

impl RttEstimator {
    /// Start from `initial` (RFC 9002 §6.2.2: smoothed = initial, var = initial/2).
    pub fn new(initial: Duration) -> Self {
        Self { latest: initial, smoothed: initial, var: initial / 2, min: initial, has_sample: false }
    }

    /// Feed one RTT sample (RFC 9002 §5.3). `ack_delay` is already decoded and
    /// capped at max_ack_delay by the caller once the handshake is confirmed.
    pub fn update(&mut self, latest: Duration, ack_delay: Duration) {
        self.latest = latest;
        if !self.has_sample {
            self.has_sample = true;
            self.min = latest;
            self.smoothed = latest;
            self.var = latest / 2;
            return;
        }
        self.min = self.min.min(latest);
        let adjusted = if latest >= self.min + ack_delay { latest - ack_delay } else { latest };
        let diff = self.smoothed.abs_diff(adjusted);
        self.var = (self.var * 3 + diff) / 4;
        self.smoothed = (self.smoothed * 7 + adjusted) / 8;
    }

    /// Smoothed RTT.
    #[inline]
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }
    /// RTT variation.
    #[inline]
    pub fn var(&self) -> Duration {
        self.var
    }
    /// Minimum RTT seen (the initial RTT before any sample).
    #[inline]
    pub fn min(&self) -> Duration {
        self.min
    }
    /// Most recent sample.
    #[inline]
    pub fn latest(&self) -> Duration {
        self.latest
    }
    /// Whether any sample was taken.
    #[inline]
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
    /// PTO base period without max_ack_delay (RFC 9002 §6.2.1).
    #[inline]
    pub fn pto_base(&self) -> Duration {
        self.smoothed + (self.var * 4).max(GRANULARITY)
    }
    /// Loss-detection time threshold: 9/8 · max(smoothed, latest), at least 1 ms.
    #[inline]
    pub fn loss_delay(&self) -> Duration {
        (self.smoothed.max(self.latest) * 9 / 8).max(GRANULARITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_then_ewma() {
        let ms = Duration::from_millis;
        let mut r = RttEstimator::default();
        r.update(ms(100), ms(0));
        assert_eq!((r.smoothed(), r.var(), r.min()), (ms(100), ms(50), ms(100)));
        // ack delay is subtracted only when it keeps the sample above min_rtt.
        r.update(ms(120), ms(10));
        assert_eq!(r.smoothed(), (ms(100) * 7 + ms(110)) / 8);
        assert_eq!(r.var(), (ms(50) * 3 + ms(10)) / 4);
        r.update(ms(90), ms(20));
        assert_eq!(r.min(), ms(90));
    }
}
