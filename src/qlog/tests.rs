use std::net::SocketAddr;

use serde_json::Value;

use super::*;
use crate::codec::Writer;
use crate::frame::{encode_ack, EcnCounts, Frame};
use crate::ranges::RangeSet;

#[allow(clippy::disallowed_methods)]
fn t0() -> Instant {
    Instant::now()
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("bad JSON {s}: {e}"))
}

fn drain(q: &mut Qlog) -> Vec<Value> {
    std::iter::from_fn(|| q.next()).map(|s| json(&s)).collect()
}

#[test]
fn header_is_a_qlog_file_seq_with_the_qvis_fields() {
    let q = Qlog::new(t0(), Vantage::Server, &[0xab, 0x01]);
    let h = q.header().title("mpquic \"test\"").name("mpquic-server").wall_clock_time("2026-11-26T04:00:00Z");
    let v = json(&h.to_json());
    assert_eq!(v["file_schema"], FILE_SCHEMA);
    assert_eq!(v["serialization_format"], SERIALIZATION_FORMAT);
    assert_eq!(v["qlog_format"], "JSON-SEQ");
    assert_eq!(v["qlog_version"], "0.3");
    assert_eq!(v["title"], "mpquic \"test\"");
    let t = &v["trace"];
    assert_eq!(t["vantage_point"]["type"], "server");
    assert_eq!(t["vantage_point"]["name"], "mpquic-server");
    assert_eq!(t["common_fields"]["group_id"], "ab01");
    assert_eq!(t["common_fields"]["time_format"], "relative_to_epoch");
    let r = &t["common_fields"]["reference_time"];
    assert_eq!((r["clock_type"].as_str(), r["epoch"].as_str()), (Some("monotonic"), Some("unknown")));
    assert_eq!(r["wall_clock_time"], "2026-11-26T04:00:00Z");
    assert_eq!(t["event_schemas"][0], QUIC_EVENTS);
    // The identifying fields come first (main schema §4: in the first 256 bytes).
    let j = Header::new(Vantage::Client).to_json();
    assert!(j.find("serialization_format").unwrap() < 256 && j.find("qlog_format").unwrap() < 256);
    assert_eq!(json(&j)["trace"]["vantage_point"], serde_json::json!({"type": "client"}));
}

#[test]
fn records_are_rs_json_newline() {
    let mut out = Vec::new();
    write_record(&mut out, "{\"a\":1}").unwrap();
    write_record(&mut out, "{}").unwrap();
    assert_eq!(out, b"\x1e{\"a\":1}\n\x1e{}\n");
}

#[test]
fn strings_are_escaped() {
    let mut s = String::new();
    json_str(&mut s, "a\"b\\c\nd\u{1}é");
    assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é\"");
    assert_eq!(json(&s), "a\"b\\c\nd\u{1}é");
}

#[test]
fn events_have_time_name_data_and_the_path_as_tuple() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    q.path_event(t + Duration::from_millis(5), PathId(1), "validated");
    let m = Metrics {
        cwnd: 12000,
        cc_state: "Startup",
        pacing_gain: Some(2.885),
        pacing_rate: 1000,
        role: Some("redundant"),
        group: 3,
        ..Default::default()
    };
    q.metrics_updated(t + Duration::from_millis(7), PathId(0), &m);
    let a = q.next().unwrap();
    assert_eq!(
        a,
        "{\"time\":5.000,\"name\":\"mpquic:path_event\",\"data\":{\"path_id\":1,\"event\":\"validated\"},\"tuple\":\"1\"}"
    );
    let e = drain(&mut q);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0]["name"], "quic:congestion_state_updated");
    assert_eq!(e[0]["data"], serde_json::json!({"new": "Startup"}));
    assert_eq!(e[1]["name"], "quic:recovery_metrics_updated");
    assert_eq!(e[1]["time"], 7.0);
    assert_eq!(e[1]["tuple"], "0");
    let d = &e[1]["data"];
    assert_eq!(d["congestion_window"], 12000);
    assert_eq!(d["pacing_rate"], 8000, "bits per second");
    assert_eq!(d["bottleneck_group"], 3);
    assert_eq!(d["pacing_gain"], 2.885);
    assert_eq!(d["scheduler_role"], "redundant");
}

#[test]
fn congestion_state_is_logged_when_it_changes() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    let mut m = Metrics { cwnd: 1, cc_state: "SlowStart", ..Default::default() };
    q.metrics_updated(t, PathId(0), &m);
    q.metrics_updated(t, PathId(0), &m);
    m.cc_state = "CongestionAvoidance";
    q.metrics_updated(t, PathId(0), &m);
    q.metrics_updated(t, PathId(1), &m);
    let states: Vec<_> =
        drain(&mut q).into_iter().filter(|e| e["name"] == "quic:congestion_state_updated").collect();
    assert_eq!(states.len(), 3, "{states:?}");
    assert_eq!(states[1]["data"], serde_json::json!({"old": "SlowStart", "new": "CongestionAvoidance"}));
    assert_eq!(states[2]["tuple"], "1");
}

#[test]
fn metrics_only_when_something_changed_or_an_rtt_passed() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
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
fn connection_states_are_logged_once_each_with_the_old_one() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    q.state(t, ConnState::Attempted);
    q.state(t, ConnState::HandshakeComplete);
    q.state(t, ConnState::HandshakeComplete);
    q.state(t, ConnState::Closed);
    let e = drain(&mut q);
    let d: Vec<_> = e.iter().map(|e| e["data"].clone()).collect();
    assert_eq!(
        d,
        [
            serde_json::json!({"new": "attempted"}),
            serde_json::json!({"old": "attempted", "new": "handshake_complete"}),
            serde_json::json!({"old": "handshake_complete", "new": "closed"}),
        ]
    );
    assert!(e.iter().all(|e| e["name"] == "quic:connection_state_updated" && e.get("tuple").is_none()));
}

#[test]
fn parameters_tuples_and_keys() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Server, &[1]);
    let p = TransportParams {
        initial_max_data: 1 << 20,
        initial_max_path_id: Some(4),
        initial_source_connection_id: crate::packet::ConnectionId::from_slice(&[0xde, 0xad]),
        ..Default::default()
    };
    q.parameters_set(t, true, &p);
    let local: SocketAddr = "10.0.0.1:4433".parse().unwrap();
    let peer: SocketAddr = "[2001:db8::1]:5000".parse().unwrap();
    q.tuple_assigned(t, PathId(2), local, peer);
    // Ours (phase 1), the peer's answer, then one the peer started.
    q.local_key_update(t, 1);
    q.peer_key_update(t, 1);
    q.peer_key_update(t, 2);
    let e = drain(&mut q);
    assert_eq!(e[0]["name"], "quic:parameters_set");
    let d = &e[0]["data"];
    assert_eq!(d["initiator"], "remote");
    assert_eq!(d["initial_max_data"], 1 << 20);
    assert_eq!(d["initial_max_path_id"], 4);
    assert_eq!(d["initial_source_connection_id"], "dead");
    assert!(d.get("original_destination_connection_id").is_none());
    assert_eq!(e[1]["name"], "quic:tuple_assigned");
    assert_eq!(
        e[1]["data"],
        serde_json::json!({"tuple_id": "2", "tuple_local": {"ip_v4": "10.0.0.1", "port_v4": 4433},
                           "tuple_remote": {"ip_v6": "2001:db8::1", "port_v6": 5000}})
    );
    let keys: Vec<_> = e[2..]
        .iter()
        .map(|e| {
            let d = &e["data"];
            (
                d["key_type"].as_str().unwrap(),
                d["key_phase"].as_u64().unwrap(),
                d["trigger"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("server_1rtt_secret", 1, "local_update"),
            ("client_1rtt_secret", 1, "local_update"),
            ("client_1rtt_secret", 2, "remote_update"),
            ("server_1rtt_secret", 2, "remote_update"),
        ]
    );
}

#[test]
fn packets_carry_header_length_and_frames() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    let mut buf = [0u8; 256];
    let mut w = Writer::new(&mut buf);
    let mut acked = RangeSet::default();
    acked.insert(0..3);
    acked.insert(5..6);
    encode_ack(&mut w, Some(1), &acked, 0, Some(&EcnCounts { ect0: 4, ect1: 0, ce: 1 })).unwrap();
    Frame::Stream { stream_id: 4, offset: 100, data: b"hello", fin: true }.encode(&mut w).unwrap();
    Frame::Padding { len: 3 }.encode(&mut w).unwrap();
    Frame::PathStatusBackup { path_id: 1, seq: 7 }.encode(&mut w).unwrap();
    Frame::MaxStreams { bidi: false, max: 9 }.encode(&mut w).unwrap();
    Frame::StreamDataBlocked { stream_id: 8, limit: 1000 }.encode(&mut w).unwrap();
    Frame::ConnectionClose { error_code: 0x0a, frame_type: Some(8), reason: b"bad \"x\"" }
        .encode(&mut w)
        .unwrap();
    let n = w.pos();
    q.packet_sent(
        t,
        Level::OneRtt,
        PathId(1),
        42,
        Plain { frames: &buf[..n], padding: 10, len: 99, mtu_probe: false },
    );
    q.packet_received(t, Level::Initial, PathId::ZERO, 0, &buf[..n], 99);
    q.packet_lost(t, Level::Handshake, PathId::ZERO, 3, 1200);
    let e = drain(&mut q);
    assert_eq!(e[0]["name"], "quic:packet_sent");
    assert_eq!(e[0]["tuple"], "1");
    let d = &e[0]["data"];
    assert_eq!(d["header"], serde_json::json!({"packet_type": "1RTT", "packet_number": 42, "path_id": 1}));
    assert_eq!(d["raw"]["length"], 99);
    let f = d["frames"].as_array().unwrap();
    let types: Vec<_> = f.iter().map(|f| f["frame_type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "path_ack",
            "stream",
            "padding",
            "path_status_backup",
            "max_streams",
            "stream_data_blocked",
            "connection_close",
            "padding"
        ]
    );
    assert_eq!(f[0]["acked_ranges"], serde_json::json!([[5], [0, 2]]));
    assert_eq!((f[0]["ect0"].as_u64(), f[0]["ce"].as_u64()), (Some(4), Some(1)));
    assert_eq!(
        f[1],
        serde_json::json!({"frame_type": "stream", "stream_id": 4, "offset": 100, "fin": true,
                                        "raw": {"payload_length": 5}})
    );
    assert_eq!(f[2]["raw"]["length"], 3);
    assert_eq!(
        f[4],
        serde_json::json!({"frame_type": "max_streams", "stream_type": "unidirectional", "maximum": 9})
    );
    assert_eq!(f[5], serde_json::json!({"frame_type": "stream_data_blocked", "stream_id": 8, "limit": 1000}));
    assert_eq!(f[6]["reason"], "bad \"x\"");
    assert_eq!(f[6]["error_space"], "transport");
    assert_eq!(f[7]["raw"]["length"], 10, "the padding sealing adds");
    assert_eq!(e[1]["name"], "quic:packet_received");
    assert_eq!(e[1]["data"]["header"]["packet_type"], "initial");
    assert_eq!(e[1]["data"]["frames"].as_array().unwrap().len(), 7);
    assert_eq!(e[2]["name"], "quic:packet_lost");
    assert_eq!(
        e[2]["data"]["header"],
        serde_json::json!({"packet_type": "handshake", "packet_number": 3, "path_id": 0})
    );
}

#[test]
fn mtu_changes_are_logged_per_path() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    q.mtu_updated(t, PathId(0), 1200);
    q.mtu_updated(t, PathId(0), 1200);
    q.mtu_updated(t, PathId(0), 1452);
    q.mtu_updated(t, PathId(1), 1200);
    let probe = Plain { frames: &[0x01], padding: 1400, len: 1420, mtu_probe: true };
    q.packet_sent(t, Level::OneRtt, PathId(0), 9, probe);
    let e = drain(&mut q);
    let d: Vec<_> = e[..3].iter().map(|e| (e["tuple"].clone(), e["data"].clone())).collect();
    assert_eq!(
        d,
        [
            ("0".into(), serde_json::json!({"new": 1200})),
            ("0".into(), serde_json::json!({"old": 1200, "new": 1452})),
            ("1".into(), serde_json::json!({"new": 1200})),
        ]
    );
    assert!(e[..3].iter().all(|e| e["name"] == "quic:mtu_updated"));
    assert_eq!(e[3]["data"]["is_mtu_probe_packet"], true);
    let f = &e[3]["data"]["frames"];
    assert_eq!(f[0]["frame_type"], "ping");
    assert_eq!(f[1]["raw"]["length"], 1400);
}

#[test]
fn queue_is_bounded() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    for i in 0..MAX_QUEUED + 10 {
        q.packet_lost(t, Level::OneRtt, PathId(0), i as u64, 1200);
    }
    assert_eq!(q.dropped, 10);
    assert!(q.next().unwrap().contains("\"packet_number\":10,"));
}

#[test]
fn drops_and_closes_carry_their_trigger() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    q.packet_dropped(t, Some(Level::Handshake), 1200, DropTrigger::DecryptionFailure);
    q.packet_dropped(t, None, 40, DropTrigger::General);
    let closed = Closed { remote: true, code: Some(0x0a), reason: b"bad \"frame\"", trigger: "error" };
    q.connection_closed(t, &closed);
    q.connection_closed(t, &Closed { remote: false, code: None, reason: b"", trigger: "idle_timeout" });
    let ev = drain(&mut q);
    assert_eq!(ev[0]["name"], "quic:packet_dropped");
    assert_eq!(ev[0]["data"]["header"]["packet_type"], "handshake");
    assert_eq!(ev[0]["data"]["raw"]["length"], 1200);
    assert_eq!(ev[0]["data"]["trigger"], "decryption_failure");
    assert!(ev[1]["data"].get("header").is_none());
    assert_eq!(ev[1]["data"]["trigger"], "general");
    assert_eq!(ev[2]["name"], "quic:connection_closed");
    let d = &ev[2]["data"];
    assert_eq!((d["initiator"].as_str(), d["trigger"].as_str()), (Some("remote"), Some("error")));
    assert_eq!((d["error_code"].as_u64(), d["reason"].as_str()), (Some(10), Some("bad \"frame\"")));
    let d = &ev[3]["data"];
    assert_eq!((d["initiator"].as_str(), d["trigger"].as_str()), (Some("local"), Some("idle_timeout")));
    assert!(d.get("error_code").is_none() && d.get("reason").is_none());
}

#[test]
fn connection_id_changes_are_logged_per_path_and_owner() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Client, &[1]);
    let cid = |b: &[u8]| crate::packet::ConnectionId::from_slice(b).unwrap();
    let (a, b) = (cid(&[0xaa; 4]), cid(&[0xbb, 0x01]));
    q.cid_in_use(t, PathId(0), true, &a);
    q.cid_in_use(t, PathId(0), true, &a);
    q.cid_in_use(t, PathId(0), true, &b);
    q.cid_in_use(t, PathId(0), false, &a);
    q.cid_in_use(t, PathId(1), true, &b);
    let e = drain(&mut q);
    assert!(e.iter().all(|e| e["name"] == "quic:connection_id_updated"));
    let d: Vec<_> = e.iter().map(|e| (e["tuple"].clone(), e["data"].clone())).collect();
    assert_eq!(
        d,
        [
            ("0".into(), serde_json::json!({"initiator": "remote", "new": "aaaaaaaa"})),
            ("0".into(), serde_json::json!({"initiator": "remote", "old": "aaaaaaaa", "new": "bb01"})),
            ("0".into(), serde_json::json!({"initiator": "local", "new": "aaaaaaaa"})),
            ("1".into(), serde_json::json!({"initiator": "remote", "new": "bb01"})),
        ]
    );
}

#[test]
fn stream_events_have_type_and_base_states_and_never_go_back_in_time() {
    let t = t0();
    let mut q = Qlog::new(t, Vantage::Server, &[1]);
    q.state(t + Duration::from_millis(5), ConnState::HandshakeComplete);
    // An application call's time lags behind the last event's.
    q.stream_state(t, 0, StreamChange::Opened);
    q.stream_state(t + Duration::from_millis(7), 3, StreamChange::Closed);
    let e = drain(&mut q);
    assert_eq!(e[1]["name"], "quic:stream_state_updated");
    assert_eq!(
        e[1]["data"],
        serde_json::json!({"stream_id": 0, "stream_type": "bidirectional", "old": "idle", "new": "open"})
    );
    assert_eq!(e[1]["time"], e[0]["time"]);
    assert_eq!(
        e[2]["data"],
        serde_json::json!({"stream_id": 3, "stream_type": "unidirectional", "old": "open", "new": "closed"})
    );
    assert_eq!(e[2]["time"], 7.0);
}
