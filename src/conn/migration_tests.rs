//! Moving a path to another address pair over the test pair (RFC 9000 §9):
//! the server's preferred address and a client's active migration.

use std::net::SocketAddr;

use crate::testing::{Pair, C_ADDR, S_ADDR};
use crate::{PathError, PathEvent, PathId};

use super::tests::{config, mp_config, with_qlog};

const S2: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 3333));
const C2: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 4444));
const C3: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 5555));

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 11 + i / 97) as u8).collect()
}

fn events(c: &mut crate::Connection) -> Vec<PathEvent> {
    std::iter::from_fn(|| c.path_event_next()).collect()
}

fn addrs(c: &crate::Connection) -> (SocketAddr, SocketAddr) {
    let p = c.path_stats().next().expect("path 0");
    (p.local, p.peer)
}

fn preferred_pair() -> Pair {
    let mut scfg = config(true);
    scfg.set_preferred_address(S2);
    Pair::new(&config(false), &scfg)
}

#[test]
fn the_client_moves_to_the_servers_preferred_address() {
    let mut p = preferred_pair();
    let original = p.s.local_cids().next().expect("the server's first ID");
    p.handshake();
    let body = data(1 << 20);
    assert!(p.transfer(0, &body) == body);
    assert_eq!(addrs(&p.c), (C_ADDR, S2), "the client sends to the preferred address");
    assert_eq!(addrs(&p.s), (S2, C_ADDR), "the server answers from it");
    assert!(events(&mut p.c).contains(&PathEvent::Migrated(PathId::ZERO, C_ADDR, S2)));
    // The connection ID used with the old address was retired for good.
    assert!(!p.s.local_cids().any(|c| c == original));
}

#[test]
fn a_preferred_address_that_does_not_answer_is_given_up() {
    let mut p = preferred_pair();
    p.blackhole.push(S2);
    p.handshake();
    let body = data(1 << 20);
    assert!(p.transfer(0, &body) == body);
    p.run_for(std::time::Duration::from_secs(5));
    assert_eq!(addrs(&p.c), (C_ADDR, S_ADDR), "the client stays on the original address");
    assert!(events(&mut p.c).contains(&PathEvent::FailedValidation(PathId::ZERO)));
    assert!(p.c.is_established());
}

#[test]
fn a_client_migrates_to_a_new_local_address() {
    let mut p = Pair::default_pair();
    p.handshake();
    let body = data(2 << 20);
    let mut moved = false;
    let got = p.transfer_with(0, &body, |p, n| {
        if n > 1 << 19 && !moved {
            let now = p.now();
            p.c.migrate(PathId::ZERO, C2, now).expect("migrate");
            moved = true;
        }
    });
    assert!(got == body);
    // And more data after the move.
    assert!(p.transfer(4, &body) == body);
    p.run_for(std::time::Duration::from_millis(500));
    assert_eq!(addrs(&p.c), (C2, S_ADDR));
    assert_eq!(addrs(&p.s), (S_ADDR, C2), "the server followed and validated the new address");
    assert!(events(&mut p.c).contains(&PathEvent::Migrated(PathId::ZERO, C2, S_ADDR)));
    assert!(p.s.path_stats().next().unwrap().active);
}

#[test]
fn migration_is_refused_where_the_peer_disabled_it() {
    let mut scfg = config(true);
    scfg.set_disable_active_migration(true);
    let mut p = Pair::new(&config(false), &scfg);
    p.handshake();
    let now = p.now();
    assert_eq!(p.c.migrate(PathId::ZERO, C2, now), Err(PathError::MigrationDisabled));
    assert_eq!(p.s.migrate(PathId::ZERO, C2, now), Err(PathError::NotClient));
}

/// In a multipath connection one path moves to a new local address (one of
/// the phone's interfaces changed its address) while the other carries on:
/// the body arrives whole, the server follows the moved path, the other path
/// keeps its addresses, and the client's qlog shows the moved path's new
/// connection ID of the server's.
#[test]
fn one_path_of_two_migrates() {
    let mut p = Pair::two_paths(&with_qlog(mp_config(false)), &mp_config(true));
    let pairs = |c: &crate::Connection| -> Vec<(PathId, SocketAddr, SocketAddr)> {
        c.path_stats().filter(|s| s.active).map(|s| (s.id, s.local, s.peer)).collect()
    };
    let before = pairs(&p.c);
    assert_eq!(before.len(), 2, "{before:?}");
    let body = data(2 << 20);
    let mut moved = false;
    let got = p.transfer_with(0, &body, |p, n| {
        if n > 1 << 19 && !moved {
            let now = p.now();
            p.c.migrate(PathId(1), C3, now).expect("migrate path 1");
            moved = true;
        }
    });
    assert!(got == body);
    assert!(p.transfer(4, &body) == body);
    p.run_for(std::time::Duration::from_millis(500));
    assert_eq!(pairs(&p.c), [before[0], (PathId(1), C3, S_ADDR)]);
    assert!(pairs(&p.s).contains(&(PathId(1), S_ADDR, C3)), "server: {:?}", pairs(&p.s));
    assert!(events(&mut p.c).contains(&PathEvent::Migrated(PathId(1), C3, S_ADDR)));
    let moved_cid = std::iter::from_fn(|| p.c.qlog_next()).any(|l| {
        l.contains("\"quic:connection_id_updated\"")
            && l.contains("\"tuple\":\"1\"")
            && l.contains("\"initiator\":\"remote\",\"old\"")
    });
    assert!(moved_cid, "no new connection ID of the server's for path 1 in the client's qlog");
}

/// The server's PATH_RESPONSE to a migrating client crosses another
/// address pair, and the client may read it long after packets the server
/// sent later on the old pair (another socket, drained first: on loopback
/// the validation then failed in about 1 download in 50). Its packet number
/// must still decode there, so the server sends it at full length.
#[test]
fn a_path_response_overtaken_by_hundreds_of_packets_still_counts() {
    let mut p = Pair::default_pair();
    p.handshake();
    let body = data(4 << 20);
    assert!(p.transfer(0, &body) == body);
    // Everything acknowledged: the server's next packet number is one past
    // its largest acknowledged, which alone would allow a 1-byte encoding.
    p.run_for(std::time::Duration::from_millis(200));
    let now = p.now();
    p.c.migrate(PathId::ZERO, C2, now).expect("migrate");
    let mut buf = vec![0u8; 2048];
    let mut challenge = std::iter::from_fn(|| p.c.send(&mut buf, now).unwrap())
        .find(|(_, info)| info.from == C2)
        .map(|(n, _)| buf[..n].to_vec())
        .expect("a PATH_CHALLENGE from the new address");
    p.s.recv(&mut challenge, crate::RecvInfo::new(C2, S_ADDR), now).unwrap();
    // The server answers and goes on sending a response on the old pair.
    p.s.stream_send(1, &body, true).unwrap();
    let (mut response, mut later) = (None, Vec::new());
    while let Some((n, info)) = p.s.send(&mut buf, now).unwrap() {
        match info.to {
            C2 => response = Some(buf[..n].to_vec()),
            _ if response.is_some() => later.push(buf[..n].to_vec()),
            _ => {}
        }
    }
    let mut response = response.expect("a PATH_RESPONSE to the new address");
    assert!(later.len() > 300, "{} packets after the response", later.len());
    for mut d in later {
        p.c.recv(&mut d, crate::RecvInfo::new(S_ADDR, C_ADDR), now).unwrap();
    }
    p.c.recv(&mut response, crate::RecvInfo::new(S_ADDR, C2), now).unwrap();
    assert!(events(&mut p.c).contains(&PathEvent::Migrated(PathId::ZERO, C2, S_ADDR)));
}
