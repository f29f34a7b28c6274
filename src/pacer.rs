//! Leaky-bucket pacer (RFC 9002 §7.7): credit accrues at the pacing rate up
//! to a burst allowance, and each packet spends its size. Credit may go
//! negative: packets built at the same instant (the engine writes datagrams
//! ahead of their release) queue up one interval after another instead of
//! all leaving at the first release time.
//!
//! Credit is kept in byte·nanoseconds-per-second units (bytes × 10⁹) so
//! release times are exact integers with no drift.

use std::time::{Duration, Instant};

const NANOS: i128 = 1_000_000_000;

/// One path's pacer.
#[derive(Clone, Debug)]
pub struct Pacer {
    /// Bytes/s; 0 disables pacing.
    rate: u64,
    /// Bucket depth in bytes.
    burst: usize,
    /// Current credit in bytes × 10⁹ (negative: owed by packets already
    /// built but not yet due).
    credit: i128,
    last: Instant,
}

impl Pacer {
    /// A pacer with a full bucket of `burst` bytes and no rate yet
    /// (unpaced until [`set_rate`](Self::set_rate)).
    pub fn new(burst: usize, now: Instant) -> Self {
        Self { rate: 0, burst, credit: burst as i128 * NANOS, last: now }
    }

    /// Current rate in bytes/s (0 = unpaced).
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Burst allowance in bytes.
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// Change the burst allowance (e.g. a few packets for a slow path).
    pub fn set_burst(&mut self, burst: usize) {
        self.burst = burst;
        self.credit = self.credit.min(burst as i128 * NANOS);
    }

    /// Accrue credit up to `now` at the old rate, then switch to `rate`.
    pub fn set_rate(&mut self, now: Instant, rate: u64) {
        self.refill(now);
        self.rate = rate;
    }

    fn refill(&mut self, now: Instant) {
        let cap = self.burst as i128 * NANOS;
        if now > self.last {
            let dt = now.duration_since(self.last).as_nanos() as i128;
            self.credit = self.credit.saturating_add(dt.saturating_mul(self.rate as i128)).min(cap);
            self.last = now;
        }
        if self.rate == 0 {
            // Unpaced: keep the bucket full so pacing resumes with a burst.
            self.credit = cap;
        }
    }

    /// When a packet of `size` bytes may be sent; `None` = now.
    pub fn next_release(&self, now: Instant, size: usize) -> Option<Instant> {
        if self.rate == 0 {
            return None;
        }
        let mut credit = self.credit;
        if now > self.last {
            let dt = now.duration_since(self.last).as_nanos() as i128;
            credit = credit.saturating_add(dt.saturating_mul(self.rate as i128));
        }
        // A packet larger than the bucket waits for a full bucket.
        let need = size.min(self.burst) as i128 * NANOS;
        if credit >= need {
            return None;
        }
        // need > credit here, so the difference is positive.
        let wait_ns = ((need - credit) as u128).div_ceil(self.rate as u128);
        let wait = Duration::from_nanos(wait_ns.min(u64::MAX as u128) as u64);
        now.max(self.last).checked_add(wait)
    }

    /// A packet of `size` bytes left at `now`.
    pub fn on_sent(&mut self, now: Instant, size: usize) {
        self.refill(now);
        self.credit = self.credit.saturating_sub(size as i128 * NANOS);
    }

    /// When the packets already charged are due: the release time of the
    /// last one sent (`None` = now).
    pub fn release_time(&self, now: Instant) -> Option<Instant> {
        self.next_release(now, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)]
    fn t0() -> Instant {
        Instant::now()
    }

    #[test]
    fn burst_then_paced_at_rate() {
        let t = t0();
        // 1.2 MB/s, burst of 2 packets of 1200 bytes.
        let mut p = Pacer::new(2400, t);
        p.set_rate(t, 1_200_000);
        assert_eq!(p.next_release(t, 1200), None);
        p.on_sent(t, 1200);
        assert_eq!(p.next_release(t, 1200), None);
        p.on_sent(t, 1200);
        // Bucket empty: 1200 bytes at 1.2 MB/s take exactly 1 ms.
        assert_eq!(p.next_release(t, 1200), Some(t + Duration::from_millis(1)));
        // Half-way there, 0.5 ms remain.
        let half = t + Duration::from_micros(500);
        assert_eq!(p.next_release(half, 1200), Some(t + Duration::from_millis(1)));
        let t1 = t + Duration::from_millis(1);
        assert_eq!(p.next_release(t1, 1200), None);
        p.on_sent(t1, 1200);
        assert_eq!(p.next_release(t1, 600), Some(t1 + Duration::from_micros(500)));
        // Idle for long: credit is capped at the burst (2 packets, not more).
        let later = t1 + Duration::from_secs(1);
        p.on_sent(later, 1200);
        p.on_sent(later, 1200);
        assert_eq!(p.next_release(later, 1200), Some(later + Duration::from_millis(1)));
    }

    #[test]
    fn packets_built_together_leave_one_interval_apart() {
        let t = t0();
        // 1.2 MB/s: 1 ms per 1200-byte packet; one packet of burst.
        let mut p = Pacer::new(1200, t);
        p.set_rate(t, 1_200_000);
        p.on_sent(t, 1200);
        assert_eq!(p.release_time(t), None);
        p.on_sent(t, 1200);
        assert_eq!(p.release_time(t), Some(t + Duration::from_millis(1)));
        p.on_sent(t, 1200);
        assert_eq!(p.release_time(t), Some(t + Duration::from_millis(2)));
        // A fourth packet may be built when the third is due, 1 ms later still.
        assert_eq!(p.next_release(t, 1200), Some(t + Duration::from_millis(3)));
        // Time pays the debt off.
        let t2 = t + Duration::from_millis(2);
        assert_eq!(p.release_time(t2), None);
    }

    #[test]
    fn rate_change_and_unpaced() {
        let t = t0();
        let mut p = Pacer::new(1200, t);
        assert_eq!(p.next_release(t, 1200), None); // no rate yet
        p.set_rate(t, 120_000); // 10 ms per 1200-byte packet
        p.on_sent(t, 1200);
        assert_eq!(p.next_release(t, 1200), Some(t + Duration::from_millis(10)));
        // After 5 ms at the old rate (600 bytes of credit) the rate doubles:
        // the remaining 600 bytes take 2.5 ms.
        let t5 = t + Duration::from_millis(5);
        p.set_rate(t5, 240_000);
        assert_eq!(p.next_release(t5, 1200), Some(t5 + Duration::from_micros(2500)));
    }
}
