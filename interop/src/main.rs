//! `mpquic-interop`: runs the interop matrix and prints it (Markdown table,
//! then JSON with `--json`); writes the JSON to `--out` (default
//! `out/interop.json`). Exits 1 when a cell fails.

use std::process::ExitCode;

use mpquic_interop::cases::{Case, Peer, Role, ALL};
use mpquic_interop::matrix;

const USAGE: &str = "usage: mpquic-interop [--quick] [--cases a,b] [--peers quiche,noq,aioquic] \
                     [--roles client,server] [--json] [--out FILE]";

struct Args {
    quick: bool,
    cases: Vec<Case>,
    peers: Vec<Peer>,
    roles: Vec<Role>,
    json: bool,
    out: String,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        quick: false,
        cases: ALL.to_vec(),
        peers: Peer::ALL.to_vec(),
        roles: Role::ALL.to_vec(),
        json: false,
        out: "out/interop.json".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--json" => a.json = true,
            "--out" => a.out = value()?,
            "--cases" => {
                a.cases = value()?
                    .split(',')
                    .map(|n| Case::from_name(n).ok_or(format!("unknown case {n}")))
                    .collect::<Result<_, _>>()?
            }
            "--peers" => {
                a.peers = value()?
                    .split(',')
                    .map(|n| Peer::ALL.into_iter().find(|p| p.name() == n).ok_or(format!("unknown peer {n}")))
                    .collect::<Result<_, _>>()?
            }
            "--roles" => {
                a.roles = value()?
                    .split(',')
                    .map(|n| match n {
                        "client" => Ok(Role::Client),
                        "server" => Ok(Role::Server),
                        _ => Err(format!("unknown role {n} (client: mpquic is the client)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {arg}\n{USAGE}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    // RUST_LOG (e.g. quiche=debug,mpquic=debug) shows what the engines log; off by default.
    env_logger::init();
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut cells = Vec::new();
    for &case in &a.cases {
        for &peer in &a.peers {
            for &role in &a.roles {
                let cell = matrix::run_cell(case, peer, role, a.quick);
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
