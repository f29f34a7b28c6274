//! In-memory handshakes between a client and a server `TlsSession`.

use std::path::PathBuf;

use super::*;
use crate::crypto::{CryptoError, TAG_LEN};

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/certs")
}

fn server_config(alpn: &[&[u8]]) -> TlsConfig {
    TlsConfig::server()
        .alpn(alpn)
        .cert_chain_file(certs().join("cert.pem"))
        .private_key_file(certs().join("key.pem"))
        .build()
        .unwrap()
}

fn client_builder(alpn: &[&[u8]]) -> TlsConfigBuilder {
    TlsConfig::client().alpn(alpn).ca_file(certs().join("rootca.pem"))
}

/// One endpoint: its session and the keys it has been given, per level.
struct Side {
    tls: TlsSession,
    read: [Option<Keys>; 4],
    write: [Option<Keys>; 4],
    params: Vec<u8>,
}

impl Side {
    fn new(config: &TlsConfig, sni: Option<&str>, params: &[u8]) -> Side {
        Side {
            tls: TlsSession::new(config, sni, params).unwrap(),
            read: Default::default(),
            write: Default::default(),
            params: params.to_vec(),
        }
    }

    fn collect_keys(&mut self) {
        while let Some((level, dir, keys)) = self.tls.take_new_keys() {
            let slot = match dir {
                Direction::Read => &mut self.read[level.index()],
                Direction::Write => &mut self.write[level.index()],
            };
            assert!(slot.is_none(), "keys installed twice for {level:?} {dir:?}");
            *slot = Some(keys);
        }
    }
}

/// Moves every pending handshake byte from `from` to `to`; returns whether
/// anything moved.
fn pump(from: &mut Side, to: &mut Side) -> Result<bool, TlsError> {
    let mut moved = false;
    while let Some((level, data)) = from.tls.take_outgoing() {
        assert!(!data.is_empty());
        moved = true;
        to.tls.provide_data(level, &data)?;
        to.tls.advance()?;
        to.collect_keys();
    }
    Ok(moved)
}

/// Which side failed, and how.
#[derive(Debug)]
enum Failure {
    Client(TlsError),
    Server(TlsError),
}

fn handshake(client: &mut Side, server: &mut Side) -> Result<(), Failure> {
    client.tls.advance().map_err(Failure::Client)?;
    client.collect_keys();
    for _ in 0..10 {
        let a = pump(client, server).map_err(Failure::Server)?;
        let b = pump(server, client).map_err(Failure::Client)?;
        if !a && !b {
            return Ok(());
        }
    }
    panic!("handshake did not settle");
}

fn pair(client_cfg: &TlsConfig, server_cfg: &TlsConfig, sni: Option<&str>) -> (Side, Side) {
    (
        Side::new(client_cfg, sni, b"client transport params"),
        Side::new(server_cfg, None, b"server transport params \x01\x02"),
    )
}

/// Seals with `w` and opens with `r`: they must be the two ends of one key.
fn round_trip(w: &Keys, r: &Keys, pn: u64, path: u32) {
    let mut pkt = [&[0x40u8, 0xaa, 0xbb][..], b"payload bytes", &[0u8; TAG_LEN]].concat();
    w.packet.seal_packet(pn, path, &mut pkt, 3).unwrap();
    assert_eq!(r.packet.open_packet(pn, path, &mut pkt, 3), Ok(13));
    assert_eq!(&pkt[3..16], b"payload bytes");
    assert_eq!(w.header.mask(&[1u8; 16]), r.header.mask(&[1u8; 16]));
}

#[test]
fn full_handshake_with_verification() {
    let keylog = std::env::temp_dir().join(format!("mpquic-keylog-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&keylog);
    let client_cfg = client_builder(&[b"hq-interop", b"h3"]).keylog_file(&keylog).build().unwrap();
    let server_cfg = server_config(&[b"h3", b"hq-interop"]);
    let (mut c, mut s) = pair(&client_cfg, &server_cfg, Some("localhost"));
    handshake(&mut c, &mut s).unwrap();

    assert!(c.tls.is_handshake_complete() && s.tls.is_handshake_complete());
    assert!(!c.tls.is_server() && s.tls.is_server());
    // Server preference wins.
    assert_eq!(c.tls.alpn(), Some(&b"h3"[..]));
    assert_eq!(s.tls.alpn(), Some(&b"h3"[..]));
    assert_eq!(c.tls.peer_transport_params(), Some(&s.params[..]));
    assert_eq!(s.tls.peer_transport_params(), Some(&c.params[..]));
    assert_eq!(s.tls.server_name(), Some("localhost"));
    assert_eq!(c.tls.server_name(), Some("localhost"));
    assert!(c.tls.peer_verified());
    assert_eq!(c.tls.verify_result(), 0);
    assert!(!s.tls.peer_verified(), "server did not ask for a client certificate");
    assert_eq!(c.tls.algorithm(), s.tls.algorithm());
    assert!(c.tls.algorithm().is_some());
    assert_eq!(c.tls.read_level(), Level::OneRtt);
    assert_eq!(s.tls.write_level(), Level::OneRtt);

    // TLS gives Handshake and 1-RTT secrets (Initial comes from the DCID,
    // 0-RTT is refused); each write key matches the peer's read key.
    for lvl in [Level::Initial, Level::ZeroRtt] {
        assert!(c.read[lvl.index()].is_none() && s.write[lvl.index()].is_none());
    }
    for lvl in [Level::Handshake, Level::OneRtt] {
        let i = lvl.index();
        let (cw, cr) = (c.write[i].as_ref().unwrap(), c.read[i].as_ref().unwrap());
        let (sw, sr) = (s.write[i].as_ref().unwrap(), s.read[i].as_ref().unwrap());
        round_trip(cw, sr, 1, 0);
        round_trip(sw, cr, 2, 0);
        assert_ne!(cw.secret.as_bytes(), sw.secret.as_bytes());
    }

    // Key update: generation 1 differs from generation 0 and still pairs up,
    // also on a non-zero path.
    let i = Level::OneRtt.index();
    let c1 = c.write[i].as_ref().unwrap().next().unwrap();
    let s1 = s.read[i].as_ref().unwrap().next().unwrap();
    assert_ne!(c1.secret.as_bytes(), c.write[i].as_ref().unwrap().secret.as_bytes());
    round_trip(&c1, &s1, 100, 3);
    let mut pkt = [&[0x44u8, 1, 2][..], b"x", &[0u8; TAG_LEN]].concat();
    c1.packet.seal_packet(5, 0, &mut pkt, 3).unwrap();
    let gen0 = s.read[i].as_ref().unwrap();
    assert_eq!(gen0.packet.open_packet(5, 0, &mut pkt, 3), Err(CryptoError::DecryptFailed));

    // The key log has the TLS 1.3 secrets, one per line.
    let log = std::fs::read_to_string(&keylog).unwrap();
    for label in
        ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0"]
    {
        assert!(log.lines().any(|l| l.starts_with(label)), "{label} missing from key log");
    }
    let _ = std::fs::remove_file(&keylog);
}

#[test]
fn verification_by_ip_address() {
    let client_cfg = client_builder(&[b"h3"]).build().unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"h3"]), Some("127.0.0.1"));
    handshake(&mut c, &mut s).unwrap();
    assert!(c.tls.peer_verified());
    // IP literals are not sent as SNI.
    assert_eq!(s.tls.server_name(), None);
}

#[test]
fn alpn_mismatch_is_0x178() {
    let client_cfg = client_builder(&[b"h3"]).build().unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"hq-interop"]), Some("localhost"));
    match handshake(&mut c, &mut s) {
        Err(Failure::Server(e)) => {
            assert_eq!(e.code, ErrorCode(0x178));
            assert_eq!(e.alert(), Some(120));
            assert_eq!(TransportError::from(e).code, ErrorCode(0x178));
        }
        other => panic!("expected server failure, got {other:?}"),
    }
}

#[test]
fn wrong_ca_fails_with_crypto_error() {
    let client_cfg = TlsConfig::client().alpn(&[b"h3"]).ca_file(certs().join("otherca.pem")).build().unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"h3"]), Some("localhost"));
    match handshake(&mut c, &mut s) {
        Err(Failure::Client(e)) => {
            let alert = e.alert().expect("a crypto error");
            // unknown_ca (48) or bad_certificate (42), depending on BoringSSL's mapping.
            assert!(alert == 48 || alert == 42, "alert {alert}: {e}");
            assert!(!c.tls.is_handshake_complete());
        }
        other => panic!("expected client failure, got {other:?}"),
    }
}

#[test]
fn wrong_host_name_fails() {
    let client_cfg = client_builder(&[b"h3"]).build().unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"h3"]), Some("example.com"));
    match handshake(&mut c, &mut s) {
        Err(Failure::Client(e)) => assert!(e.alert().is_some(), "{e}"),
        other => panic!("expected client failure, got {other:?}"),
    }
}

#[test]
fn verification_opt_out() {
    let client_cfg = TlsConfig::client()
        .alpn(&[b"h3"])
        .ca_file(certs().join("otherca.pem"))
        .verify_peer(false)
        .build()
        .unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"h3"]), Some("localhost"));
    handshake(&mut c, &mut s).unwrap();
    assert!(c.tls.is_handshake_complete());
    assert!(!c.tls.peer_verified());
}

#[test]
fn cipher_preference_is_honoured() {
    for alg in [Algorithm::ChaCha20Poly1305, Algorithm::Aes256Gcm, Algorithm::Aes128Gcm] {
        let client_cfg = client_builder(&[b"h3"]).ciphers(&[alg]).build().unwrap();
        let (mut c, mut s) = pair(&client_cfg, &server_config(&[b"h3"]), Some("localhost"));
        handshake(&mut c, &mut s).unwrap();
        assert_eq!(c.tls.algorithm(), Some(alg));
        let i = Level::OneRtt.index();
        let (cw, sr) = (c.write[i].as_ref().unwrap(), s.read[i].as_ref().unwrap());
        assert_eq!(cw.packet.algorithm(), alg);
        assert_eq!(cw.secret.as_bytes().len(), alg.hash().output_len());
        round_trip(cw, sr, 9, 1);
        round_trip(&cw.next().unwrap(), &sr.next().unwrap(), 10, 0);
    }
}

#[test]
fn client_certificates_when_server_verifies() {
    let server_cfg = TlsConfig::server()
        .alpn(&[b"h3"])
        .cert_chain_file(certs().join("cert.pem"))
        .private_key_file(certs().join("key.pem"))
        .verify_peer(true)
        .ca_file(certs().join("rootca.pem"))
        .build()
        .unwrap();
    // Without a client certificate the server refuses.
    let anon = client_builder(&[b"h3"]).build().unwrap();
    let (mut c, mut s) = pair(&anon, &server_cfg, Some("localhost"));
    assert!(matches!(handshake(&mut c, &mut s), Err(Failure::Server(e)) if e.alert().is_some()));
    // With one it verifies it.
    let with_cert = client_builder(&[b"h3"])
        .cert_chain_file(certs().join("cert.pem"))
        .private_key_file(certs().join("key.pem"))
        .build()
        .unwrap();
    let (mut c, mut s) = pair(&with_cert, &server_cfg, Some("localhost"));
    handshake(&mut c, &mut s).unwrap();
    assert!(s.tls.peer_verified());
}

#[test]
fn bad_configurations_and_input() {
    assert!(TlsConfig::server().alpn(&[b"h3"]).build().is_err(), "server without a certificate");
    assert!(TlsConfig::server()
        .cert_chain_file(certs().join("cert.pem"))
        .private_key_file(certs().join("missing.pem"))
        .build()
        .is_err());
    assert!(TlsConfig::client().ca_file("/nonexistent/ca.pem").build().is_err());
    assert!(TlsConfig::client().alpn(&[b""]).build().is_err());

    // Garbage CRYPTO data from the peer is a crypto error, not a panic.
    let server_cfg = server_config(&[b"h3"]);
    let mut s = TlsSession::new(&server_cfg, None, b"p").unwrap();
    let err = s
        .provide_data(Level::Initial, &[0x01, 0x00, 0x00, 0x05, 1, 2, 3, 4, 5])
        .and_then(|_| s.advance())
        .unwrap_err();
    assert!(err.alert().is_some(), "{err}");
    // Data at a level TLS is not reading yet is a protocol violation.
    let mut s = TlsSession::new(&server_cfg, None, b"p").unwrap();
    let err = s.provide_data(Level::Handshake, &[0x14]).unwrap_err();
    assert_eq!(err.code, ErrorCode::PROTOCOL_VIOLATION);
    // Nothing pending on a fresh server.
    assert!(!s.has_outgoing());
    assert!(s.take_outgoing().is_none());
    assert!(s.take_new_keys().is_none());
}

#[test]
fn transport_parameters_use_codepoint_0x39() {
    let client_cfg = client_builder(&[b"h3"]).build().unwrap();
    let params = b"client transport params";
    let mut c = TlsSession::new(&client_cfg, Some("localhost"), params).unwrap();
    c.advance().unwrap();
    let (level, hello) = c.take_outgoing().unwrap();
    assert_eq!(level, Level::Initial);
    assert_eq!(hello.first(), Some(&0x01), "a ClientHello");
    let mut ext = vec![0x00, 0x39, 0x00, params.len() as u8];
    ext.extend_from_slice(params);
    assert!(hello.windows(ext.len()).any(|w| w == ext.as_slice()));
    // Not the legacy draft codepoint 0xffa5 (the whole extension: two bytes
    // alone turn up in the hello's random fields about once in 600 runs).
    let mut legacy = vec![0xff, 0xa5, 0x00, params.len() as u8];
    legacy.extend_from_slice(params);
    assert!(!hello.windows(legacy.len()).any(|w| w == legacy.as_slice()));
    assert!(c.take_outgoing().is_none());
    assert!(!c.is_handshake_complete());
}

/// Decrypts the first (Initial) packet of a datagram from a QUIC v1 client
/// with our Initial keys and returns its CRYPTO frames as (offset, data).
fn open_client_initial(datagram: &[u8]) -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
    use crate::codec::Reader;
    use crate::crypto::{initial_keys, remove_header_protection};
    let mut r = Reader::new(datagram);
    let first = r.u8().unwrap();
    assert_eq!(first & 0xf0, 0xc0, "long header Initial");
    assert_eq!(r.u32().unwrap(), 1);
    let dcid = r.bytes(r.peek_u8().unwrap() as usize + 1).unwrap()[1..].to_vec();
    let scid_len = r.u8().unwrap() as usize;
    r.skip(scid_len).unwrap();
    let _token = r.varint_prefixed().unwrap();
    let len = r.varint().unwrap() as usize;
    let pn_offset = r.pos();
    let (_, remote) = initial_keys(crate::version::Version::V1, &dcid, true).unwrap();
    let mut pkt = datagram[..pn_offset + len].to_vec();
    let (pn_len, pn) = remove_header_protection(&mut pkt, pn_offset, &remote.header).unwrap();
    let hdr = pn_offset + pn_len;
    let n = remote.packet.open_packet(pn, 0, &mut pkt, hdr).unwrap();
    let mut frames = Reader::new(&pkt[hdr..hdr + n]);
    let mut crypto = Vec::new();
    while !frames.is_empty() {
        match frames.varint().unwrap() {
            0x00 | 0x01 => {}
            0x06 => {
                let off = frames.varint().unwrap();
                crypto.push((off, frames.varint_prefixed().unwrap().to_vec()));
            }
            t => panic!("unexpected frame {t:#x} in client Initial"),
        }
    }
    (dcid, crypto)
}

#[test]
fn quiche_client_hello_is_accepted() {
    let mut qc = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    qc.set_application_protos(&[b"h3"]).unwrap();
    qc.verify_peer(false);
    qc.set_initial_max_data(1 << 20);
    let scid = quiche::ConnectionId::from_ref(&[7u8; 16]);
    let addr: std::net::SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let mut conn = quiche::connect(Some("localhost"), &scid, addr, addr, &mut qc).unwrap();
    // The ClientHello may span several Initial packets (large key shares).
    let mut hello = Vec::new();
    let mut buf = [0u8; 1500];
    while let Ok((n, _)) = conn.send(&mut buf) {
        let (_, frames) = open_client_initial(&buf[..n]);
        for (off, data) in frames {
            let off = off as usize;
            if hello.len() < off + data.len() {
                hello.resize(off + data.len(), 0);
            }
            hello[off..off + data.len()].copy_from_slice(&data);
        }
    }
    assert!(!hello.is_empty());

    let mut s = Side::new(&server_config(&[b"h3"]), None, b"our params");
    s.tls.provide_data(Level::Initial, &hello).unwrap();
    s.tls.advance().unwrap();
    s.collect_keys();
    assert_eq!(s.tls.alpn(), Some(&b"h3"[..]));
    assert_eq!(s.tls.server_name(), Some("localhost"));
    // quiche's transport parameters arrived through the 0x39 extension and
    // carry its SCID as initial_source_connection_id (0x0f).
    let tp = s.tls.peer_transport_params().unwrap();
    let mut isc = vec![0x0f, 16];
    isc.extend_from_slice(&[7u8; 16]);
    assert!(tp.windows(isc.len()).any(|w| w == isc.as_slice()));
    // The server flight is ready: ServerHello at Initial, the rest at
    // Handshake, with handshake keys both ways and 1-RTT write keys.
    assert_eq!(s.tls.take_outgoing().map(|(l, _)| l), Some(Level::Initial));
    assert_eq!(s.tls.take_outgoing().map(|(l, _)| l), Some(Level::Handshake));
    assert!(s.read[Level::Handshake.index()].is_some());
    assert!(s.write[Level::Handshake.index()].is_some());
    assert!(s.write[Level::OneRtt.index()].is_some());
}

/// Builds one protected long-header packet (Initial when `initial`, else
/// Handshake) carrying a CRYPTO frame, padded to `pad_to` bytes.
fn long_packet(
    keys: &Keys,
    initial: bool,
    (dcid, scid): (&[u8], &[u8]),
    pn: u32,
    offset: u64,
    data: &[u8],
    pad_to: usize,
) -> Vec<u8> {
    use crate::codec::Writer;
    let mut payload = vec![0u8; 16 + data.len()];
    let mut w = Writer::new(&mut payload);
    w.u8(0x06).unwrap();
    w.varint(offset).unwrap();
    w.varint(data.len() as u64).unwrap();
    w.bytes(data).unwrap();
    let used = w.pos();
    payload.truncate(used);
    let mut hdr = vec![if initial { 0xc3 } else { 0xe3 }, 0, 0, 0, 1];
    hdr.push(dcid.len() as u8);
    hdr.extend_from_slice(dcid);
    hdr.push(scid.len() as u8);
    hdr.extend_from_slice(scid);
    if initial {
        hdr.push(0); // no token
    }
    let fixed = hdr.len() + 2 + 4 + TAG_LEN;
    if fixed + payload.len() < pad_to {
        payload.resize(pad_to - fixed, 0); // PADDING frames
    }
    let len = (4 + payload.len() + TAG_LEN) as u16;
    hdr.extend_from_slice(&(0x4000 | len).to_be_bytes());
    let pn_offset = hdr.len();
    hdr.extend_from_slice(&pn.to_be_bytes());
    let hdr_len = hdr.len();
    let mut pkt = [hdr, payload, vec![0u8; TAG_LEN]].concat();
    keys.packet.seal_packet(u64::from(pn), 0, &mut pkt, hdr_len).unwrap();
    crate::crypto::apply_header_protection(&mut pkt, pn_offset, 4, &keys.header).unwrap();
    pkt
}

/// Splits a datagram from a server into its long-header packets, opens each
/// with `keys_for(is_initial)` and feeds CRYPTO frames to `client`. Returns
/// the server's SCID.
fn feed_server_datagram(client: &mut Side, odcid: &[u8], mut dgram: &[u8]) -> Vec<u8> {
    use crate::codec::Reader;
    use crate::crypto::{initial_keys, remove_header_protection};
    let mut server_scid = Vec::new();
    while dgram.first().is_some_and(|b| b & 0x80 != 0) {
        let mut r = Reader::new(dgram);
        let first = r.u8().unwrap();
        r.u32().unwrap();
        let dl = r.u8().unwrap() as usize;
        r.skip(dl).unwrap();
        let sl = r.u8().unwrap() as usize;
        server_scid = r.bytes(sl).unwrap().to_vec();
        let initial = first & 0x30 == 0;
        if initial {
            r.varint_prefixed().unwrap();
        }
        let len = r.varint().unwrap() as usize;
        let pn_offset = r.pos();
        let mut pkt = dgram[..pn_offset + len].to_vec();
        dgram = &dgram[pn_offset + len..];
        let init_keys;
        let keys = if initial {
            init_keys = initial_keys(crate::version::Version::V1, odcid, false).unwrap().1;
            &init_keys
        } else {
            client.read[Level::Handshake.index()].as_ref().unwrap()
        };
        let (pn_len, pn) = remove_header_protection(&mut pkt, pn_offset, &keys.header).unwrap();
        let hdr = pn_offset + pn_len;
        let n = keys.packet.open_packet(pn, 0, &mut pkt, hdr).unwrap();
        let mut f = Reader::new(&pkt[hdr..hdr + n]);
        let level = if initial { Level::Initial } else { Level::Handshake };
        while !f.is_empty() {
            match f.varint().unwrap() {
                0x00 | 0x01 => {}
                t @ (0x02 | 0x03) => {
                    f.varint().unwrap();
                    f.varint().unwrap();
                    let ranges = f.varint().unwrap();
                    f.varint().unwrap();
                    for _ in 0..ranges * 2 + if t == 0x03 { 3 } else { 0 } {
                        f.varint().unwrap();
                    }
                }
                0x06 => {
                    f.varint().unwrap(); // in-order in this test
                    let data = f.varint_prefixed().unwrap();
                    client.tls.provide_data(level, data).unwrap();
                    client.tls.advance().unwrap();
                    client.collect_keys();
                }
                t => panic!("unexpected frame {t:#x} from server"),
            }
        }
    }
    server_scid
}

#[test]
fn handshake_with_quiche_server() {
    use crate::crypto::initial_keys;
    let mut qc = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    qc.set_application_protos(&[b"h3"]).unwrap();
    qc.load_cert_chain_from_pem_file(certs().join("cert.pem").to_str().unwrap()).unwrap();
    qc.load_priv_key_from_pem_file(certs().join("key.pem").to_str().unwrap()).unwrap();
    qc.set_initial_max_data(1 << 20);
    let server_addr: std::net::SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let client_addr: std::net::SocketAddr = "127.0.0.1:5555".parse().unwrap();

    let odcid = [0x11u8; 8];
    let scid = [0x22u8; 8];
    // Minimal transport parameters: initial_source_connection_id.
    let mut tp = vec![0x0f, scid.len() as u8];
    tp.extend_from_slice(&scid);
    let client_cfg = client_builder(&[b"h3"]).build().unwrap();
    let mut c = Side::new(&client_cfg, Some("localhost"), &tp);
    c.tls.advance().unwrap();
    let (level, hello) = c.tls.take_outgoing().unwrap();
    assert_eq!(level, Level::Initial);
    let (init_local, _) = initial_keys(crate::version::Version::V1, &odcid, false).unwrap();

    let mut server = quiche::accept(
        &quiche::ConnectionId::from_ref(&[0x33u8; 8]),
        None,
        server_addr,
        client_addr,
        &mut qc,
    )
    .unwrap();
    let info = quiche::RecvInfo { from: client_addr, to: server_addr };
    for (i, chunk) in hello.chunks(1000).enumerate() {
        let mut pkt =
            long_packet(&init_local, true, (&odcid, &scid), i as u32, (i * 1000) as u64, chunk, 1200);
        server.recv(&mut pkt, info).unwrap();
    }
    let mut buf = [0u8; 1500];
    let mut server_scid = Vec::new();
    while let Ok((n, _)) = server.send(&mut buf) {
        server_scid = feed_server_datagram(&mut c, &odcid, &buf[..n]);
    }
    assert!(c.tls.is_handshake_complete(), "client did not complete");
    assert!(c.tls.peer_verified());
    assert_eq!(c.tls.alpn(), Some(&b"h3"[..]));
    assert!(c.tls.peer_transport_params().is_some());
    assert!(c.write[Level::OneRtt.index()].is_some() && c.read[Level::OneRtt.index()].is_some());

    // Our Finished, sealed with our Handshake keys, completes quiche's side.
    let (level, fin) = c.tls.take_outgoing().unwrap();
    assert_eq!(level, Level::Handshake);
    let hs = c.write[Level::Handshake.index()].as_ref().unwrap();
    let mut pkt = long_packet(hs, false, (&server_scid, &scid), 0, 0, &fin, 0);
    server.recv(&mut pkt, info).unwrap();
    assert!(server.is_established(), "quiche did not accept our Finished");
    assert_eq!(server.application_proto(), b"h3");
}

/// With tickets on, the client keeps the server's ticket and its next
/// handshake resumes (both sides say so); garbage is refused as a session.
#[test]
fn session_ticket_resumes_the_next_handshake() {
    let alpn: &[&[u8]] = &[b"h3"];
    let server_cfg = TlsConfig::server()
        .alpn(alpn)
        .cert_chain_file(certs().join("cert.pem"))
        .private_key_file(certs().join("key.pem"))
        .session_tickets(true)
        .build()
        .unwrap();
    let client_cfg = client_builder(alpn).session_tickets(true).build().unwrap();
    let (mut c, mut s) = pair(&client_cfg, &server_cfg, Some("localhost"));
    handshake(&mut c, &mut s).unwrap();
    // The ticket comes after the handshake, in 1-RTT CRYPTO data.
    while pump(&mut s, &mut c).unwrap() {}
    assert!(!c.tls.is_resumed());
    let ticket = c.tls.session().expect("no session ticket").to_vec();

    let mut c2 = Side::new(&client_cfg, Some("localhost"), b"params");
    c2.tls.set_session(&ticket).unwrap();
    let mut s2 = Side::new(&server_cfg, None, b"params");
    handshake(&mut c2, &mut s2).unwrap();
    assert!(c2.tls.is_resumed() && s2.tls.is_resumed());

    let mut c3 = Side::new(&client_cfg, Some("localhost"), b"params");
    assert!(c3.tls.set_session(b"not a session").is_err());
    assert!(s2.tls.set_session(&ticket).is_err(), "servers cannot set a session");
}
