//! QUIC v2 and compatible version negotiation (RFC 9369, RFC 9368)
//! between our own client and server; the same against aioquic is in
//! the interop matrix's `v2` case.

#![allow(clippy::disallowed_methods)]

use super::tests::{config, Pair};
use crate::error::ErrorCode;
use crate::packet::{self, PacketType};
use crate::server::{Accept, Validator};
use crate::transport_params::TransportParams;
use crate::version::{Version, VersionInfo};
use crate::{Config, RecvInfo};

fn cfg(server: bool, versions: &[Version], initial: Option<Version>) -> Config {
    let mut c = config(server);
    c.set_versions(versions).unwrap();
    if let Some(v) = initial {
        c.set_initial_version(v).unwrap();
    }
    c
}

/// The versions of the long headers in every datagram the client sent.
fn client_long_versions(p: &Pair) -> Vec<u32> {
    let sent = p.client_sent.as_ref().unwrap();
    sent.iter()
        .filter_map(|d| packet::parse_header(d, 8).ok().filter(|h| h.is_long()).map(|h| h.version))
        .collect()
}

#[test]
fn v2_end_to_end() {
    let both = [Version::V2, Version::V1];
    let mut p = Pair::new(&cfg(false, &both, None), &cfg(true, &both, None));
    p.client_sent = Some(Vec::new());
    p.handshake();
    assert_eq!((p.c.version(), p.s.version()), (Version::V2, Version::V2));
    let data: Vec<u8> = (0..(1 << 20)).map(|i| (i * 13) as u8).collect();
    assert!(p.transfer(0, &data) == data);
    let seen = client_long_versions(&p);
    assert!(!seen.is_empty() && seen.iter().all(|&v| v == Version::V2.wire()), "{seen:x?}");
}

#[test]
fn server_upgrades_a_v1_client_that_offers_v2() {
    let both = [Version::V2, Version::V1];
    let mut p = Pair::new(&cfg(false, &both, Some(Version::V1)), &cfg(true, &both, None));
    p.client_sent = Some(Vec::new());
    p.handshake();
    assert_eq!(p.s.original_version, Version::V1);
    assert_eq!((p.c.version(), p.s.version()), (Version::V2, Version::V2));
    // The rest of its first flight may still be v1; once it sent v2, only v2.
    let seen = client_long_versions(&p);
    let first_v2 = seen.iter().position(|&v| v == Version::V2.wire()).expect("no v2 packet");
    assert!(seen[first_v2..].iter().all(|&v| v == Version::V2.wire()), "{seen:x?}");
    assert!(seen[..first_v2].iter().all(|&v| v == Version::V1.wire()), "{seen:x?}");
    let data = vec![7u8; 200_000];
    assert!(p.transfer(0, &data) == data);
}

#[test]
fn server_preferring_v1_keeps_v1_and_a_v1_only_client_stays() {
    let v1_first = [Version::V1, Version::V2];
    let mut p = Pair::new(&cfg(false, &v1_first, None), &cfg(true, &v1_first, None));
    p.handshake();
    assert_eq!((p.c.version(), p.s.version()), (Version::V1, Version::V1));
    let mut p = Pair::new(&cfg(false, &[Version::V1], None), &cfg(true, &[Version::V2, Version::V1], None));
    p.handshake();
    assert_eq!((p.c.version(), p.s.version()), (Version::V1, Version::V1));
}

fn params_with(vi: Option<VersionInfo>) -> TransportParams {
    TransportParams { version_information: vi, ..TransportParams::default() }
}

#[test]
fn version_information_must_match_the_wire() {
    let both = [Version::V2, Version::V1];
    let mut p = Pair::new(&cfg(false, &both, Some(Version::V1)), &cfg(true, &both, None));
    p.handshake();
    // Server: the client's Chosen Version must be its first Initial's (v1).
    let lie = params_with(Some(VersionInfo::new(Version::V2, &both)));
    let e = p.s.validate_version_info(&lie).unwrap_err();
    assert_eq!(e.code, ErrorCode::VERSION_NEGOTIATION_ERROR);
    assert!(p.s.validate_version_info(&params_with(Some(VersionInfo::new(Version::V1, &both)))).is_ok());
    // Client: the server's must be the negotiated one (v2), and a server
    // that switched must say so.
    let e = p.c.validate_version_info(&params_with(Some(VersionInfo::new(Version::V1, &both)))).unwrap_err();
    assert_eq!(e.code.0, 0x11);
    assert!(p.c.validate_version_info(&params_with(None)).is_err());
    assert!(p.c.validate_version_info(&params_with(Some(VersionInfo::new(Version::V2, &both)))).is_ok());
}

#[test]
fn unaccepted_version_gets_version_negotiation() {
    // A v2-only client against a server that accepts v1 only.
    let ccfg = cfg(false, &[Version::V2], None);
    let now = std::time::Instant::now();
    let (ca, sa) = ("127.0.0.1:1111".parse().unwrap(), "127.0.0.1:2222".parse().unwrap());
    let mut c = crate::connect(Some("localhost"), &crate::random_cid(8), ca, sa, &ccfg, now).unwrap();
    let mut first = vec![0u8; 1500];
    let (n, _) = c.send(&mut first, now).unwrap().unwrap();
    let hdr = packet::parse_header(&first[..n], 0).unwrap();
    assert_eq!((hdr.ty, hdr.version), (PacketType::Initial, Version::V2.wire()));
    let v = Validator::new(false).unwrap();
    let mut out = [0u8; 1500];
    let Accept::Reply(len) = v.handle(&first[..n], &ca, 0, &mut out) else { panic!("no VN") };
    let vn = packet::parse_header(&out[..len], 0).unwrap();
    assert_eq!(vn.supported_versions().collect::<Vec<_>>(), [1]);
    c.recv(&mut out[..len], RecvInfo::new(sa, ca), now).ok();
    assert!(c.is_closed());
    // A server that accepts v2 takes it.
    let mut v2 = Validator::new(false).unwrap();
    v2.set_versions(&[Version::V1, Version::V2]);
    assert!(matches!(v2.handle(&first[..n], &ca, 0, &mut out), Accept::New { .. }));
}

/// A client connection from the test pair's client address.
fn client(ccfg: &Config, now: std::time::Instant) -> crate::Connection {
    crate::connect(
        Some("localhost"),
        &crate::random_cid(8),
        crate::testing::C_ADDR,
        crate::testing::S_ADDR,
        ccfg,
        now,
    )
    .unwrap()
}

/// A client's first attempt, answered by a v1-only server's Validator with
/// Version Negotiation: the version to try next, if any.
fn first_attempt_vn(versions: &[Version]) -> (crate::Connection, Option<Version>) {
    let now = std::time::Instant::now();
    let (ca, sa) = (crate::testing::C_ADDR, crate::testing::S_ADDR);
    let mut c = client(&cfg(false, versions, None), now);
    let mut first = vec![0u8; 1500];
    let (n, _) = c.send(&mut first, now).unwrap().unwrap();
    let v = Validator::new(false).unwrap();
    let mut out = [0u8; 1500];
    let Accept::Reply(len) = v.handle(&first[..n], &ca, 0, &mut out) else { panic!("no VN") };
    assert_eq!(c.version_negotiation(), None, "not before the VN");
    c.recv(&mut out[..len], RecvInfo::new(sa, ca), now).ok();
    assert!(c.is_closed());
    let next = c.version_negotiation();
    (c, next)
}

/// RFC 9368 §2.1: a Version Negotiation packet ends the attempt and names
/// the version to try next; the new attempt, told what was refused,
/// completes against a v1-only server (which sends no version_information,
/// so there is nothing to check) and ignores further VN packets.
#[test]
fn incompatible_negotiation_retries_with_a_listed_version() {
    let both = [Version::V2, Version::V1];
    let (_, next) = first_attempt_vn(&both);
    assert_eq!(next, Some(Version::V1));
    assert_eq!(first_attempt_vn(&[Version::V2]).1, None, "no version in common");
    let now = std::time::Instant::now();
    let ccfg = cfg(false, &both, next);
    let mut c = client(&ccfg, now);
    assert!(!c.follows_version_negotiation(Version::V1), "not the version of this attempt");
    assert!(c.follows_version_negotiation(Version::V2));
    let mut p = Pair::start(c, &cfg(true, &[Version::V1], None), now);
    p.handshake();
    assert_eq!((p.c.version(), p.s.version()), (Version::V1, Version::V1));
    let data = vec![5u8; 100_000];
    assert!(p.transfer(0, &data) == data);
}

/// RFC 9368 §4: a forged Version Negotiation packet that refused v2 to a
/// server that has it (and prefers v1, so it does not upgrade us) is found
/// out from the server's version_information: VERSION_NEGOTIATION_ERROR.
#[test]
fn a_forged_version_negotiation_is_a_downgrade() {
    let both = [Version::V2, Version::V1];
    let now = std::time::Instant::now();
    let ccfg = cfg(false, &both, Some(Version::V1));
    let mut c = client(&ccfg, now);
    assert!(c.follows_version_negotiation(Version::V2));
    let mut p = Pair::start(c, &cfg(true, &[Version::V1, Version::V2], None), now);
    for _ in 0..200 {
        if !p.step() || p.c.is_closed() {
            break;
        }
    }
    let e = p.c.local_error().expect("the client closed");
    assert_eq!(e.code, ErrorCode::VERSION_NEGOTIATION_ERROR.0, "{e:?}");
}
