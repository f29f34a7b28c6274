//! The interop matrix in CI (quick sizes): every cell both sides support
//! must pass, and `mpquic-interop` must print the table and write the JSON.

use std::process::Command;

use mpquic_interop::cases::{migration_verdict, Case, Peer, Role, ALL};
use mpquic_interop::matrix::{self, run_cell, run_cell_seeded, Status};

/// Cells that fail intermittently, run by the ignored test below.
const FLAKY: [(Case, Peer, Role); 2] =
    [(Case::RebindPort, Peer::Quiche, Role::Client), (Case::RebindAddr, Peer::Quiche, Role::Client)];

fn failures(cells: impl Iterator<Item = (Case, Peer, Role)>, runs: usize) -> Vec<String> {
    let mut failed = Vec::new();
    for (case, peer, role) in cells {
        for _ in 0..runs {
            let cell = run_cell(case, peer, role, true);
            eprintln!("{} {:?} {:?}: {:?} in {:?}", case.name(), peer, role, cell.status, cell.time);
            if let Status::Fail(why) = cell.status {
                failed.push(format!("{} {:?} {:?}: {why}", case.name(), peer, role));
            }
        }
    }
    failed
}

/// Each cell once; a failing cell gets one more run and fails the test only
/// if that fails too (real sockets on a shared 2-core machine: single runs
/// of keyupdate with noq's client and of mp-transfer's share threshold
/// failed about once per matrix). Cells that passed only on the second run
/// are printed as FLAKY.
fn failures_after_one_retry(cells: impl Iterator<Item = (Case, Peer, Role)>) -> Vec<String> {
    let mut failed = Vec::new();
    for (case, peer, role) in cells {
        if failures(std::iter::once((case, peer, role)), 1).is_empty() {
            continue;
        }
        match failures(std::iter::once((case, peer, role)), 1).pop() {
            Some(f) => failed.push(f),
            None => eprintln!("FLAKY: {} {peer:?} {role:?} passed on its second run", case.name()),
        }
    }
    failed
}

fn every_cell() -> impl Iterator<Item = (Case, Peer, Role)> {
    ALL.iter()
        .copied()
        .flat_map(|c| Peer::ALL.into_iter().flat_map(move |p| Role::ALL.into_iter().map(move |r| (c, p, r))))
}

/// noq's client opens the second path; our server's share on it.
const MP_SHARE: (Case, Peer, Role) = (Case::MpTransfer, Peer::Noq, Role::Server);

#[test]
fn every_supported_cell_passes() {
    let failed = failures_after_one_retry(every_cell().filter(|c| !FLAKY.contains(c)));
    assert!(failed.is_empty(), "{} cell(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// mpquic client, quiche server, the client's NAT mapping changes mid-transfer.
#[test]
#[ignore = "measured: stalls until the idle timeout in 10 of 20 runs on a loaded machine (0 of 12 idle; \
            the other peers: 0 of 32). A quiche 0.30 bug, seen in its trace log (RUST_LOG=quiche=trace) \
            beside mpquic's qlog (MPQUIC_INTEROP_QLOG): packets quiche sent to the old address just \
            before it migrated (66 in one run) never reached the client; quiche's loss detection is per \
            path, ACKs arriving on the new path never advance the old path's largest acknowledged, and \
            it sends no PTO probe on a path that is no longer active, so their stream data is never \
            sent again (its PTO timer fires, 40 ms .. 26 s, and sends nothing)"]
fn rebinding_with_quiche_server() {
    let failed = failures(FLAKY.into_iter(), 5);
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// pmtud at full size (10 MB) with aioquic's client and our server: the
/// final datagram size must be within the 1400-byte link MTU and above the
/// 1350-byte start. (5 of 18 runs passed before a late ACK of a large packet
/// could undo a PTO-driven fallback: aioquic acknowledges the transfer's last
/// packets after two PTOs; 12 of 12 since. CI then failed 2 of
/// 3 with the size back at 1200 after one black hole, not seen in 26 local
/// runs, idle or loaded: a burst of congestion losses of full-size packets
/// alone no longer counts as a black hole, and the search after a fallback
/// probes the size that worked before first. CI failed 1 of 3 again,
/// reproduced in 1 of 3 runs beside `every_supported_cell_passes`:
/// aioquic acknowledged the response's last packet, 112 bytes, 195 ms late,
/// after two PTOs, and two PTOs counted as a black hole though no large
/// packet was outstanding; now they must be. A fallback's retry of the old
/// size also leaves at once, with the PTO's probes.)
#[test]
fn pmtud_full_size_with_aioquic_client() {
    let mut failed = Vec::new();
    for _ in 0..3 {
        if let Status::Fail(why) = run_cell(Case::Pmtud, Peer::Aioquic, Role::Server, false).status {
            failed.push(why);
        }
    }
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// connectionmigration at full size (10 MB) with noq's server: mpquic's
/// client must move to the preferred address. (12 of 18 runs passed while
/// validation gave up after 3 x the current PTO, ~20 ms on loopback, before
/// a busy noq answered; 12 of 12 with RFC 9000 §8.2.4's kInitialRtt floor.)
#[test]
fn migration_full_size_to_noq_server() {
    let mut failed = Vec::new();
    for _ in 0..3 {
        if let Status::Fail(why) = run_cell(Case::Connectionmigration, Peer::Noq, Role::Client, false).status
        {
            failed.push(why);
        }
    }
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// Handshakes with 30% loss or corruption, mpquic client against aioquic's
/// server, over other draws of the link model than the cells' own seeds:
/// a lost or corrupted ClientHello is sent again by the PTO probe (a bare
/// PING made aioquic close with PROTOCOL_VIOLATION "Packet contains no
/// CRYPTO frame", 6 runs in 6).
#[test]
fn lossy_handshakes_to_aioquic_other_seeds() {
    let mut failed = Vec::new();
    for seed in 1..=6 {
        for case in [Case::Handshakecorruption, Case::Handshakeloss] {
            if let Status::Fail(why) = run_cell_seeded(case, Peer::Aioquic, Role::Client, true, seed).status {
                failed.push(format!("{} seed {seed}: {why}", case.name()));
            }
        }
    }
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// aioquic's client against our server with 30% handshake loss, at link
/// seeds 1-6. Seed 1 failed every run until the server's Initial PTO probe
/// carried its Handshake flight too and its second probe repeated data:
/// aioquic's Initial probes are 54-byte PINGs, so under the amplification
/// limit our padded PING probes used the budget the certificate needed
/// (8 of 8 seeds pass since).
#[test]
fn lossy_handshake_from_aioquic_other_seeds() {
    let mut failed = Vec::new();
    for seed in 1..=6 {
        if let Status::Fail(why) =
            run_cell_seeded(Case::Handshakeloss, Peer::Aioquic, Role::Server, true, seed).status
        {
            failed.push(format!("seed {seed}: {why}"));
        }
    }
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// mp-transfer with noq's client and our server (round-robin): each path
/// must carry at least 20% of the bytes, in five runs (each with the one
/// retry every cell gets). Once an ignored test: 1 of 10 quick
/// runs fell below 20%. The qlog of such a run: on the busy machine the
/// ACKs of our second path stalled 11-40 ms at a 5-20 ms RTT, the path was
/// suspected dead at every stall and its window sent again on the first
/// path (3 times in a 0.3 s transfer). A suspicion that proves wrong now
/// makes the path wait longer: 15 of 15 runs with two CPU hogs, shares
/// 51-71% / 29-49%. (8 MiB socket buffers for noq's client were tried
/// too: the kernel's 60-600 receive-buffer drops per run went away, but
/// noq's client then lost `mp-abandon` and `mp-blackhole` connections at
/// full size, 6 of 22 runs, against 0 of 16 with its default buffer.)
#[test]
fn mp_transfer_share_with_noq_client() {
    let failed = failures_after_one_retry(std::iter::repeat_n(MP_SHARE, 5));
    assert!(failed.is_empty(), "{} run(s) failed:\n{}", failed.len(), failed.join("\n"));
}

/// The connectionmigration harness between two peers: noq's server offers
/// the relay's second front as its preferred address and aioquic's client
/// moves there; the relay's check must see the transfer go on from it.
#[test]
fn preferred_address_between_peers() {
    let (mut spec, plan) = Case::Connectionmigration.setup(true);
    let (server, relay) = matrix::start(Some(Peer::Noq), &mut spec, plan, 1).unwrap();
    let client = matrix::run_client(Some(Peer::Aioquic), &spec, &relay.fronts);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (server, seen) = (server.finish(), relay.finish());
    assert!(client.errors.is_empty() && client.files == spec.files.len(), "client: {client:?}");
    assert!(server.errors.is_empty(), "server: {server:?}");
    let verdict = migration_verdict(&seen);
    eprintln!("noq server, aioquic client: {verdict:?}");
    assert!(verdict.is_ok(), "{verdict:?}");
}

/// The one command prints the Markdown table and writes the JSON results.
#[test]
fn command_prints_table_and_writes_json() {
    let out = std::env::temp_dir().join(format!("mpquic-interop-{}.json", std::process::id()));
    let r = Command::new(env!("CARGO_BIN_EXE_mpquic-interop"))
        .args(["--quick", "--cases", "handshake,v2,mp-handshake,http3", "--peers", "aioquic,noq", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{stdout}{}", String::from_utf8_lossy(&r.stderr));
    assert!(
        stdout.contains("| case | mpquic→aioquic | aioquic→mpquic | mpquic→noq | noq→mpquic |"),
        "{stdout}"
    );
    assert!(stdout.contains("| mp-handshake | –p | –p | ✓ | ✓ |"), "{stdout}");
    assert!(stdout.contains("| v2 | ✓ | ✓ | –p | –p |"), "{stdout}");
    assert!(stdout.contains("| http3 | ✓ | ✓ | –p | –p |"), "{stdout}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let cells = json.as_array().unwrap();
    assert_eq!(cells.len(), 16);
    let v2: Vec<_> =
        cells.iter().filter(|c| c["case"] == "v2").map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(v2, ["pass", "pass", "unsupported by peer", "unsupported by peer"]);
    let h3: Vec<_> =
        cells.iter().filter(|c| c["case"] == "http3").map(|c| c["detail"].as_str().unwrap()).collect();
    assert_eq!(h3[..2], ["16 files over HTTP/3", "16 files over HTTP/3"]);
    assert!(h3[2].starts_with("noq 1.4 has no HTTP/3"), "{}", h3[2]);
    let _ = std::fs::remove_file(out);
}
