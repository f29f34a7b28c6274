//! `mpquic-tcp`: a kernel TCP / MPTCP bulk download, the baseline beside
//! mpquic over the same links. Exit codes: see `mpquic_apps::exit`.

// The binaries are where the clock is read.
#![allow(clippy::disallowed_methods)]

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args as ClapArgs, Parser, Subcommand};
use mpquic_apps::exit;
use mpquic_apps::kernel::bulk::{self, Amount, ClientOptions, Download};
use mpquic_apps::kernel::pm::{self, PathManager, SubflowFrom};
use mpquic_apps::kernel::{self, report};
use mpquic_apps::stats::human_bytes;

/// Bulk download over kernel TCP or MPTCP, checked byte by byte.
#[derive(Parser, Debug)]
#[command(name = "mpquic-tcp", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve the generated body to every client until SIGINT/SIGTERM.
    Server(ServerArgs),
    /// Download from a server and print a summary.
    Client(ClientArgs),
}

#[derive(ClapArgs, Debug)]
struct ServerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5201")]
    listen: SocketAddr,
    /// MPTCP (IPPROTO_MPTCP; also accepts plain TCP clients).
    #[arg(long)]
    mptcp: bool,
    /// Congestion controller (the kernel's name: cubic, bbr, reno, ...).
    #[arg(long)]
    cc: Option<String>,
    /// With --mptcp: raise `ip mptcp limits` here to accept this many extra
    /// subflows per connection (restored at exit).
    #[arg(long, requires = "mptcp", value_parser = clap::value_parser!(u32).range(1..=8))]
    subflows: Option<u32>,
}

#[derive(ClapArgs, Debug)]
#[command(group = clap::ArgGroup::new("amount").required(true).args(["bytes", "duration"]))]
struct ClientArgs {
    /// Server address (IP:PORT).
    server: SocketAddr,
    /// MPTCP (IPPROTO_MPTCP).
    #[arg(long)]
    mptcp: bool,
    /// Congestion controller (the kernel's name: cubic, bbr, reno, ...).
    #[arg(long)]
    cc: Option<String>,
    /// Download exactly this many bytes.
    #[arg(long)]
    bytes: Option<u64>,
    /// Download for this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Local address of the (first) connection.
    #[arg(long)]
    bind: Option<SocketAddr>,
    /// With --mptcp: add an `ip mptcp endpoint ... subflow` for this local
    /// address (ADDR or ADDR@DEV; repeat per extra path) and raise the
    /// limits for the run; all undone at exit.
    #[arg(long = "subflow-from", requires = "mptcp", value_parser = pm::parse_subflow_from)]
    subflow_from: Vec<SubflowFrom>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the connect and, later, for data.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-tcp: {msg}");
    std::process::exit(code)
}

fn seconds(what: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero() && s < 1e6)
        .ok_or_else(|| format!("{what} must be a positive number of seconds"))
}

/// Sets a flag on SIGINT/SIGTERM instead of dying, so guards get to undo.
fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            fail(exit::IO, format!("cannot handle signals: {e}"));
        }
    }
    stop
}

fn server(a: ServerArgs) -> i32 {
    let listener = match kernel::stream_socket(&a.listen, a.mptcp, a.cc.as_deref()) {
        Ok(s) => s,
        Err(e) => fail(exit::USAGE, e),
    };
    let mut pm = PathManager::default();
    if let Some(n) = a.subflows {
        if let Err(e) = pm.raise_limits(n) {
            fail(exit::USAGE, e);
        }
    }
    let _ = listener.set_reuse_address(true);
    if let Err(e) = listener.bind(&a.listen.into()).and_then(|()| listener.listen(128)) {
        drop(pm);
        fail(exit::IO, format!("--listen {}: {e}", a.listen));
    }
    // The accept loop never returns on its own: a signal thread undoes the
    // limits and exits.
    let mut signals = match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ]) {
        Ok(s) => s,
        Err(e) => fail(exit::IO, format!("cannot handle signals: {e}")),
    };
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            drop(pm);
            std::process::exit(exit::OK);
        }
    });
    eprintln!(
        "mpquic-tcp: serving on {} ({}, cc {})",
        a.listen,
        if a.mptcp { "MPTCP" } else { "TCP" },
        kernel::sockopt::congestion(&listener).unwrap_or_default()
    );
    match bulk::serve(&listener, a.mptcp) {
        Ok(()) => exit::OK,
        Err(e) => fail(exit::IO, format!("accept: {e}")),
    }
}

fn client(a: ClientArgs) -> i32 {
    let timeout = seconds("--timeout", a.timeout).unwrap_or_else(|e| fail(exit::USAGE, e));
    let amount = match (a.bytes, a.duration) {
        (Some(n), _) => Amount::Bytes(n),
        (None, Some(s)) => Amount::For(seconds("--duration", s).unwrap_or_else(|e| fail(exit::USAGE, e))),
        (None, None) => fail(exit::USAGE, "give --bytes or --duration"),
    };
    let opts =
        ClientOptions { peer: a.server, bind: a.bind, mptcp: a.mptcp, cc: a.cc.clone(), amount, timeout };
    let stop = stop_flag();
    let mut pm = PathManager::default();
    let result = pm
        .add_subflows(&a.subflow_from)
        .map_err(|e| (exit::USAGE, e))
        .and_then(|()| bulk::download(&opts, &stop));
    // Undo the endpoints before reporting, whatever happened.
    drop(pm);
    match result {
        Ok(d) if a.json => println!("{}", bulk::summary_json(&d, a.mptcp)),
        Ok(d) => print_summary(&d, a.mptcp),
        Err((code, e)) => fail(code, e),
    }
    exit::OK
}

fn print_summary(d: &Download, mptcp: bool) {
    let (lost, retrans, ooo) = report::totals(&d.subflows);
    eprintln!(
        "downloaded {} ({} bytes, checked) in {:.3} s: goodput {:.2} Mbit/s; {} cc {}{}",
        human_bytes(d.bytes),
        d.bytes,
        d.elapsed.as_secs_f64(),
        bulk::mbps(d.bytes, d.elapsed),
        if mptcp { "MPTCP" } else { "TCP" },
        d.cc,
        match (mptcp, d.mptcp) {
            (true, None) => " (fell back to TCP: the server is not MPTCP)",
            _ => "",
        }
    );
    eprintln!(
        "{:<4} {:<22} {:<22} {:>11} {:>6} {:>9} {:>9} {:>7}",
        "sub", "local", "peer", "recv", "share", "srtt", "min rtt", "ooo"
    );
    let total: u64 = d.subflows.iter().map(|s| s.tcp.tcpi_bytes_received).sum::<u64>().max(1);
    for (i, s) in d.subflows.iter().enumerate() {
        let addr = |a: Option<SocketAddr>| a.map_or_else(|| "?".into(), |a| a.to_string());
        eprintln!(
            "{i:<4} {:<22} {:<22} {:>11} {:>5.1}% {:>6.2} ms {:>6.2} ms {:>7}",
            addr(s.local),
            addr(s.peer),
            human_bytes(s.tcp.tcpi_bytes_received),
            s.tcp.tcpi_bytes_received as f64 * 100.0 / total as f64,
            f64::from(s.tcp.tcpi_rtt) / 1e3,
            f64::from(s.tcp.tcpi_min_rtt) / 1e3,
            s.tcp.tcpi_rcv_ooopack
        );
    }
    eprintln!("client retransmitted {lost} segments ({retrans} bytes); out-of-order segments received {ooo}");
}

fn main() {
    let code = match Cli::parse().cmd {
        Cmd::Server(a) => server(a),
        Cmd::Client(a) => client(a),
    };
    std::process::exit(code)
}
