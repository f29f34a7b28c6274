//! What a path carries, as a scheduler measures it: the rate it sends at and
//! the share of that declared lost, each over periods of one smoothed RTT
//! (at least 10 ms) and averaged with weight 1/4.

use std::time::{Duration, Instant};

/// The shortest measuring period, so that loopback-like RTTs still give
/// samples of more than a packet or two.
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// The length of the period begun at `since`, if it is over at `now`.
fn period_over(since: Instant, now: Instant, srtt: Duration) -> Option<Duration> {
    let elapsed = now.saturating_duration_since(since);
    (elapsed >= srtt.max(MIN_PERIOD)).then_some(elapsed)
}

/// The rate a path actually sends at (x_i). Neither the bandwidth estimate
/// nor the current pacing rate says when data leaves: a paced controller
/// moves through its gain cycle (Coupled BBR cruises at α_i·BW_i), a
/// window-limited one follows its queue.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateMeter {
    bytes: u64,
    since: Option<Instant>,
    avg: f64,
}

impl RateMeter {
    /// Count bytes sent.
    pub fn on_sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// Close the period if it is over.
    pub fn tick(&mut self, now: Instant, srtt: Duration) {
        let Some(since) = self.since else {
            self.since = Some(now);
            self.bytes = 0;
            return;
        };
        let Some(elapsed) = period_over(since, now, srtt) else {
            return;
        };
        let sample = self.bytes as f64 / elapsed.as_secs_f64();
        self.avg = if self.avg > 0.0 { 0.75 * self.avg + 0.25 * sample } else { sample };
        self.since = Some(now);
        self.bytes = 0;
    }

    /// Bytes/s; 0 until the first period ends.
    pub fn rate(&self) -> f64 {
        self.avg
    }
}

/// The share of a path's bytes declared lost: bytes declared lost during a
/// period over bytes sent in it. Losses are declared about an RTT after the
/// packets left; over periods of an RTT, averaged, the two line up.
#[derive(Clone, Copy, Debug, Default)]
pub struct LossMeter {
    sent: u64,
    lost_at: u64,
    since: Option<Instant>,
    avg: Option<f64>,
}

impl LossMeter {
    /// Count bytes sent.
    pub fn on_sent(&mut self, bytes: usize) {
        self.sent += bytes as u64;
    }

    /// Close the period if it is over; `lost_bytes` is the path's running
    /// count of bytes declared lost.
    pub fn tick(&mut self, now: Instant, srtt: Duration, lost_bytes: u64) {
        if let Some(since) = self.since {
            if period_over(since, now, srtt).is_none() {
                return;
            }
            let lost = lost_bytes.saturating_sub(self.lost_at);
            if self.sent > 0 || lost > 0 {
                let sample = (lost as f64 / self.sent.max(1) as f64).min(1.0);
                self.avg = Some(self.avg.map_or(sample, |a| 0.75 * a + 0.25 * sample));
            }
        }
        self.since = Some(now);
        self.sent = 0;
        self.lost_at = lost_bytes;
    }

    /// The lost share in [0, 1]; 0 until the first period with traffic ends.
    pub fn loss(&self) -> f64 {
        self.avg.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::t0;
    use super::*;

    #[test]
    fn rate_meter_averages_over_srtt_periods() {
        let (mut m, t) = (RateMeter::default(), t0());
        let ms = Duration::from_millis;
        m.tick(t, ms(50));
        m.on_sent(50_000);
        m.tick(t + ms(30), ms(50));
        assert_eq!(m.rate(), 0.0, "period not over");
        m.tick(t + ms(50), ms(50));
        assert!((m.rate() - 1e6).abs() < 1.0, "first sample taken as is: {}", m.rate());
        m.on_sent(100_000);
        m.tick(t + ms(100), ms(50));
        // 0.75 · 1e6 + 0.25 · 2e6.
        assert!((m.rate() - 1.25e6).abs() < 1.0, "{}", m.rate());
    }

    #[test]
    fn loss_meter_shares_lost_bytes_of_sent_per_period() {
        let (mut m, t) = (LossMeter::default(), t0());
        let ms = Duration::from_millis;
        m.tick(t, ms(50), 7_000);
        m.on_sent(100_000);
        m.tick(t + ms(30), ms(50), 17_000);
        assert_eq!(m.loss(), 0.0, "period not over");
        // 10 kB of 100 kB declared lost since the period began.
        m.tick(t + ms(50), ms(50), 17_000);
        assert!((m.loss() - 0.1).abs() < 1e-9, "first sample taken as is: {}", m.loss());
        // A period with nothing sent or lost leaves the estimate alone.
        m.tick(t + ms(100), ms(50), 17_000);
        assert!((m.loss() - 0.1).abs() < 1e-9, "{}", m.loss());
        // Half lost: 0.75 · 0.1 + 0.25 · 0.5.
        m.on_sent(20_000);
        m.tick(t + ms(150), ms(50), 27_000);
        assert!((m.loss() - 0.2).abs() < 1e-9, "{}", m.loss());
        // Losses with nothing sent (a dead path) count as all lost.
        m.tick(t + ms(200), ms(50), 30_000);
        assert!((m.loss() - 0.4).abs() < 1e-9, "{}", m.loss());
    }
}
