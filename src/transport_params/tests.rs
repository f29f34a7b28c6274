use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn cid(b: &[u8]) -> ConnectionId {
    ConnectionId::from_slice(b).unwrap()
}

fn full_server_params() -> TransportParams {
    TransportParams {
        original_destination_connection_id: Some(cid(&[1; 8])),
        max_idle_timeout: 30_000,
        stateless_reset_token: Some([7; 16]),
        max_udp_payload_size: 1472,
        initial_max_data: 1 << 24,
        initial_max_stream_data_bidi_local: 1 << 20,
        initial_max_stream_data_bidi_remote: 1 << 21,
        initial_max_stream_data_uni: 1 << 22,
        initial_max_streams_bidi: 100,
        initial_max_streams_uni: 1 << 60,
        ack_delay_exponent: 20,
        max_ack_delay: (1 << 14) - 1,
        disable_active_migration: true,
        preferred_address: Some(PreferredAddress {
            ipv4: Some("192.0.2.1:4433".parse().unwrap()),
            ipv6: None,
            cid: cid(&[3; 20]),
            reset_token: [4; 16],
        }),
        active_connection_id_limit: 8,
        initial_source_connection_id: Some(cid(&[])),
        retry_source_connection_id: Some(cid(&[5; 4])),
        version_information: Some(VersionInfo {
            chosen: 0x6b3343cf,
            available: vec![0x6b3343cf, 1, 0x0a1a2a3a],
        }),
        max_datagram_frame_size: Some(1200),
        initial_max_path_id: Some(u32::MAX as u64),
        extra: vec![(0x1234, b"ext".to_vec())],
    }
}

#[test]
fn defaults_are_rfc_values() {
    let d = TransportParams::default();
    assert_eq!(d.max_udp_payload_size, 65527);
    assert_eq!(d.ack_delay_exponent, 3);
    assert_eq!(d.max_ack_delay, 25);
    assert_eq!(d.active_connection_id_limit, 2);
    assert_eq!(d.max_idle_timeout, 0);
    assert!(d.initial_max_path_id.is_none());
}

#[test]
fn round_trip_server_and_client() {
    let p = full_server_params();
    let mut buf = Vec::new();
    p.encode(&mut buf);
    assert_eq!(TransportParams::decode(&buf, true).unwrap(), p);
    // The same set from a client carries server-only parameters.
    let e = TransportParams::decode(&buf, false).unwrap_err();
    assert_eq!(e.code, ErrorCode::TRANSPORT_PARAMETER_ERROR);

    let c = TransportParams {
        initial_source_connection_id: Some(cid(&[9; 8])),
        initial_max_data: 1000,
        initial_max_path_id: Some(0),
        ..Default::default()
    };
    let mut buf = Vec::new();
    c.encode(&mut buf);
    // Defaults are not written: only 0x04, 0x0f and 0x3e.
    assert_eq!(buf, hex("04 02 43e8  0f 08 0909090909090909  3e 01 00"));
    assert_eq!(TransportParams::decode(&buf, false).unwrap(), c);
    assert_eq!(
        TransportParams::decode(&buf, true).unwrap_err().reason,
        "missing original_destination_connection_id"
    );
}

#[test]
fn preferred_address_round_trip_both_families() {
    let mut p = full_server_params();
    p.preferred_address = Some(PreferredAddress {
        ipv4: None,
        ipv6: Some("[2001:db8::1]:443".parse().unwrap()),
        cid: cid(&[1]),
        reset_token: [0; 16],
    });
    let mut buf = Vec::new();
    p.encode(&mut buf);
    assert_eq!(TransportParams::decode(&buf, true).unwrap(), p);
}

#[test]
fn unknown_and_grease_parameters() {
    // GREASE id 27 (31*0+27) and 0x3a (31*1+27) are dropped; 0x1234 kept.
    let buf = hex("0f 00  1b 02 aaaa  3a 00  5234 01 ff");
    let p = TransportParams::decode(&buf, false).unwrap();
    assert_eq!(p.extra, vec![(0x1234, vec![0xff])]);
    assert_eq!(p.extra_param(0x1234), Some(&[0xff][..]));
    // Duplicate GREASE is harmless; duplicate unknown is not.
    assert!(TransportParams::decode(&hex("0f 00 1b 00 1b 00"), false).is_ok());
    assert!(TransportParams::decode(&hex("0f 00 5234 00 5234 00"), false).is_err());
    assert!(is_grease(27) && is_grease(58) && !is_grease(0x3e));
}

#[test]
fn validation_failures() {
    let cases: &[(&str, bool, &str)] = &[
        ("0f 00 0f 00", false, "duplicate"),
        ("0f 00 04 01 05 04 01 06", false, "duplicate integer"),
        ("0f 00 00 01 aa", false, "odcid from client"),
        ("0f 00 02 10 00000000000000000000000000000000", false, "reset token from client"),
        ("0f 00 10 01 aa", false, "retry scid from client"),
        ("0f 00 00 00 02 0f 00000000000000000000000000000000", true, "reset token 15 bytes"),
        ("0f 00 03 02 44af", false, "max_udp_payload_size 1199"),
        ("0f 00 0a 01 15", false, "ack_delay_exponent 21"),
        ("0f 00 0b 04 80004000", false, "max_ack_delay 2^14"),
        ("0f 00 0e 01 01", false, "active_connection_id_limit 1"),
        ("0f 00 08 08 d000000000000001", false, "max streams bidi above 2^60"),
        ("0f 00 09 08 d000000000000001", false, "max streams uni above 2^60"),
        ("0f 00 3e 08 c000000100000000", false, "initial_max_path_id above 2^32-1"),
        ("0f 00 11 00", false, "empty version_information"),
        ("0f 00 11 06 000000010000", false, "version_information not a multiple of 4"),
        ("0f 00 11 04 00000000", false, "chosen version 0"),
        ("0f 00 11 08 00000001 00000000", false, "available version 0"),
        ("0f 00 04 02 05", false, "integer shorter than its length"),
        ("0f 00 04 02 0500", false, "integer with trailing byte"),
        ("0f 00 04 00", false, "integer with zero length"),
        ("0f 00 0c 01 00", false, "disable_active_migration with value"),
        ("0f 15 000000000000000000000000000000000000000000", false, "21-byte initial scid"),
        ("0f 00 04 05 00", false, "length past end"),
        ("0f 00 40", false, "truncated id"),
        ("", false, "missing initial_source_connection_id"),
        ("00 00", true, "missing initial_source_connection_id from server"),
    ];
    for (bytes, from_server, what) in cases {
        let e = TransportParams::decode(&hex(bytes), *from_server).expect_err(what);
        assert_eq!(e.code, ErrorCode::TRANSPORT_PARAMETER_ERROR, "{what}");
    }
    // Boundary values that are fine.
    let ok: &[&str] = &[
        "0f 00 03 02 44b0",
        "0f 00 0a 01 14",
        "0f 00 0b 02 7fff",
        "0f 00 0e 01 02",
        "0f 00 3e 04 bfffffff",
        "0f 00 11 04 6b3343cf",
    ];
    for b in ok {
        assert!(TransportParams::decode(&hex(b), false).is_ok(), "{b}");
    }
}

#[test]
fn bad_preferred_address() {
    let base = "0f 00 00 00 0d";
    let good_body =
        "c0000201 115c 00000000000000000000000000000000 0000 01 aa 00000000000000000000000000000000";
    let ok = format!("{base} 2a {good_body}");
    let p = TransportParams::decode(&hex(&ok), true).unwrap();
    let pa = p.preferred_address.unwrap();
    assert_eq!(pa.ipv4, Some("192.0.2.1:4444".parse().unwrap()));
    assert_eq!(pa.ipv6, None);
    // Zero-length CID, 21-byte CID, trailing byte, truncated.
    let zero = format!(
        "{base} 29 c0000201 115c 00000000000000000000000000000000 0000 00 00000000000000000000000000000000"
    );
    let trailing = format!("{base} 2b {good_body} 00");
    let short = format!("{base} 10 c0000201 115c 00000000000000000000");
    let long_cid = format!("{base} 3e c0000201 115c 00000000000000000000000000000000 0000 15 {} 00000000000000000000000000000000", "aa".repeat(21));
    for b in [zero, trailing, short, long_cid] {
        let e = TransportParams::decode(&hex(&b), true).expect_err(&b);
        assert_eq!(e.code, ErrorCode::TRANSPORT_PARAMETER_ERROR);
    }
}
