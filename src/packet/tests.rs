use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn connection_id_basics() {
    let c = ConnectionId::from_slice(&hex("8394c8f03e515708")).unwrap();
    assert_eq!(c.len(), 8);
    assert_eq!(format!("{c:?}"), "8394c8f03e515708");
    assert!(ConnectionId::from_slice(&[0; 21]).is_none());
    assert!(ConnectionId::from_slice(&[0; 20]).is_some());
    assert!(ConnectionId::from_slice(&[]).unwrap().is_empty());
    assert_eq!(format!("{:?}", ConnectionId::EMPTY), "<empty>");
}

#[test]
fn pn_decode_rfc_example() {
    // RFC 9000 Appendix A.3.
    assert_eq!(decode_pn(Some(0xa82f30ea), 0x9b32, 16), 0xa82f9b32);
    // Wrap forwards and backwards around the window.
    assert_eq!(decode_pn(Some(0xff), 0x00, 8), 0x100);
    assert_eq!(decode_pn(Some(0x100), 0xff, 8), 0xff);
    assert_eq!(decode_pn(None, 0, 8), 0);
    assert_eq!(decode_pn(None, 0x05, 8), 5);
    // Near the top of the packet-number space there is no wrap forwards.
    let top = (1u64 << 62) - 1;
    assert_eq!(decode_pn(Some(top - 1), top & 0xff, 8), top);
    // Garbage inputs never panic.
    let _ = decode_pn(Some(u64::MAX), u64::MAX, 99);
}

#[test]
fn pn_len_rfc_examples() {
    // RFC 9000 §17.1 / A.2: largest acked 0xabe8b3.
    assert_eq!(pn_len_for(0xac5c02, Some(0xabe8b3)), 2);
    assert_eq!(pn_len_for(0xace8fe, Some(0xabe8b3)), 3);
    assert_eq!(pn_len_for(0, None), 1);
    assert_eq!(pn_len_for(127, None), 1); // 128 unacked: exactly 8 bits
    assert_eq!(pn_len_for(128, None), 2);
    assert_eq!(pn_len_for(1 << 40, Some(0)), 4);
    // Each choice decodes back correctly at the receiver's worst case.
    for (pn, la) in [(0xac5c02u64, 0xabe8b3u64), (1000, 10), (70_000, 1), (300, 172)] {
        let n = pn_len_for(pn, Some(la));
        let mask = (1u64 << (8 * n)) - 1;
        assert_eq!(decode_pn(Some(la), pn & mask, 8 * n as u32), pn, "pn {pn} la {la}");
    }
}

/// RFC 9001 Appendix A.2: the protected client Initial (first bytes), padded
/// to its 1200-byte datagram.
fn rfc9001_client_initial() -> Vec<u8> {
    let mut d = hex("c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11");
    d.resize(1200, 0);
    d
}

#[test]
fn parse_rfc9001_client_initial() {
    let d = rfc9001_client_initial();
    let h = parse_header(&d, 8).unwrap();
    assert_eq!(h.ty, PacketType::Initial);
    assert_eq!(h.version, QUIC_V1);
    assert_eq!(h.dcid.as_slice(), hex("8394c8f03e515708"));
    assert!(h.scid.is_empty());
    assert!(h.token.is_empty());
    assert_eq!(h.pn_offset, 18);
    assert_eq!(h.packet_len, 18 + 1182);
    // The unprotected header from the RFC parses to the same fields and its
    // first byte says a 4-byte packet number of 2.
    let mut u = hex("c300000001088394c8f03e5157080000449e00000002");
    u.resize(1200, 0);
    let hu = parse_header(&u, 8).unwrap();
    assert_eq!(pn_len_from_first_byte(hu.first_byte), 4);
    assert!(reserved_bits_clear(hu.first_byte));
    assert_eq!(&u[hu.pn_offset..hu.pn_offset + 4], &[0, 0, 0, 2]);
}

#[test]
fn parse_rfc9001_server_initial_coalesced() {
    // Server Initial header from RFC 9001 A.3 (Length 0x75), followed by a
    // coalesced Handshake packet; the datagram is split correctly.
    let mut d = hex("cf000000010008f067a5502a4262b5004075c0d9");
    d.resize(18 + 0x75, 0xaa);
    let hs_start = d.len();
    d.extend(hex("e0000000010008f067a5502a4262b54016"));
    d.resize(hs_start + 17 + 0x16, 0xbb);
    let h = parse_header(&d, 0).unwrap();
    assert_eq!(h.ty, PacketType::Initial);
    assert!(h.dcid.is_empty());
    assert_eq!(h.scid.as_slice(), hex("f067a5502a4262b5"));
    assert_eq!(h.pn_offset, 18);
    assert_eq!(h.packet_len, 18 + 0x75);
    let h2 = parse_header(&d[h.packet_len..], 0).unwrap();
    assert_eq!(h2.ty, PacketType::Handshake);
    assert_eq!(h2.pn_offset, 17);
    assert_eq!(h.packet_len + h2.packet_len, d.len());
    // Length pointing one byte past the datagram is rejected.
    let first_len = h.packet_len;
    d.pop();
    assert_eq!(parse_header(&d[first_len..], 0), Err(HeaderError::Truncated));
}

#[test]
fn parse_rfc9001_retry() {
    let d = hex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba");
    let h = parse_header(&d, 0).unwrap();
    assert_eq!(h.ty, PacketType::Retry);
    assert_eq!(h.token, b"token");
    assert_eq!(h.retry_tag, hex("04a265ba2eff4d829058fb3f0f2496ba"));
    assert_eq!(h.packet_len, d.len());
    // Pseudo-packet: ODCID from the client Initial, then the Retry minus tag.
    let odcid = ConnectionId::from_slice(&hex("8394c8f03e515708")).unwrap();
    let body = retry_without_tag(&d, &h).unwrap();
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    retry_pseudo_packet(&mut w, &odcid, body).unwrap();
    assert_eq!(w.written(), hex("088394c8f03e515708 ff000000010008f067a5502a4262b5746f6b656e"));
    // Our writer produces the same bytes apart from the arbitrary low bits.
    let mut buf2 = [0u8; 64];
    let mut w2 = Writer::new(&mut buf2);
    let scid = ConnectionId::from_slice(&hex("f067a5502a4262b5")).unwrap();
    let n = write_retry(&mut w2, Version::V1, &ConnectionId::EMPTY, &scid, b"token").unwrap();
    assert_eq!(&w2.written()[1..n], &body[1..]);
    assert_eq!(w2.written()[0] & 0xf0, 0xf0);
    // Empty token or missing tag: dropped.
    assert_eq!(
        parse_header(&hex("ff000000010008f067a5502a4262b5 04a265ba2eff4d829058fb3f0f2496ba"), 0),
        Err(HeaderError::Malformed)
    );
    assert_eq!(parse_header(&d[..20], 0), Err(HeaderError::Truncated));
}

#[test]
fn parse_rfc9001_short_header() {
    // RFC 9001 A.5: the smallest possible packet, empty DCID.
    let d = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
    let h = parse_header(&d, 0).unwrap();
    assert_eq!(h.ty, PacketType::Short);
    assert_eq!(h.pn_offset, 1);
    assert_eq!(h.packet_len, 21);
    // One byte less cannot be sampled.
    assert_eq!(parse_header(&d[..20], 0), Err(HeaderError::Truncated));
    // The unprotected header 4200bff4: 3-byte pn 0x00bff4, decodes to 654360564.
    let u = hex("4200bff4");
    assert_eq!(pn_len_from_first_byte(u[0]), 3);
    assert_eq!(decode_pn(Some(654360563), 0x00bff4, 24), 654360564);
    // With an 8-byte DCID the packet must be longer.
    assert_eq!(parse_header(&d, 8), Err(HeaderError::Truncated));
}

#[test]
fn parse_version_negotiation() {
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    write_version_negotiation(&mut w, &[1, 2, 3], &[9; 25], &[QUIC_V1, 0x0a0a0a0a]).unwrap();
    let d = w.written().to_vec();
    // 25-byte CID is not v1-valid, so a client drops it...
    assert_eq!(parse_header(&d, 0), Err(HeaderError::Malformed));
    let mut w = Writer::new(&mut buf);
    write_version_negotiation(&mut w, &[1, 2, 3], &[9; 4], &[QUIC_V1, 0x0a0a0a0a]).unwrap();
    let d = w.written().to_vec();
    let h = parse_header(&d, 0).unwrap();
    assert_eq!(h.ty, PacketType::VersionNegotiation);
    assert_eq!(h.version, 0);
    assert_eq!(h.dcid.as_slice(), &[1, 2, 3]);
    assert_eq!(h.supported_versions().collect::<Vec<_>>(), vec![QUIC_V1, 0x0a0a0a0a]);
    // Partial version or empty list.
    assert_eq!(parse_header(&d[..d.len() - 1], 0), Err(HeaderError::Malformed));
    assert_eq!(parse_header(&d[..d.len() - 8], 0), Err(HeaderError::Malformed));
}

#[test]
fn unsupported_version_and_invariants() {
    let mut d = hex("c0ff00001d 14 0102030405060708090a0b0c0d0e0f1011121314 00");
    d.resize(1200, 0);
    assert_eq!(parse_header(&d, 0), Err(HeaderError::UnsupportedVersion(0xff00001d)));
    let inv = invariant_header(&d).unwrap();
    assert_eq!(inv.version, 0xff00001d);
    assert_eq!(inv.dcid.len(), 20);
    assert!(inv.scid.is_empty());
    assert!(invariant_header(&d[..10]).is_none());
    assert!(invariant_header(&[0x40; 30]).is_none());
}

#[test]
fn fixed_bit_and_cid_limits() {
    let mut d = rfc9001_client_initial();
    d[0] &= !0x40;
    assert_eq!(parse_header(&d, 8), Err(HeaderError::FixedBitZero));
    assert_eq!(parse_header(&[0x00; 30], 0), Err(HeaderError::FixedBitZero));
    let mut d = rfc9001_client_initial();
    d[5] = 21; // DCID length above 20 in v1
    assert_eq!(parse_header(&d, 8), Err(HeaderError::Malformed));
}

#[test]
fn truncated_headers_of_every_type() {
    let d = rfc9001_client_initial();
    for n in 0..40 {
        assert!(parse_header(&d[..n], 8).is_err(), "initial prefix {n}");
    }
    let mut hs = hex("e0000000010008f067a5502a4262b54016");
    hs.resize(17 + 0x16, 0);
    for n in 0..hs.len() {
        assert!(parse_header(&hs[..n], 0).is_err(), "handshake prefix {n}");
    }
    assert!(parse_header(&hs, 0).is_ok());
    assert!(parse_header(&[], 0).is_err());
    assert!(parse_header(&[0x40, 1, 2], 8).is_err());
}

#[test]
fn long_header_write_and_patch_round_trip() {
    let dcid = ConnectionId::from_slice(&hex("8394c8f03e515708")).unwrap();
    let types = [PacketType::Initial, PacketType::ZeroRtt, PacketType::Handshake];
    for (v, ty) in Version::ALL.into_iter().flat_map(|v| types.map(|t| (v, t))) {
        let mut buf = [0u8; 200];
        let mut w = Writer::new(&mut buf);
        let token: &[u8] = if ty == PacketType::Initial { b"tok" } else { b"" };
        let off = write_long_header(&mut w, ty, v, &dcid, &ConnectionId::EMPTY, token, 0x1234, 2).unwrap();
        assert_eq!(w.pos(), long_header_len(ty, &dcid, &ConnectionId::EMPTY, token.len(), 2));
        let payload = 40;
        let end = w.pos() + payload;
        patch_length(&mut buf, &off, 2 + payload).unwrap();
        let h = parse_header(&buf[..end], 0).unwrap();
        assert_eq!((h.ty, h.version), (ty, v.wire()));
        assert_eq!(h.dcid, dcid);
        assert_eq!(h.token, token);
        assert_eq!(h.pn_offset, off.pn_offset);
        assert_eq!(h.packet_len, end);
        assert_eq!(&buf[off.pn_offset..off.pn_offset + 2], &[0x12, 0x34]);
        assert_eq!(pn_len_from_first_byte(buf[0]), 2);
        assert!(reserved_bits_clear(buf[0]));
    }
    let mut buf = [0u8; 100];
    let off = write_long_header(
        &mut Writer::new(&mut buf),
        PacketType::Handshake,
        Version::V1,
        &dcid,
        &dcid,
        &[],
        0,
        1,
    )
    .unwrap();
    assert_eq!(patch_length(&mut buf, &off, 1 << 14), Err(BufferTooShort));
    assert_eq!(patch_length(&mut buf[..3], &off, 10), Err(BufferTooShort));
    // Too small a buffer fails cleanly.
    let mut small = [0u8; 10];
    assert!(write_long_header(
        &mut Writer::new(&mut small),
        PacketType::Initial,
        Version::V1,
        &dcid,
        &dcid,
        &[],
        0,
        4
    )
    .is_err());
}

#[test]
fn short_header_write_round_trip() {
    let dcid = ConnectionId::from_slice(&[7; 8]).unwrap();
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    let pn_off = write_short_header(&mut w, &dcid, 0xabcdef, 3, true, true).unwrap();
    assert_eq!(pn_off, 9);
    assert_eq!(buf[0], 0x40 | 0x20 | 0x04 | 0x02);
    assert_eq!(&buf[9..12], &[0xab, 0xcd, 0xef]);
    assert!(key_phase(buf[0]));
    let h = parse_header(&buf[..40], 8).unwrap();
    assert_eq!(h.dcid, dcid);
    assert_eq!(h.pn_offset, 9);
    assert_eq!(h.packet_len, 40);
    assert!(!reserved_bits_clear(0x40 | 0x08));
}

#[test]
fn stateless_reset_detection() {
    let mut d = vec![0x41u8; 21];
    d[5..].copy_from_slice(&[0xee; 16]);
    let tok = stateless_reset_token(&d).unwrap();
    assert!(reset_token_eq(tok, &[0xee; 16]));
    assert!(!reset_token_eq(tok, &[0xef; 16]));
    assert!(stateless_reset_token(&d[..20]).is_none());
    d[0] = 0xc1;
    assert!(stateless_reset_token(&d).is_none());
    assert!(stateless_reset_token(&[]).is_none());
}

/// Random datagrams (seeded) never panic the parser, and coalesced parsing
/// always advances within bounds.
#[test]
fn random_datagrams_never_panic() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let mut parsed = 0;
    for _ in 0..20_000 {
        let mut d = rfc9001_client_initial();
        d.truncate(rng.gen_range(0..80));
        for _ in 0..rng.gen_range(0..4) {
            if !d.is_empty() {
                let i = rng.gen_range(0..d.len());
                d[i] = rng.gen();
            }
        }
        let mut rest = &d[..];
        while !rest.is_empty() {
            let Ok(h) = parse_header(rest, 8) else { break };
            parsed += 1;
            assert!(h.packet_len <= rest.len() && h.pn_offset <= h.packet_len);
            rest = &rest[h.packet_len..];
        }
    }
    assert!(parsed > 0);
}
