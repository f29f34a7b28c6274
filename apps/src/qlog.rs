//! Per-connection event log (`--qlog-dir`).
//!
//! JSON lines of two kinds. The engine's qlog-style events
//! ([`mpquic::qlog`]: `recovery:metrics_updated`, `recovery:packet_lost`,
//! `multipath:path_event`, `multipath:path_suspect`) are copied as they are
//! (fields `time`, `name`, `data`). The application adds its own records
//! from the public API — one `path_stats` record per path every 100 ms, plus
//! `path_event`, `request` and `closed` records — each with `t_ms`
//! (milliseconds since the connection started) and `event`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use mpquic::Connection;
use serde_json::{json, Value};

/// How often path statistics are recorded.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// One connection's log file.
pub struct EventLog {
    w: BufWriter<File>,
    start: Instant,
    next: Instant,
}

/// Make sure `dir` exists and takes new files (a probe file is created
/// and removed), so an unusable `--qlog-dir` is reported once at start.
pub fn check_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".mpquic-probe-{}", std::process::id()));
    File::create(&probe)?;
    std::fs::remove_file(probe)
}

impl EventLog {
    /// Create `dir/<name>.jsonl`.
    pub fn create(dir: &Path, name: &str, now: Instant) -> std::io::Result<EventLog> {
        std::fs::create_dir_all(dir)?;
        let f = File::create(dir.join(format!("{name}.jsonl")))?;
        Ok(EventLog { w: BufWriter::new(f), start: now, next: now })
    }

    /// Write one record.
    pub fn event(&mut self, now: Instant, event: &str, mut data: Value) {
        if let Value::Object(m) = &mut data {
            m.insert("t_ms".into(), json!(now.saturating_duration_since(self.start).as_secs_f64() * 1e3));
            m.insert("event".into(), json!(event));
        }
        // Logging is best-effort: a full disk must not break the transfer.
        let _ = writeln!(self.w, "{data}");
    }

    /// When [`EventLog::sample`] wants to run next.
    pub fn next_sample(&self) -> Instant {
        self.next
    }

    /// Record path statistics if the interval elapsed.
    pub fn sample(&mut self, conn: &Connection, now: Instant) {
        if now < self.next {
            return;
        }
        self.next = now + INTERVAL;
        let paths: Vec<_> = conn.path_stats().collect();
        for p in paths {
            self.event(
                now,
                "path_stats",
                json!({
                    "path_id": p.id.0, "local": p.local.to_string(), "peer": p.peer.to_string(),
                    "active": p.active, "srtt_us": p.srtt.as_micros() as u64,
                    "min_rtt_us": p.min_rtt.as_micros() as u64, "rttvar_us": p.rttvar.as_micros() as u64,
                    "cwnd": p.cwnd, "bytes_in_flight": p.bytes_in_flight, "pacing_rate": p.pacing_rate,
                    "sent": p.sent, "recv": p.recv, "lost": p.lost, "sent_bytes": p.sent_bytes,
                    "recv_bytes": p.recv_bytes, "stream_bytes": p.stream_bytes,
                    "retrans_bytes": p.retrans_bytes, "cc_state": p.cc_state,
                }),
            );
        }
        self.event(now, "out_of_order", json!({ "bytes": conn.out_of_order_bytes() }));
    }

    /// Copy the engine's queued qlog events.
    pub fn engine_events(&mut self, conn: &mut Connection) {
        while let Some(line) = conn.qlog_next() {
            let _ = writeln!(self.w, "{line}");
        }
    }

    /// Flush buffered records.
    pub fn flush(&mut self) {
        let _ = self.w.flush();
    }
}
