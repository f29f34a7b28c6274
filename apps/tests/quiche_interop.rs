//! HTTP/3 interop with quiche 0.30: a `quiche::h3` client downloads from the
//! mpquic-server binary, and the mpquic-client binary downloads from a
//! `quiche::h3` server written here. 24 MB each way, checked by SHA-256.

#![allow(clippy::disallowed_methods)]

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::*;
use quiche::h3::NameValue;

fn quiche_config(server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL).unwrap();
    if server {
        c.load_cert_chain_from_pem_file(&cert("cert.pem")).unwrap();
        c.load_priv_key_from_pem_file(&cert("key.pem")).unwrap();
        c.verify_peer(false);
    } else {
        c.load_verify_locations_from_file(&cert("rootca.pem")).unwrap();
        c.verify_peer(true);
    }
    c.set_max_idle_timeout(10_000);
    c.set_max_recv_udp_payload_size(1350);
    c.set_max_send_udp_payload_size(1350);
    c.set_initial_max_data(32 << 20);
    c.set_initial_max_stream_data_bidi_local(32 << 20);
    c.set_initial_max_stream_data_bidi_remote(32 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c
}

/// Send everything quiche has to send now.
fn flush(conn: &mut quiche::Connection, sock: &UdpSocket, out: &mut [u8]) {
    loop {
        match conn.send(out) {
            Ok((n, info)) => {
                let _ = sock.send_to(&out[..n], info.to);
            }
            Err(quiche::Error::Done) => return,
            Err(e) => panic!("quiche send: {e:?}"),
        }
    }
}

/// Wait for one datagram (or quiche's timer) and feed it in.
fn step(conn: &mut quiche::Connection, sock: &UdpSocket, buf: &mut [u8]) {
    let wait = conn
        .timeout()
        .unwrap_or(Duration::from_millis(50))
        .clamp(Duration::from_millis(1), Duration::from_millis(50));
    sock.set_read_timeout(Some(wait)).unwrap();
    let local = sock.local_addr().unwrap();
    let mut got = false;
    loop {
        match sock.recv_from(buf) {
            Ok((n, from)) => {
                got = true;
                let _ = conn.recv(&mut buf[..n], quiche::RecvInfo { from, to: local });
                sock.set_nonblocking(true).unwrap();
            }
            Err(_) => break,
        }
    }
    sock.set_nonblocking(false).unwrap();
    if !got || conn.timeout() == Some(Duration::ZERO) {
        conn.on_timeout();
    }
}

#[test]
fn quiche_h3_client_downloads_from_mpquic_server() {
    let dir = tempdir("qclient");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let data = content(BIG, 11);
    std::fs::write(root.join("big.bin"), &data).unwrap();
    // Retry is on by default: quiche's client follows it.
    let srv = ServerProc::start(&root, &[]);

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = sock.local_addr().unwrap();
    let mut cfg = quiche_config(false);
    let scid_b = mpquic::random_cid(16);
    let scid = quiche::ConnectionId::from_ref(scid_b.as_slice());
    let mut conn = quiche::connect(Some("localhost"), &scid, local, srv.addr, &mut cfg).unwrap();
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; 1500];
    let mut h3: Option<quiche::h3::Connection> = None;
    let mut body = Vec::with_capacity(BIG);
    let mut status = None;
    let mut finished = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !finished {
        assert!(Instant::now() < deadline, "download timed out at {} bytes", body.len());
        assert!(!conn.is_closed(), "connection closed: {:?} {:?}", conn.peer_error(), conn.local_error());
        flush(&mut conn, &sock, &mut out);
        step(&mut conn, &sock, &mut buf);
        if conn.is_established() && h3.is_none() {
            let mut h =
                quiche::h3::Connection::with_transport(&mut conn, &quiche::h3::Config::new().unwrap())
                    .unwrap();
            let req = [
                quiche::h3::Header::new(b":method", b"GET"),
                quiche::h3::Header::new(b":scheme", b"https"),
                quiche::h3::Header::new(b":authority", b"localhost"),
                quiche::h3::Header::new(b":path", b"/big.bin"),
                quiche::h3::Header::new(b"user-agent", b"quiche-test"),
            ];
            h.send_request(&mut conn, &req, true).unwrap();
            h3 = Some(h);
        }
        let Some(h) = h3.as_mut() else { continue };
        loop {
            match h.poll(&mut conn) {
                Ok((_, quiche::h3::Event::Headers { list, .. })) => {
                    status = list.iter().find(|h| h.name() == b":status").map(|h| h.value().to_vec());
                }
                Ok((id, quiche::h3::Event::Data)) => {
                    while let Ok(n) = h.recv_body(&mut conn, id, &mut buf) {
                        body.extend_from_slice(&buf[..n]);
                    }
                }
                Ok((_, quiche::h3::Event::Finished)) => finished = true,
                Ok((_, quiche::h3::Event::Reset(code))) => panic!("stream reset {code}"),
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(e) => panic!("h3: {e:?}"),
            }
        }
    }
    conn.close(true, 0x100, b"").unwrap();
    flush(&mut conn, &sock, &mut out);
    assert_eq!(status.as_deref(), Some(&b"200"[..]));
    assert_eq!(body.len(), BIG);
    assert_eq!(sha256(&body), sha256(&data));
}

/// A minimal quiche HTTP/3 file server for one connection: serves `body`
/// at any path until the client closes.
fn quiche_server(sock: UdpSocket, body: Vec<u8>) {
    let local = sock.local_addr().unwrap();
    let mut cfg = quiche_config(true);
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; 1500];
    // The first Initial creates the connection.
    sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (n, from) = sock.recv_from(&mut buf).unwrap();
    let hdr = quiche::Header::from_slice(&mut buf[..n], quiche::MAX_CONN_ID_LEN).unwrap();
    let scid_b = mpquic::random_cid(16);
    let scid = quiche::ConnectionId::from_ref(scid_b.as_slice());
    let _ = hdr;
    let mut conn = quiche::accept(&scid, None, local, from, &mut cfg).unwrap();
    conn.recv(&mut buf[..n], quiche::RecvInfo { from, to: local }).unwrap();
    let mut h3: Option<quiche::h3::Connection> = None;
    // stream -> bytes of body sent
    let mut sending: Vec<(u64, usize)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !conn.is_closed() && Instant::now() < deadline {
        flush(&mut conn, &sock, &mut out);
        step(&mut conn, &sock, &mut buf);
        if conn.is_established() && h3.is_none() {
            h3 = Some(
                quiche::h3::Connection::with_transport(&mut conn, &quiche::h3::Config::new().unwrap())
                    .unwrap(),
            );
        }
        let Some(h) = h3.as_mut() else { continue };
        loop {
            match h.poll(&mut conn) {
                Ok((id, quiche::h3::Event::Headers { .. })) => {
                    let resp = [
                        quiche::h3::Header::new(b":status", b"200"),
                        quiche::h3::Header::new(b"server", b"quiche-test"),
                        quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
                    ];
                    h.send_response(&mut conn, id, &resp, false).unwrap();
                    sending.push((id, 0));
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(_) => break,
            }
        }
        for (id, off) in sending.iter_mut() {
            while *off < body.len() {
                match h.send_body(&mut conn, *id, &body[*off..], true) {
                    Ok(n) if n > 0 => *off += n,
                    _ => break,
                }
            }
        }
        sending.retain(|(_, off)| *off < body.len());
    }
}

#[test]
fn mpquic_client_downloads_from_quiche_h3_server() {
    let dir = tempdir("qserver");
    let data = content(BIG, 13);
    let sum = sha256(&data);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = sock.local_addr().unwrap();
    let server = std::thread::spawn(move || quiche_server(sock, data));
    let out = dir.join("out.bin");
    let r = client(&[
        &format!("https://localhost:{}/big.bin", addr.port()),
        "--ca",
        &cert("rootca.pem"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(sha256_file(&out), sum);
    server.join().unwrap();
}
