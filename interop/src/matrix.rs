//! Runs cells (case × peer × role) and renders the matrix as a Markdown
//! table and as JSON.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use crate::cases::{Case, Peer, Role, Unsupported};
use crate::relay::{Plan, Relay};
use crate::{aioquic_peer, mpquic_peer, noq_peer, quiche_peer, ServerHandle, Side, Spec};

/// A cell's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Passed (with what was measured, if anything).
    Pass(String),
    /// Failed, with the reason.
    Fail(String),
    /// Not run: a side cannot do it.
    Unsupported(Unsupported),
}

impl Status {
    /// Its name in the JSON output.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Pass(_) => "pass",
            Status::Fail(_) => "fail",
            Status::Unsupported(Unsupported::ByPeer(_)) => "unsupported by peer",
            Status::Unsupported(Unsupported::ByMpquic(_)) => "unsupported by mpquic",
        }
    }

    fn detail(&self) -> &str {
        match self {
            Status::Pass(s) | Status::Fail(s) => s,
            Status::Unsupported(Unsupported::ByPeer(s) | Unsupported::ByMpquic(s)) => s,
        }
    }

    fn glyph(&self) -> &'static str {
        match self {
            Status::Pass(_) => "✓",
            Status::Fail(_) => "✗",
            Status::Unsupported(Unsupported::ByPeer(_)) => "–p",
            Status::Unsupported(Unsupported::ByMpquic(_)) => "–m",
        }
    }
}

/// One cell of the matrix.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The case.
    pub case: Case,
    /// The other implementation.
    pub peer: Peer,
    /// mpquic's role.
    pub role: Role,
    /// What happened.
    pub status: Status,
    /// Wall time.
    pub time: Duration,
}

/// Starts the server `imp` (mpquic if `None`).
pub fn start_server(imp: Option<Peer>, spec: &Spec) -> Result<ServerHandle, String> {
    match imp {
        None => mpquic_peer::server(spec),
        Some(Peer::Quiche) => quiche_peer::server(spec),
        Some(Peer::Noq) => noq_peer::server(spec),
        Some(Peer::Aioquic) => aioquic_peer::server(spec),
    }
}

/// Runs the client `imp` (mpquic if `None`) against the relay's fronts `to`.
pub fn run_client(imp: Option<Peer>, spec: &Spec, to: &[std::net::SocketAddr]) -> Side {
    match imp {
        None => mpquic_peer::client(spec, to),
        Some(Peer::Quiche) => quiche_peer::client(spec, to),
        Some(Peer::Noq) => noq_peer::client(spec, to),
        Some(Peer::Aioquic) => aioquic_peer::client(spec, to),
    }
}

/// Starts the server `imp` (mpquic if `None`) and the relay in front of it.
/// With a preferred address the relay's fronts are bound first and the
/// second one goes into `spec.preferred`: the server offers it, and the
/// relay forwards it to the server's second address.
pub fn start(
    imp: Option<Peer>,
    spec: &mut Spec,
    plan: Plan,
    seed: u64,
) -> Result<(ServerHandle, Relay), String> {
    let fronts = if plan.preferred_address {
        let ip = if spec.ipv6 { Ipv6Addr::LOCALHOST.into() } else { Ipv4Addr::LOCALHOST.into() };
        let fronts = Relay::fronts(2, ip).map_err(|e| format!("relay: {e}"))?;
        spec.preferred = Some(fronts[1].local_addr().map_err(|e| format!("relay: {e}"))?);
        Some(fronts)
    } else {
        None
    };
    let server = start_server(imp, spec).map_err(|e| format!("server did not start: {e}"))?;
    let relay = match fronts {
        Some(fronts) => Relay::start_on(fronts, &server.addrs, plan, seed),
        None => Relay::start(&server.addrs, plan, seed),
    };
    Ok((server, relay.map_err(|e| format!("relay: {e}"))?))
}

/// The link model's seed of a cell: fixed per cell, so a run of a few
/// cells draws the same losses as the whole matrix.
pub fn seed(case: Case, peer: Peer, role: Role) -> u64 {
    let name = format!("{}/{}/{:?}", case.name(), peer.name(), role);
    // FNV-1a.
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Runs one cell (`quick`: smaller transfers and fewer connections).
pub fn run_cell(case: Case, peer: Peer, role: Role, quick: bool) -> Cell {
    run_cell_seeded(case, peer, role, quick, seed(case, peer, role))
}

/// [`run_cell`] with another seed for the link model's random draws.
pub fn run_cell_seeded(case: Case, peer: Peer, role: Role, quick: bool, seed: u64) -> Cell {
    let start = Instant::now();
    let status = match case.support(peer, role) {
        Err(u) => Status::Unsupported(u),
        Ok(()) => run(case, peer, role, quick, seed),
    };
    Cell { case, peer, role, status, time: start.elapsed() }
}

fn run(case: Case, peer: Peer, role: Role, quick: bool, seed: u64) -> Status {
    let (mut spec, plan) = case.setup(quick);
    let (client_imp, server_imp) = match role {
        Role::Client => (None, Some(peer)),
        Role::Server => (Some(peer), None),
    };
    let (server, relay) = match start(server_imp, &mut spec, plan, seed) {
        Ok(x) => x,
        Err(e) => return Status::Fail(e),
    };
    let client = run_client(client_imp, &spec, &relay.fronts);
    // Let the server read the close before it stops.
    std::thread::sleep(Duration::from_millis(50));
    let server = server.finish();
    let seen = relay.finish();
    let expected = spec.files.len() * spec.connections;
    let failed = if !client.errors.is_empty() {
        Some(format!("client: {}", first(&client.errors)))
    } else if client.files != expected {
        Some(format!("client got {} of {expected} files", client.files))
    } else if !server.errors.is_empty() {
        Some(format!("server: {}", first(&server.errors)))
    } else {
        None
    };
    if let Some(why) = failed {
        let mpquic = if role == Role::Client { &client } else { &server };
        return Status::Fail(why + &case.context(role, mpquic, &seen));
    }
    match case.verify(&spec, role, &client, &server, &seen) {
        Ok(note) => Status::Pass(note),
        Err(e) => Status::Fail(e),
    }
}

fn first(errors: &[String]) -> String {
    let mut s = errors.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if errors.len() > 3 {
        s += &format!(" (+{} more)", errors.len() - 3);
    }
    s
}

/// Column header of a (peer, role) pair: client → server.
pub fn column(peer: Peer, role: Role) -> String {
    match role {
        Role::Client => format!("mpquic→{}", peer.name()),
        Role::Server => format!("{}→mpquic", peer.name()),
    }
}

/// The matrix as a Markdown table (rows: cases; columns: client → server),
/// then the reason of every failed cell.
pub fn markdown(cells: &[Cell]) -> String {
    let mut cols: Vec<(Peer, Role)> = Vec::new();
    let mut rows: Vec<Case> = Vec::new();
    for c in cells {
        if !cols.contains(&(c.peer, c.role)) {
            cols.push((c.peer, c.role));
        }
        if !rows.contains(&c.case) {
            rows.push(c.case);
        }
    }
    let mut s = String::from("| case |");
    for (p, r) in &cols {
        s += &format!(" {} |", column(*p, *r));
    }
    s += "\n| --- |";
    s += &" :-: |".repeat(cols.len());
    s += "\n";
    for case in &rows {
        s += &format!("| {} |", case.name());
        for (p, r) in &cols {
            let cell = cells.iter().find(|c| c.case == *case && c.peer == *p && c.role == *r);
            s += &format!(" {} |", cell.map_or("", |c| c.status.glyph()));
        }
        s += "\n";
    }
    s += "\n✓ pass, ✗ fail, –p unsupported by the peer, –m unsupported by mpquic (yet)\n";
    for c in cells.iter().filter(|c| matches!(c.status, Status::Fail(_))) {
        s += &format!("\nFAIL {} {}: {}", c.case.name(), column(c.peer, c.role), c.status.detail());
    }
    s
}

/// The cells as a JSON array.
pub fn json(cells: &[Cell]) -> serde_json::Value {
    let cell = |c: &Cell| {
        let (client, server) = match c.role {
            Role::Client => ("mpquic", c.peer.name()),
            Role::Server => (c.peer.name(), "mpquic"),
        };
        serde_json::json!({
            "case": c.case.name(),
            "client": client,
            "server": server,
            "status": c.status.label(),
            "detail": c.status.detail(),
            "seconds": (c.time.as_secs_f64() * 100.0).round() / 100.0,
        })
    };
    serde_json::Value::Array(cells.iter().map(cell).collect())
}
