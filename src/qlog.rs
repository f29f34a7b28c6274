//! qlog-style events (draft-ietf-quic-qlog-main-schema event shape: `time`
//! in milliseconds since the connection started, `name` as
//! `category:event`, `data`), one JSON object per line, produced only when
//! [`Config::enable_qlog`](crate::Config::enable_qlog) is on.
//!
//! The engine does no I/O: events queue up in the connection and the
//! application drains them with
//! [`Connection::qlog_next`](crate::Connection::qlog_next) and writes them
//! where it likes (JSON-SEQ or JSON lines). Events:
//!
//! - `recovery:metrics_updated`: per path, on acknowledgements, when the
//!   window or controller state changed or one smoothed RTT has passed:
//!   cwnd, bytes in flight, RTTs, pacing rate, bandwidth estimate, the
//!   controller's state and pacing gain, bytes sent / acknowledged / lost /
//!   sent redundantly, and the scheduler's role for the path.
//! - `recovery:packet_lost`: path, packet number, size.
//! - `multipath:path_event`: new, validated, failed validation, abandoned,
//!   status changed.
//! - `multipath:path_suspect`: a path stopped answering while another did
//!   and its data was queued again.

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::{Duration, Instant};

use crate::PathId;

/// At most this many events wait to be drained; older ones are dropped
/// (counted in `dropped`) so a connection whose log is never read stays
/// bounded.
const MAX_QUEUED: usize = 65_536;

/// The numbers of one `recovery:metrics_updated` event.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Metrics {
    pub(crate) cwnd: usize,
    pub(crate) bytes_in_flight: usize,
    pub(crate) smoothed_rtt: Duration,
    pub(crate) min_rtt: Duration,
    pub(crate) latest_rtt: Duration,
    pub(crate) pacing_rate: u64,
    pub(crate) bandwidth: u64,
    pub(crate) cc_state: &'static str,
    pub(crate) pacing_gain: Option<f64>,
    pub(crate) group: u32,
    pub(crate) sent_bytes: u64,
    pub(crate) acked_bytes: u64,
    pub(crate) lost_bytes: u64,
    pub(crate) redundant_bytes: u64,
    pub(crate) role: Option<&'static str>,
}

/// Per-path memory, to log metrics only when they say something new.
#[derive(Clone, Copy, Debug)]
struct Last {
    path: PathId,
    at: Instant,
    cwnd: usize,
    state: &'static str,
}

/// A connection's queued events.
#[derive(Debug)]
pub(crate) struct Qlog {
    start: Instant,
    queue: VecDeque<String>,
    last: Vec<Last>,
    pub(crate) dropped: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Qlog {
    pub(crate) fn new(start: Instant) -> Self {
        Qlog { start, queue: VecDeque::new(), last: Vec::new(), dropped: 0 }
    }

    pub(crate) fn next(&mut self) -> Option<String> {
        self.queue.pop_front()
    }

    fn push(&mut self, now: Instant, name: &str, data: &str) {
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.dropped += 1;
        }
        let t = ms(now.saturating_duration_since(self.start));
        self.queue.push_back(format!("{{\"time\":{t:.3},\"name\":\"{name}\",\"data\":{{{data}}}}}"));
    }

    /// Whether metrics of `path` are worth logging now; `srtt` paces it.
    pub(crate) fn metrics_due(
        &mut self,
        path: PathId,
        now: Instant,
        cwnd: usize,
        state: &'static str,
        srtt: Duration,
    ) -> bool {
        let new = Last { path, at: now, cwnd, state };
        match self.last.iter_mut().find(|l| l.path == path) {
            Some(l) => {
                let due = l.cwnd != cwnd || l.state != state || now.saturating_duration_since(l.at) >= srtt;
                if due {
                    *l = new;
                }
                due
            }
            None => {
                self.last.push(new);
                true
            }
        }
    }

    pub(crate) fn metrics_updated(&mut self, now: Instant, path: PathId, m: &Metrics) {
        let mut d = String::with_capacity(320);
        let _ = write!(
            d,
            "\"path_id\":{},\"congestion_window\":{},\"bytes_in_flight\":{},\"smoothed_rtt\":{:.3},\
             \"min_rtt\":{:.3},\"latest_rtt\":{:.3},\"pacing_rate\":{},\"bandwidth\":{},\
             \"congestion_state\":\"{}\",\"bytes_sent\":{},\"bytes_acked\":{},\"bytes_lost\":{},\
             \"bytes_redundant\":{},\"bottleneck_group\":{}",
            path.0,
            m.cwnd,
            m.bytes_in_flight,
            ms(m.smoothed_rtt),
            ms(m.min_rtt),
            ms(m.latest_rtt),
            m.pacing_rate,
            m.bandwidth,
            m.cc_state,
            m.sent_bytes,
            m.acked_bytes,
            m.lost_bytes,
            m.redundant_bytes,
            m.group
        );
        if let Some(g) = m.pacing_gain.filter(|g| g.is_finite()) {
            let _ = write!(d, ",\"pacing_gain\":{g:.4}");
        }
        if let Some(r) = m.role {
            let _ = write!(d, ",\"scheduler_role\":\"{r}\"");
        }
        self.push(now, "recovery:metrics_updated", &d);
    }

    pub(crate) fn packet_lost(&mut self, now: Instant, path: PathId, pn: u64, size: usize) {
        let d = format!(
            "\"path_id\":{},\"header\":{{\"packet_number\":{pn}}},\"raw\":{{\"length\":{size}}}",
            path.0
        );
        self.push(now, "recovery:packet_lost", &d);
    }

    pub(crate) fn path_event(&mut self, now: Instant, path: PathId, kind: &str) {
        self.push(now, "multipath:path_event", &format!("\"path_id\":{},\"event\":\"{kind}\"", path.0));
    }

    pub(crate) fn path_suspect(&mut self, now: Instant, path: PathId, silent: Duration) {
        let d = format!("\"path_id\":{},\"silent_ms\":{:.3}", path.0, ms(silent));
        self.push(now, "multipath:path_suspect", &d);
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
    fn events_are_json_objects_with_time_name_data() {
        let t = t0();
        let mut q = Qlog::new(t);
        q.path_event(t + Duration::from_millis(5), PathId(1), "validated");
        let m = Metrics {
            cwnd: 12000,
            cc_state: "Startup",
            pacing_gain: Some(2.885),
            role: Some("redundant"),
            group: 3,
            ..Default::default()
        };
        q.metrics_updated(t + Duration::from_millis(7), PathId(0), &m);
        let a = q.next().unwrap();
        assert_eq!(a, "{\"time\":5.000,\"name\":\"multipath:path_event\",\"data\":{\"path_id\":1,\"event\":\"validated\"}}");
        let b = q.next().unwrap();
        assert!(b.starts_with("{\"time\":7.000,\"name\":\"recovery:metrics_updated\",\"data\":{\"path_id\":0,\"congestion_window\":12000,"), "{b}");
        assert!(b.contains(",\"bottleneck_group\":3,"), "{b}");
        assert!(b.ends_with(",\"pacing_gain\":2.8850,\"scheduler_role\":\"redundant\"}}"), "{b}");
        assert!(q.next().is_none());
    }

    #[test]
    fn metrics_only_when_something_changed_or_an_rtt_passed() {
        let t = t0();
        let mut q = Qlog::new(t);
        let rtt = Duration::from_millis(50);
        assert!(q.metrics_due(PathId(0), t, 1000, "Startup", rtt));
        assert!(!q.metrics_due(PathId(0), t + Duration::from_millis(10), 1000, "Startup", rtt));
        assert!(q.metrics_due(PathId(0), t + Duration::from_millis(11), 2000, "Startup", rtt));
        assert!(q.metrics_due(PathId(0), t + Duration::from_millis(12), 2000, "ProbeBW", rtt));
        assert!(!q.metrics_due(PathId(0), t + Duration::from_millis(20), 2000, "ProbeBW", rtt));
        assert!(q.metrics_due(PathId(0), t + Duration::from_millis(62), 2000, "ProbeBW", rtt));
        assert!(q.metrics_due(PathId(1), t + Duration::from_millis(62), 2000, "ProbeBW", rtt));
    }

    #[test]
    fn queue_is_bounded() {
        let t = t0();
        let mut q = Qlog::new(t);
        for i in 0..MAX_QUEUED + 10 {
            q.packet_lost(t, PathId(0), i as u64, 1200);
        }
        assert_eq!(q.dropped, 10);
        assert!(q.next().unwrap().contains("\"packet_number\":10}"));
    }
}
