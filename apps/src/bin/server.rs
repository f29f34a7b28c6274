//! `mpquic-server`: serves a directory over HTTP/3 on one or more UDP
//! addresses, with multipath, Retry and an access log (the server itself
//! is `mpquic_apps::server`; this is its command line).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;
use mpquic_apps::exit;
use mpquic_apps::server::{Options, Server};

/// Serve a directory over HTTP/3 (multipath QUIC).
#[derive(Parser, Debug)]
#[command(name = "mpquic-server", version)]
struct Args {
    /// UDP address to listen on; repeat for several (one socket each).
    #[arg(long, default_value = "127.0.0.1:4433")]
    listen: Vec<SocketAddr>,
    /// Directory to serve.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Certificate chain (PEM).
    #[arg(long)]
    cert: Option<String>,
    /// Private key (PEM).
    #[arg(long)]
    key: Option<String>,
    /// Do not answer new clients with Retry (no address validation).
    #[arg(long)]
    no_retry: bool,
    /// Congestion controller.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Path scheduler (`name[:key=value,...]`).
    #[arg(long, default_value = "minrtt")]
    scheduler: String,
    /// Most paths a client may open (sets initial_max_path_id); 0 disables multipath.
    #[arg(long, default_value_t = 4)]
    max_paths: u32,
    /// Write the access log here instead of stderr.
    #[arg(long)]
    access_log: Option<PathBuf>,
    /// Write one qlog file (JSON-SEQ, `<odcid>_server.sqlog`) per connection into this directory.
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Idle timeout in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    idle_timeout: u64,
    /// Connections still in their handshake beyond which new clients must
    /// pass a Retry, even with --no-retry.
    #[arg(long, default_value_t = 256)]
    max_half_open: usize,
    /// Worker threads, each with its own socket on every address
    /// (SO_REUSEPORT); the kernel steers datagrams to the worker holding
    /// their connection by the connection ID's first byte.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=64))]
    workers: u8,
    /// Accept 0-RTT requests from resuming clients (an attacker can replay
    /// them: fine for GETs of static files).
    #[arg(long)]
    early_data: bool,
    /// Send no ECN marks (ECT(0) is tried on every path and given up on
    /// where the network or the client does not carry it back).
    #[arg(long)]
    no_ecn: bool,
    /// Keep every datagram at 1350 bytes (no path MTU discovery).
    #[arg(long)]
    no_pmtud: bool,
    /// QUIC versions accepted, most preferred first (`v1`, `v2`, `v2,v1`):
    /// a client offering a preferred one is switched to it (RFC 9368).
    #[arg(long = "quic-version", value_parser = mpquic_apps::parse_versions, default_value = "v1")]
    quic_version: mpquic_apps::Versions,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-server: {msg}");
    std::process::exit(code)
}

fn main() {
    let args = Args::parse();
    let (Some(cert), Some(key)) = (args.cert, args.key) else {
        fail(exit::USAGE, "a certificate and key are required: --cert FILE --key FILE (PEM)")
    };
    let opts = Options {
        listen: args.listen,
        root: args.root,
        cert,
        key,
        retry: !args.no_retry,
        cc: args.cc,
        scheduler: args.scheduler,
        max_paths: args.max_paths,
        access_log: args.access_log,
        qlog_dir: args.qlog_dir,
        idle_timeout: args.idle_timeout,
        max_half_open: args.max_half_open,
        early_data: args.early_data,
        ecn: !args.no_ecn,
        pmtud: !args.no_pmtud,
        versions: args.quic_version.0,
    };
    let mut servers = start(&opts, usize::from(args.workers));
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            fail(exit::IO, format!("signal handler: {e}"));
        }
    }
    let listening: Vec<String> = servers[0].local_addrs().iter().map(|a| a.to_string()).collect();
    eprintln!(
        "mpquic-server: serving {} on {} (cc {}, scheduler {}, retry {}, max paths {}, QUIC {}, workers {})",
        servers[0].root().display(),
        listening.join(", "),
        opts.cc,
        opts.scheduler,
        if opts.retry { "on" } else { "off" },
        opts.max_paths,
        opts.versions.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(","),
        servers.len()
    );
    let mut first = servers.remove(0);
    let others: Vec<_> = servers
        .into_iter()
        .map(|mut s| {
            let stop = stop.clone();
            std::thread::spawn(move || (s.run(&stop), s.stats()))
        })
        .collect();
    let mut results = vec![(first.run(&stop), first.stats())];
    results
        .extend(others.into_iter().map(|t| t.join().unwrap_or_else(|_| fail(exit::IO, "a worker panicked"))));
    if results.len() > 1 {
        let accepted: Vec<String> = results.iter().map(|(_, s)| s.accepted.to_string()).collect();
        eprintln!("mpquic-server: connections accepted per worker: {}", accepted.join(" "));
    }
    for (r, _) in results {
        if let Err(e) = r {
            fail(exit::IO, e);
        }
    }
}

/// One server, or `workers` sharing the addresses; one if the kernel
/// refuses SO_REUSEPORT steering (said on stderr).
fn start(opts: &Options, workers: usize) -> Vec<Server> {
    if workers > 1 {
        match Server::workers(opts.clone(), workers) {
            Ok(s) => return s,
            Err((code, e)) if code == exit::USAGE => fail(code, e),
            Err((_, e)) => eprintln!("mpquic-server: {workers} workers impossible here ({e}); running one"),
        }
    }
    vec![Server::new(opts.clone()).unwrap_or_else(|(code, e)| fail(code, e))]
}
