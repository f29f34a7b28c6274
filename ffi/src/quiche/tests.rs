//! Tests of the quiche layer through its C entry points: the stateless
//! packet functions, bad input, and a client and a server connection made
//! with quiche_connect / quiche_accept exchanging datagrams in memory.

use std::net::SocketAddr;
use std::ptr::{null, null_mut};

use std::ffi::c_int;

use libc::{sockaddr, sockaddr_storage, socklen_t};

use super::*;
use crate::addr::{to_c, zeroed_storage};

const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/certs/");

fn c_addr(a: &str) -> (sockaddr_storage, socklen_t) {
    let mut s = zeroed_storage();
    let len = to_c(&a.parse::<SocketAddr>().unwrap(), &mut s);
    (s, len)
}

fn sa(s: &sockaddr_storage) -> *const sockaddr {
    (s as *const sockaddr_storage).cast()
}

fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

/// A config for `h3` with flow-control credit, as the examples set it.
unsafe fn config(server: bool, idle_ms: u64) -> *mut quiche_config {
    let c = quiche_config_new(QUICHE_PROTOCOL_VERSION);
    unsafe {
        if server {
            assert_eq!(
                quiche_config_load_cert_chain_from_pem_file(c, cstr(&format!("{CERTS}cert.pem")).as_ptr()),
                0
            );
            assert_eq!(
                quiche_config_load_priv_key_from_pem_file(c, cstr(&format!("{CERTS}key.pem")).as_ptr()),
                0
            );
        } else {
            assert_eq!(
                quiche_config_load_verify_locations_from_file(
                    c,
                    cstr(&format!("{CERTS}rootca.pem")).as_ptr()
                ),
                0
            );
        }
        assert_eq!(quiche_config_set_application_protos(c, b"\x02h3".as_ptr(), 3), 0);
        quiche_config_set_max_idle_timeout(c, idle_ms);
        quiche_config_set_initial_max_data(c, 1 << 20);
        quiche_config_set_initial_max_stream_data_bidi_local(c, 1 << 20);
        quiche_config_set_initial_max_stream_data_bidi_remote(c, 1 << 20);
        quiche_config_set_initial_max_streams_bidi(c, 10);
    }
    c
}

/// The client's first datagram (an Initial) and the connection.
unsafe fn first_initial(cfg: *mut quiche_config, scid: &[u8]) -> (*mut quiche_conn, Vec<u8>) {
    let (l, ll) = c_addr("127.0.0.1:5000");
    let (p, pl) = c_addr("127.0.0.1:4433");
    let name = cstr("localhost");
    let conn =
        unsafe { quiche_connect(name.as_ptr(), scid.as_ptr(), scid.len(), sa(&l), ll, sa(&p), pl, cfg) };
    assert!(!conn.is_null());
    let mut out = vec![0u8; 1500];
    let mut info: quiche_send_info = unsafe { std::mem::zeroed() };
    let n = unsafe { quiche_conn_send(conn, out.as_mut_ptr(), out.len(), &mut info) };
    assert!(n >= 1200, "{n}");
    assert_eq!(info.to_len, pl);
    out.truncate(n as usize);
    (conn, out)
}

#[test]
fn header_info_reads_an_initial_and_reports_short_buffers() {
    unsafe {
        let cfg = config(false, 5000);
        let (conn, dgram) = first_initial(cfg, &[7; 16]);
        let (mut version, mut ty) = (0u32, 0u8);
        let (mut scid, mut dcid, mut token) = ([0u8; 20], [0u8; 20], [0u8; 64]);
        let (mut sl, mut dl, mut tl) = (20usize, 20usize, 64usize);
        let rc = quiche_header_info(
            dgram.as_ptr(),
            dgram.len(),
            16,
            &mut version,
            &mut ty,
            scid.as_mut_ptr(),
            &mut sl,
            dcid.as_mut_ptr(),
            &mut dl,
            token.as_mut_ptr(),
            &mut tl,
        );
        assert_eq!((rc, version, ty, sl, tl), (0, 1, 1, 16, 0));
        assert_eq!(scid[..16], [7; 16]);
        assert!(dl >= 8, "{dl}");
        // A destination-ID buffer too small for the ID.
        let mut small = 4usize;
        let rc = quiche_header_info(
            dgram.as_ptr(),
            dgram.len(),
            16,
            &mut version,
            &mut ty,
            scid.as_mut_ptr(),
            &mut sl,
            dcid.as_mut_ptr(),
            &mut small,
            token.as_mut_ptr(),
            &mut tl,
        );
        assert_eq!(rc, QUICHE_ERR_BUFFER_TOO_SHORT.c());
        // Garbage and NULL.
        let rc = quiche_header_info(
            [0x80u8, 0, 0].as_ptr(),
            3,
            16,
            &mut version,
            &mut ty,
            scid.as_mut_ptr(),
            &mut sl,
            dcid.as_mut_ptr(),
            &mut dl,
            token.as_mut_ptr(),
            &mut tl,
        );
        assert_eq!(rc, QUICHE_ERR_INVALID_PACKET.c());
        let rc = quiche_header_info(
            null(),
            10,
            16,
            &mut version,
            &mut ty,
            scid.as_mut_ptr(),
            &mut sl,
            dcid.as_mut_ptr(),
            &mut dl,
            token.as_mut_ptr(),
            &mut tl,
        );
        assert_eq!(rc, QUICHE_ERR_INVALID_STATE.c());
        quiche_conn_free(conn);
        quiche_config_free(cfg);
    }
}

#[test]
fn version_negotiation_lists_v1_for_the_client() {
    let mut out = [0u8; 64];
    let n = unsafe {
        quiche_negotiate_version([1; 8].as_ptr(), 8, [2; 16].as_ptr(), 16, out.as_mut_ptr(), out.len())
    };
    let hdr = engine::packet::parse_header(&out[..n as usize], 0).unwrap();
    assert_eq!(hdr.ty, engine::packet::PacketType::VersionNegotiation);
    assert_eq!(hdr.dcid.as_slice(), &[1; 8], "the client's source ID");
    assert_eq!(hdr.supported_versions().collect::<Vec<_>>(), vec![1]);
    assert!(quiche_version_is_supported(1) && !quiche_version_is_supported(0xbabababa));
    let short =
        unsafe { quiche_negotiate_version([1; 8].as_ptr(), 8, [2; 16].as_ptr(), 16, out.as_mut_ptr(), 10) };
    assert_eq!(short, QUICHE_ERR_BUFFER_TOO_SHORT.ss());
}

#[test]
fn client_follows_a_retry_from_quiche_retry() {
    unsafe {
        let cfg = config(false, 5000);
        let (conn, dgram) = first_initial(cfg, &[9; 16]);
        let hdr = engine::packet::parse_header(&dgram, 0).unwrap();
        let mut out = [0u8; 256];
        let n = quiche_retry(
            [9; 16].as_ptr(),
            16,
            hdr.dcid.as_slice().as_ptr(),
            hdr.dcid.len(),
            [5; 16].as_ptr(),
            16,
            b"tok".as_ptr(),
            3,
            1,
            out.as_mut_ptr(),
            out.len(),
        );
        assert!(n > 0);
        let bad = quiche_retry(
            [9; 16].as_ptr(),
            16,
            [1; 8].as_ptr(),
            8,
            [5; 16].as_ptr(),
            16,
            null(),
            0,
            7,
            out.as_mut_ptr(),
            256,
        );
        assert_eq!(bad, QUICHE_ERR_UNKNOWN_VERSION.ss());
        let (mut from, fl) = c_addr("127.0.0.1:4433");
        let (mut to, tl) = c_addr("127.0.0.1:5000");
        let info = quiche_recv_info {
            from: (&mut from as *mut sockaddr_storage).cast(),
            from_len: fl,
            to: (&mut to as *mut sockaddr_storage).cast(),
            to_len: tl,
        };
        assert_eq!(quiche_conn_recv(conn, out.as_mut_ptr(), n as usize, &info), n);
        // The next Initial goes to the Retry's source ID and carries the token.
        let mut next = vec![0u8; 1500];
        let mut si: quiche_send_info = std::mem::zeroed();
        let m = quiche_conn_send(conn, next.as_mut_ptr(), next.len(), &mut si);
        let h = engine::packet::parse_header(&next[..m as usize], 0).unwrap();
        assert_eq!((h.dcid.as_slice(), h.token), (&[5u8; 16][..], &b"tok"[..]));
        quiche_conn_free(conn);
        quiche_config_free(cfg);
    }
}

#[test]
fn varints_round_trip_and_reject_what_does_not_fit() {
    let mut buf = [0u8; 8];
    for v in [0u64, 63, 64, 16383, 16384, (1 << 30) - 1, 1 << 30, (1 << 62) - 1] {
        let n = unsafe { quiche_put_varint(buf.as_mut_ptr(), buf.len(), v) };
        assert!(n > 0);
        let mut got = 0u64;
        assert_eq!(unsafe { quiche_get_varint(buf.as_ptr(), n as usize, &mut got) }, n as isize);
        assert_eq!(got, v);
    }
    assert_eq!(unsafe { quiche_put_varint(buf.as_mut_ptr(), 8, 1 << 62) }, QUICHE_ERR_BUFFER_TOO_SHORT.c());
    assert_eq!(unsafe { quiche_put_varint(buf.as_mut_ptr(), 1, 64) }, QUICHE_ERR_BUFFER_TOO_SHORT.c());
    buf[0] = 0x40;
    assert_eq!(unsafe { quiche_get_varint(buf.as_ptr(), 1, null_mut()) }, QUICHE_ERR_BUFFER_TOO_SHORT.ss());
}

#[test]
fn bad_arguments_get_errors_not_crashes() {
    unsafe {
        let cfg = quiche_config_new(1);
        assert_eq!(
            quiche_config_set_application_protos(cfg, b"\x05h3".as_ptr(), 3),
            QUICHE_ERR_BUFFER_TOO_SHORT.c()
        );
        assert_eq!(
            quiche_config_set_cc_algorithm_name(cfg, cstr("nope").as_ptr()),
            QUICHE_ERR_CONGESTION_CONTROL.c()
        );
        assert_eq!(quiche_config_set_cc_algorithm_name(cfg, cstr("coupled-bbr").as_ptr()), 0);
        assert_eq!(quiche_config_set_cc_algorithm_name(cfg, cstr("reno").as_ptr()), 0);
        assert_eq!(
            quiche_config_set_scheduler_name(cfg, cstr("nope").as_ptr()),
            QUICHE_ERR_CONGESTION_CONTROL.c()
        );
        assert_eq!(quiche_config_set_scheduler_name(cfg, cstr("arp").as_ptr()), 0);
        assert_eq!(
            quiche_config_load_cert_chain_from_pem_file(cfg, cstr("/nonexistent").as_ptr()),
            QUICHE_ERR_TLS_FAIL.c()
        );
        let mut out = [0u8; 1500];
        let mut si: quiche_send_info = std::mem::zeroed();
        assert_eq!(
            quiche_conn_send(null_mut(), out.as_mut_ptr(), 1500, &mut si),
            QUICHE_ERR_INVALID_STATE.ss()
        );
        assert!(quiche_connect(null(), [1; 16].as_ptr(), 16, null(), 0, null(), 0, cfg).is_null());
        // A server connection before its first packet: nothing to send, no
        // timer, and a datagram that is not an Initial is refused.
        let (l, ll) = c_addr("127.0.0.1:4433");
        let (p, pl) = c_addr("127.0.0.1:5000");
        let conn = quiche_accept([3; 16].as_ptr(), 16, null(), 0, sa(&l), ll, sa(&p), pl, cfg);
        assert!(!conn.is_null() && quiche_conn_is_server(conn) && !quiche_conn_is_established(conn));
        assert_eq!(quiche_conn_send(conn, out.as_mut_ptr(), 1500, &mut si), QUICHE_ERR_DONE.ss());
        assert_eq!(quiche_conn_timeout_as_nanos(conn), u64::MAX);
        let info =
            quiche_recv_info { from: sa(&p).cast_mut(), from_len: pl, to: sa(&l).cast_mut(), to_len: ll };
        let mut junk = [0x40u8; 50];
        assert_eq!(quiche_conn_recv(conn, junk.as_mut_ptr(), 50, &info), QUICHE_ERR_INVALID_PACKET.ss());
        assert_eq!(quiche_conn_path_stats(conn, 0, &mut std::mem::zeroed()), QUICHE_ERR_DONE.c());
        assert_eq!(quiche_conn_dgram_send(conn, out.as_ptr(), 3), QUICHE_ERR_INVALID_STATE.ss());
        assert_eq!(quiche_conn_dgram_max_writable_len(conn), QUICHE_ERR_DONE.ss());
        assert_eq!(quiche_conn_dgram_recv(conn, out.as_mut_ptr(), 3), QUICHE_ERR_DONE.ss());
        quiche_conn_free(conn);
        quiche_config_free(cfg);
    }
}

/// Move every datagram `from` has to `to`, as sent from `from_addr` to
/// `to_addr`; how many moved.
unsafe fn pump(from: *mut quiche_conn, to: *mut quiche_conn, to_addr: &str, from_addr: &str) -> usize {
    // SAFETY: forwarded.
    unsafe { pump_via(from, to, Some((from_addr, to_addr))) }
}

#[test]
fn client_and_lazily_accepted_server_exchange_stream_data() {
    unsafe {
        let ccfg = config(false, 5000);
        let scfg = config(true, 7000);
        let (c, first) = first_initial(ccfg, &[4; 16]);
        let (l, ll) = c_addr("127.0.0.1:4433");
        let (p, pl) = c_addr("127.0.0.1:5000");
        let s = quiche_accept([8; 16].as_ptr(), 16, null(), 0, sa(&l), ll, sa(&p), pl, scfg);
        // Changed after the accept: the connection keeps what it was given.
        quiche_config_set_max_idle_timeout(scfg, 9000);
        let info =
            quiche_recv_info { from: sa(&p).cast_mut(), from_len: pl, to: sa(&l).cast_mut(), to_len: ll };
        let mut d = first.clone();
        assert_eq!(quiche_conn_recv(s, d.as_mut_ptr(), d.len(), &info), d.len() as isize);
        for _ in 0..20 {
            pump(s, c, "127.0.0.1:5000", "127.0.0.1:4433");
            pump(c, s, "127.0.0.1:4433", "127.0.0.1:5000");
        }
        assert!(quiche_conn_is_established(c) && quiche_conn_is_established(s));
        let (mut proto, mut plen) = (null(), 0usize);
        quiche_conn_application_proto(c, &mut proto, &mut plen);
        assert_eq!(std::slice::from_raw_parts(proto, plen), b"h3");
        let mut tp: quiche_transport_params = std::mem::zeroed();
        assert!(quiche_conn_peer_transport_params(c, &mut tp));
        assert_eq!(tp.peer_max_idle_timeout, 7000);
        let mut code = 0u64;
        assert_eq!(quiche_conn_stream_send(c, 0, b"hello".as_ptr(), 5, true, &mut code), 5);
        for _ in 0..5 {
            pump(c, s, "127.0.0.1:4433", "127.0.0.1:5000");
            pump(s, c, "127.0.0.1:5000", "127.0.0.1:4433");
        }
        let it = quiche_conn_readable(s);
        let mut id = u64::MAX;
        assert!(quiche_stream_iter_next(it, &mut id) && id == 0);
        assert!(!quiche_stream_iter_next(it, &mut id));
        quiche_stream_iter_free(it);
        let (mut buf, mut fin) = ([0u8; 16], false);
        assert_eq!(quiche_conn_stream_recv(s, 0, buf.as_mut_ptr(), 16, &mut fin, &mut code), 5);
        assert!(fin && &buf[..5] == b"hello");
        assert_eq!(
            quiche_conn_stream_recv(s, 0, buf.as_mut_ptr(), 16, &mut fin, &mut code),
            QUICHE_ERR_INVALID_STREAM_STATE.ss()
        );
        // Path functions see the one path.
        let (ca, cal) = c_addr("127.0.0.1:5000");
        let (sa_, sal) = c_addr("127.0.0.1:4433");
        assert_eq!(quiche_conn_is_path_validated(c, sa(&ca), cal as usize, sa(&sa_), sal as usize), 1);
        assert_eq!(
            quiche_conn_is_path_validated(c, sa(&sa_), sal as usize, sa(&ca), cal as usize),
            QUICHE_ERR_INVALID_STATE.c()
        );
        let it = quiche_conn_paths_iter(c, sa(&ca), cal as usize);
        let (mut peer, mut plen) = (zeroed_storage(), 0usize);
        assert!(quiche_socket_addr_iter_next(it, &mut peer, &mut plen) && plen == sal as usize);
        assert!(!quiche_socket_addr_iter_next(it, &mut peer, &mut plen));
        quiche_socket_addr_iter_free(it);
        let ids = quiche_conn_source_ids(s);
        let (mut idp, mut idl) = (null(), 0usize);
        assert!(quiche_connection_id_iter_next(ids, &mut idp, &mut idl));
        assert_eq!(std::slice::from_raw_parts(idp, idl), &[8; 16]);
        quiche_connection_id_iter_free(ids);
        let mut st: quiche_stats = std::mem::zeroed();
        quiche_conn_stats(s, &mut st);
        assert!(st.recv > 0 && st.sent > 0 && st.paths_count == 1);
        let mut ps: quiche_path_stats = std::mem::zeroed();
        assert_eq!(quiche_conn_path_stats(c, 0, &mut ps), 0);
        assert!(ps.active && ps.rtt > 0 && ps.cwnd > 0);
        assert_eq!(quiche_conn_close(c, true, 42, b"bye".as_ptr(), 3), 0);
        assert_eq!(quiche_conn_close(c, true, 42, null(), 0), QUICHE_ERR_DONE.c());
        pump(c, s, "127.0.0.1:4433", "127.0.0.1:5000");
        let (mut app, mut err, mut reason, mut rlen) = (false, 0u64, null(), 0usize);
        assert!(quiche_conn_peer_error(s, &mut app, &mut err, &mut reason, &mut rlen));
        assert!(app && err == 42 && std::slice::from_raw_parts(reason, rlen) == b"bye");
        for p in [c, s] {
            quiche_conn_free(p);
        }
        quiche_config_free(ccfg);
        quiche_config_free(scfg);
    }
}

#[test]
fn header_event_type_enums_match_the_library() {
    // quiche.h writes this enum out by hand (see cbindgen-quiche.toml).
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/quiche.h")).unwrap();
    use H3EventType::*;
    for (name, v) in [
        ("QUICHE_H3_EVENT_HEADERS", QUICHE_H3_EVENT_HEADERS),
        ("QUICHE_H3_EVENT_DATA", QUICHE_H3_EVENT_DATA),
        ("QUICHE_H3_EVENT_FINISHED", QUICHE_H3_EVENT_FINISHED),
        ("QUICHE_H3_EVENT_GOAWAY", QUICHE_H3_EVENT_GOAWAY),
        ("QUICHE_H3_EVENT_RESET", QUICHE_H3_EVENT_RESET),
        ("QUICHE_H3_EVENT_PRIORITY_UPDATE", QUICHE_H3_EVENT_PRIORITY_UPDATE),
    ] {
        assert!(h.contains(&format!("{name} = {},", v as i32)), "{name}");
    }
    use PathEventType::*;
    for (name, v) in [
        ("QUICHE_PATH_EVENT_NEW", QUICHE_PATH_EVENT_NEW),
        ("QUICHE_PATH_EVENT_VALIDATED", QUICHE_PATH_EVENT_VALIDATED),
        ("QUICHE_PATH_EVENT_FAILED_VALIDATION", QUICHE_PATH_EVENT_FAILED_VALIDATION),
        ("QUICHE_PATH_EVENT_CLOSED", QUICHE_PATH_EVENT_CLOSED),
        ("QUICHE_PATH_EVENT_REUSED_SOURCE_CONNECTION_ID", QUICHE_PATH_EVENT_REUSED_SOURCE_CONNECTION_ID),
        ("QUICHE_PATH_EVENT_PEER_MIGRATED", QUICHE_PATH_EVENT_PEER_MIGRATED),
        ("QUICHE_PATH_EVENT_PMTU_UPDATED", QUICHE_PATH_EVENT_PMTU_UPDATED),
    ] {
        assert!(h.contains(&format!("{name} = {},", v as i32)), "{name}");
    }
}

#[test]
fn extensible_priorities_parse_as_rfc_9218_says() {
    let parse = |v: &str| {
        let mut b = v.as_bytes().to_vec();
        let mut p = quiche_h3_priority { urgency: 0, incremental: false };
        let rc = unsafe { quiche_h3_parse_extensible_priority(b.as_mut_ptr(), b.len(), &mut p) };
        (rc, p.urgency, p.incremental)
    };
    assert_eq!(parse(""), (0, 3, false));
    assert_eq!(parse("u=5, i"), (0, 5, true));
    assert_eq!(parse("i=?0, u=0, x=1"), (0, 0, false));
    assert_eq!(parse("u=9").0, quiche_h3_error::QUICHE_H3_ERR_FRAME_ERROR as c_int);
}

#[test]
#[allow(clippy::disallowed_methods)] // any instant will do as the origin
fn a_pending_timer_never_reads_zero() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    // Due (or overdue): 1 ns, so libev's ev_timer_again keeps the timer.
    assert_eq!(conn::nanos_until(t0, t0), 1);
    assert_eq!(conn::nanos_until(t0, t0 + Duration::from_millis(5)), 1);
    assert_eq!(conn::nanos_until(t0 + Duration::from_micros(1500), t0), 1_500_000);
}

/// Call `f` with a panic armed for the next guarded call; its result, and
/// whether the call reached `guard` (the panic happened).
fn with_panic<R>(f: impl FnOnce() -> R) -> (R, bool) {
    crate::fault::arm();
    let r = f();
    (r, !crate::fault::disarm())
}

#[test]
fn a_panic_inside_returns_the_functions_error_value() {
    unsafe {
        let cfg = config(false, 5000);
        let (c, _) = first_initial(cfg, &[5; 16]);
        let mut buf = [0u8; 1500];
        let mut si: quiche_send_info = std::mem::zeroed();
        let mut code = 0u64;
        let (l, ll) = c_addr("127.0.0.1:5001");
        let (p, pl) = c_addr("127.0.0.1:4433");
        let ss = QUICHE_ERR_INVALID_STATE.ss();
        assert_eq!(with_panic(|| quiche_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si)), (ss, true));
        assert_eq!(
            with_panic(|| quiche_conn_stream_send(c, 0, buf.as_ptr(), 5, false, &mut code)),
            (ss, true)
        );
        let mig = with_panic(|| quiche_conn_migrate(c, sa(&l), ll, sa(&p), pl, null_mut()));
        assert_eq!(mig, (QUICHE_ERR_INVALID_STATE.c(), true));
        assert_eq!(with_panic(|| quiche_conn_is_established(c)), (false, true));
        assert_eq!(with_panic(|| quiche_conn_path_event_next(c)), (null_mut(), true));
        assert_eq!(with_panic(|| quiche_version()), (null(), true));
        let h3 = with_panic(|| crate::quiche::quiche_h3_config_new());
        assert_eq!(h3, (null_mut(), true));
        // The connection still works after the caught panics: it sends its first Initial.
        assert_eq!(quiche_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si), 1200);
        quiche_conn_free(c);
        quiche_config_free(cfg);
    }
}

/// Move every datagram `from` has to `to` with the addresses its send info
/// gives, or `addrs` (from, to) instead; how many moved.
unsafe fn pump_via(from: *mut quiche_conn, to: *mut quiche_conn, addrs: Option<(&str, &str)>) -> usize {
    let mut buf = vec![0u8; 1500];
    let mut si: quiche_send_info = unsafe { std::mem::zeroed() };
    let mut moved = 0;
    loop {
        let n = unsafe { quiche_conn_send(from, buf.as_mut_ptr(), buf.len(), &mut si) };
        if n == QUICHE_ERR_DONE.ss() {
            return moved;
        }
        assert!(n > 0, "send: {n}");
        if let Some((f, t)) = addrs {
            (si.from, si.from_len) = c_addr(f);
            (si.to, si.to_len) = c_addr(t);
        }
        let info = quiche_recv_info {
            from: (&mut si.from as *mut sockaddr_storage).cast(),
            from_len: si.from_len,
            to: (&mut si.to as *mut sockaddr_storage).cast(),
            to_len: si.to_len,
        };
        let r = unsafe { quiche_conn_recv(to, buf.as_mut_ptr(), n as usize, &info) };
        assert!(r > 0 || r == QUICHE_ERR_DONE.ss(), "recv: {r}");
        moved += 1;
    }
}

/// The path events of `c` now: (type, local, peer, pmtu).
unsafe fn path_events(c: *mut quiche_conn) -> Vec<(PathEventType, String, String, usize)> {
    let mut out = Vec::new();
    loop {
        let ev = unsafe { quiche_conn_path_event_next(c) };
        if ev.is_null() {
            return out;
        }
        let (mut l, mut ll, mut p, mut pl, mut pmtu) = (zeroed_storage(), 0, zeroed_storage(), 0, 0usize);
        unsafe { quiche_path_event_pmtu_updated(ev, &mut l, &mut ll, &mut p, &mut pl, &mut pmtu) };
        let addr =
            |s: &sockaddr_storage, len| unsafe { crate::addr::from_c(sa(s), len) }.map(|a| a.to_string());
        out.push((
            unsafe { quiche_path_event_type(ev) },
            addr(&l, ll).unwrap_or_default(),
            addr(&p, pl).unwrap_or_default(),
            pmtu,
        ));
        unsafe { quiche_path_event_free(ev) };
    }
}

#[test]
fn migration_peer_migration_and_pmtu_arrive_as_path_events() {
    use PathEventType::*;
    unsafe {
        let ccfg = config(false, 5000);
        quiche_config_discover_pmtu(ccfg, true);
        let scfg = config(true, 7000);
        let (c, mut first) = first_initial(ccfg, &[6; 16]);
        let (l, ll) = c_addr("127.0.0.1:4433");
        let (p, pl) = c_addr("127.0.0.1:5000");
        let s = quiche_accept([9; 16].as_ptr(), 16, null(), 0, sa(&l), ll, sa(&p), pl, scfg);
        let info =
            quiche_recv_info { from: sa(&p).cast_mut(), from_len: pl, to: sa(&l).cast_mut(), to_len: ll };
        assert!(quiche_conn_recv(s, first.as_mut_ptr(), first.len(), &info) > 0);
        let exchange = |rounds| {
            for _ in 0..rounds {
                pump_via(s, c, None);
                pump_via(c, s, None);
            }
        };
        // The first look at the paths sets what later events compare with.
        assert!(path_events(c).is_empty() && path_events(s).is_empty());
        exchange(20);
        assert!(quiche_conn_is_established(c) && quiche_conn_is_established(s));
        // Path MTU discovery raises the client's datagram size.
        let mut code = 0;
        assert_eq!(quiche_conn_stream_send(c, 0, [1u8; 100].as_ptr(), 100, true, &mut code), 100);
        exchange(20);
        let ev = path_events(c);
        assert!(ev.iter().any(|e| e.0 == QUICHE_PATH_EVENT_PMTU_UPDATED && e.3 > 1200), "{ev:?}");
        // The client moves its path to another local address.
        let (n, nl) = c_addr("127.0.0.1:5001");
        let mut seq = u64::MAX;
        assert_eq!(quiche_conn_migrate_source(c, sa(&n), nl, &mut seq), 0);
        assert_eq!(seq, 0);
        exchange(20);
        let moved = (QUICHE_PATH_EVENT_VALIDATED, "127.0.0.1:5001".to_string(), "127.0.0.1:4433".to_string());
        assert!(path_events(c).iter().any(|e| (e.0, e.1.clone(), e.2.clone()) == moved));
        let peer =
            (QUICHE_PATH_EVENT_PEER_MIGRATED, "127.0.0.1:4433".to_string(), "127.0.0.1:5001".to_string());
        let ev = path_events(s);
        assert!(ev.iter().any(|e| (e.0, e.1.clone(), e.2.clone()) == peer), "{ev:?}");
        // Already there: nothing to do. A peer address no path has: refused.
        assert_eq!(quiche_conn_migrate(c, sa(&n), nl, sa(&l), ll, null_mut()), 0);
        assert_eq!(quiche_conn_migrate(c, sa(&n), nl, sa(&p), pl, null_mut()), QUICHE_ERR_INVALID_STATE.c());
        // A server does not migrate.
        let (o, ol) = c_addr("127.0.0.1:4434");
        assert_eq!(quiche_conn_migrate_source(s, sa(&o), ol, null_mut()), QUICHE_ERR_INVALID_STATE.c());
        for x in [c, s] {
            quiche_conn_free(x);
        }
        quiche_config_free(ccfg);
        quiche_config_free(scfg);
    }
}

extern "C" fn purge_all(_data: *mut u8, _len: usize) -> bool {
    true
}

/// DATAGRAM frames both ways through quiche_conn_dgram_*, with quiche's
/// answers: Done when empty or full, BufferTooShort when too large.
#[test]
fn datagrams_through_the_quiche_layer() {
    unsafe {
        let (ccfg, scfg) = (config(false, 5000), config(true, 5000));
        quiche_config_enable_dgram(ccfg, true, 4, 2);
        quiche_config_enable_dgram(scfg, true, 4, 2);
        let (c, first) = first_initial(ccfg, &[5; 16]);
        let (l, ll) = c_addr("127.0.0.1:4433");
        let (p, pl) = c_addr("127.0.0.1:5000");
        let s = quiche_accept([6; 16].as_ptr(), 16, null(), 0, sa(&l), ll, sa(&p), pl, scfg);
        let info =
            quiche_recv_info { from: sa(&p).cast_mut(), from_len: pl, to: sa(&l).cast_mut(), to_len: ll };
        let mut d = first;
        assert_eq!(quiche_conn_recv(s, d.as_mut_ptr(), d.len(), &info), d.len() as isize);
        let both = |n| {
            for _ in 0..n {
                pump(s, c, "127.0.0.1:5000", "127.0.0.1:4433");
                pump(c, s, "127.0.0.1:4433", "127.0.0.1:5000");
            }
        };
        both(20);
        let max = quiche_conn_dgram_max_writable_len(c);
        assert!(max > 1000, "{max}");
        let big = vec![1u8; max as usize + 1];
        assert_eq!(quiche_conn_dgram_send(c, big.as_ptr(), big.len()), QUICHE_ERR_BUFFER_TOO_SHORT.ss());
        assert_eq!(quiche_conn_dgram_send(c, b"ping".as_ptr(), 4), 4);
        assert_eq!(quiche_conn_dgram_send(c, b"pong!".as_ptr(), 5), 5);
        assert!(quiche_conn_is_dgram_send_queue_full(c));
        assert_eq!(quiche_conn_dgram_send(c, b"x".as_ptr(), 1), QUICHE_ERR_DONE.ss());
        assert_eq!((quiche_conn_dgram_send_queue_len(c), quiche_conn_dgram_send_queue_byte_size(c)), (2, 9));
        both(2);
        assert_eq!((quiche_conn_dgram_recv_queue_len(s), quiche_conn_dgram_recv_queue_byte_size(s)), (2, 9));
        assert!(!quiche_conn_is_dgram_recv_queue_full(s));
        assert_eq!(quiche_conn_dgram_recv_front_len(s), 4);
        let mut buf = [0u8; 8];
        assert_eq!(quiche_conn_dgram_recv(s, buf.as_mut_ptr(), 8), 4);
        assert_eq!(&buf[..4], b"ping");
        assert_eq!(quiche_conn_dgram_recv(s, buf.as_mut_ptr(), 8), 5);
        assert_eq!(quiche_conn_dgram_recv(s, buf.as_mut_ptr(), 8), QUICHE_ERR_DONE.ss());
        assert_eq!(quiche_conn_dgram_recv_front_len(s), QUICHE_ERR_DONE.ss());
        // The server's answers: one purged before it leaves.
        assert_eq!(quiche_conn_dgram_send(s, b"gone".as_ptr(), 4), 4);
        quiche_conn_dgram_purge_outgoing(s, Some(purge_all));
        assert_eq!(quiche_conn_dgram_send_queue_len(s), 0);
        assert_eq!(quiche_conn_dgram_send(s, b"back".as_ptr(), 4), 4);
        both(2);
        assert_eq!(quiche_conn_dgram_recv(c, buf.as_mut_ptr(), 8), 4);
        assert_eq!(&buf[..4], b"back");
        let mut st: quiche_stats = std::mem::zeroed();
        quiche_conn_stats(s, &mut st);
        assert_eq!((st.dgram_recv, st.dgram_sent), (2, 1));
        for p in [c, s] {
            quiche_conn_free(p);
        }
        quiche_config_free(ccfg);
        quiche_config_free(scfg);
    }
}
