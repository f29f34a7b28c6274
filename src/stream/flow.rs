//! Flow-control accounting (RFC 9000 §4): receive windows with auto-tuning
//! and send-side credit from the peer's limits.

use std::time::{Duration, Instant};

/// A receive window: the limit we advertised and how much the application has
/// consumed. Used per stream (MAX_STREAM_DATA) and per connection (MAX_DATA).
///
/// Auto-tuning: when an update is due less than two RTTs after the previous
/// one, the peer is limited by our window rather than by the network, so the
/// window doubles (up to `max_window`), as quiche and quinn do.
#[derive(Clone, Debug)]
pub struct RecvWindow {
    max: u64,
    window: u64,
    max_window: u64,
    consumed: u64,
    last_update: Option<Instant>,
}

impl RecvWindow {
    /// A window whose initial limit (the transport parameter) is `window`.
    pub fn new(window: u64, max_window: u64) -> Self {
        RecvWindow { max: window, window, max_window: max_window.max(window), consumed: 0, last_update: None }
    }

    /// The limit currently advertised to the peer.
    #[inline]
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The current window size.
    #[inline]
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Bytes consumed by the application (or released without reading).
    #[inline]
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Record `n` more bytes consumed.
    #[inline]
    pub fn add_consumed(&mut self, n: u64) {
        self.consumed = self.consumed.saturating_add(n);
    }

    /// Raise the window to at least `w` (capped by the maximum); used to keep
    /// the connection window ahead of a grown stream window.
    pub fn ensure_window(&mut self, w: u64) {
        self.window = self.window.max(w.min(self.max_window));
    }

    /// Whether half the window has been consumed since the last update, so a
    /// MAX_DATA / MAX_STREAM_DATA should go out.
    #[inline]
    pub fn needs_update(&self) -> bool {
        let avail = self.max.saturating_sub(self.consumed);
        avail <= self.window - self.window / 2 && self.consumed.saturating_add(self.window) > self.max
    }

    /// If an update is due, auto-tune the window (`now`, `rtt` of the path
    /// the data arrives on) and commit a new limit, returning it.
    pub fn should_send_update(&mut self, now: Instant, rtt: Duration) -> Option<u64> {
        if !self.needs_update() {
            return None;
        }
        if let Some(last) = self.last_update {
            if now.saturating_duration_since(last) < rtt.saturating_mul(2) {
                self.window = self.window.saturating_mul(2).min(self.max_window);
            }
        }
        self.last_update = Some(now);
        self.max = self.max.max(self.consumed.saturating_add(self.window));
        Some(self.max)
    }
}

/// Send-side credit granted by the peer (MAX_DATA or MAX_STREAM_DATA), with
/// the "blocked" signal sent at most once per limit value.
#[derive(Clone, Debug, Default)]
pub struct SendCredit {
    max: u64,
    used: u64,
    blocked_sent: Option<u64>,
}

impl SendCredit {
    /// Credit starting at the peer's initial limit.
    pub fn new(max: u64) -> Self {
        SendCredit { max, used: 0, blocked_sent: None }
    }

    /// The peer's current limit.
    #[inline]
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Bytes counted against the limit so far.
    #[inline]
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Remaining credit.
    #[inline]
    pub fn available(&self) -> u64 {
        self.max.saturating_sub(self.used)
    }

    /// Count `n` newly sent bytes.
    #[inline]
    pub fn consume(&mut self, n: u64) {
        self.used = self.used.saturating_add(n);
    }

    /// Apply a new limit from the peer; returns whether it grew (limits
    /// that do not increase are ignored, RFC 9000 §19.9-19.10).
    pub fn update_max(&mut self, max: u64) -> bool {
        if max > self.max {
            self.max = max;
            true
        } else {
            false
        }
    }

    /// Called when sending is blocked by this limit: returns the limit to put
    /// in a (STREAM_)DATA_BLOCKED frame the first time for each limit value.
    pub fn blocked(&mut self) -> Option<u64> {
        if self.available() > 0 || self.blocked_sent == Some(self.max) {
            return None;
        }
        self.blocked_sent = Some(self.max);
        Some(self.max)
    }

    /// Whether we are still blocked at exactly `limit` (for re-sending a lost
    /// blocked frame only while it is still true).
    pub fn is_blocked_at(&self, limit: u64) -> bool {
        self.max == limit && self.available() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A base instant for tests; only differences between instants matter.
    #[allow(clippy::disallowed_methods)]
    fn epoch() -> Instant {
        Instant::now()
    }

    #[test]
    fn update_after_half_window() {
        let now = epoch();
        let rtt = Duration::from_millis(100);
        let mut w = RecvWindow::new(1000, 8000);
        w.add_consumed(499);
        assert_eq!(w.should_send_update(now, rtt), None);
        w.add_consumed(1);
        assert_eq!(w.should_send_update(now, rtt), Some(1500));
        assert_eq!(w.window(), 1000, "first update never grows the window");
        assert_eq!(w.should_send_update(now, rtt), None);
    }

    #[test]
    fn autotune_doubles_when_fast_and_caps() {
        let t0 = epoch();
        let rtt = Duration::from_millis(50);
        let mut w = RecvWindow::new(1000, 3000);
        w.add_consumed(500);
        assert_eq!(w.should_send_update(t0, rtt), Some(1500));
        // Next half-window consumed within 2 RTTs: double.
        w.add_consumed(500);
        assert_eq!(w.should_send_update(t0 + Duration::from_millis(60), rtt), Some(3000));
        assert_eq!(w.window(), 2000);
        w.add_consumed(1000);
        assert_eq!(w.should_send_update(t0 + Duration::from_millis(70), rtt), Some(5000));
        assert_eq!(w.window(), 3000, "capped at max_window");
        // Slow consumption: no growth.
        w.add_consumed(1500);
        let t = t0 + Duration::from_secs(10);
        assert_eq!(w.should_send_update(t, rtt), Some(6500));
        assert_eq!(w.window(), 3000);
    }

    #[test]
    fn slow_updates_keep_window() {
        let t0 = epoch();
        let rtt = Duration::from_millis(50);
        let mut w = RecvWindow::new(1000, 100_000);
        for i in 1..5u64 {
            w.add_consumed(500);
            let t = t0 + Duration::from_millis(200 * i);
            assert!(w.should_send_update(t, rtt).is_some());
            assert_eq!(w.window(), 1000);
        }
    }

    #[test]
    fn blocked_once_per_limit() {
        let mut c = SendCredit::new(100);
        assert_eq!(c.blocked(), None);
        c.consume(100);
        assert_eq!(c.blocked(), Some(100));
        assert_eq!(c.blocked(), None);
        assert!(c.is_blocked_at(100));
        assert!(!c.update_max(50));
        assert!(c.update_max(200));
        assert!(!c.is_blocked_at(100));
        c.consume(100);
        assert_eq!(c.blocked(), Some(200));
    }
}
