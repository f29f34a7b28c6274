//! Per-connection qlog file (`--qlog-dir`): `<odcid>_server.sqlog` from
//! `mpquic-server`, `<odcid>_client.sqlog` from `mpquic-client`.
//!
//! A JSON-SEQ qlog file in the main schema ([`mpquic::qlog`] says which
//! drafts and why): the header first, then one record per event, each an
//! RS byte, a JSON object and a newline, so qvis and other qlog tools load
//! it. The engine's events (`quic:packet_sent`, `quic:recovery_metrics_updated`,
//! `mpquic:path_event`, ...) are copied as they are; the application adds
//! its own in the `mpquic` namespace from the public API — the server one
//! `mpquic:path_stats` per path and one `mpquic:out_of_order` every 100 ms,
//! `mpquic:accepted` at the start, and at the end a last `path_stats` per
//! path and `mpquic:closed` with the connection's and each path's totals. Their
//! `time` counts from the same start as the engine's (the server accepts a
//! connection at the instant the engine creates it), and every record is
//! written in time order: the engine's queued events first, then the
//! application's of the same instant.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mpquic::qlog::{write_record, Header, Vantage};
use mpquic::Connection;
use serde_json::{json, Value};

/// How often path statistics are recorded.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// One connection's log file.
pub struct EventLog {
    w: BufWriter<File>,
    path: PathBuf,
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

/// `t` as an RFC 3339 date-time in UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

impl EventLog {
    /// Create `dir/<odcid>_<vantage>.sqlog` for `conn` (created at `now`)
    /// and write its header, titled `program` (with the wall-clock time: an
    /// application may read the clock).
    #[allow(clippy::disallowed_methods)]
    pub fn create(dir: &Path, conn: &Connection, program: &str, now: Instant) -> std::io::Result<EventLog> {
        std::fs::create_dir_all(dir)?;
        let header = conn
            .qlog_header()
            .unwrap_or_else(|| Header::new(Vantage::Server))
            .title(program)
            .name(program)
            .wall_clock_time(&rfc3339(SystemTime::now()));
        let id = header.group_id.clone().unwrap_or_else(|| format!("{:?}", now));
        let path = dir.join(format!("{id}_{}.sqlog", header.vantage.as_str()));
        let mut w = BufWriter::new(File::create(&path)?);
        write_record(&mut w, &header.to_json())?;
        Ok(EventLog { w, path, start: now, next: now })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one `mpquic:<event>` record with `data`.
    pub fn event(&mut self, now: Instant, event: &str, data: Value) {
        let rec = json!({
            "time": (now.saturating_duration_since(self.start).as_secs_f64() * 1e6).round() / 1e3,
            "name": format!("mpquic:{event}"),
            "data": data,
        });
        // Logging is best-effort: a full disk must not break the transfer.
        let _ = write_record(&mut self.w, &rec.to_string());
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
        self.path_stats(conn, now);
        self.event(now, "out_of_order", json!({ "bytes": conn.out_of_order_bytes() }));
    }

    /// One `mpquic:path_stats` record per path.
    fn path_stats(&mut self, conn: &Connection, now: Instant) {
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
    }

    /// The connection is gone: its last engine events, a final
    /// `mpquic:path_stats` per path (the periodic ones can be an interval
    /// old) and `mpquic:closed` with the totals; then flush.
    pub fn closed(&mut self, conn: &mut Connection, now: Instant) {
        self.engine_events(conn);
        self.path_stats(conn, now);
        self.event(now, "closed", closed_data(conn));
        self.flush();
    }

    /// Copy the engine's queued qlog events.
    pub fn engine_events(&mut self, conn: &mut Connection) {
        while let Some(ev) = conn.qlog_next() {
            let _ = write_record(&mut self.w, &ev);
        }
    }

    /// Flush buffered records.
    pub fn flush(&mut self) {
        let _ = self.w.flush();
    }
}

/// `mpquic:closed`'s data: who closed and why, the connection's counters
/// (`Connection::stats`) and each path's (`Connection::path_stats`).
pub fn closed_data(conn: &Connection) -> Value {
    let info = conn.peer_error().or(conn.local_error());
    let s = conn.stats();
    let paths: Vec<Value> = conn
        .path_stats()
        .map(|p| {
            json!({
                "path_id": p.id.0, "local": p.local.to_string(), "peer": p.peer.to_string(),
                "sent": p.sent, "recv": p.recv, "lost": p.lost, "sent_bytes": p.sent_bytes,
                "recv_bytes": p.recv_bytes, "lost_bytes": p.lost_bytes, "stream_bytes": p.stream_bytes,
                "retrans_bytes": p.retrans_bytes, "srtt_us": p.srtt.as_micros() as u64,
                "min_rtt_us": p.min_rtt.as_micros() as u64, "rttvar_us": p.rttvar.as_micros() as u64,
            })
        })
        .collect();
    json!({
        "by_peer": conn.peer_error().is_some(),
        "code": info.map(|i| i.code), "app": info.map(|i| i.is_app),
        "reason": info.map(|i| String::from_utf8_lossy(&i.reason).into_owned()),
        "stats": {
            "sent": s.sent, "recv": s.recv, "lost": s.lost, "sent_bytes": s.sent_bytes,
            "recv_bytes": s.recv_bytes, "retrans_bytes": s.retrans_bytes, "dropped": s.dropped,
            "paths": s.paths, "dup_stream_bytes": s.dup_stream_bytes, "sent_ahead_bytes": s.sent_ahead_bytes,
            "key_updates": s.key_updates,
        },
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        let at = |s: u64, ms: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_795_665_599, 999), "2026-11-26T03:59:59.999Z");
    }
}
