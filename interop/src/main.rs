//! `mpquic-interop`: runs the interop matrix and prints it (Markdown table,
//! then JSON with `--json`); writes the JSON to `--out` (default
//! `out/interop.json`). Exits 1 when a cell fails.

use std::process::ExitCode;

use clap::Parser;

use mpquic_interop::cases::{Case, Peer, Role, ALL};
use mpquic_interop::matrix;

/// Runs the interop matrix against quiche, noq and aioquic.
#[derive(Parser)]
#[command(name = "mpquic-interop")]
struct Args {
    /// Short transfers (CI's sizes).
    #[arg(long)]
    quick: bool,
    /// Cases to run (default: all).
    #[arg(long, value_delimiter = ',', value_parser = parse_case)]
    cases: Option<Vec<Case>>,
    /// Peers to run against (default: all).
    #[arg(long, value_delimiter = ',', value_parser = parse_peer)]
    peers: Option<Vec<Peer>>,
    /// Roles mpquic plays (default: both).
    #[arg(long, value_delimiter = ',', value_parser = parse_role)]
    roles: Option<Vec<Role>>,
    /// Seed of the relay's link model (loss, corruption) instead of each
    /// cell's own, to look into a failure seen with another seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Also print the JSON.
    #[arg(long)]
    json: bool,
    /// Where to write the JSON.
    #[arg(long, default_value = "out/interop.json")]
    out: String,
}

fn parse_case(n: &str) -> Result<Case, String> {
    Case::from_name(n).ok_or_else(|| {
        let names: Vec<_> = ALL.iter().map(|c| c.name()).collect();
        format!("unknown case {n} (cases: {})", names.join(", "))
    })
}

fn parse_peer(n: &str) -> Result<Peer, String> {
    Peer::ALL.into_iter().find(|p| p.name() == n).ok_or(format!("unknown peer {n} (quiche, noq, aioquic)"))
}

fn parse_role(n: &str) -> Result<Role, String> {
    match n {
        "client" => Ok(Role::Client),
        "server" => Ok(Role::Server),
        _ => Err(format!("unknown role {n} (client: mpquic is the client; server)")),
    }
}

fn main() -> ExitCode {
    // RUST_LOG (e.g. quiche=debug,mpquic=debug) shows what the engines log; off by default.
    env_logger::init();
    let a = Args::parse();
    let cases = a.cases.unwrap_or_else(|| ALL.to_vec());
    let peers = a.peers.unwrap_or_else(|| Peer::ALL.to_vec());
    let roles = a.roles.unwrap_or_else(|| Role::ALL.to_vec());
    let mut cells = Vec::new();
    for &case in &cases {
        for &peer in &peers {
            for &role in &roles {
                let cell = match a.seed {
                    Some(seed) => matrix::run_cell_seeded(case, peer, role, a.quick, seed),
                    None => matrix::run_cell(case, peer, role, a.quick),
                };
                eprintln!(
                    "{:<20} {:<16} {:<22} {:>6.2}s {}",
                    case.name(),
                    matrix::column(peer, role),
                    cell.status.label(),
                    cell.time.as_secs_f64(),
                    match &cell.status {
                        matrix::Status::Pass(s) | matrix::Status::Fail(s) => s.as_str(),
                        _ => "",
                    }
                );
                cells.push(cell);
            }
        }
    }
    println!("{}", matrix::markdown(&cells));
    let json = matrix::json(&cells);
    let text = serde_json::to_string_pretty(&json).unwrap_or_default();
    if a.json {
        println!("{text}");
    }
    if let Some(dir) = std::path::Path::new(&a.out).parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(&a.out, text + "\n") {
        eprintln!("cannot write {}: {e}", a.out);
    }
    let failed = cells.iter().filter(|c| matches!(c.status, matrix::Status::Fail(_))).count();
    if failed > 0 {
        eprintln!("{failed} cell(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
