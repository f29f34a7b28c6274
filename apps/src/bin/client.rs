//! `mpquic-client`: downloads URLs over HTTP/3 on one or more paths and
//! prints a transfer summary. Exit codes: see `mpquic_apps::exit`.

// The binaries are where the clock is read: they pass `now` to the engine.
#![allow(clippy::disallowed_methods)]

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use mpquic::h3::{self, quic::Quic};
use mpquic::Connection;
use mpquic_apps::follow::Follower;
use mpquic_apps::ifwatch;
use mpquic_apps::migrate::Migrator;
use mpquic_apps::net::{self, LocalSpec, Outbox, Sockets};
use mpquic_apps::pem;
use mpquic_apps::qlog::{self, EventLog};
use mpquic_apps::stats::{human_bytes, Samples};
use mpquic_apps::target::{self, Target};
use mpquic_apps::{exit, H3_NO_ERROR};
use serde_json::json;

/// Download files over HTTP/3 (multipath QUIC).
#[derive(Parser, Debug)]
#[command(name = "mpquic-client", version, after_help = EXIT_HELP)]
struct Args {
    /// https:// URLs to fetch (all from the same server).
    #[arg(required = true)]
    urls: Vec<String>,
    /// Local address (IP or IP:PORT) or interface name; one path each. `ADDR@NETNS`
    /// binds ADDR inside the network namespace file NETNS (e.g. `/proc/PID/ns/net`;
    /// root only), as `mpquic-mpshell --backend mahimahi` sets in `MPSHELL_LOCAL_i`.
    /// A path on an interface name follows it (Linux): abandoned when the interface
    /// goes down or loses its address, opened again when it comes back. `auto`: every
    /// interface that is up with an address of the server's family (not loopback).
    #[arg(long = "local")]
    locals: Vec<String>,
    /// Congestion controller.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Path scheduler (`name[:key=value,...]`).
    #[arg(long, default_value = "minrtt")]
    scheduler: String,
    /// Do not verify the server certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long)]
    ca: Option<String>,
    /// Write the body here (repeat once per URL; URLs without one go to stdout).
    #[arg(short = 'o', long = "output")]
    outputs: Vec<String>,
    /// Seconds to wait for the handshake (and for silence later).
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Print the summary as JSON on stdout (needs -o for every URL).
    #[arg(long)]
    json: bool,
    /// No progress bar and no summary.
    #[arg(short, long)]
    quiet: bool,
    /// Keep the server's NEW_TOKEN token in this file: presented on the next
    /// run, it lets the connection skip the server's Retry (one round trip).
    #[arg(long)]
    token_file: Option<std::path::PathBuf>,
    /// Keep the server's TLS session ticket in this file: presented on the
    /// next run, the handshake resumes the session (no certificate sent).
    #[arg(long)]
    session_file: Option<std::path::PathBuf>,
    /// With --session-file: send the requests in 0-RTT, before the
    /// handshake completes, when the saved session allows it (the server
    /// may reject them: they are then sent again after the handshake).
    #[arg(long, requires = "session_file")]
    early_data: bool,
    /// Send no ECN marks (ECT(0) is tried on every path and given up on
    /// where the network or the server does not carry it back).
    #[arg(long)]
    no_ecn: bool,
    /// Keep every datagram at 1350 bytes (no path MTU discovery).
    #[arg(long)]
    no_pmtud: bool,
    /// QUIC versions accepted, most preferred first (`v1`, `v2`, `v2,v1`);
    /// the connection starts with the first unless --initial-version says.
    #[arg(long = "quic-version", value_parser = mpquic_apps::parse_versions, default_value = "v1")]
    quic_version: mpquic_apps::Versions,
    /// Start with this version (one of --quic-version) and let the server
    /// switch to a preferred one: `--quic-version v2,v1 --initial-version v1`.
    #[arg(long)]
    initial_version: Option<mpquic::Version>,
    /// Write the connection's qlog (JSON-SEQ, `<odcid>_client.sqlog`) into
    /// this directory.
    #[arg(long)]
    qlog_dir: Option<std::path::PathBuf>,
    /// Move the connection to a new socket bound at this local address (IP
    /// or IP:PORT) mid-download (RFC 9000 §9.2 active migration); the
    /// summary says whether the server validated it.
    #[arg(long, value_name = "ADDR", value_parser = net::parse_local_addr)]
    migrate_to: Option<SocketAddr>,
    /// With --migrate-to: move once this many body bytes have arrived
    /// (0: as soon as the handshake is confirmed).
    #[arg(long, value_name = "BYTES", requires = "migrate_to", default_value_t = 0)]
    migrate_after: u64,
}

const EXIT_HELP: &str = "Exit codes: 0 ok, 1 local I/O error, 2 bad arguments (URL, names, --local), \
3 DNS failure / unreachable / timeout, 4 TLS or certificate failure, 5 HTTP error status, \
6 QUIC or HTTP/3 transport error";

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-client: {msg}");
    std::process::exit(code)
}

/// One URL being fetched.
struct Download {
    target: Target,
    out: Box<dyn Write>,
    out_name: String,
}

/// Resolve `--local`: `ADDR@NETNS` (ADDR an IP or IP:PORT inside the network
/// namespace file NETNS), or [`local_addr`]'s forms.
fn local_spec(spec: &str, peer: &SocketAddr) -> Result<LocalSpec, String> {
    let Some((addr, ns)) = spec.split_once('@') else {
        let addr = local_addr(spec, peer)?;
        same_family(&format!("--local {spec}"), &addr, peer)?;
        return Ok(LocalSpec { addr, netns: None });
    };
    if ns.is_empty() {
        return Err(format!("--local {spec}: empty network namespace after '@'"));
    }
    let addr = addr
        .parse::<SocketAddr>()
        .or_else(|_| addr.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("--local {spec}: with @NETNS the address must be an IP or IP:PORT"))?;
    same_family(&format!("--local {spec}"), &addr, peer)?;
    Ok(LocalSpec { addr, netns: Some(ns.into()) })
}

/// A socket of one address family cannot reach the other's addresses.
/// `what` names the option in the error ("--local 127.0.0.1").
fn same_family(what: &str, local: &SocketAddr, peer: &SocketAddr) -> Result<(), String> {
    let family = |a: &SocketAddr| if a.is_ipv4() { "IPv4" } else { "IPv6" };
    if local.is_ipv4() == peer.is_ipv4() {
        return Ok(());
    }
    Err(format!(
        "{what}: an {} address cannot reach the server's {} address {peer}; give a local address of the same family",
        family(local),
        family(peer)
    ))
}

/// The server's address: the first the name resolves to, or the first of
/// the family of the first `--local` that is a plain IP (so `localhost`
/// with `--local ::1` picks `[::1]`).
fn server_addr(host: &str, port: u16, locals: &[String]) -> Result<SocketAddr, (i32, String)> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| (exit::NETWORK, format!("cannot resolve {host}: {e}")))?
        .collect();
    let want_v4 = locals.first().and_then(|l| {
        let ip = l.split_once('@').map_or(l.as_str(), |(a, _)| a);
        ip.parse::<SocketAddr>().map(|a| a.ip()).or_else(|_| ip.parse::<IpAddr>()).ok().map(|ip| ip.is_ipv4())
    });
    let preferred = want_v4.and_then(|v4| addrs.iter().find(|a| a.is_ipv4() == v4));
    preferred.or(addrs.first()).copied().ok_or_else(|| (exit::NETWORK, format!("{host}: no address")))
}

/// Largest token presented: with the Initial's headers and AEAD tag it
/// must leave room for handshake data in the first 1200-byte datagram.
const MAX_TOKEN: usize = 1024;

/// The token kept in `--token-file`, if there is a usable one. A missing
/// file just means none yet; an oversized one is reported and skipped (the
/// server's token replaces it at the end of this run).
fn saved_token(path: &std::path::Path) -> Option<Vec<u8>> {
    let t = std::fs::read(path).ok()?;
    if t.len() > MAX_TOKEN {
        eprintln!(
            "mpquic-client: --token-file {}: no usable token ({} bytes, at most {MAX_TOKEN}); connecting without one",
            path.display(),
            t.len()
        );
        return None;
    }
    Some(t)
}

/// Resolve `--local`: an IP, IP:PORT, or an interface name (its first
/// address of the peer's family).
fn local_addr(spec: &str, peer: &SocketAddr) -> Result<SocketAddr, String> {
    if let Ok(a) = spec.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = spec.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    let ifaces = if_addrs::get_if_addrs().map_err(|e| format!("--local {spec}: listing interfaces: {e}"))?;
    ifaces
        .iter()
        .filter(|i| i.name == spec)
        .map(|i| i.ip())
        .find(|ip| ip.is_ipv4() == peer.is_ipv4())
        .map(|ip| SocketAddr::new(ip, 0))
        .ok_or_else(|| format!("--local {spec}: not an address, and no interface of that name with an address of the server's family"))
}

/// `--local auto` replaced by the interfaces it stands for.
fn expand_auto(locals: &[String], peer: &SocketAddr) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for l in locals {
        if l != "auto" {
            out.push(l.clone());
            continue;
        }
        let found = ifwatch::auto_interfaces(peer.is_ipv6());
        if found.is_empty() {
            return Err(format!(
                "--local auto: no interface is up with an address of the server's family ({peer})"
            ));
        }
        out.extend(found.into_iter().filter(|n| !locals.contains(n)));
    }
    Ok(out)
}

/// Follow the `--local` specs that are interface names (bound in `socks`
/// in the same order), if any and if the kernel lets us watch them.
fn follow_interfaces(
    specs: &[String],
    socks: &mut Sockets,
    peer: SocketAddr,
    started: Instant,
) -> Option<Follower> {
    let is_name =
        |s: &String| !s.contains('@') && s.parse::<SocketAddr>().is_err() && s.parse::<IpAddr>().is_err();
    let named: Vec<(String, SocketAddr)> = specs
        .iter()
        .zip(socks.local_addrs())
        .filter(|(s, _)| is_name(s))
        .map(|(s, a)| (s.clone(), *a))
        .collect();
    if named.is_empty() {
        return None;
    }
    match Follower::start(named, socks, peer, started) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("mpquic-client: not following interfaces ({e}); their paths stay as bound");
            None
        }
    }
}

fn main() {
    let args = Args::parse();
    let started = Instant::now();
    let targets: Vec<Target> =
        args.urls.iter().map(|u| target::parse(u).unwrap_or_else(|e| fail(exit::USAGE, e))).collect();
    let first = targets[0].clone();
    if let Some(t) = targets.iter().find(|t| (&t.host, t.port) != (&first.host, first.port)) {
        fail(
            exit::USAGE,
            format!(
                "all URLs must be on one server ({}:{} vs {}:{})",
                first.host, first.port, t.host, t.port
            ),
        );
    }
    if args.outputs.len() > targets.len() {
        fail(exit::USAGE, "more -o files than URLs");
    }
    if args.json && args.outputs.len() < targets.len() {
        fail(exit::USAGE, "--json prints on stdout: give -o FILE for every URL");
    }
    if !(args.timeout > 0.0 && args.timeout < 1e6) {
        fail(exit::USAGE, "--timeout must be a positive number of seconds");
    }
    let mut config = mpquic::Config::new();
    if let Err(e) = mpquic_apps::set_algorithms(&mut config, &args.cc, &args.scheduler) {
        fail(exit::USAGE, e);
    }
    let _ = config.set_application_protos(&[mpquic_apps::ALPN]);
    config.enable_ecn(!args.no_ecn);
    config.enable_pmtud(!args.no_pmtud);
    let versions = config.set_versions(&args.quic_version.0);
    let initial = args.initial_version.map_or(Ok(()), |v| config.set_initial_version(v));
    if let Err(e) = versions.and(initial) {
        fail(exit::USAGE, format!("--quic-version / --initial-version: {e}"));
    }
    if args.insecure {
        config.verify_peer(false);
    } else if let Some(ca) = &args.ca {
        pem::check("--ca", ca, pem::Want::Certificates).unwrap_or_else(|e| fail(exit::USAGE, e));
        if let Err(e) = config.load_verify_locations_from_file(ca) {
            fail(exit::USAGE, format!("--ca {ca}: {e}"));
        }
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    config.set_max_idle_timeout((timeout.as_millis() as u64).max(5_000));
    config.set_initial_max_data(16 << 20);
    config.set_initial_max_stream_data_bidi_local(16 << 20);
    config.set_max_connection_window(32 << 20);
    config.set_max_stream_window(32 << 20);
    if let Some(dir) = &args.qlog_dir {
        qlog::check_dir(dir)
            .unwrap_or_else(|e| fail(exit::USAGE, format!("--qlog-dir {}: {e}", dir.display())));
        config.enable_qlog(true);
    }

    let peer = server_addr(&first.host, first.port, &args.locals).unwrap_or_else(|(code, e)| fail(code, e));
    let specs = expand_auto(&args.locals, &peer).unwrap_or_else(|e| fail(exit::USAGE, e));
    if specs.len() > 1 {
        config.set_initial_max_path_id(Some(specs.len() as u32 - 1));
    }
    let mut locals: Vec<LocalSpec> =
        specs.iter().map(|l| local_spec(l, &peer).unwrap_or_else(|e| fail(exit::USAGE, e))).collect();
    if locals.is_empty() {
        let any: IpAddr =
            if peer.is_ipv4() { [0, 0, 0, 0].into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
        locals.push(LocalSpec { addr: SocketAddr::new(any, 0), netns: None });
    }
    let mut socks =
        Sockets::bind_specs(&locals).unwrap_or_else(|e| fail(exit::USAGE, format!("--local: {e}")));
    let follower = follow_interfaces(&specs, &mut socks, peer, started);
    let migrator = args.migrate_to.map(|to| {
        same_family(&format!("--migrate-to {to}"), &to, &peer).unwrap_or_else(|e| fail(exit::USAGE, e));
        Migrator::new(to, args.migrate_after)
    });

    let mut downloads = Vec::new();
    for (i, t) in targets.into_iter().enumerate() {
        let (out, out_name): (Box<dyn Write>, String) = match args.outputs.get(i) {
            Some(p) => match File::create(p) {
                Ok(f) => (Box::new(BufWriter::with_capacity(1 << 20, f)), p.clone()),
                Err(e) => fail(exit::IO, format!("-o {p}: {e}")),
            },
            None => (Box::new(BufWriter::new(std::io::stdout())), "-".into()),
        };
        downloads.push(Download { target: t, out, out_name });
    }
    let paths: Vec<&str> = downloads.iter().map(|d| d.target.path.as_str()).collect();
    let user_agent = concat!("mpquic-client/", env!("CARGO_PKG_VERSION"));
    let fetch = h3::Fetch::get(&first.authority, &paths, Some(user_agent));
    let local0 = socks.local_addrs()[0];
    // A missing or unreadable session file just means a full handshake.
    let session = args.session_file.as_ref().and_then(|p| std::fs::read(p).ok());
    config.enable_session_tickets(args.session_file.is_some());
    config.enable_early_data(args.early_data);
    mpquic_apps::check_network_config(&config).unwrap_or_else(|e| fail(exit::USAGE, e));
    let scid = mpquic::random_cid(16);
    // RFC 9368 §2.1: a server that answers with Version Negotiation gets a
    // second attempt in the version of ours it listed (once).
    let reopen: Reopen = {
        let (mut cfg, host) = (config.clone(), first.host.clone());
        Box::new(move |v, refused| {
            cfg.set_initial_version(v).ok()?;
            let mut c = mpquic::connect(Some(&host), &scid, local0, peer, &cfg, Instant::now()).ok()?;
            c.follows_version_negotiation(refused);
            Some(c)
        })
    };
    let open = |session: Option<&[u8]>| {
        mpquic::connect_with_session(Some(&first.host), &scid, local0, peer, &config, session, Instant::now())
    };
    let mut conn = match (open(session.as_deref()), &args.session_file) {
        (Err(e), Some(p)) if session.is_some() => {
            eprintln!("mpquic-client: --session-file {}: {e}; full handshake", p.display());
            open(None)
        }
        (r, _) => r,
    }
    .unwrap_or_else(|e| match (&e, &args.ca) {
        // The file is PEM (checked above) but BoringSSL refused its content.
        (mpquic::Error::Config(_), Some(ca)) => {
            fail(exit::USAGE, format!("--ca {ca}: certificates BoringSSL cannot load"))
        }
        _ => fail(exit::TLS, format!("TLS setup: {e}")),
    });
    if let Some(t) = args.token_file.as_deref().and_then(saved_token) {
        conn.set_token(&t);
    }
    let show_bar = !args.quiet && !args.json && std::io::stderr().is_terminal();
    let mut c = Client {
        conn,
        fetch,
        socks,
        out: Outbox::default(),
        downloads,
        ooo: Samples::default(),
        bar: show_bar.then(ProgressBar::no_length),
        established_at: None,
        first_byte: None,
        done_at: None,
        extra_paths: Vec::new(),
        peer,
        reopen: Some(reopen),
        qlog: None,
        qlog_dir: args.qlog_dir.clone(),
        migrator,
        follower,
    };
    c.open_qlog();
    if let Some(b) = &c.bar {
        b.set_style(
            ProgressStyle::with_template("{bytes}/{total_bytes} {bar:30} {binary_bytes_per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    }
    let code = c.run(started, timeout);
    c.write_qlog();
    if let Some(b) = &c.bar {
        b.finish_and_clear();
    }
    if let (Some(p), Some(t)) = (&args.token_file, c.conn.new_token_next()) {
        if let Err(e) = std::fs::write(p, t) {
            eprintln!("mpquic-client: --token-file {}: {e}", p.display());
        }
    }
    if let (Some(p), Some(t)) = (&args.session_file, c.conn.session()) {
        if let Err(e) = std::fs::write(p, t) {
            eprintln!("mpquic-client: --session-file {}: {e}", p.display());
        }
    }
    if (code == exit::OK || code == exit::HTTP_STATUS) && !args.quiet {
        c.summary(started, &args);
    }
    std::process::exit(code);
}

struct Client {
    conn: Connection,
    fetch: h3::Fetch,
    socks: Sockets,
    out: Outbox,
    downloads: Vec<Download>,
    ooo: Samples,
    bar: Option<ProgressBar>,
    established_at: Option<Instant>,
    first_byte: Option<Instant>,
    done_at: Option<Instant>,
    /// Further `--local` addresses still to open paths from (the engine
    /// needs a connection ID from the server for each first).
    extra_paths: Vec<SocketAddr>,
    peer: SocketAddr,
    /// A new connection attempt after Version Negotiation: (version to
    /// use, version refused).
    reopen: Option<Reopen>,
    /// The connection's qlog file (`--qlog-dir`).
    qlog: Option<EventLog>,
    qlog_dir: Option<std::path::PathBuf>,
    /// The move asked for by --migrate-to.
    migrator: Option<Migrator>,
    /// The paths on interface names, following them.
    follower: Option<Follower>,
}

type Reopen = Box<dyn FnOnce(mpquic::Version, mpquic::Version) -> Option<Connection>>;

/// TLS alerts travel as CRYPTO_ERROR transport codes 0x100..=0x1ff.
fn is_crypto(info: Option<&mpquic::CloseInfo>) -> bool {
    info.is_some_and(|i| !i.is_app && (0x100..=0x1ff).contains(&i.code))
}

impl Client {
    /// Start the connection's qlog file, if `--qlog-dir` asks for one.
    fn open_qlog(&mut self) {
        let Some(dir) = &self.qlog_dir else { return };
        match EventLog::create(dir, &self.conn, "mpquic-client", Instant::now()) {
            Ok(l) => self.qlog = Some(l),
            Err(e) => eprintln!("mpquic-client: --qlog-dir {}: {e}", dir.display()),
        }
    }

    /// Copy the engine's queued qlog events to the file.
    fn write_qlog(&mut self) {
        if let Some(l) = self.qlog.as_mut() {
            l.engine_events(&mut self.conn);
            l.flush();
        }
    }

    fn run(&mut self, started: Instant, timeout: Duration) -> i32 {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let mut out = vec![0u8; net::MAX_DATAGRAM];
        let mut wake = None;
        let handshake_deadline = started + timeout;
        loop {
            let now = Instant::now();
            // With 0-RTT keys the requests leave with the first flight.
            if self.fetch.h3().is_none() && self.conn.is_in_early_data() {
                if let Err(code) = self.start(now) {
                    return code;
                }
            }
            match self.out.flush(&mut self.conn, &self.socks, &mut out, now) {
                Ok(w) => wake = w,
                Err(_) if self.conn.is_closed() || self.conn.is_draining() => {}
                Err(e) => return self.fail_transport(&e.to_string()),
            }
            if self.done_at.is_some() && (self.conn.is_closed() || self.conn.is_draining()) {
                return self.final_code();
            }
            if let Some(l) = self.qlog.as_mut() {
                l.engine_events(&mut self.conn);
            }
            if self.conn.is_closed() {
                if self.after_version_negotiation() {
                    continue;
                }
                return self.closed_code(timeout);
            }
            if self.established_at.is_none() && now >= handshake_deadline {
                eprintln!(
                    "mpquic-client: no answer from {} within {:.1} s (server down, port closed or unreachable)",
                    self.conn.path_stats().next().map(|p| p.peer.to_string()).unwrap_or_default(),
                    timeout.as_secs_f64()
                );
                return exit::NETWORK;
            }
            let mut deadline = net::earliest(self.conn.timeout(), wake);
            if self.established_at.is_none() {
                deadline = net::earliest(deadline, Some(handshake_deadline));
            }
            let wait = deadline.map(|d| d.saturating_duration_since(now));
            if let Err(e) = self.socks.wait(wait) {
                fail(exit::IO, format!("poll: {e}"));
            }
            let now = Instant::now();
            let conn = &mut self.conn;
            let r = self.socks.recv_all(&mut buf, |d, info| {
                let _ = conn.recv(d, info, now);
            });
            if let Err(e) = r {
                fail(exit::IO, format!("recv: {e}"));
            }
            if let Some(f) = self.follower.as_mut().filter(|_| self.socks.other_ready()) {
                f.on_change(&mut self.conn, &mut self.socks, now);
            }
            if self.conn.timeout().is_some_and(|t| t <= now) {
                self.conn.on_timeout(now);
            }
            self.ooo.push(self.conn.out_of_order_bytes());
            if self.conn.is_established() && self.established_at.is_none() {
                self.established_at = Some(now);
                if self.fetch.h3().is_none() {
                    if let Err(code) = self.start(now) {
                        return code;
                    }
                }
            }
            self.open_paths(now);
            if let Some(f) = self.follower.as_mut() {
                f.poll(&mut self.conn, now);
            }
            if let Err(code) = self.on_h3(now) {
                return code;
            }
            if let Some(m) = self.migrator.as_mut() {
                let received = self.fetch.requests().iter().map(|r| r.bytes).sum();
                m.poll(&mut self.conn, &mut self.socks, received, now);
            }
            if self.done_at.is_none() && self.fetch.is_done() {
                self.done_at = Some(now);
                for d in &mut self.downloads {
                    if let Err(e) = d.out.flush() {
                        fail(exit::IO, format!("writing {}: {e}", d.out_name));
                    }
                }
                if let Some(h) = self.fetch.h3() {
                    let _ = h.send_goaway(&mut Quic::new(&mut self.conn, now));
                }
                self.conn.close(true, H3_NO_ERROR, b"", now);
            }
        }
    }

    /// Open HTTP/3 and send every request.
    fn start(&mut self, now: Instant) -> Result<(), i32> {
        self.extra_paths = self.socks.local_addrs().iter().skip(1).copied().collect();
        self.on_h3(now)
    }

    /// Open one path per extra `--local` once the engine can.
    fn open_paths(&mut self, now: Instant) {
        net::open_paths(&mut self.conn, &mut self.extra_paths, self.peer, now, |local, e| {
            eprintln!("mpquic-client: cannot open a path from {local}: {e}")
        });
    }

    /// Runs the downloads' HTTP/3 exchange (once established): bodies go to
    /// their outputs and the progress bar.
    fn on_h3(&mut self, now: Instant) -> Result<(), i32> {
        // Before the handshake only with 0-RTT keys (the requests go early).
        if self.established_at.is_none() && !self.conn.is_in_early_data() {
            return Ok(());
        }
        let mut body = vec![0u8; 256 * 1024];
        let q = &mut Quic::new(&mut self.conn, now);
        loop {
            let ev = match self.fetch.poll(q, &mut body) {
                Ok(Some(ev)) => ev,
                Ok(None) => return Ok(()),
                Err(_) if self.done_at.is_some() => return Ok(()),
                Err(e) => return Err(self.fetch_failed(&e)),
            };
            match ev {
                h3::FetchEvent::Response { request } => {
                    let length = self.fetch.requests()[request].content_length;
                    if let (Some(b), Some(l)) = (&self.bar, length) {
                        b.inc_length(l);
                    }
                }
                h3::FetchEvent::Body { request, len } => {
                    self.first_byte.get_or_insert(now);
                    let d = &mut self.downloads[request];
                    if let Err(e) = d.out.write_all(&body[..len]) {
                        fail(exit::IO, format!("writing {}: {e}", d.out_name));
                    }
                    if let Some(b) = &self.bar {
                        b.inc(len as u64);
                    }
                }
                h3::FetchEvent::Done { .. } => {}
            }
        }
    }

    fn fetch_failed(&self, e: &h3::FetchError) -> i32 {
        let request = match e {
            h3::FetchError::Request(i, _)
            | h3::FetchError::Body(i, _)
            | h3::FetchError::Reset(i, _)
            | h3::FetchError::NoStatus(i)
            | h3::FetchError::Length { request: i, .. } => Some(*i),
            h3::FetchError::H3(_) | h3::FetchError::Stream(..) => None,
        };
        match request.and_then(|i| self.downloads.get(i)) {
            Some(d) => eprintln!("mpquic-client: {}: {e}", d.target.path),
            None => eprintln!("mpquic-client: {e}"),
        }
        exit::TRANSPORT
    }

    fn fail_transport(&self, msg: &str) -> i32 {
        eprintln!("mpquic-client: {msg}");
        exit::TRANSPORT
    }

    fn final_code(&self) -> i32 {
        let mut code = exit::OK;
        for (d, r) in self.downloads.iter().zip(self.fetch.requests()) {
            if let Some(s) = r.status.filter(|&s| s >= 400) {
                eprintln!("mpquic-client: https://{}{}: HTTP status {s}", d.target.authority, d.target.path);
                code = exit::HTTP_STATUS;
            }
        }
        code
    }

    /// The connection closed before every download finished.
    /// The server refused our version with a Version Negotiation packet
    /// listing one of ours: start the one new attempt in it. Returns whether
    /// it did.
    fn after_version_negotiation(&mut self) -> bool {
        let Some(v) = self.conn.version_negotiation().filter(|_| self.fetch.h3().is_none()) else {
            return false;
        };
        let refused = self.conn.version();
        let Some(conn) = self.reopen.take().and_then(|open| open(v, refused)) else { return false };
        eprintln!("mpquic-client: the server does not take QUIC {refused}; trying {v}");
        // The new attempt is a new connection: its own qlog file.
        self.write_qlog();
        self.conn = conn;
        self.out = Outbox::default();
        self.open_qlog();
        true
    }

    fn closed_code(&self, timeout: Duration) -> i32 {
        let local = self.conn.local_error();
        let peer = self.conn.peer_error();
        let describe = |i: &mpquic::CloseInfo| {
            format!(
                "code {:#x}{}",
                i.code,
                if i.reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", String::from_utf8_lossy(&i.reason))
                }
            )
        };
        if is_crypto(local) || is_crypto(peer) {
            let (who, i) = if is_crypto(local) { ("local", local) } else { ("server", peer) };
            let alert = i.map(|i| i.code - 0x100).unwrap_or(0);
            let hint = match alert {
                42 | 43 | 44 | 45 | 46 | 48 => " — certificate not trusted (use --ca FILE or --insecure)",
                120 => " — no common application protocol (server does not speak h3)",
                _ => "",
            };
            eprintln!(
                "mpquic-client: TLS handshake failed ({who} alert {alert}, {}){hint}",
                i.map(describe).unwrap_or_default()
            );
            return exit::TLS;
        }
        if let Some(i) = peer {
            eprintln!("mpquic-client: server closed the connection: {}", describe(i));
            return exit::TRANSPORT;
        }
        if let Some(i) = local {
            eprintln!("mpquic-client: connection failed: {}", describe(i));
            return exit::TRANSPORT;
        }
        if self.established_at.is_none() {
            eprintln!("mpquic-client: no answer from the server within {:.1} s", timeout.as_secs_f64());
            return exit::NETWORK;
        }
        eprintln!("mpquic-client: connection timed out (no packets for the idle timeout)");
        exit::NETWORK
    }

    fn summary(&self, started: Instant, args: &Args) {
        let end = self.done_at.unwrap_or_else(Instant::now);
        let total: u64 = self.fetch.requests().iter().map(|r| r.bytes).sum();
        let elapsed = end.saturating_duration_since(started);
        let transfer = self.first_byte.map(|f| end.saturating_duration_since(f)).unwrap_or_default();
        let handshake = self.established_at.map(|e| e.saturating_duration_since(started)).unwrap_or_default();
        let goodput =
            |d: Duration| if d.is_zero() { 0.0 } else { total as f64 * 8.0 / d.as_secs_f64() / 1e6 };
        let paths: Vec<_> = self.conn.path_stats().collect();
        let recv_total: u64 = paths.iter().map(|p| p.recv_bytes).sum::<u64>().max(1);
        let stats = self.conn.stats();
        let ooo = self.ooo.summary();
        let overhead = stats.recv_bytes.saturating_sub(total);
        if args.json {
            let j = json!({
                "bytes": total, "time_s": elapsed.as_secs_f64(), "handshake_s": handshake.as_secs_f64(),
                "transfer_s": transfer.as_secs_f64(), "goodput_mbps": goodput(elapsed),
                "transfer_goodput_mbps": goodput(transfer), "cc": args.cc, "scheduler": args.scheduler,
                "multipath": self.conn.is_multipath(), "retry": self.conn.retried(),
                "resumed": self.conn.is_resumed(), "early_data": self.conn.is_early_data_accepted(),
                "downloads": self.downloads.iter().zip(self.fetch.requests()).map(|(d, r)| json!({
                    "url": format!("https://{}{}", d.target.authority, d.target.path), "status": r.status,
                    "bytes": r.bytes, "output": d.out_name })).collect::<Vec<_>>(),
                "paths": paths.iter().map(|p| json!({
                    "id": p.id.0, "local": p.local.to_string(), "peer": p.peer.to_string(), "active": p.active,
                    "recv_bytes": p.recv_bytes, "sent_bytes": p.sent_bytes, "share": p.recv_bytes as f64 / recv_total as f64,
                    "srtt_ms": p.srtt.as_secs_f64() * 1e3, "min_rtt_ms": p.min_rtt.as_secs_f64() * 1e3,
                    "lost_packets": p.lost, "retrans_bytes": p.retrans_bytes, "cwnd": p.cwnd,
                    "ecn": p.ecn.as_str(), "ecn_ce": p.ecn_ce, "mtu": p.mtu })).collect::<Vec<_>>(),
                "lost_packets": stats.lost, "retrans_bytes": stats.retrans_bytes,
                "overhead_bytes": overhead, "dropped_packets": stats.dropped,
                "duplicate_bytes": stats.dup_stream_bytes,
                "out_of_order_bytes": { "samples": ooo.count, "mean": ooo.mean, "p95": ooo.p95, "max": ooo.max },
                "migration": self.migrator.as_ref().map(Migrator::report),
                "interfaces": self.follower.as_ref().map(Follower::to_json),
            });
            println!("{j}");
            return;
        }
        let mut e = std::io::stderr().lock();
        let _ = writeln!(
            e,
            "downloaded {} ({total} bytes, {} URL{}) in {:.3} s: goodput {:.1} Mbit/s ({:.1} Mbit/s after the first byte; handshake {:.1} ms)",
            human_bytes(total),
            self.downloads.len(),
            if self.downloads.len() == 1 { "" } else { "s" },
            elapsed.as_secs_f64(),
            goodput(elapsed),
            goodput(transfer),
            handshake.as_secs_f64() * 1e3
        );
        let _ = writeln!(
            e,
            "cc {}, scheduler {}, multipath {}{}",
            args.cc,
            args.scheduler,
            if self.conn.is_multipath() { "negotiated" } else { "off" },
            match (args.early_data, self.conn.is_early_data_accepted()) {
                (false, _) => "",
                (true, true) => ", 0-RTT accepted",
                (true, false) => ", no 0-RTT (no usable session, or the server refused it)",
            }
        );
        let _ = writeln!(
            e,
            "{:<5} {:<22} {:<22} {:>11} {:>6} {:>9} {:>9} {:>6} {:>9}  ecn",
            "path", "local", "peer", "recv", "share", "srtt", "min rtt", "lost", "retrans"
        );
        for p in &paths {
            let _ = writeln!(
                e,
                "{:<5} {:<22} {:<22} {:>11} {:>5.1}% {:>6.2} ms {:>6.2} ms {:>6} {:>9}  {}",
                p.id.0,
                p.local.to_string(),
                p.peer.to_string(),
                human_bytes(p.recv_bytes),
                p.recv_bytes as f64 * 100.0 / recv_total as f64,
                p.srtt.as_secs_f64() * 1e3,
                p.min_rtt.as_secs_f64() * 1e3,
                p.lost,
                human_bytes(p.retrans_bytes),
                ecn_label(p.ecn, p.ecn_ce)
            );
        }
        for ev in self.follower.iter().flat_map(|f| f.events()) {
            let _ = writeln!(e, "{}", ev);
        }
        let _ = writeln!(
            e,
            "overhead {} received beyond the body (QUIC/HTTP/3 framing, ACKs, duplicates); our packets lost {}, retransmitted {}",
            human_bytes(overhead),
            stats.lost,
            human_bytes(stats.retrans_bytes)
        );
        let _ = writeln!(
            e,
            "duplicate stream bytes received {} (redundant copies, spurious retransmissions)",
            human_bytes(stats.dup_stream_bytes)
        );
        let _ = writeln!(
            e,
            "receiver out-of-order bytes over {} samples: mean {:.0}, p95 {}, max {}",
            ooo.count, ooo.mean, ooo.p95, ooo.max
        );
        if let Some(m) = &self.migrator {
            let _ = writeln!(e, "{}", m.describe());
        }
    }
}

/// A path's ECN state for the summary: validated (with the CE marks the
/// peer reported), given up, or still unconfirmed.
fn ecn_label(state: mpquic::EcnState, ce: u64) -> String {
    match state {
        mpquic::EcnState::Capable => format!("ok, {ce} CE"),
        mpquic::EcnState::Failed => "off".into(),
        mpquic::EcnState::Testing | mpquic::EcnState::Unknown => "unconfirmed".into(),
    }
}
