//! qlog: the engine's events in the qlog main schema with the QUIC event
//! definitions, for qlog tools (qvis and others) to load.
//!
//! # Versions
//!
//! - File and event envelope: draft-ietf-quic-qlog-main-schema-13, the
//!   `QlogFileSeq` schema (`file_schema`
//!   `urn:ietf:params:qlog:file:sequential`) serialized as JSON Text Sequences
//!   (RFC 7464, media type `application/qlog+json-seq`, file suffix
//!   `.sqlog`): one header record, then one record per event, each record
//!   an RS byte (0x1E), a JSON object and a newline.
//! - Events: draft-ietf-quic-qlog-quic-events-12 (event schema URI
//!   `urn:ietf:params:qlog:events:quic-12`; draft URIs carry the draft
//!   number as that draft requires), namespace `quic`.
//!
//! They are the newest pair the producers in use follow (noq-proto 1.4, a
//! dependency of our tests, names exactly these two for its `n0-qlog`
//! output; recent quiche logs we found list the same `quic-12` URI), so
//! our files stay comparable with theirs. The main schema's text was read
//! in full (the editor's copy with `tuple`); for the QUIC events, the
//! editor's text before -12 was read in full and the -12 renames
//! (`path_assigned` → `tuple_assigned`, `PathEndpointInfo` →
//! `TupleEndpointInfo`, `owner` → `initiator` in `parameters_set`) were
//! taken from noq-proto's use of them. The multipath draft
//! (draft-ietf-quic-multipath-21) defines no qlog events, so multipath
//! details are extensions (see below).
//!
//! qvis (the classic tool) still identifies a JSON-SEQ file by the older
//! header fields `qlog_version` and `qlog_format: "JSON-SEQ"` and refuses
//! one without them; the header therefore also carries
//! `"qlog_version": "0.3", "qlog_format": "JSON-SEQ"`, which newer tools
//! ignore as unknown fields (main schema §"Tooling Expectations"). qvis's
//! views were written for the older `transport:` / `recovery:` names:
//! it loads the file, but its congestion and sequence views may not know
//! the `quic:` names yet.
//!
//! # Time
//!
//! `time` is in milliseconds (microsecond resolution) since the connection
//! was created (its `now`), `time_format` `relative_to_epoch` with a
//! `monotonic` reference clock whose epoch is `unknown` (the engine never
//! reads a clock); a writer that knows the wall-clock time of the start can
//! add it as `wall_clock_time` ([`Header::wall_clock_time`]).
//!
//! # Events
//!
//! From the QUIC event schema: `quic:connection_state_updated`,
//! `quic:parameters_set` (local and remote transport parameters),
//! `quic:tuple_assigned` (each path's addresses), `quic:packet_sent` and
//! `quic:packet_received` (header with `packet_type` and `packet_number`,
//! `raw.length`, and the frames), `quic:packet_lost`,
//! `quic:recovery_metrics_updated` and `quic:congestion_state_updated` (per
//! path), `quic:mtu_updated` (path MTU discovery, per path; probes are
//! `packet_sent` with `is_mtu_probe_packet`), `quic:key_updated` (1-RTT key
//! updates), `quic:connection_id_updated` (per path; `remote` for the peer's
//! ID we send to, `local` for ours it sends to, as the draft's
//! `owner`/`initiator` reads), `quic:stream_state_updated` (base states:
//! `idle` → `open`, `open` → `closed` when the stream is discarded; events of
//! application calls carry the time of the latest event, those calls having
//! no time of their own).
//!
//! Multipath goes in as extensions (schema [`QUIC_EXTENSION`]): every
//! per-path event carries the main schema's `tuple` field (the path ID as
//! text, matching `quic:tuple_assigned`'s `tuple_id`), packet headers carry
//! `path_id`, the multipath frames (PATH_ACK, PATH_ABANDON, ...) have their
//! own `frame_type`s, `quic:recovery_metrics_updated` carries the path's
//! bandwidth estimate, byte counters, shared-bottleneck group and
//! scheduler role, and `quic:parameters_set` `initial_max_path_id`.
//! Events of our own are in the `mpquic` namespace (schema
//! [`MPQUIC_EVENTS`]): `mpquic:path_event` (new, validated, failed
//! validation, abandoned, status changed) and `mpquic:path_suspect` (a path
//! stopped answering while another did). Applications may log their own
//! `mpquic:` records (`mpquic-server` does: path statistics, out-of-order
//! bytes, accept and close).
//!
//! The JSON Schema in `ci/qlog-schema/` describes all of this and CI
//! validates real logs against it (`python/tests/test_qlog.py`).
//!
//! # Use
//!
//! Nothing is produced unless [`Config::enable_qlog`](crate::Config::enable_qlog)
//! is on; while it is off, the packet paths pay one branch each and nothing
//! else (no allocation, no formatting). The engine does no I/O: events queue up in the connection
//! (bounded, see [`Connection::qlog_dropped`](crate::Connection::qlog_dropped)),
//! the application writes [`Connection::qlog_header`](crate::Connection::qlog_header)
//! first and then drains [`Connection::qlog_next`](crate::Connection::qlog_next),
//! each through [`write_record`].

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::crypto::Level;
use crate::frame::timestamp::TimestampParam;
use crate::transport_params::TransportParams;
use crate::PathId;

mod frames;
#[cfg(test)]
mod tests;

/// The `file_schema` of a JSON-SEQ qlog file (main schema §5).
pub const FILE_SCHEMA: &str = "urn:ietf:params:qlog:file:sequential";
/// The `serialization_format` of a JSON-SEQ qlog file (main schema §11.2).
pub const SERIALIZATION_FORMAT: &str = "application/qlog+json-seq";
/// The QUIC event schema this module follows (quic-events draft 12).
pub const QUIC_EVENTS: &str = "urn:ietf:params:qlog:events:quic-12";
/// mpquic's extension of the `quic` namespace (multipath fields and
/// frames). A private schema URI (main schema §8.1): the `.invalid` domain
/// (RFC 2606) cannot be registered by anyone, the month-date is November
/// 2026.
pub const QUIC_EXTENSION: &str = "https://mpquic.invalid/112026/qlog/quic#mpquic";
/// mpquic's own event namespace, `mpquic`.
pub const MPQUIC_EVENTS: &str = "https://mpquic.invalid/112026/qlog/mpquic";
/// The JSON-SEQ record separator (RFC 7464).
pub const RECORD_SEPARATOR: u8 = 0x1e;

/// At most this many events wait to be drained; older ones are dropped
/// (counted in `dropped`) so a connection whose log is never read stays
/// bounded.
const MAX_QUEUED: usize = 65_536;

/// Which end wrote a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vantage {
    /// The endpoint that opened the connection.
    Client,
    /// The endpoint that accepted it.
    Server,
}

impl Vantage {
    /// `"client"` or `"server"`, as in the header and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
        }
    }
}

/// The first record of a JSON-SEQ qlog file (`QlogFileSeq` without its
/// events). [`Connection::qlog_header`](crate::Connection::qlog_header)
/// fills in the vantage point and the group ID of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Client or server.
    pub vantage: Vantage,
    /// `common_fields.group_id`: the original destination connection ID in
    /// hex, as quic-events §1.1 recommends.
    pub group_id: Option<String>,
    /// The file's and trace's title.
    pub title: Option<String>,
    /// `vantage_point.name` (e.g. the program's name).
    pub name: Option<String>,
    /// RFC 3339 date-time of the connection's start, if the writer knows
    /// it (`reference_time.wall_clock_time`).
    pub wall_clock_time: Option<String>,
}

impl Header {
    /// A header with only the vantage point.
    pub fn new(vantage: Vantage) -> Self {
        Header { vantage, group_id: None, title: None, name: None, wall_clock_time: None }
    }

    /// Set the title.
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    /// Set the vantage point's name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Set the wall-clock time of the start (RFC 3339).
    pub fn wall_clock_time(mut self, t: &str) -> Self {
        self.wall_clock_time = Some(t.to_owned());
        self
    }

    /// The header as one JSON object (without the record separator).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(512);
        let _ = write!(
            s,
            "{{\"file_schema\":\"{FILE_SCHEMA}\",\"serialization_format\":\"{SERIALIZATION_FORMAT}\",\
             \"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\""
        );
        if let Some(t) = &self.title {
            s.push_str(",\"title\":");
            json_str(&mut s, t);
        }
        s.push_str(",\"trace\":{");
        if let Some(t) = &self.title {
            s.push_str("\"title\":");
            json_str(&mut s, t);
            s.push(',');
        }
        s.push_str("\"vantage_point\":{");
        if let Some(n) = &self.name {
            s.push_str("\"name\":");
            json_str(&mut s, n);
            s.push(',');
        }
        let _ = write!(s, "\"type\":\"{}\"}},\"common_fields\":{{", self.vantage.as_str());
        if let Some(g) = &self.group_id {
            s.push_str("\"group_id\":");
            json_str(&mut s, g);
            s.push(',');
        }
        s.push_str(
            "\"time_format\":\"relative_to_epoch\",\"reference_time\":{\"clock_type\":\"monotonic\",\"epoch\":\"unknown\"",
        );
        if let Some(w) = &self.wall_clock_time {
            s.push_str(",\"wall_clock_time\":");
            json_str(&mut s, w);
        }
        let _ = write!(
            s,
            "}}}},\"event_schemas\":[\"{QUIC_EVENTS}\",\"{QUIC_EXTENSION}\",\"{MPQUIC_EVENTS}\"]}}}}"
        );
        s
    }
}

/// Write one JSON-SEQ record: RS, the JSON text, a newline (RFC 7464 §2).
pub fn write_record<W: std::io::Write>(w: &mut W, json: &str) -> std::io::Result<()> {
    w.write_all(&[RECORD_SEPARATOR])?;
    w.write_all(json.as_bytes())?;
    w.write_all(b"\n")
}

/// Why a received packet was dropped (`quic:packet_dropped`'s trigger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropTrigger {
    /// A version we do not speak.
    Unsupported,
    /// No keys for its level (not yet, or discarded).
    KeyUnavailable,
    /// It does not decrypt.
    DecryptionFailure,
    /// Its packet number was received before.
    Duplicate,
    /// The rest of a datagram: a header that does not parse, or a packet
    /// that ends the datagram's processing.
    General,
}

impl DropTrigger {
    fn as_str(self) -> &'static str {
        match self {
            DropTrigger::Unsupported => "unsupported",
            DropTrigger::KeyUnavailable => "key_unavailable",
            DropTrigger::DecryptionFailure => "decryption_failure",
            DropTrigger::Duplicate => "duplicate",
            DropTrigger::General => "general",
        }
    }
}

/// How a connection ended, for `quic:connection_closed`.
pub(crate) struct Closed<'a> {
    /// The peer ended it.
    pub(crate) remote: bool,
    /// The CONNECTION_CLOSE's error code, if one was sent or received.
    pub(crate) code: Option<u64>,
    pub(crate) reason: &'a [u8],
    /// qlog's trigger: "application", "error", "idle_timeout",
    /// "stateless_reset" or "version_mismatch".
    pub(crate) trigger: &'static str,
}

/// Append `v` as a JSON string (quotes, escapes).
pub(crate) fn json_str(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

/// Append `b` as a lowercase hex string (the schemas' `hexstring`).
pub(crate) fn hex(s: &mut String, b: &[u8]) {
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
}

/// The quic-events `packet_type` of a level's packets.
pub(crate) fn packet_type(level: Level) -> &'static str {
    match level {
        Level::Initial => "initial",
        Level::ZeroRtt => "0RTT",
        Level::Handshake => "handshake",
        Level::OneRtt => "1RTT",
    }
}

/// A packet about to be sealed, as `quic:packet_sent` describes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain<'a> {
    /// The frames written after the header.
    pub(crate) frames: &'a [u8],
    /// PADDING bytes sealing adds after them.
    pub(crate) padding: usize,
    /// The sealed packet's length.
    pub(crate) len: usize,
    /// A path MTU probe (`is_mtu_probe_packet`).
    pub(crate) mtu_probe: bool,
}

/// Connection states of `quic:connection_state_updated` (quic-events §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnState {
    Attempted,
    HandshakeComplete,
    HandshakeConfirmed,
    Closing,
    Draining,
    Closed,
}

impl ConnState {
    fn as_str(self) -> &'static str {
        match self {
            ConnState::Attempted => "attempted",
            ConnState::HandshakeComplete => "handshake_complete",
            ConnState::HandshakeConfirmed => "handshake_confirmed",
            ConnState::Closing => "closing",
            ConnState::Draining => "draining",
            ConnState::Closed => "closed",
        }
    }
}

/// The numbers of one `quic:recovery_metrics_updated` event.
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
    /// The congestion state last logged in `quic:congestion_state_updated`.
    logged_state: Option<&'static str>,
}

/// A stream's lifecycle step, for `quic:stream_state_updated`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamChange {
    /// The stream came into being (opened by the application, or by a
    /// frame of the peer's).
    Opened,
    /// Both directions finished and the stream's state was discarded.
    Closed,
}

/// A connection's queued events.
#[derive(Debug)]
pub(crate) struct Qlog {
    start: Instant,
    queue: VecDeque<String>,
    last: Vec<Last>,
    state: Option<ConnState>,
    key_phase: u64,
    /// Each path's datagram size last logged in `quic:mtu_updated`.
    mtus: Vec<(PathId, usize)>,
    /// The connection IDs last logged in `quic:connection_id_updated`, per
    /// path and owner (`true`: the peer's, which we send to).
    cids: Vec<(PathId, bool, crate::packet::ConnectionId)>,
    /// The latest event time so far.
    newest: Instant,
    vantage: Vantage,
    group_id: String,
    pub(crate) dropped: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Qlog {
    /// A log for a connection created at `start`; `odcid` names it.
    pub(crate) fn new(start: Instant, vantage: Vantage, odcid: &[u8]) -> Self {
        let mut group_id = String::with_capacity(odcid.len() * 2);
        hex(&mut group_id, odcid);
        Qlog {
            start,
            queue: VecDeque::new(),
            last: Vec::new(),
            state: None,
            key_phase: 0,
            mtus: Vec::new(),
            cids: Vec::new(),
            newest: start,
            vantage,
            group_id,
            dropped: 0,
        }
    }

    /// The header for this connection's file.
    pub(crate) fn header(&self) -> Header {
        Header { group_id: Some(self.group_id.clone()), ..Header::new(self.vantage) }
    }

    pub(crate) fn next(&mut self) -> Option<String> {
        self.queue.pop_front()
    }

    /// Start an event record: `{"time":..,"name":..,"data":{`. Close it
    /// with [`Qlog::end`].
    fn begin(&mut self, now: Instant, name: &str, cap: usize) -> String {
        self.newest = self.newest.max(now);
        let t = ms(now.saturating_duration_since(self.start));
        let mut s = String::with_capacity(cap);
        let _ = write!(s, "{{\"time\":{t:.3},\"name\":\"{name}\",\"data\":{{");
        s
    }

    /// Close the data object, add the event's `tuple` (its path), queue it.
    fn end(&mut self, mut s: String, tuple: Option<PathId>) {
        s.push('}');
        if let Some(p) = tuple {
            let _ = write!(s, ",\"tuple\":\"{}\"", p.0);
        }
        s.push('}');
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(s);
    }

    /// `quic:connection_state_updated`, if `new` differs from the last one.
    pub(crate) fn state(&mut self, now: Instant, new: ConnState) {
        let old = self.state.replace(new);
        if old == Some(new) {
            return;
        }
        let mut s = self.begin(now, "quic:connection_state_updated", 96);
        if let Some(o) = old {
            let _ = write!(s, "\"old\":\"{}\",", o.as_str());
        }
        let _ = write!(s, "\"new\":\"{}\"", new.as_str());
        self.end(s, None);
    }

    /// `quic:parameters_set` for our (`remote` false) or the peer's
    /// transport parameters.
    pub(crate) fn parameters_set(&mut self, now: Instant, remote: bool, p: &TransportParams) {
        let mut s = self.begin(now, "quic:parameters_set", 640);
        let _ = write!(
            s,
            "\"initiator\":\"{}\",\"max_idle_timeout\":{},\"max_udp_payload_size\":{},\
             \"ack_delay_exponent\":{},\"max_ack_delay\":{},\"active_connection_id_limit\":{},\
             \"initial_max_data\":{},\"initial_max_stream_data_bidi_local\":{},\
             \"initial_max_stream_data_bidi_remote\":{},\"initial_max_stream_data_uni\":{},\
             \"initial_max_streams_bidi\":{},\"initial_max_streams_uni\":{},\"disable_active_migration\":{}",
            if remote { "remote" } else { "local" },
            p.max_idle_timeout,
            p.max_udp_payload_size,
            p.ack_delay_exponent,
            p.max_ack_delay,
            p.active_connection_id_limit,
            p.initial_max_data,
            p.initial_max_stream_data_bidi_local,
            p.initial_max_stream_data_bidi_remote,
            p.initial_max_stream_data_uni,
            p.initial_max_streams_bidi,
            p.initial_max_streams_uni,
            p.disable_active_migration,
        );
        let cids = [
            ("original_destination_connection_id", &p.original_destination_connection_id),
            ("initial_source_connection_id", &p.initial_source_connection_id),
            ("retry_source_connection_id", &p.retry_source_connection_id),
        ];
        for (name, cid) in cids {
            if let Some(c) = cid {
                let _ = write!(s, ",\"{name}\":\"");
                hex(&mut s, c.as_slice());
                s.push('"');
            }
        }
        if let Some(m) = p.max_datagram_frame_size {
            let _ = write!(s, ",\"max_datagram_frame_size\":{m}");
        }
        if let Some(m) = p.initial_max_path_id {
            let _ = write!(s, ",\"initial_max_path_id\":{m}");
        }
        let ts = crate::frame::timestamp::TIMESTAMP_TRANSPORT_PARAM_ID;
        if let Some(t) = p.extra_param(ts).and_then(|v| TimestampParam::decode(v).ok()) {
            let _ = write!(s, ",\"enable_time_stamp\":{}", t.value());
        }
        self.end(s, None);
    }

    /// `quic:tuple_assigned`: path `path` runs between these addresses.
    pub(crate) fn tuple_assigned(&mut self, now: Instant, path: PathId, local: SocketAddr, peer: SocketAddr) {
        let mut s = self.begin(now, "quic:tuple_assigned", 192);
        let _ = write!(s, "\"tuple_id\":\"{}\",\"tuple_local\":", path.0);
        endpoint(&mut s, local);
        s.push_str(",\"tuple_remote\":");
        endpoint(&mut s, peer);
        self.end(s, None);
    }

    /// `quic:packet_sent`, for a packet about to be sealed.
    pub(crate) fn packet_sent(&mut self, now: Instant, level: Level, path: PathId, pn: u64, p: Plain<'_>) {
        let mut s = self.packet_event(now, "quic:packet_sent", level, path, pn, p.len);
        frames::write_frames(&mut s, p.frames, p.padding);
        if p.mtu_probe {
            s.push_str(",\"is_mtu_probe_packet\":true");
        }
        self.end(s, Some(path));
    }

    /// `quic:mtu_updated` if `path`'s datagram size is not the one last
    /// logged (the first call logs the size the path starts with).
    pub(crate) fn mtu_updated(&mut self, now: Instant, path: PathId, mtu: usize) {
        let old = match self.mtus.iter_mut().find(|(p, _)| *p == path) {
            Some((_, m)) if *m == mtu => return,
            Some((_, m)) => Some(std::mem::replace(m, mtu)),
            None => {
                self.mtus.push((path, mtu));
                None
            }
        };
        let mut s = self.begin(now, "quic:mtu_updated", 96);
        if let Some(o) = old {
            let _ = write!(s, "\"old\":{o},");
        }
        let _ = write!(s, "\"new\":{mtu}");
        self.end(s, Some(path));
    }

    /// `quic:connection_id_updated` when the connection ID in use on `path`
    /// changed: with `remote` the peer's ID we send to (initiator
    /// `remote`), else ours that the peer sends to (`local`), as the
    /// draft's `owner`/`initiator` field means. The first ID seen on a path
    /// is logged with no `old`.
    pub(crate) fn cid_in_use(
        &mut self,
        now: Instant,
        path: PathId,
        remote: bool,
        cid: &crate::packet::ConnectionId,
    ) {
        let old = match self.cids.iter_mut().find(|(p, r, _)| *p == path && *r == remote) {
            Some((_, _, c)) if c == cid => return,
            Some((_, _, c)) => Some(std::mem::replace(c, *cid)),
            None => {
                self.cids.push((path, remote, *cid));
                None
            }
        };
        let mut s = self.begin(now, "quic:connection_id_updated", 128);
        let _ = write!(s, "\"initiator\":\"{}\"", if remote { "remote" } else { "local" });
        if let Some(o) = old {
            s.push_str(",\"old\":\"");
            hex(&mut s, o.as_slice());
            s.push('"');
        }
        s.push_str(",\"new\":\"");
        hex(&mut s, cid.as_slice());
        s.push('"');
        self.end(s, Some(path));
    }

    /// `quic:stream_state_updated`: a stream came into being (`idle` →
    /// `open`; who opened it is in the ID's low bit) or reached its terminal
    /// state and was discarded (`open` → `closed`). Base states only.
    /// `now` may lag (application calls carry no time): the event is
    /// stamped no earlier than the latest one logged.
    pub(crate) fn stream_state(&mut self, now: Instant, id: u64, change: StreamChange) {
        let now = now.max(self.newest);
        let mut s = self.begin(now, "quic:stream_state_updated", 112);
        let kind = if id & 2 == 0 { "bidirectional" } else { "unidirectional" };
        let (old, new) = match change {
            StreamChange::Opened => ("idle", "open"),
            StreamChange::Closed => ("open", "closed"),
        };
        let _ =
            write!(s, "\"stream_id\":{id},\"stream_type\":\"{kind}\",\"old\":\"{old}\",\"new\":\"{new}\"");
        self.end(s, None);
    }

    /// `quic:packet_received`: `payload` is the decrypted plaintext.
    pub(crate) fn packet_received(
        &mut self,
        now: Instant,
        level: Level,
        path: PathId,
        pn: u64,
        payload: &[u8],
        len: usize,
    ) {
        let mut s = self.packet_event(now, "quic:packet_received", level, path, pn, len);
        frames::write_frames(&mut s, payload, 0);
        self.end(s, Some(path));
    }

    fn packet_event(
        &mut self,
        now: Instant,
        name: &str,
        level: Level,
        path: PathId,
        pn: u64,
        len: usize,
    ) -> String {
        let mut s = self.begin(now, name, 256);
        let _ = write!(
            s,
            "\"header\":{{\"packet_type\":\"{}\",\"packet_number\":{pn},\"path_id\":{}}},\"raw\":{{\"length\":{len}}}",
            packet_type(level),
            path.0
        );
        s
    }

    /// `quic:packet_dropped`: a received packet (or the rest of its
    /// datagram, `level` unknown) discarded without closing the connection.
    pub(crate) fn packet_dropped(
        &mut self,
        now: Instant,
        level: Option<Level>,
        len: usize,
        why: DropTrigger,
    ) {
        let mut s = self.begin(now, "quic:packet_dropped", 128);
        if let Some(l) = level {
            let _ = write!(s, "\"header\":{{\"packet_type\":\"{}\"}},", packet_type(l));
        }
        let _ = write!(s, "\"raw\":{{\"length\":{len}}},\"trigger\":\"{}\"", why.as_str());
        self.end(s, None);
    }

    /// `quic:connection_closed`: who ended the connection, how and why.
    pub(crate) fn connection_closed(&mut self, now: Instant, c: &Closed<'_>) {
        let mut s = self.begin(now, "quic:connection_closed", 160 + c.reason.len());
        let _ = write!(
            s,
            "\"initiator\":\"{}\",\"trigger\":\"{}\"",
            if c.remote { "remote" } else { "local" },
            c.trigger
        );
        if let Some(code) = c.code {
            let _ = write!(s, ",\"error_code\":{code}");
        }
        if !c.reason.is_empty() {
            s.push_str(",\"reason\":");
            json_str(&mut s, &String::from_utf8_lossy(c.reason));
        }
        self.end(s, None);
    }

    /// `quic:packet_lost`.
    pub(crate) fn packet_lost(&mut self, now: Instant, level: Level, path: PathId, pn: u64, size: usize) {
        let mut s = self.begin(now, "quic:packet_lost", 160);
        let _ = write!(
            s,
            "\"header\":{{\"packet_type\":\"{}\",\"packet_number\":{pn},\"path_id\":{}}},\"raw\":{{\"length\":{size}}}",
            packet_type(level),
            path.0
        );
        self.end(s, Some(path));
    }

    /// We started a 1-RTT key update (RFC 9001 §6.1): our write keys are
    /// in key phase `phase` (the number of updates so far).
    pub(crate) fn local_key_update(&mut self, now: Instant, phase: u64) {
        self.key_phase = phase;
        self.key_updated(now, true, phase, "local_update");
    }

    /// The peer's first packet in key phase `phase` decrypted: our read
    /// keys moved. If our write keys are in an older phase, the peer
    /// started this update and ours follow (`remote_update`); otherwise it
    /// answered ours (`local_update`).
    pub(crate) fn peer_key_update(&mut self, now: Instant, phase: u64) {
        if phase > self.key_phase {
            self.key_phase = phase;
            self.key_updated(now, false, phase, "remote_update");
            self.key_updated(now, true, phase, "remote_update");
        } else {
            self.key_updated(now, false, phase, "local_update");
        }
    }

    /// `quic:key_updated` for our (`own`) or the peer's 1-RTT secret.
    fn key_updated(&mut self, now: Instant, own: bool, phase: u64, trigger: &str) {
        let client = (self.vantage == Vantage::Client) == own;
        let key_type = if client { "client_1rtt_secret" } else { "server_1rtt_secret" };
        let mut s = self.begin(now, "quic:key_updated", 128);
        let _ = write!(s, "\"key_type\":\"{key_type}\",\"key_phase\":{phase},\"trigger\":\"{trigger}\"");
        self.end(s, None);
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
        match self.last.iter_mut().find(|l| l.path == path) {
            Some(l) => {
                let due = l.cwnd != cwnd || l.state != state || now.saturating_duration_since(l.at) >= srtt;
                if due {
                    *l = Last { path, at: now, cwnd, state, logged_state: l.logged_state };
                }
                due
            }
            None => {
                self.last.push(Last { path, at: now, cwnd, state, logged_state: None });
                true
            }
        }
    }

    /// `quic:recovery_metrics_updated` for `path`, preceded by
    /// `quic:congestion_state_updated` if the controller's state changed.
    pub(crate) fn metrics_updated(&mut self, now: Instant, path: PathId, m: &Metrics) {
        let old = match self.last.iter_mut().find(|l| l.path == path) {
            Some(l) => l.logged_state.replace(m.cc_state),
            None => {
                self.last.push(Last {
                    path,
                    at: now,
                    cwnd: m.cwnd,
                    state: m.cc_state,
                    logged_state: Some(m.cc_state),
                });
                None
            }
        };
        if old != Some(m.cc_state) {
            let mut s = self.begin(now, "quic:congestion_state_updated", 128);
            if let Some(o) = old {
                s.push_str("\"old\":");
                json_str(&mut s, o);
                s.push(',');
            }
            s.push_str("\"new\":");
            json_str(&mut s, m.cc_state);
            self.end(s, Some(path));
        }
        let mut s = self.begin(now, "quic:recovery_metrics_updated", 400);
        let _ = write!(
            s,
            "\"min_rtt\":{:.3},\"smoothed_rtt\":{:.3},\"latest_rtt\":{:.3},\"congestion_window\":{},\
             \"bytes_in_flight\":{},\"pacing_rate\":{},\"path_id\":{},\"bandwidth\":{},\"bytes_sent\":{},\
             \"bytes_acked\":{},\"bytes_lost\":{},\"bytes_redundant\":{},\"bottleneck_group\":{}",
            ms(m.min_rtt),
            ms(m.smoothed_rtt),
            ms(m.latest_rtt),
            m.cwnd,
            m.bytes_in_flight,
            m.pacing_rate.saturating_mul(8),
            path.0,
            m.bandwidth.saturating_mul(8),
            m.sent_bytes,
            m.acked_bytes,
            m.lost_bytes,
            m.redundant_bytes,
            m.group
        );
        if let Some(g) = m.pacing_gain.filter(|g| g.is_finite()) {
            let _ = write!(s, ",\"pacing_gain\":{g:.4}");
        }
        if let Some(r) = m.role {
            let _ = write!(s, ",\"scheduler_role\":\"{r}\"");
        }
        self.end(s, Some(path));
    }

    /// `mpquic:path_event`: new, validated, failed_validation, abandoned,
    /// status_backup, status_available.
    pub(crate) fn path_event(&mut self, now: Instant, path: PathId, kind: &str) {
        let mut s = self.begin(now, "mpquic:path_event", 96);
        let _ = write!(s, "\"path_id\":{},\"event\":\"{kind}\"", path.0);
        self.end(s, Some(path));
    }

    /// `mpquic:path_suspect`: the path was silent for `silent` while
    /// another answered; its data was queued again.
    pub(crate) fn path_suspect(&mut self, now: Instant, path: PathId, silent: Duration) {
        let mut s = self.begin(now, "mpquic:path_suspect", 96);
        let _ = write!(s, "\"path_id\":{},\"silent_ms\":{:.3}", path.0, ms(silent));
        self.end(s, Some(path));
    }
}

/// A quic-events `TupleEndpointInfo` for one address.
fn endpoint(s: &mut String, a: SocketAddr) {
    let v = if a.is_ipv4() { "v4" } else { "v6" };
    let _ = write!(s, "{{\"ip_{v}\":\"{}\",\"port_{v}\":{}}}", a.ip(), a.port());
}
