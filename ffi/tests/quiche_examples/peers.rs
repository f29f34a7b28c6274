//! In-process quiche (the Rust crate) peers on real UDP sockets, for the C
//! examples built on libmpquic to talk to: an HTTP/3 server and client, and
//! the raw-QUIC "hq-interop" server and client that quiche's client.c /
//! server.c expect (a request line on a client stream, the response body
//! back with FIN). quiche reads the clock itself; so do these loops.

#![allow(clippy::disallowed_methods)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use quiche::h3::NameValue;

use super::root;

const HQ_ALPN: &[u8] = b"hq-interop";

fn config(server: bool, alpn: &[u8]) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("quiche config");
    let certs = root().join("tests/certs");
    if server {
        c.load_cert_chain_from_pem_file(certs.join("cert.pem").to_str().unwrap()).unwrap();
        c.load_priv_key_from_pem_file(certs.join("key.pem").to_str().unwrap()).unwrap();
    } else {
        c.load_verify_locations_from_file(certs.join("rootca.pem").to_str().unwrap()).unwrap();
        c.verify_peer(true);
    }
    c.set_application_protos(&[alpn]).unwrap();
    c.set_max_idle_timeout(5000);
    c.set_max_recv_udp_payload_size(1350);
    c.set_max_send_udp_payload_size(1350);
    c.set_initial_max_data(10_000_000);
    c.set_initial_max_stream_data_bidi_local(1_000_000);
    c.set_initial_max_stream_data_bidi_remote(1_000_000);
    c.set_initial_max_stream_data_uni(1_000_000);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c
}

fn cid() -> Vec<u8> {
    (0..16).map(|i| (i * 37 + std::process::id() as usize) as u8).collect()
}

/// Drive `conn` on `sock` until it closes (or `limit` passes): datagrams
/// in, `app` after each wake-up, everything it has to send out.
fn run(
    sock: &UdpSocket,
    conn: &mut quiche::Connection,
    limit: Duration,
    mut app: impl FnMut(&mut quiche::Connection),
) {
    let local = sock.local_addr().unwrap();
    let deadline = Instant::now() + limit;
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; 1350];
    loop {
        while let Ok((n, info)) = conn.send(&mut out) {
            let _ = sock.send_to(&out[..n], info.to);
        }
        if conn.is_closed() || Instant::now() > deadline {
            return;
        }
        let wait = conn
            .timeout()
            .unwrap_or(Duration::from_millis(100))
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        sock.set_read_timeout(Some(wait)).unwrap();
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let _ = conn.recv(&mut buf[..n], quiche::RecvInfo { from, to: local });
                // Take what else is queued before answering.
                sock.set_nonblocking(true).unwrap();
                while let Ok((n, from)) = sock.recv_from(&mut buf) {
                    let _ = conn.recv(&mut buf[..n], quiche::RecvInfo { from, to: local });
                }
                sock.set_nonblocking(false).unwrap();
            }
            Err(_) => conn.on_timeout(),
        }
        app(conn);
    }
}

/// A server socket on loopback and the connection of the first client
/// whose Initial arrives (no Retry).
fn accept(sock: &UdpSocket, alpn: &[u8]) -> Option<quiche::Connection> {
    let local = sock.local_addr().unwrap();
    let mut buf = vec![0u8; 65535];
    sock.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let (n, from) = sock.recv_from(&mut buf).ok()?;
    let hdr = quiche::Header::from_slice(&mut buf[..n], quiche::MAX_CONN_ID_LEN).ok()?;
    if hdr.ty != quiche::Type::Initial {
        return None;
    }
    let scid = cid();
    let mut conn =
        quiche::accept(&quiche::ConnectionId::from_ref(&scid), None, local, from, &mut config(true, alpn))
            .ok()?;
    conn.recv(&mut buf[..n], quiche::RecvInfo { from, to: local }).ok()?;
    Some(conn)
}

/// A quiche HTTP/3 server answering every request with `body`; serves one
/// connection on its own thread. Returns its address.
pub fn h3_server(body: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let Some(mut conn) = accept(&sock, b"h3") else { return };
        let mut h3: Option<quiche::h3::Connection> = None;
        // Streams being answered and how much of the body went out.
        let mut sending: Vec<(u64, usize)> = Vec::new();
        run(&sock, &mut conn, Duration::from_secs(60), |conn| {
            if h3.is_none() && conn.is_established() {
                h3 = quiche::h3::Connection::with_transport(conn, &quiche::h3::Config::new().unwrap()).ok();
            }
            let Some(h) = h3.as_mut() else { return };
            while let Ok((id, ev)) = h.poll(conn) {
                if let quiche::h3::Event::Headers { .. } = ev {
                    let len = body.len().to_string();
                    let hs = [
                        quiche::h3::Header::new(b":status", b"200"),
                        quiche::h3::Header::new(b"content-length", len.as_bytes()),
                    ];
                    if h.send_response(conn, id, &hs, false).is_ok() {
                        sending.push((id, 0));
                    }
                }
            }
            for (id, off) in sending.iter_mut() {
                while *off < body.len() {
                    match h.send_body(conn, *id, &body[*off..], true) {
                        Ok(n) if n > 0 => *off += n,
                        _ => break,
                    }
                }
            }
        });
    });
    (addr, t)
}

/// A quiche HTTP/3 client: GET / from `peer`; returns the response body
/// (None if the exchange did not finish).
pub fn h3_get(peer: SocketAddr) -> Option<Vec<u8>> {
    h3_get_path(peer, "/")
}

/// The body of a GET of `path` from `peer` with quiche's HTTP/3 client.
pub fn h3_get_path(peer: SocketAddr, path: &str) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = sock.local_addr().unwrap();
    let scid = cid();
    let mut conn = quiche::connect(
        Some("localhost"),
        &quiche::ConnectionId::from_ref(&scid),
        local,
        peer,
        &mut config(false, b"h3"),
    )
    .ok()?;
    let mut h3: Option<quiche::h3::Connection> = None;
    let (mut body, mut done) = (Vec::new(), false);
    let mut buf = vec![0u8; 65535];
    run(&sock, &mut conn, Duration::from_secs(60), |conn| {
        if h3.is_none() && conn.is_established() {
            let mut h =
                quiche::h3::Connection::with_transport(conn, &quiche::h3::Config::new().unwrap()).ok();
            let req = [
                quiche::h3::Header::new(b":method", b"GET"),
                quiche::h3::Header::new(b":scheme", b"https"),
                quiche::h3::Header::new(b":authority", b"localhost"),
                quiche::h3::Header::new(b":path", path.as_bytes()),
            ];
            if let Some(h) = h.as_mut() {
                h.send_request(conn, &req, true).ok();
            }
            h3 = h;
        }
        let Some(h) = h3.as_mut() else { return };
        while let Ok((id, ev)) = h.poll(conn) {
            match ev {
                quiche::h3::Event::Headers { list, .. } => {
                    assert!(list.iter().any(|x| x.name() == b":status" && x.value() == b"200"));
                }
                quiche::h3::Event::Data => {
                    while let Ok(n) = h.recv_body(conn, id, &mut buf) {
                        body.extend_from_slice(&buf[..n]);
                    }
                }
                quiche::h3::Event::Finished => {
                    done = true;
                    let _ = conn.close(true, 0, b"");
                }
                _ => {}
            }
        }
    });
    done.then_some(body)
}

/// A quiche raw-QUIC server (hq-interop): on each client stream's FIN it
/// answers with `body` and FIN. One connection, on its own thread.
pub fn hq_server(body: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let Some(mut conn) = accept(&sock, HQ_ALPN) else { return };
        let mut sending: Vec<(u64, usize)> = Vec::new();
        let mut buf = vec![0u8; 65535];
        run(&sock, &mut conn, Duration::from_secs(60), |conn| {
            for id in conn.readable() {
                while let Ok((_, fin)) = conn.stream_recv(id, &mut buf) {
                    if fin {
                        sending.push((id, 0));
                    }
                }
            }
            for (id, off) in sending.iter_mut() {
                while *off < body.len() {
                    match conn.stream_send(*id, &body[*off..], true) {
                        Ok(n) if n > 0 => *off += n,
                        _ => break,
                    }
                }
            }
        });
    });
    (addr, t)
}

/// A quiche raw-QUIC client (hq-interop): sends `request` on stream 0 with
/// FIN and returns what comes back until FIN (None if it did not finish).
pub fn hq_get(peer: SocketAddr, request: &[u8]) -> Option<Vec<u8>> {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = sock.local_addr().unwrap();
    let scid = cid();
    let mut conn = quiche::connect(
        Some("localhost"),
        &quiche::ConnectionId::from_ref(&scid),
        local,
        peer,
        &mut config(false, HQ_ALPN),
    )
    .ok()?;
    let (mut sent, mut body, mut done) = (false, Vec::new(), false);
    let mut buf = vec![0u8; 65535];
    run(&sock, &mut conn, Duration::from_secs(60), |conn| {
        if conn.is_established() && !sent {
            sent = conn.stream_send(0, request, true).is_ok();
        }
        while let Ok((n, fin)) = conn.stream_recv(0, &mut buf) {
            body.extend_from_slice(&buf[..n]);
            if fin && !done {
                done = true;
                let _ = conn.close(true, 0, b"");
            }
        }
    });
    done.then_some(body)
}
