//! `mpquic-load`: a load generator. Opens N concurrent connections to one
//! server, each with its own UDP socket, each downloading its own URL (`{i}`
//! in the URL becomes the connection's index), checks every body (against
//! `--check FILE` byte for byte, else its length against content-length),
//! and prints the number completed, failures by cause and latency
//! percentiles.

// The binaries are where the clock is read: they pass `now` to the engine.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use clap::Parser;
use mpquic::h3::{self, quic::Quic, Header};
use mpquic::Connection;
use mpquic_apps::net::{self, Outbox, Sockets};
use mpquic_apps::{exit, target};

/// Open many concurrent HTTP/3 downloads and check every body.
#[derive(Parser, Debug)]
#[command(name = "mpquic-load", version)]
struct Args {
    /// URL to download; `{i}` is replaced by the connection's index.
    url: String,
    /// Concurrent connections.
    #[arg(long, default_value_t = 100)]
    connections: usize,
    /// Expected body (every download must equal it byte for byte).
    #[arg(long)]
    check: Option<std::path::PathBuf>,
    /// Do not verify the server certificate.
    #[arg(long)]
    insecure: bool,
    /// CA certificate (PEM) to verify the server with.
    #[arg(long)]
    ca: Option<String>,
    /// Give up on downloads not finished after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Send no request: hold the connections open and idle this many
    /// seconds once all are established (latency is then the handshake's).
    #[arg(long)]
    idle: Option<f64>,
}

/// One connection and its single download.
struct Load {
    conn: Connection,
    h3: Option<h3::Connection>,
    out: Outbox,
    path: String,
    authority: String,
    stream: Option<u64>,
    status: Option<u16>,
    content_length: Option<u64>,
    received: u64,
    /// The first byte at which the body differed from `--check`.
    mismatch: bool,
    result: Option<Result<Duration, String>>,
    wake: Option<Instant>,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-load: {msg}");
    std::process::exit(code)
}

fn main() {
    let args = Args::parse();
    if args.connections == 0 || !(args.timeout > 0.0 && args.timeout < 1e6) {
        fail(exit::USAGE, "--connections must be at least 1 and --timeout a positive number of seconds");
    }
    let expected = args.check.as_ref().map(|p| {
        std::fs::read(p).unwrap_or_else(|e| fail(exit::USAGE, format!("--check {}: {e}", p.display())))
    });
    let first = target::parse(&args.url).unwrap_or_else(|e| fail(exit::USAGE, e));
    let peer = (first.host.as_str(), first.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| fail(exit::NETWORK, format!("cannot resolve {}", first.host)));
    let mut config = mpquic::Config::new();
    let _ = config.set_application_protos(&[mpquic_apps::ALPN]);
    if args.insecure {
        config.verify_peer(false);
    } else if let Some(ca) = &args.ca {
        if let Err(e) = config.load_verify_locations_from_file(ca) {
            fail(exit::USAGE, format!("--ca {ca}: {e}"));
        }
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    config.set_max_idle_timeout((timeout.as_millis() as u64).max(5_000));
    let any: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().unwrap_or(peer);
    let socks = Sockets::bind(&vec![any; args.connections])
        .unwrap_or_else(|e| fail(exit::IO, format!("binding {} sockets: {e}", args.connections)));
    mpquic_apps::check_network_config(&config).unwrap_or_else(|e| fail(exit::USAGE, e));
    let started = Instant::now();
    let mut loads = Vec::with_capacity(args.connections);
    let mut by_local = HashMap::new();
    for (i, &local) in socks.local_addrs().iter().enumerate() {
        let t =
            target::parse(&args.url.replace("{i}", &i.to_string())).unwrap_or_else(|e| fail(exit::USAGE, e));
        let conn = mpquic::connect(Some(&t.host), &mpquic::random_cid(16), local, peer, &config, started)
            .unwrap_or_else(|e| fail(exit::TLS, format!("TLS setup: {e}")));
        by_local.insert(local, i);
        loads.push(Load {
            conn,
            h3: None,
            out: Outbox::default(),
            path: t.path,
            authority: t.authority,
            stream: None,
            status: None,
            content_length: None,
            received: 0,
            mismatch: false,
            result: None,
            wake: None,
        });
    }
    let idle = args.idle.map(Duration::from_secs_f64);
    run(&mut loads, socks, &by_local, expected.as_deref(), started + timeout, idle);
    report(
        &loads,
        started,
        args.json,
        if idle.is_some() { "connections established and held" } else { "downloads completed and checked" },
    )
}

fn run(
    loads: &mut [Load],
    mut socks: Sockets,
    by_local: &HashMap<SocketAddr, usize>,
    expected: Option<&[u8]>,
    deadline: Instant,
    idle: Option<Duration>,
) {
    let mut idle_until = None;
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    let mut out = vec![0u8; net::MAX_DATAGRAM];
    let mut body = vec![0u8; 256 * 1024];
    let started = Instant::now();
    loop {
        let now = Instant::now();
        for l in loads.iter_mut().filter(|l| !l.conn.is_closed()) {
            if l.conn.timeout().is_some_and(|t| t <= now) {
                l.conn.on_timeout(now);
            }
            if idle.is_some() {
                if l.result.is_none() && l.conn.is_established() {
                    l.result = Some(Ok(now.saturating_duration_since(started)));
                }
            } else {
                step(l, now, started, expected, &mut body);
            }
            l.wake = l.out.flush(&mut l.conn, &socks, &mut out, now).unwrap_or(None);
        }
        if let Some(hold) = idle {
            if idle_until.is_none() && loads.iter().all(|l| l.result.is_some()) {
                eprintln!(
                    "mpquic-load: {} connections established; holding them {:.1} s",
                    loads.len(),
                    hold.as_secs_f64()
                );
                idle_until = Some(now + hold);
            }
            if idle_until.is_some_and(|t| now >= t) {
                for l in loads.iter_mut() {
                    l.conn.close(true, mpquic_apps::H3_NO_ERROR, b"done", now);
                    let _ = l.out.flush(&mut l.conn, &socks, &mut out, now);
                }
                return;
            }
        } else if loads.iter().all(|l| l.result.is_some() && (l.conn.is_closed() || l.conn.is_draining())) {
            return;
        }
        if now >= deadline && idle_until.is_none() {
            for l in loads.iter_mut().filter(|l| l.result.is_none()) {
                l.result = Some(Err("timeout".into()));
            }
            return;
        }
        let next = loads.iter().flat_map(|l| [l.conn.timeout(), l.wake]).flatten().min();
        let wait = next
            .map_or(Duration::from_millis(100), |t| t.saturating_duration_since(now))
            .min(deadline.saturating_duration_since(now));
        if let Err(e) = socks.wait(Some(wait)) {
            fail(exit::IO, format!("poll: {e}"));
        }
        let now = Instant::now();
        let r = socks.recv_all(&mut buf, |d, info| {
            if let Some(l) = by_local.get(&info.to).and_then(|&i| loads.get_mut(i)) {
                let _ = l.conn.recv(d, info, now);
            }
        });
        if let Err(e) = r {
            fail(exit::IO, format!("recv: {e}"));
        }
    }
}

fn status_of(headers: &[Header], name: &str) -> Option<u64> {
    let h = headers.iter().find(|h| h.name.eq_ignore_ascii_case(name.as_bytes()))?;
    std::str::from_utf8(&h.value).ok()?.parse().ok()
}

/// Start the request once the handshake is done; take body bytes; decide.
fn step(l: &mut Load, now: Instant, started: Instant, expected: Option<&[u8]>, body: &mut [u8]) {
    if l.result.is_some() {
        return;
    }
    if l.conn.is_closed() || l.conn.is_draining() {
        let why = l.conn.peer_error().or(l.conn.local_error()).map_or("idle timeout".to_string(), |e| {
            format!("closed ({}0x{:x})", if e.is_app { "app " } else { "" }, e.code)
        });
        l.result = Some(Err(why));
        return;
    }
    if l.h3.is_none() && l.conn.is_established() {
        let mut q = Quic::new(&mut l.conn, now);
        let Ok(mut h) = h3::Connection::with_transport(&mut q, &h3::Config::default()) else {
            l.result = Some(Err("HTTP/3 setup".into()));
            return;
        };
        let req = [
            Header::new(":method", "GET"),
            Header::new(":scheme", "https"),
            Header::new(":authority", &l.authority),
            Header::new(":path", &l.path),
        ];
        l.stream = h.send_request(&mut q, &req, true).ok();
        l.h3 = Some(h);
    }
    let Some(h) = l.h3.as_mut() else { return };
    loop {
        let ev = match h.poll(&mut Quic::new(&mut l.conn, now)) {
            Ok(Some(ev)) => ev,
            Ok(None) => return,
            Err(e) => {
                l.result = Some(Err(format!("HTTP/3 error: {e}")));
                return;
            }
        };
        match ev {
            h3::Event::Headers { stream, headers, .. } if Some(stream) == l.stream && l.status.is_none() => {
                l.status = status_of(&headers, ":status").map(|s| s as u16);
                l.content_length = status_of(&headers, "content-length");
            }
            h3::Event::Data { stream } if Some(stream) == l.stream => {
                while let Ok(n) = h.recv_body(&mut Quic::new(&mut l.conn, now), stream, body) {
                    if n == 0 {
                        break;
                    }
                    let at = l.received as usize;
                    if let Some(e) = expected {
                        l.mismatch |= e.get(at..at + n) != body.get(..n);
                    }
                    l.received += n as u64;
                }
            }
            h3::Event::Finished { stream } if Some(stream) == l.stream => {
                l.result = Some(verdict(l, expected).map(|()| now.saturating_duration_since(started)));
                l.conn.close(true, mpquic_apps::H3_NO_ERROR, b"done", now);
                return;
            }
            h3::Event::Reset { .. } | h3::Event::StreamError { .. } => {
                l.result = Some(Err("stream reset".into()));
                return;
            }
            _ => {}
        }
    }
}

fn verdict(l: &Load, expected: Option<&[u8]>) -> Result<(), String> {
    match l.status {
        Some(s) if (200..300).contains(&s) => {}
        Some(s) => return Err(format!("HTTP {s}")),
        None => return Err("no response".into()),
    }
    if let Some(e) = expected {
        if l.mismatch || l.received != e.len() as u64 {
            return Err("body differs".into());
        }
    } else if l.content_length.is_some_and(|c| c != l.received) {
        return Err("short body".into());
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0.0)
}

fn report(loads: &[Load], started: Instant, json: bool, what: &str) -> ! {
    let mut ok: Vec<f64> = loads
        .iter()
        .filter_map(|l| l.result.as_ref()?.as_ref().ok().map(|d| d.as_secs_f64() * 1e3))
        .collect();
    ok.sort_by(f64::total_cmp);
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for l in loads {
        if let Some(Err(why)) = &l.result {
            *failures.entry(why.clone()).or_default() += 1;
        }
    }
    let bytes: u64 = loads.iter().map(|l| l.received).sum();
    let wall = started.elapsed().as_secs_f64();
    let (p50, p90, p99, max) =
        (percentile(&ok, 50), percentile(&ok, 90), percentile(&ok, 99), ok.last().copied().unwrap_or(0.0));
    if json {
        let j = serde_json::json!({
            "connections": loads.len(), "completed": ok.len(), "failures": failures,
            "bytes": bytes, "wall_s": wall,
            "latency_ms": {"p50": p50, "p90": p90, "p99": p99, "max": max},
        });
        println!("{j}");
    } else {
        println!(
            "{} of {} {what} in {wall:.2} s ({bytes} bytes); latency ms p50 {p50:.0} p90 {p90:.0} p99 {p99:.0} max {max:.0}",
            ok.len(),
            loads.len()
        );
        for (why, n) in &failures {
            println!("failed: {n} x {why}");
        }
    }
    std::process::exit(if failures.is_empty() { exit::OK } else { exit::TRANSPORT })
}
