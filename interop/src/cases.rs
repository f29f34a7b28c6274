//! The cases: what each asks of the two sides and of the link, who can do
//! it, and what must hold for a pass.

use std::time::Duration;

use crate::content::File;
use crate::relay::{Plan, Rebind, Seen};
use crate::{Mp, Side, Spec};

const KB: u64 = 1 << 10;
const MB: u64 = 1 << 20;

/// Declares the cases once: the enum, [`ALL`] in the matrix's order, and
/// each case's name.
macro_rules! cases {
    ($($case:ident => $name:literal),* $(,)?) => {
        /// One column of quic-interop-runner, or a multipath case.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub enum Case {
            $($case),*
        }

        /// Every case, in the matrix's order.
        pub const ALL: &[Case] = &[$(Case::$case),*];

        impl Case {
            /// The case's name in quic-interop-runner (or ours, for multipath).
            pub fn name(self) -> &'static str {
                match self {
                    $(Case::$case => $name),*
                }
            }
        }
    };
}

cases! {
    Handshake => "handshake",
    Transfer => "transfer",
    Longrtt => "longrtt",
    Chacha20 => "chacha20",
    Multiplexing => "multiplexing",
    Retry => "retry",
    Resumption => "resumption",
    Zerortt => "zerortt",
    Http3 => "http3",
    Blackhole => "blackhole",
    Keyupdate => "keyupdate",
    Ecn => "ecn",
    Amplificationlimit => "amplificationlimit",
    Handshakeloss => "handshakeloss",
    Transferloss => "transferloss",
    Handshakecorruption => "handshakecorruption",
    Transfercorruption => "transfercorruption",
    Ipv6 => "ipv6",
    V2 => "v2",
    Vn => "vn",
    RebindPort => "rebind-port",
    RebindAddr => "rebind-addr",
    Connectionmigration => "connectionmigration",
    MpHandshake => "mp-handshake",
    MpTransfer => "mp-transfer",
    MpAbandon => "mp-abandon",
    MpBackup => "mp-backup",
    MpBlackhole => "mp-blackhole",
}

/// The peers mpquic is tested against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// quiche 0.30, in-process.
    Quiche,
    /// noq 1.4, in-process.
    Noq,
    /// aioquic, in Python.
    Aioquic,
}

impl Peer {
    /// Every peer.
    pub const ALL: [Peer; 3] = [Peer::Quiche, Peer::Noq, Peer::Aioquic];

    /// Its name in the matrix.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Quiche => "quiche",
            Peer::Noq => "noq",
            Peer::Aioquic => "aioquic",
        }
    }
}

/// Which side mpquic plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// mpquic is the client, the peer the server.
    Client,
    /// mpquic is the server, the peer the client.
    Server,
}

impl Role {
    /// Both roles.
    pub const ALL: [Role; 2] = [Role::Client, Role::Server];
}

/// Why a cell is not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// The peer cannot do it (with the reason).
    ByPeer(&'static str),
    /// mpquic cannot do it yet.
    ByMpquic(&'static str),
}

impl Case {
    /// Finds a case by name.
    pub fn from_name(name: &str) -> Option<Case> {
        ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Multipath (draft-21) case.
    pub fn multipath(self) -> bool {
        self.name().starts_with("mp-")
    }

    /// `Err` when one side cannot run the case.
    pub fn support(self, peer: Peer, role: Role) -> Result<(), Unsupported> {
        use Case::*;
        use Unsupported::*;
        match self {
            Ecn if peer != Peer::Noq => Err(ByPeer("sends no ECN marks and counts none")),
            V2 if peer != Peer::Aioquic => Err(ByPeer("no QUIC v2")),
            Vn if peer == Peer::Aioquic => Err(ByPeer("accepts v2: no Version Negotiation to answer")),
            Vn if role == Role::Server => Err(ByPeer("its client cannot start in a version it lacks")),
            Connectionmigration => Err(ByMpquic("no active migration (preferred_address) yet")),
            Http3 if peer == Peer::Noq => Err(ByPeer(
                "noq 1.4 has no HTTP/3, and crates.io has no HTTP/3 crate for noq (no h3-noq; h3-quinn is \
                 bound to quinn's own types)",
            )),
            Chacha20 if peer == Peer::Quiche => {
                Err(ByPeer("quiche (BoringSSL) cannot restrict TLS 1.3 cipher suites, nor can mpquic"))
            }
            c if c.multipath() && peer != Peer::Noq => Err(ByPeer("no multipath (draft-21)")),
            MpBackup if role == Role::Client => {
                Err(ByPeer("noq 1.4 sends on a path the peer marked backup (draft-21 §3.3 allows it)"))
            }
            _ => Ok(()),
        }
    }

    /// What the sides and the relay do.
    pub fn setup(self, quick: bool) -> (Spec, Plan) {
        use Case::*;
        let big = if quick { 2 * MB } else { 10 * MB };
        let mut spec = Spec {
            files: vec![File { id: 1, size: big }],
            connections: 1,
            timeout: Duration::from_secs(60),
            ..Spec::default()
        };
        let mut plan = Plan::default();
        let small = |n: u64| (0..n).map(|id| File { id, size: KB }).collect::<Vec<_>>();
        match self {
            Handshake | Retry | Amplificationlimit => spec.files = small(1),
            Resumption => {
                spec.files = small(1);
                spec.connections = 2;
            }
            // As quic-interop-runner: several requests, all in 0-RTT on the
            // second connection; a round trip long enough that a client
            // whose requests come from other tasks (noq) writes them before
            // the handshake ends (at 10 ms one way noq's went in 1-RTT).
            Zerortt => {
                spec.files = small(10);
                spec.connections = 2;
                plan.delay = Duration::from_millis(50);
            }
            Longrtt => {
                spec.files = vec![File { id: 1, size: MB }];
                // quic-interop-runner's 1.5 s RTT; 200 ms in the quick run.
                plan.delay = Duration::from_millis(if quick { 100 } else { 750 });
            }
            Multiplexing => spec.files = small(2000),
            // As quic-interop-runner's http3 test (several files over
            // parallel requests), plus the transfer's big file and a dozen
            // small ones, all requested at once.
            Http3 => {
                spec.files = [5 * KB, 10 * KB, 500 * KB, big]
                    .into_iter()
                    .chain([KB; 12])
                    .zip(1..)
                    .map(|(size, id)| File { id, size })
                    .collect();
            }
            Keyupdate => spec.files = (1..=4).map(|id| File { id, size: big }).collect(),
            Blackhole => plan.blackhole = Some((big / 4, Duration::from_secs(if quick { 1 } else { 2 }))),
            Handshakeloss | Handshakecorruption => {
                spec.files = small(1);
                spec.connections = if quick { 3 } else { 20 };
                // Lost Initials cost whole PTOs (1 s and more at first).
                spec.timeout = Duration::from_secs(if quick { 60 } else { 300 });
                plan.loss = if self == Handshakeloss { 0.3 } else { 0.0 };
                plan.corrupt = if self == Handshakecorruption { 0.3 } else { 0.0 };
                plan.delay = Duration::from_millis(5);
            }
            Transferloss => plan.loss = 0.02,
            Transfercorruption => plan.corrupt = 0.02,
            RebindPort => plan.rebind = Some((big / 4, Rebind::Port)),
            RebindAddr => plan.rebind = Some((big / 4, Rebind::Addr)),
            MpHandshake => {
                spec.files = vec![File { id: 1, size: 256 * KB }];
                spec.mp = Some(Mp::Two);
            }
            MpTransfer => {
                // Long enough that the second path's validation is a small part.
                spec.files = vec![File { id: 1, size: 8 * MB }];
                spec.mp = Some(Mp::Two);
            }
            MpAbandon => spec.mp = Some(Mp::Abandon(big / 3)),
            MpBackup => spec.mp = Some(Mp::Backup),
            MpBlackhole => {
                spec.mp = Some(Mp::Two);
                plan.kill_second_flow = Some(big / 3);
            }
            _ => {}
        }
        spec.ipv6 = self == Ipv6;
        spec.retry = self == Retry;
        spec.resume = matches!(self, Resumption | Zerortt);
        spec.early_data = self == Zerortt;
        spec.chacha = self == Chacha20;
        spec.key_update = self == Keyupdate;
        spec.v2 = self == V2;
        spec.h3 = self == Http3;
        spec.vn = self == Vn;
        plan.amplification = self == Amplificationlimit;
        if matches!(self, MpTransfer | MpBackup | MpAbandon | MpBlackhole | Multiplexing) {
            // Two paths at 1 ms one way, so the second is not idle in the time a transfer takes.
            plan.delay = plan.delay.max(Duration::from_millis(1));
        }
        (spec, plan)
    }

    /// What must hold beyond every file arriving intact at the client.
    pub fn verify(
        self,
        spec: &Spec,
        role: Role,
        client: &Side,
        server: &Side,
        seen: &Seen,
    ) -> Result<String, String> {
        use Case::*;
        let mpquic = if role == Role::Client { client } else { server };
        let total: u64 = seen.flows.iter().map(|f| f.down).sum::<u64>().max(1);
        let share = |i: usize| seen.flows.get(i).map_or(0.0, |f| f.down as f64 / total as f64);
        match self {
            Retry if !seen.retry => Err("no Retry seen".into()),
            Resumption => match mpquic.resumed {
                Some(n) if n + 1 >= spec.connections => {
                    Ok(format!("{n} of {} connections resumed", spec.connections))
                }
                n => Err(format!("resumed connections: {n:?} of {}", spec.connections)),
            },
            Zerortt => {
                zerortt_verdict(spec, mpquic, if role == Role::Client { server } else { client }, seen)
            }
            // As server mpquic sends most packets and updates every 100; as a
            // client it starts what the rules allow (RFC 9001 §6.1).
            Keyupdate => match (role, mpquic.key_updates, mpquic.key_updates_initiated) {
                (Role::Server, Some(n), ours) if n >= 2 => {
                    Ok(format!("{n} key updates, {} started by mpquic", ours.unwrap_or(0)))
                }
                (Role::Client, Some(n), Some(ours)) if ours >= 1 => {
                    Ok(format!("{n} key updates, {ours} started by mpquic"))
                }
                (_, n, ours) => Err(format!("key updates: {n:?}, started by mpquic: {ours:?}")),
            },
            Amplificationlimit => match seen.amplification {
                Some((first, sent)) if sent <= 3 * first => {
                    Ok(format!("{sent} B sent for {first} B received"))
                }
                Some((first, sent)) => Err(format!("server sent {sent} B for {first} B received")),
                None => Err("the client was never cut off".into()),
            },
            RebindPort | RebindAddr if seen.rebinds == 0 => Err("no rebinding happened".into()),
            RebindPort | RebindAddr if role == Role::Server && seen.rebound_down == 0 => {
                Err("the server kept sending to the client's old address".into())
            }
            RebindPort | RebindAddr if role == Role::Server => {
                Ok(format!("{} kB sent to the new address", seen.rebound_down / 1000))
            }
            Http3 => match mpquic.alpn.as_deref() {
                Some("h3") => Ok(format!("{} files over HTTP/3", spec.files.len() * spec.connections)),
                alpn => Err(format!("mpquic's connection negotiated ALPN {alpn:?}, not h3")),
            },
            V2 => upgraded_to_v2(seen),
            Ecn => ecn_verdict(mpquic, seen),
            Vn => vn_verdict(mpquic, seen),
            MpHandshake | MpTransfer | MpBackup | MpAbandon if seen.flows.len() < 2 => {
                Err(format!("only {} path(s) used", seen.flows.len()))
            }
            MpTransfer if share(0) < 0.2 || share(1) < 0.2 => {
                Err(format!("path shares {:.0}% / {:.0}%", 100.0 * share(0), 100.0 * share(1)))
            }
            MpBackup if share(1) > 0.1 => Err(format!("backup path carried {:.0}%", 100.0 * share(1))),
            MpAbandon if mpquic.abandoned.unwrap_or(0) == 0 => Err("no path abandoned".into()),
            MpTransfer | MpBackup | MpAbandon | MpBlackhole => {
                Ok(format!("path shares {:.0}% / {:.0}%", 100.0 * share(0), 100.0 * share(1)))
            }
            _ if spec.connections > 1 => Ok(format!("{} connections", spec.connections)),
            _ => Ok(String::new()),
        }
    }
}

/// vn: the client's long headers went v2 then v1 (a new attempt after the
/// server's Version Negotiation), and mpquic says it made that attempt.
fn vn_verdict(mpquic: &Side, seen: &Seen) -> Result<String, String> {
    let (v1, v2) = (mpquic::Version::V1.wire(), mpquic::Version::V2.wire());
    let detail = format!("client versions {:x?}, attempts after VN: {:?}", seen.up_versions, mpquic.after_vn);
    if seen.up_versions == [v2, v1] && mpquic.after_vn.unwrap_or(0) > 0 {
        Ok(detail)
    } else {
        Err(detail)
    }
}

/// ecn: datagrams marked ECT(0) went both ways, and mpquic's path
/// validated ECN (the peer's ACK_ECN counts covered its marks, RFC 9000
/// §13.4.2).
fn ecn_verdict(mpquic: &Side, seen: &Seen) -> Result<String, String> {
    let (up, down) = (seen.up_ecn[2] + seen.up_ecn[3], seen.down_ecn[2] + seen.down_ecn[3]);
    let detail =
        format!("ECT/CE datagrams up {up}, down {down}; validated by mpquic: {:?}", mpquic.ecn_validated);
    if up > 0 && down > 0 && mpquic.ecn_validated.unwrap_or(0) > 0 {
        Ok(detail)
    } else {
        Err(detail)
    }
}

/// zerortt: the client sent 0-RTT packets and every connection after the
/// first had its early data accepted, as both sides report it (a peer that
/// cannot tell reports nothing).
fn zerortt_verdict(spec: &Spec, mpquic: &Side, peer: &Side, seen: &Seen) -> Result<String, String> {
    let want = spec.connections.saturating_sub(1);
    if seen.zero_rtt == 0 {
        return Err("no 0-RTT packet went by".into());
    }
    match (mpquic.early_data, peer.early_data) {
        (Some(n), Some(p)) if n >= want && p >= want => Ok(format!(
            "{} 0-RTT packets, early data accepted on {n} connection(s) (peer saw {p})",
            seen.zero_rtt
        )),
        (Some(n), None) if n >= want => {
            Ok(format!("{} 0-RTT packets, early data accepted on {n} connection(s)", seen.zero_rtt))
        }
        (n, p) => {
            Err(format!("early data accepted on {n:?} (mpquic) / {p:?} (peer) of {want} connection(s)"))
        }
    }
}

/// The v2 case (as quic-interop-runner's): the client's first Initial is
/// v1, the server ends up sending v2 (aioquic's server acknowledges the
/// first half of a two-datagram ClientHello in v1, before it can choose),
/// and the client follows.
fn upgraded_to_v2(seen: &Seen) -> Result<String, String> {
    let (v1, v2) = (mpquic::Version::V1.wire(), mpquic::Version::V2.wire());
    let show = |vs: &[u32]| vs.iter().map(|v| format!("{v:#x}")).collect::<Vec<_>>().join(",");
    let server_ok =
        seen.down_versions.last() == Some(&v2) && seen.down_versions.iter().all(|v| [v1, v2].contains(v));
    if seen.up_versions == [v1, v2] && server_ok {
        Ok(format!("client v1 -> v2, server {}", show(&seen.down_versions)))
    } else {
        Err(format!(
            "long header versions: client {}, server {}",
            show(&seen.up_versions),
            show(&seen.down_versions)
        ))
    }
}
