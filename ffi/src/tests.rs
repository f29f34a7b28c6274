//! Unit tests of the C API, calling the exported functions as C would: a
//! client and a server (Retry, accept, HTTP/3 request and response) joined
//! in memory, argument checking and error codes.

use std::ffi::CString;
use std::net::SocketAddr;
use std::ptr::{null, null_mut};

use libc::{sockaddr, sockaddr_storage, socklen_t};

use crate::addr::{to_c, zeroed_storage};
use crate::*;

const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/certs");

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

struct Addr(sockaddr_storage, socklen_t);

impl Addr {
    fn new(s: &str) -> Addr {
        let a: SocketAddr = s.parse().unwrap();
        let mut st = zeroed_storage();
        let len = to_c(&a, &mut st);
        Addr(st, len)
    }
    fn ptr(&self) -> *const sockaddr {
        (&self.0 as *const sockaddr_storage).cast()
    }
}

unsafe fn config(server: bool) -> *mut mpquic_config {
    unsafe {
        let cfg = mpquic_config_new();
        assert_eq!(mpquic_config_set_application_protos(cfg, b"\x02h3".as_ptr(), 3), 0);
        if server {
            let cert = cstr(&format!("{CERTS}/cert.pem"));
            let key = cstr(&format!("{CERTS}/key.pem"));
            assert_eq!(mpquic_config_load_cert_chain_from_pem_file(cfg, cert.as_ptr()), 0);
            assert_eq!(mpquic_config_load_priv_key_from_pem_file(cfg, key.as_ptr()), 0);
        } else {
            let ca = cstr(&format!("{CERTS}/rootca.pem"));
            assert_eq!(mpquic_config_load_verify_locations_from_file(cfg, ca.as_ptr()), 0);
        }
        assert_eq!(mpquic_config_set_cc(cfg, cstr("coupled-bbr").as_ptr()), 0);
        assert_eq!(mpquic_config_set_cc(cfg, cstr("compound").as_ptr()), 0);
        assert_eq!(mpquic_config_set_stream_send_unsent(cfg, 64 << 10), 0);
        assert_eq!(mpquic_config_set_stream_send_unsent(null_mut(), 1), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        cfg
    }
}

/// How a datagram sent with `si` arrives: its addresses and ECN bits.
fn arrival(si: &mpquic_send_info) -> mpquic_recv_info {
    mpquic_recv_info {
        from: (&si.from as *const sockaddr_storage).cast(),
        from_len: si.from_len,
        to: (&si.to as *const sockaddr_storage).cast(),
        to_len: si.to_len,
        ecn: si.ecn,
    }
}

/// Move every datagram `from` has to send into `to`; returns how many.
unsafe fn pump(from: *mut mpquic_conn, to: *mut mpquic_conn, now: u64) -> usize {
    let mut n = 0;
    let mut buf = [0u8; 1500];
    let mut si: mpquic_send_info = unsafe { std::mem::zeroed() };
    loop {
        let len = unsafe { mpquic_conn_send(from, buf.as_mut_ptr(), buf.len(), &mut si, now) };
        assert!(len >= 0, "send failed: {len}");
        if len == 0 {
            return n;
        }
        let ri = arrival(&si);
        let r = unsafe { mpquic_conn_recv(to, buf.as_mut_ptr(), len as usize, &ri, now) };
        assert!(r >= 0, "recv failed: {r}");
        n += 1;
    }
}

#[test]
fn algorithm_names_map_to_error_codes() {
    unsafe {
        let cfg = mpquic_config_new();
        assert_eq!(mpquic_config_set_cc(cfg, cstr("coupled-bbr").as_ptr()), 0);
        assert_eq!(
            mpquic_config_set_cc(cfg, cstr("no-such-cc").as_ptr()),
            MPQUIC_ERROR_UNKNOWN_ALGORITHM as i32
        );
        assert_eq!(mpquic_config_set_scheduler(cfg, cstr("minrtt").as_ptr()), 0);
        assert_eq!(
            mpquic_config_set_scheduler(cfg, cstr("no-such-scheduler").as_ptr()),
            MPQUIC_ERROR_UNKNOWN_ALGORITHM as i32
        );
        assert_eq!(mpquic_config_set_cc(cfg, null()), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        assert_eq!(
            mpquic_config_set_cc(null_mut(), cstr("cubic").as_ptr()),
            MPQUIC_ERROR_INVALID_ARGUMENT as i32
        );
        assert_eq!(
            mpquic_config_load_cert_chain_from_pem_file(cfg, cstr("/nonexistent.pem").as_ptr()),
            MPQUIC_ERROR_TLS as i32
        );
        // A length byte running past the end is malformed.
        assert_eq!(mpquic_config_set_application_protos(cfg, b"\x05h3".as_ptr(), 3), -3);
        assert_eq!(mpquic_config_set_max_ack_delay(cfg, 1 << 14), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        mpquic_config_free(cfg);
        mpquic_config_free(null_mut());
    }
}

#[test]
fn null_and_bad_arguments_are_rejected() {
    unsafe {
        let cfg = config(false);
        let a = Addr::new("127.0.0.1:1");
        // Address too short for its family.
        assert!(mpquic_connect(null(), null(), 0, a.ptr(), 4, a.ptr(), a.1, cfg, 0).is_null());
        assert!(mpquic_connect(null(), null(), 0, a.ptr(), a.1, a.ptr(), a.1, null(), 0).is_null());
        // 21-byte connection ID.
        assert!(mpquic_connect(null(), [0u8; 21].as_ptr(), 21, a.ptr(), a.1, a.ptr(), a.1, cfg, 0).is_null());
        let mut buf = [0u8; 1500];
        let mut si: mpquic_send_info = std::mem::zeroed();
        assert_eq!(mpquic_conn_send(null_mut(), buf.as_mut_ptr(), 1500, &mut si, 0), -3);
        assert!(mpquic_conn_is_closed(null()));
        assert_eq!(mpquic_conn_timeout_ns(null()), u64::MAX);
        let c = mpquic_connect(cstr("localhost").as_ptr(), null(), 0, a.ptr(), a.1, a.ptr(), a.1, cfg, 1_000);
        assert!(!c.is_null());
        assert_eq!(mpquic_conn_send(c, null_mut(), 1500, &mut si, 0), MPQUIC_ERROR_INVALID_ARGUMENT as isize);
        assert_eq!(
            mpquic_conn_recv(c, buf.as_mut_ptr(), 10, null(), 0),
            MPQUIC_ERROR_INVALID_ARGUMENT as isize
        );
        assert_eq!(mpquic_conn_stats(c, null_mut()), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        // Multipath calls before the handshake (and without multipath).
        assert_eq!(
            mpquic_conn_probe_path(c, a.ptr(), a.1, a.ptr(), a.1, 0),
            MPQUIC_ERROR_NOT_MULTIPATH as i64
        );
        assert!(mpquic_h3_conn_new(c).is_null(), "HTTP/3 needs an established connection");
        // Fetch: NULL or non-UTF-8 strings give no handle; polling before the
        // handshake is refused.
        let (auth, path) = (cstr("localhost"), cstr("/x"));
        let paths = [path.as_ptr()];
        assert!(mpquic_h3_fetch_new(null(), paths.as_ptr(), 1, null()).is_null());
        assert!(mpquic_h3_fetch_new(auth.as_ptr(), null(), 1, null()).is_null());
        let bad = [0xffu8, 0];
        assert!(mpquic_h3_fetch_new(auth.as_ptr(), [bad.as_ptr().cast()].as_ptr(), 1, null()).is_null());
        let f = mpquic_h3_fetch_new(auth.as_ptr(), paths.as_ptr(), 1, null());
        assert!(!f.is_null() && !mpquic_h3_fetch_is_done(f));
        let mut ev: mpquic_h3_fetch_event = std::mem::zeroed();
        assert_eq!(
            mpquic_h3_fetch_poll(f, c, buf.as_mut_ptr(), buf.len(), &mut ev),
            MPQUIC_ERROR_INVALID_STATE as i32
        );
        assert_eq!(
            mpquic_h3_fetch_poll(f, null_mut(), buf.as_mut_ptr(), 1, &mut ev),
            MPQUIC_ERROR_INVALID_ARGUMENT as i32
        );
        assert_eq!((mpquic_h3_fetch_status(f, 0), mpquic_h3_fetch_bytes(f, 7)), (0, 0));
        mpquic_h3_fetch_free(f);
        mpquic_h3_fetch_free(null_mut());
        assert_eq!(mpquic_random_cid(buf.as_mut_ptr(), 21), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        mpquic_conn_free(c);
        mpquic_config_free(cfg);
    }
}

#[test]
fn clock_round_trips_caller_nanoseconds() {
    let c = crate::conn::Clock::new(5_000_000_000);
    for ns in [0, 4_999_999_999, 5_000_000_000, 5_000_000_001, 7_123_456_789] {
        // Instants before the anchor may not exist on a young system
        // clock; then the anchor is used.
        let back = c.ns(c.at(ns));
        assert!(back == ns || (ns < 5_000_000_000 && back == 5_000_000_000), "{ns} -> {back}");
    }
    assert_eq!(c.ns(c.at(9_000_000_000)) - c.ns(c.at(8_000_000_000)), 1_000_000_000);
}

/// A full exchange through the C API: Retry, handshake, one HTTP/3 GET,
/// stats, path stats, close.
#[test]
fn http3_request_and_response_in_memory() {
    unsafe {
        let ccfg = config(false);
        let scfg = config(true);
        let ca = Addr::new("127.0.0.1:40001");
        let sa = Addr::new("127.0.0.1:40002");
        let t0 = 1_000_000_000u64;
        let client =
            mpquic_connect(cstr("localhost").as_ptr(), null(), 0, ca.ptr(), ca.1, sa.ptr(), sa.1, ccfg, t0);
        assert!(!client.is_null());
        mpquic_config_free(ccfg);

        // The server's front end: first a Retry, then a new connection.
        let v = mpquic_validator_new(true);
        let mut server: *mut mpquic_conn = null_mut();
        let mut buf = [0u8; 1500];
        let mut reply = [0u8; 1500];
        let mut si: mpquic_send_info = std::mem::zeroed();
        let mut info: mpquic_accept_info = std::mem::zeroed();
        let mut kinds = Vec::new();
        while server.is_null() {
            let len = mpquic_conn_send(client, buf.as_mut_ptr(), buf.len(), &mut si, t0);
            assert!(len > 0);
            let mut dcid = [0u8; 20];
            assert!(mpquic_header_dcid(buf.as_ptr(), len as usize, 16, dcid.as_mut_ptr(), 20) > 0);
            let k = mpquic_validator_handle(
                v,
                buf.as_ptr(),
                len as usize,
                ca.ptr(),
                ca.1,
                0,
                reply.as_mut_ptr(),
                reply.len(),
                &mut info,
            );
            kinds.push(k);
            if k == mpquic_accept_kind::MPQUIC_ACCEPT_REPLY as i32 {
                let ri =
                    mpquic_recv_info { from: sa.ptr(), from_len: sa.1, to: ca.ptr(), to_len: ca.1, ecn: 0 };
                assert!(mpquic_conn_recv(client, reply.as_mut_ptr(), info.reply_len, &ri, t0) >= 0);
                continue;
            }
            assert_eq!(k, mpquic_accept_kind::MPQUIC_ACCEPT_NEW as i32);
            assert_eq!(info.retry_scid_len, 16, "the client came through Retry");
            server = mpquic_accept(
                info.retry_scid.as_ptr(),
                info.retry_scid_len,
                info.odcid.as_ptr(),
                info.odcid_len,
                info.retry_scid.as_ptr(),
                info.retry_scid_len,
                sa.ptr(),
                sa.1,
                ca.ptr(),
                ca.1,
                scfg,
                t0,
            );
            assert!(!server.is_null());
            let ri = mpquic_recv_info { from: ca.ptr(), from_len: ca.1, to: sa.ptr(), to_len: sa.1, ecn: 0 };
            assert!(mpquic_conn_recv(server, buf.as_mut_ptr(), len as usize, &ri, t0) > 0);
        }
        assert_eq!(kinds.first(), Some(&(mpquic_accept_kind::MPQUIC_ACCEPT_REPLY as i32)));
        mpquic_validator_free(v);
        mpquic_config_free(scfg);

        let mut now = t0;
        for _ in 0..10 {
            now += 1_000_000;
            pump(server, client, now);
            pump(client, server, now);
        }
        assert!(mpquic_conn_is_established(client) && mpquic_conn_is_established(server));
        let (mut p, mut l) = (null(), 0usize);
        mpquic_conn_application_proto(client, &mut p, &mut l);
        assert_eq!(std::slice::from_raw_parts(p, l), b"h3");
        let t = mpquic_conn_timeout_ns(client);
        assert!(t > now && t != u64::MAX, "a timer (idle at least) is armed on the caller's clock");

        let ch3 = mpquic_h3_conn_new(client);
        let sh3 = mpquic_h3_conn_new(server);
        assert!(!ch3.is_null() && !sh3.is_null());
        let h = |n: &'static [u8], v: &'static [u8]| mpquic_h3_header {
            name: n.as_ptr(),
            name_len: n.len(),
            value: v.as_ptr(),
            value_len: v.len(),
        };
        let req = [
            h(b":method", b"GET"),
            h(b":scheme", b"https"),
            h(b":authority", b"localhost"),
            h(b":path", b"/x"),
        ];
        let sid = mpquic_h3_send_request(ch3, client, req.as_ptr(), req.len(), true);
        assert_eq!(sid, 0);
        let bad = [h(b":method", b"GET")];
        assert_eq!(
            mpquic_h3_send_request(ch3, client, bad.as_ptr(), 1, true),
            MPQUIC_ERROR_H3_INVALID_HEADERS as i64
        );

        let body: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut sent = 0usize;
        let mut got = Vec::new();
        let mut status = Vec::new();
        let mut finished = false;
        for _ in 0..2000 {
            now += 1_000_000;
            pump(client, server, now);
            loop {
                let mut ev = null_mut();
                let id = mpquic_h3_conn_poll(sh3, server, &mut ev);
                if id == MPQUIC_ERROR_DONE as i64 {
                    break;
                }
                assert!(id >= 0, "server poll: {id}");
                if mpquic_h3_event_kind(ev) == mpquic_h3_event_type::MPQUIC_H3_EVENT_HEADERS {
                    let mut hd: mpquic_h3_header = std::mem::zeroed();
                    assert_eq!(mpquic_h3_event_header(ev, 3, &mut hd), 0);
                    assert_eq!(std::slice::from_raw_parts(hd.value, hd.value_len), b"/x");
                    assert_eq!(mpquic_h3_event_header(ev, 4, &mut hd), MPQUIC_ERROR_DONE as i32);
                    let resp = [h(b":status", b"200")];
                    assert_eq!(mpquic_h3_send_response(sh3, server, id as u64, resp.as_ptr(), 1, false), 0);
                }
                mpquic_h3_event_free(ev);
            }
            if sent < body.len() {
                let n = mpquic_h3_send_body(sh3, server, 0, body[sent..].as_ptr(), body.len() - sent, true);
                if n > 0 {
                    sent += n as usize;
                }
            }
            pump(server, client, now);
            loop {
                let mut ev = null_mut();
                let id = mpquic_h3_conn_poll(ch3, client, &mut ev);
                if id == MPQUIC_ERROR_DONE as i64 {
                    assert!(ev.is_null());
                    break;
                }
                assert_eq!(id, 0, "client poll");
                match mpquic_h3_event_kind(ev) {
                    mpquic_h3_event_type::MPQUIC_H3_EVENT_HEADERS => {
                        unsafe extern "C" fn cb(
                            _n: *const u8,
                            _nl: usize,
                            v: *const u8,
                            vl: usize,
                            arg: *mut libc::c_void,
                        ) -> i32 {
                            let out = unsafe { &mut *(arg as *mut Vec<u8>) };
                            out.extend_from_slice(unsafe { std::slice::from_raw_parts(v, vl) });
                            0
                        }
                        let arg = (&mut status as *mut Vec<u8>).cast();
                        assert_eq!(mpquic_h3_event_for_each_header(ev, Some(cb), arg), 0);
                    }
                    mpquic_h3_event_type::MPQUIC_H3_EVENT_DATA => loop {
                        let mut b = [0u8; 4096];
                        let n = mpquic_h3_recv_body(ch3, client, 0, b.as_mut_ptr(), b.len());
                        if n == MPQUIC_ERROR_DONE as isize {
                            break;
                        }
                        assert!(n > 0);
                        got.extend_from_slice(&b[..n as usize]);
                    },
                    mpquic_h3_event_type::MPQUIC_H3_EVENT_FINISHED => finished = true,
                    other => panic!("unexpected {other:?}"),
                }
                mpquic_h3_event_free(ev);
            }
            if finished {
                break;
            }
        }
        assert_eq!(status, b"200");
        assert!(finished);
        assert!(got == body, "got {} of {} bytes", got.len(), body.len());

        let mut st = mpquic_stats::default();
        assert_eq!(mpquic_conn_stats(client, &mut st), 0);
        assert!(st.recv_bytes > body.len() as u64 && st.sent > 0 && st.paths == 1);
        assert_eq!(mpquic_conn_path_count(client), 1);
        let mut ps: mpquic_path_stats = std::mem::zeroed();
        assert_eq!(mpquic_conn_path_stats(client, 0, &mut ps), 0);
        assert_eq!(ps.path_id, 0);
        assert_eq!(ps.peer_len, sa.1);
        assert!(ps.srtt_ns > 0 && ps.cwnd > 0 && ps.recv_bytes > body.len() as u64);
        assert_eq!(*ps.cc_state.last().unwrap(), 0, "NUL-terminated");
        assert_eq!(mpquic_conn_path_stats(client, 1, &mut ps), MPQUIC_ERROR_DONE as i32);

        assert_eq!(mpquic_conn_close(client, true, 0x100, b"bye".as_ptr(), 3, now), 0);
        pump(client, server, now);
        let (mut app, mut code, mut r, mut rl) = (false, 0u64, null(), 0usize);
        assert!(mpquic_conn_close_info(server, false, &mut app, &mut code, &mut r, &mut rl));
        assert!(app && code == 0x100);
        assert_eq!(std::slice::from_raw_parts(r, rl), b"bye");
        assert!(mpquic_conn_is_draining(server));
        let mut ids = [0u64; 4];
        assert!(mpquic_conn_readable(server, ids.as_mut_ptr(), 4) >= 0);
        // The close timers run out.
        now += 10_000_000_000;
        mpquic_conn_on_timeout(client, now);
        mpquic_conn_on_timeout(server, now);
        assert!(mpquic_conn_is_closed(client) && mpquic_conn_is_closed(server));
        mpquic_h3_conn_free(ch3);
        mpquic_h3_conn_free(sh3);
        mpquic_conn_free(client);
        mpquic_conn_free(server);
    }
}

#[test]
fn stateless_reset_from_c() {
    unsafe {
        let cfg = config(true);
        let key = [9u8; 32];
        assert_eq!(mpquic_config_set_stateless_reset_key(cfg, key.as_ptr()), 0);
        assert_eq!(mpquic_config_set_stateless_reset_key(cfg, null()), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        let mut pkt = [0x41u8; 60];
        let mut out = [0u8; 100];
        let n = mpquic_stateless_reset(key.as_ptr(), pkt.as_ptr(), pkt.len(), 8, out.as_mut_ptr(), out.len());
        assert_eq!(n, 59);
        let token = engine::server::StatelessResetKey::from_bytes(key).token(&pkt[1..9]);
        assert_eq!(out[43..59], token);
        // Long header: nothing to send; bad pointers: an error.
        pkt[0] = 0xc1;
        assert_eq!(
            mpquic_stateless_reset(key.as_ptr(), pkt.as_ptr(), pkt.len(), 8, out.as_mut_ptr(), 100),
            0
        );
        assert_eq!(
            mpquic_stateless_reset(null(), pkt.as_ptr(), pkt.len(), 8, out.as_mut_ptr(), 100),
            MPQUIC_ERROR_INVALID_ARGUMENT as i64
        );
        mpquic_config_free(cfg);
    }
}

#[test]
fn tokens_and_key_updates_from_c() {
    unsafe {
        let v = mpquic_validator_new(true);
        let peer = Addr::new("127.0.0.1:4000");
        let mut tok = [0u8; 128];
        let n = mpquic_validator_new_token(v, peer.ptr(), peer.1, 5, tok.as_mut_ptr(), tok.len());
        assert!(n > 0, "{n}");
        let mut small = [0u8; 4];
        assert_eq!(
            mpquic_validator_new_token(v, peer.ptr(), peer.1, 5, small.as_mut_ptr(), 4),
            MPQUIC_ERROR_BUFFER_TOO_SHORT as i64
        );
        let cfg = config(false);
        assert_eq!(mpquic_config_set_key_update_interval(cfg, 5000), 0);
        let a = Addr::new("127.0.0.1:1");
        let c = mpquic_connect(cstr("localhost").as_ptr(), null(), 0, a.ptr(), a.1, a.ptr(), a.1, cfg, 1_000);
        assert!(!c.is_null());
        assert_eq!(mpquic_conn_set_token(c, tok.as_ptr(), n as usize), 0);
        assert_eq!(
            mpquic_conn_send_new_token(c, tok.as_ptr(), n as usize),
            MPQUIC_ERROR_INVALID_STATE as i32
        );
        assert_eq!(mpquic_conn_new_token_next(c, tok.as_mut_ptr(), tok.len()), MPQUIC_ERROR_DONE as i64);
        assert_eq!(mpquic_conn_update_keys(c, 2_000), 0, "no update before the handshake");
        let mut buf = [0u8; 1500];
        let mut si: mpquic_send_info = std::mem::zeroed();
        assert!(mpquic_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si, 2_000) > 0);
        assert_eq!(mpquic_conn_set_token(c, tok.as_ptr(), n as usize), MPQUIC_ERROR_INVALID_STATE as i32);
        mpquic_conn_free(c);
        mpquic_config_free(cfg);
        mpquic_validator_free(v);
    }
}

/// A flood of 1200-byte v1 Initials with random connection IDs and garbage
/// payload (what a hostile client sends with Retry off) is dropped before
/// any connection exists; a real client's Initial is accepted; past the
/// half-open bound a real client gets a Retry instead.
#[test]
fn garbage_initial_flood_gets_no_connection() {
    unsafe {
        let v = mpquic_validator_new(false);
        let from = Addr::new("127.0.0.1:5000");
        let mut reply = [0u8; 1500];
        let mut info: mpquic_accept_info = std::mem::zeroed();
        let handle = |d: &[u8], half_open: usize, info: &mut mpquic_accept_info, reply: &mut [u8]| {
            mpquic_validator_handle_bounded(
                v,
                d.as_ptr(),
                d.len(),
                from.ptr(),
                from.1,
                0,
                half_open,
                4,
                reply.as_mut_ptr(),
                reply.len(),
                info,
            )
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        };
        for _ in 0..1000 {
            // Initial, v1, 8-byte DCID and SCID, no token, length to the end.
            let mut d = vec![0xc3, 0, 0, 0, 1, 8];
            d.extend((0..8).map(|_| rand()));
            d.push(8);
            d.extend((0..8).map(|_| rand()));
            d.extend([0, 0x44, 0x96]);
            d.extend((0..1174).map(|_| rand()));
            assert_eq!(d.len(), 1200);
            let k = handle(&d, 0, &mut info, &mut reply);
            assert_eq!(k, mpquic_accept_kind::MPQUIC_ACCEPT_DROP as i32);
        }
        let cfg = config(false);
        let a = Addr::new("127.0.0.1:5000");
        let c = mpquic_connect(cstr("localhost").as_ptr(), null(), 0, a.ptr(), a.1, a.ptr(), a.1, cfg, 1_000);
        let mut buf = [0u8; 1500];
        let mut si: mpquic_send_info = std::mem::zeroed();
        let n = mpquic_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si, 1_000) as usize;
        assert_eq!(handle(&buf[..n], 3, &mut info, &mut reply), mpquic_accept_kind::MPQUIC_ACCEPT_NEW as i32);
        assert_eq!(
            handle(&buf[..n], 4, &mut info, &mut reply),
            mpquic_accept_kind::MPQUIC_ACCEPT_REPLY as i32
        );
        assert!(info.reply_len > 0 && info.reply_len < n, "a Retry, smaller than the Initial");
        mpquic_conn_free(c);
        mpquic_config_free(cfg);
        mpquic_validator_free(v);
    }
}

/// Move every datagram the client has into the endpoint; returns the
/// endpoint's verdicts.
unsafe fn client_to_endpoint(
    c: *mut mpquic_conn,
    ep: *mut mpquic_endpoint,
    now: u64,
) -> Vec<mpquic_incoming> {
    let (mut buf, mut out) = ([0u8; 1500], [0u8; 1500]);
    let mut si: mpquic_send_info = unsafe { std::mem::zeroed() };
    let mut verdicts = Vec::new();
    loop {
        let len = unsafe { mpquic_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si, now) };
        if len <= 0 {
            return verdicts;
        }
        let ri = arrival(&si);
        let mut res: mpquic_incoming = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            mpquic_endpoint_recv(
                ep,
                buf.as_mut_ptr(),
                len as usize,
                &ri,
                now,
                out.as_mut_ptr(),
                out.len(),
                &mut res,
            )
        };
        assert_eq!(rc, 0);
        verdicts.push(res);
    }
}

/// The endpoint through the C API: garbage is dropped with no state, a
/// client's Initial makes a connection that mpquic_endpoint_poll hands out
/// and that completes its handshake, the same mpquic_conn pointer comes back
/// for its later datagrams, and misuse is refused.
#[test]
fn endpoint_accepts_routes_and_refuses_misuse() {
    unsafe {
        let (scfg, ccfg) = (config(true), config(false));
        let mut settings: mpquic_endpoint_config = std::mem::zeroed();
        assert_eq!(mpquic_endpoint_config_default(&mut settings), 0);
        settings.retry = false;
        let ep = mpquic_endpoint_new(scfg, &settings, 1_000);
        assert!(!ep.is_null());
        settings.cid_len = 30;
        assert!(mpquic_endpoint_new(scfg, &settings, 1_000).is_null(), "connection ID length checked");
        mpquic_config_free(scfg); // the endpoint keeps a copy

        let (sa, ca) = (Addr::new("127.0.0.1:4433"), Addr::new("127.0.0.1:5000"));
        let ri = mpquic_recv_info { from: ca.ptr(), from_len: ca.1, to: sa.ptr(), to_len: sa.1, ecn: 0 };
        // A version-1 Initial's header with garbage behind it: no state, no
        // reply (a short header would get a Stateless Reset).
        let (mut garbage, mut out) = ([0x5au8; 1200], [0u8; 1500]);
        garbage[..6].copy_from_slice(&[0xc3, 0, 0, 0, 1, 8]);
        let mut res: mpquic_incoming = std::mem::zeroed();
        let rc = mpquic_endpoint_recv(
            ep,
            garbage.as_mut_ptr(),
            1200,
            &ri,
            1_000,
            out.as_mut_ptr(),
            1500,
            &mut res,
        );
        assert_eq!((rc, res.kind), (0, mpquic_incoming_kind::MPQUIC_INCOMING_DROPPED));
        let rc = mpquic_endpoint_recv(
            ep,
            garbage.as_mut_ptr(),
            1200,
            null(),
            1_000,
            out.as_mut_ptr(),
            1500,
            &mut res,
        );
        assert_eq!(rc, MPQUIC_ERROR_INVALID_ARGUMENT as i32);

        let c = mpquic_connect(
            cstr("localhost").as_ptr(),
            null(),
            0,
            ca.ptr(),
            ca.1,
            sa.ptr(),
            sa.1,
            ccfg,
            1_000,
        );
        let first = client_to_endpoint(c, ep, 1_000);
        let accepted: Vec<_> =
            first.iter().filter(|r| r.kind == mpquic_incoming_kind::MPQUIC_INCOMING_ACCEPTED).collect();
        assert_eq!(accepted.len(), 1, "one connection for the client's Initial");
        let sconn = accepted[0].conn;
        assert!(mpquic_conn_is_server(sconn));
        let mut now = 1_000;
        for _ in 0..10 {
            now += 1_000_000;
            while let Some(s) = std::ptr::NonNull::new(mpquic_endpoint_poll(ep, now)) {
                assert_eq!(s.as_ptr(), sconn, "the same mpquic_conn for every datagram");
                pump(s.as_ptr(), c, now);
                assert_eq!(mpquic_endpoint_rearm(ep, s.as_ptr(), u64::MAX), 0);
            }
            for r in client_to_endpoint(c, ep, now) {
                assert!(r.conn.is_null() || r.conn == sconn);
            }
        }
        assert!(mpquic_conn_is_established(c) && mpquic_conn_is_established(sconn));
        let mut st: mpquic_endpoint_counters = std::mem::zeroed();
        assert_eq!(mpquic_endpoint_stats(ep, &mut st), 0);
        assert_eq!((st.connections, st.accepted, st.half_open), (1, 1, 0));
        assert!(st.dropped + st.undecryptable >= 1 && st.routed >= 1, "{st:?}");
        assert!(mpquic_endpoint_timeout_ns(ep) != u64::MAX);

        // The endpoint owns its connections: mpquic_conn_free leaves them;
        // a connection of no endpoint is refused by rearm and remove.
        mpquic_conn_free(sconn);
        assert!(mpquic_conn_is_established(sconn));
        assert_eq!(mpquic_endpoint_rearm(ep, c, u64::MAX), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        assert_eq!(mpquic_endpoint_remove(ep, c), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        let mut user = 7u8;
        mpquic_conn_set_user_data(sconn, (&mut user as *mut u8).cast());
        assert_eq!(mpquic_conn_user_data(sconn).cast::<u8>(), &mut user as *mut u8);
        assert_eq!(mpquic_endpoint_remove(ep, sconn), 0);
        assert_eq!(mpquic_endpoint_stats(ep, &mut st), 0);
        assert_eq!(st.connections, 0);
        mpquic_endpoint_free(ep);
        mpquic_conn_free(c);
        mpquic_config_free(ccfg);
    }
}

/// A client and a server joined directly (no validator): the client's first
/// datagram opens the server's connection. Returns (client, server).
unsafe fn direct_pair(
    ccfg: *const mpquic_config,
    scfg: *const mpquic_config,
    session: Option<&[u8]>,
    before_handshake: impl FnOnce(*mut mpquic_conn),
) -> (*mut mpquic_conn, *mut mpquic_conn) {
    unsafe {
        let (ca, sa) = (Addr::new("127.0.0.1:41001"), Addr::new("127.0.0.1:41002"));
        let (sess, sess_len) = session.map_or((null(), 0), |s| (s.as_ptr(), s.len()));
        let name = cstr("localhost");
        let c = mpquic_connect_with_session(
            name.as_ptr(),
            null(),
            0,
            ca.ptr(),
            ca.1,
            sa.ptr(),
            sa.1,
            sess,
            sess_len,
            ccfg,
            1_000,
        );
        assert!(!c.is_null());
        before_handshake(c);
        let mut buf = [0u8; 1500];
        let mut si: mpquic_send_info = std::mem::zeroed();
        let len = mpquic_conn_send(c, buf.as_mut_ptr(), buf.len(), &mut si, 1_000);
        assert!(len > 0);
        let mut dcid = [0u8; 20];
        let dl = mpquic_header_dcid(buf.as_ptr(), len as usize, 16, dcid.as_mut_ptr(), 20);
        assert!(dl > 0);
        let scid = [7u8; 16];
        let s = mpquic_accept(
            scid.as_ptr(),
            16,
            dcid.as_ptr(),
            dl as usize,
            null(),
            0,
            sa.ptr(),
            sa.1,
            ca.ptr(),
            ca.1,
            scfg,
            1_000,
        );
        assert!(!s.is_null());
        let ri = mpquic_recv_info { from: ca.ptr(), from_len: ca.1, to: sa.ptr(), to_len: sa.1, ecn: 0 };
        assert!(mpquic_conn_recv(s, buf.as_mut_ptr(), len as usize, &ri, 1_000) > 0);
        (c, s)
    }
}

/// Session resumption and 0-RTT through the C API: the first connection
/// leaves a session; the second resumes it and its request goes in 0-RTT,
/// which the server accepts and reads.
#[test]
fn resumption_and_early_data_from_c() {
    unsafe {
        let (ccfg, scfg) = (config(false), config(true));
        for cfg in [ccfg, scfg] {
            assert_eq!(mpquic_config_enable_session_tickets(cfg, true), 0);
            assert_eq!(mpquic_config_enable_early_data(cfg, true), 0);
        }
        assert_eq!(mpquic_config_enable_early_data(null_mut(), true), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        let (c, s) = direct_pair(ccfg, scfg, None, |_| {});
        let mut now = 2_000u64;
        let mut session = vec![0u8; 8192];
        let mut n = MPQUIC_ERROR_DONE as i64;
        for _ in 0..20 {
            now += 1_000_000;
            pump(c, s, now);
            pump(s, c, now);
            n = mpquic_conn_session(c, session.as_mut_ptr(), session.len());
            if n > 0 {
                break;
            }
        }
        assert!(n > 0, "no session after the handshake: {n}");
        assert!(!mpquic_conn_is_resumed(c));
        assert_eq!(mpquic_conn_session(c, session.as_mut_ptr(), 4), MPQUIC_ERROR_BUFFER_TOO_SHORT as i64);
        session.truncate(n as usize);
        mpquic_conn_free(c);
        mpquic_conn_free(s);

        let request = b"GET /early\r\n";
        let (c, s) = direct_pair(ccfg, scfg, Some(&session), |c| {
            assert!(mpquic_conn_is_in_early_data(c), "0-RTT keys from the session");
            let w = mpquic_conn_stream_send(c, 0, request.as_ptr(), request.len(), true);
            assert_eq!(w, request.len() as isize, "written before the handshake");
        });
        let mut got = Vec::new();
        let mut fin_seen = false;
        for _ in 0..20 {
            now += 1_000_000;
            pump(c, s, now);
            pump(s, c, now);
            let mut fin = false;
            // Read in place: look, take two bytes, look again.
            let mut data = null();
            let r = mpquic_conn_stream_peek(s, 0, &mut data, &mut fin);
            if r > 0 {
                let take = (r as usize).min(2);
                got.extend_from_slice(std::slice::from_raw_parts(data, take));
                assert_eq!(mpquic_conn_stream_consume(s, 0, take, &mut fin), take as isize);
                fin_seen |= fin;
            } else {
                assert_eq!(r, MPQUIC_ERROR_DONE as isize);
            }
        }
        assert!(fin_seen, "the request's FIN was consumed");
        assert_eq!(
            mpquic_conn_stream_peek(s, 0, null_mut(), null_mut()),
            MPQUIC_ERROR_INVALID_ARGUMENT as isize
        );
        assert_eq!(got, request);
        assert!(mpquic_conn_is_established(c) && mpquic_conn_is_resumed(c) && mpquic_conn_is_resumed(s));
        assert!(mpquic_conn_is_early_data_accepted(c), "the server took the 0-RTT request");
        assert!(!mpquic_conn_is_in_early_data(c));
        let junk = [1u8, 2, 3];
        let ca = Addr::new("127.0.0.1:1");
        assert!(
            mpquic_connect_with_session(
                null(),
                null(),
                0,
                ca.ptr(),
                ca.1,
                ca.ptr(),
                ca.1,
                junk.as_ptr(),
                3,
                ccfg,
                0
            )
            .is_null(),
            "bytes that are not a session"
        );
        mpquic_conn_free(c);
        mpquic_conn_free(s);
        mpquic_config_free(ccfg);
        mpquic_config_free(scfg);
    }
}

/// Every record mpquic_conn_qlog_next hands out, appended as a file would.
unsafe fn drain_qlog(conn: *mut mpquic_conn, file: &mut Vec<u8>) {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = unsafe { mpquic_conn_qlog_next(conn, buf.as_mut_ptr(), buf.len()) };
        if n == MPQUIC_ERROR_DONE as i64 {
            return;
        }
        assert!(n > 0, "qlog_next failed: {n}");
        file.extend_from_slice(&buf[..n as usize]);
    }
}

/// qlog from C: the header record first (a buffer too short keeps it),
/// then the handshake's events, each framed for a JSON-SEQ file; a
/// connection without qlog has none.
#[test]
fn qlog_records_from_c() {
    unsafe {
        let (ccfg, scfg) = (config(false), config(true));
        assert_eq!(mpquic_config_enable_qlog(ccfg, true), 0);
        assert_eq!(mpquic_config_enable_qlog(null_mut(), true), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        let (c, s) = direct_pair(ccfg, scfg, None, |_| {});
        let mut small = [0u8; 8];
        assert_eq!(mpquic_conn_qlog_next(c, small.as_mut_ptr(), 8), MPQUIC_ERROR_BUFFER_TOO_SHORT as i64);
        assert_eq!(mpquic_conn_qlog_next(s, small.as_mut_ptr(), 8), MPQUIC_ERROR_DONE as i64, "qlog off");
        assert_eq!(mpquic_conn_qlog_next(c, null_mut(), 8), MPQUIC_ERROR_INVALID_ARGUMENT as i64);
        let mut file = Vec::new();
        let mut now = 2_000u64;
        for _ in 0..20 {
            now += 1_000_000;
            pump(c, s, now);
            pump(s, c, now);
            drain_qlog(c, &mut file);
        }
        assert!(mpquic_conn_is_established(c));
        let text = String::from_utf8(file).unwrap();
        assert!(text.starts_with('\u{1e}') && text.ends_with('\n'), "JSON-SEQ framing");
        let records: Vec<serde_json::Value> = text
            .split('\u{1e}')
            .skip(1)
            .map(|r| serde_json::from_str(r.strip_suffix('\n').expect("newline after each record")).unwrap())
            .collect();
        let header = &records[0];
        assert_eq!(header["file_schema"], "urn:ietf:params:qlog:file:sequential");
        assert_eq!(header["trace"]["vantage_point"]["type"], "client");
        assert_eq!(header["trace"]["vantage_point"]["name"], "libmpquic");
        let events = &records[1..];
        assert!(events.windows(2).all(|w| w[0]["time"].as_f64() <= w[1]["time"].as_f64()), "time order");
        let named = |n: &'static str| events.iter().filter(move |e| e["name"] == n);
        assert!(named("quic:packet_sent").count() > 2 && named("quic:packet_received").count() > 2);
        assert!(named("quic:parameters_set").count() > 0);
        assert!(named("quic:connection_state_updated").any(|e| e["data"]["new"] == "handshake_confirmed"));
        mpquic_conn_free(c);
        mpquic_conn_free(s);
        mpquic_config_free(ccfg);
        mpquic_config_free(scfg);
    }
}

/// The timestamp switch from C: offered with multipath by default (the
/// client's own transport parameters in its qlog say so), not once turned
/// off; a null config is refused.
#[test]
fn timestamps_switch_from_c() {
    unsafe {
        for on in [true, false] {
            let (ccfg, scfg) = (config(false), config(true));
            for cfg in [ccfg, scfg] {
                assert_eq!(mpquic_config_enable_multipath(cfg, 2), 0);
            }
            assert_eq!(mpquic_config_enable_qlog(ccfg, true), 0);
            if !on {
                assert_eq!(mpquic_config_enable_timestamps(ccfg, false), 0);
            }
            let (c, s) = direct_pair(ccfg, scfg, None, |_| {});
            let mut file = Vec::new();
            drain_qlog(c, &mut file);
            let text = String::from_utf8(file).unwrap();
            let local = text
                .split('\u{1e}')
                .find(|r| r.contains("quic:parameters_set") && r.contains("\"initiator\":\"local\""))
                .expect("local parameters_set");
            assert_eq!(local.contains("\"enable_time_stamp\":3"), on, "{local}");
            mpquic_conn_free(c);
            mpquic_conn_free(s);
            mpquic_config_free(ccfg);
            mpquic_config_free(scfg);
        }
        assert_eq!(mpquic_config_enable_timestamps(null_mut(), true), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
    }
}

/// A stream's unsent cap changed from C: the capacity follows it; an
/// unknown stream and a null connection are refused.
#[test]
fn stream_unsent_cap_from_c() {
    unsafe {
        let (ccfg, scfg) = (config(false), config(true));
        assert_eq!(mpquic_config_set_stream_send_unsent(ccfg, 1000), 0);
        let (c, s) = direct_pair(ccfg, scfg, None, |_| {});
        let mut now = 2_000u64;
        for _ in 0..10 {
            now += 1_000_000;
            pump(c, s, now);
            pump(s, c, now);
        }
        assert_eq!(mpquic_conn_stream_send(c, 0, b"x".as_ptr(), 0, false), 0);
        assert_eq!(mpquic_conn_stream_capacity(c, 0), 1000);
        assert_eq!(mpquic_conn_stream_set_send_unsent(c, 0, 3000), 0);
        assert_eq!(mpquic_conn_stream_capacity(c, 0), 3000);
        assert!(mpquic_conn_stream_set_send_unsent(c, 8, 3000) < 0);
        assert_eq!(
            mpquic_conn_stream_set_send_unsent(null_mut(), 0, 1),
            MPQUIC_ERROR_INVALID_ARGUMENT as i32
        );
        mpquic_conn_free(c);
        mpquic_conn_free(s);
        mpquic_config_free(ccfg);
        mpquic_config_free(scfg);
    }
}

#[test]
fn a_panic_inside_returns_mpquic_error_internal() {
    crate::fault::arm();
    let mut out = [0u8; 8];
    // SAFETY: `out` holds 8 writable bytes.
    let r = unsafe { crate::mpquic_random_cid(out.as_mut_ptr(), out.len()) };
    assert!(!crate::fault::disarm(), "the call did not reach guard");
    assert_eq!(r, MPQUIC_ERROR_INTERNAL.code());
    crate::fault::arm();
    let cfg = crate::mpquic_config_new();
    assert!(cfg.is_null() && !crate::fault::disarm());
}

unsafe extern "C" fn purge_b(data: *const u8, len: usize, user: *mut std::ffi::c_void) -> bool {
    // SAFETY: mpquic passes `len` readable bytes and our counter.
    unsafe {
        *user.cast::<u32>() += 1;
        len > 0 && *data == b'b'
    }
}

/// DATAGRAM frames from C: queued, purged, sent, read, counted; refused
/// before the peer's parameters are known and when too large.
#[test]
fn datagrams_from_c() {
    unsafe {
        let (ccfg, scfg) = (config(false), config(true));
        for cfg in [ccfg, scfg] {
            assert_eq!(mpquic_config_enable_dgram(cfg, true, 2, 8), 0);
        }
        assert_eq!(mpquic_config_enable_dgram(null_mut(), true, 1, 1), MPQUIC_ERROR_INVALID_ARGUMENT as i32);
        let early = |c| {
            let r = mpquic_conn_dgram_send(c, b"x".as_ptr(), 1);
            assert_eq!(r, MPQUIC_ERROR_INVALID_STATE as isize, "before the peer's parameters");
        };
        let (c, s) = direct_pair(ccfg, scfg, None, early);
        let mut now = 2_000u64;
        for _ in 0..10 {
            now += 1_000_000;
            pump(c, s, now);
            pump(s, c, now);
        }
        let max = mpquic_conn_dgram_max_writable_len(c);
        assert!(max > 1000, "{max}");
        let big = vec![0u8; max as usize + 1];
        assert_eq!(
            mpquic_conn_dgram_send(c, big.as_ptr(), big.len()),
            MPQUIC_ERROR_BUFFER_TOO_SHORT as isize
        );
        for d in [&b"a1"[..], b"b2", b"a3"] {
            assert_eq!(mpquic_conn_dgram_send(c, d.as_ptr(), d.len()), 0);
        }
        let mut calls = 0u32;
        let user = (&mut calls as *mut u32).cast();
        assert_eq!(mpquic_conn_dgram_purge_outgoing(c, Some(purge_b), user), 0);
        assert_eq!(calls, 3);
        let mut q = mpquic_dgram_queues::default();
        assert_eq!(mpquic_conn_dgram_queues(c, &mut q), 0);
        assert_eq!((q.send_len, q.send_bytes, q.send_full), (2, 4, false));
        now += 1_000_000;
        pump(c, s, now);
        assert_eq!(mpquic_conn_dgram_queues(s, &mut q), 0);
        assert_eq!((q.recv_len, q.recv_bytes, q.recv_full), (2, 4, true));
        assert_eq!(mpquic_conn_dgram_recv_front_len(s), 2);
        let mut buf = [0u8; 16];
        assert_eq!(mpquic_conn_dgram_recv(s, buf.as_mut_ptr(), 1), MPQUIC_ERROR_BUFFER_TOO_SHORT as isize);
        assert_eq!(mpquic_conn_dgram_recv(s, buf.as_mut_ptr(), buf.len()), 2);
        assert_eq!(&buf[..2], b"a1");
        assert_eq!(mpquic_conn_dgram_recv(s, buf.as_mut_ptr(), buf.len()), 2);
        assert_eq!(&buf[..2], b"a3");
        assert_eq!(mpquic_conn_dgram_recv(s, buf.as_mut_ptr(), buf.len()), MPQUIC_ERROR_DONE as isize);
        assert_eq!(mpquic_conn_dgram_recv_front_len(s), MPQUIC_ERROR_DONE as isize);
        let mut st: mpquic_stats = std::mem::zeroed();
        assert_eq!(mpquic_conn_stats(s, &mut st), 0);
        assert_eq!((st.dgram_recv, st.dgram_dropped), (2, 0));
        assert_eq!(
            mpquic_conn_dgram_send(null_mut(), buf.as_ptr(), 1),
            MPQUIC_ERROR_INVALID_ARGUMENT as isize
        );
        mpquic_conn_free(c);
        mpquic_conn_free(s);
        mpquic_config_free(ccfg);
        mpquic_config_free(scfg);
    }
}

/// The C API is for real networks: a config with the simulator's AEAD (which
/// C cannot select; here through the engine) makes no endpoint and no
/// connection.
#[test]
fn the_simulators_aead_is_refused() {
    unsafe {
        let (scfg, ccfg) = (config(true), config(false));
        (*scfg).inner.use_sim_aead(true);
        (*ccfg).inner.use_sim_aead(true);
        let mut settings: mpquic_endpoint_config = std::mem::zeroed();
        assert_eq!(mpquic_endpoint_config_default(&mut settings), 0);
        assert!(mpquic_endpoint_new(scfg, &settings, 1_000).is_null());
        let (ca, sa) = (Addr::new("127.0.0.1:41001"), Addr::new("127.0.0.1:41002"));
        let name = cstr("localhost");
        let connect = |cfg| {
            mpquic_connect_with_session(
                name.as_ptr(),
                null(),
                0,
                ca.ptr(),
                ca.1,
                sa.ptr(),
                sa.1,
                null(),
                0,
                cfg,
                1_000,
            )
        };
        assert!(connect(ccfg).is_null());
        let cid = [7u8; 8];
        let accept = |cfg| {
            mpquic_accept(
                cid.as_ptr(),
                8,
                cid.as_ptr(),
                8,
                null(),
                0,
                sa.ptr(),
                sa.1,
                ca.ptr(),
                ca.1,
                cfg,
                1_000,
            )
        };
        assert!(accept(scfg).is_null());
        (*scfg).inner.use_sim_aead(false);
        (*ccfg).inner.use_sim_aead(false);
        let c = connect(ccfg);
        let s = accept(scfg);
        assert!(!c.is_null() && !s.is_null());
        mpquic_conn_free(c);
        mpquic_conn_free(s);
        mpquic_config_free(scfg);
        mpquic_config_free(ccfg);
    }
}
