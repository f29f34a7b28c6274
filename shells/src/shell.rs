//! The packet-shell template shared by every shell (Mahimahi's `PacketShell`).
//!
//! A shell owns one or more *paths*. Each path is a /30 subnet (and its IPv6 /126
//! twin) split across two TUN devices: the egress device in the namespace where the
//! shell was started (address `.1`) and the ingress device in a new namespace (address
//! `.2`) where the command runs. The packet loop reads IP packets of either family from
//! both devices, passes them through the path's uplink (inside -> outside) or downlink
//! (outside -> inside) [`Stage`] with the real clock as the stage's time, and writes
//! what leaves the stage to the other device, with the CE marks of the stage's AQM
//! written into the IP header ([`crate::ip`]).

use std::fmt;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use emu::{Packet, Stage};
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::time::TimeSpec;

use crate::ip;
use crate::netns::{self, Ancestor, NetNs, Subnet, CHAIN_ENV};
use crate::setup::{self, egress_name, AncestorRoutes};
use crate::tun::Tun;

/// Bytes Mahimahi charges per packet on top of the IP packet: the TUN packet-info
/// header, so a 1500-byte IP packet uses exactly one 1504-byte trace opportunity.
pub const TUN_HEADER_BYTES: u32 = 4;

/// Environment variable holding the shell's link epoch (time zero of its traces) as
/// `CLOCK_MONOTONIC` nanoseconds; set by each shell for its command (the innermost wins).
pub const EPOCH_ENV: &str = "MPQUIC_SHELL_EPOCH_NS";

/// `CLOCK_MONOTONIC` now, in nanoseconds (the clock of [`EPOCH_ENV`]).
pub fn monotonic_ns() -> io::Result<u64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_err(io::Error::from)?;
    let secs = u64::try_from(t.tv_sec()).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec()).unwrap_or(0);
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Longest wait between checks that the command is still running.
const CHILD_CHECK: Duration = Duration::from_millis(50);

/// Packets read from one device per loop turn, so one busy direction cannot starve
/// the others.
const READ_BATCH: usize = 256;

/// Both directions of one path of a shell.
pub struct PathStages {
    /// Inside -> outside.
    pub up: Box<dyn Stage>,
    /// Outside -> inside.
    pub down: Box<dyn Stage>,
}

/// What a shell is made of; [`run`] brings it up.
pub struct ShellConfig {
    /// Short name used in device names (`delay`, `loss`, `link`, `mp`).
    pub kind: &'static str,
    /// The paths; at least one. Path 0 carries the default route inside.
    pub paths: Vec<PathStages>,
    /// End the shell this long after it started (`--once`): the command is killed and
    /// the shell exits with status 0.
    pub stop_after: Option<Duration>,
    /// Command and arguments; empty runs `$SHELL` (or `/bin/sh`).
    pub command: Vec<String>,
    /// Print each path's inside address on stderr once the shell is up.
    pub announce: bool,
    /// Names of the paths, for the announcement.
    pub names: Vec<String>,
}

/// Why a shell could not run.
#[derive(Debug)]
pub enum ShellError {
    /// Not root, no TUN, no `ip`, or no namespaces: the message says which.
    Unsupported(String),
    /// Setting up devices, namespaces or routes failed.
    Setup(io::Error),
    /// The command could not be started.
    Spawn(String, io::Error),
    /// The packet loop failed on a device.
    Loop(io::Error),
}

impl fmt::Display for ShellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShellError::Unsupported(m) => write!(f, "{m}"),
            ShellError::Setup(e) => write!(f, "setting up the shell failed: {e}"),
            ShellError::Spawn(c, e) => write!(f, "cannot run {c:?}: {e}"),
            ShellError::Loop(e) => write!(f, "packet loop failed: {e}"),
        }
    }
}

impl std::error::Error for ShellError {}

/// One path once its devices exist.
struct LivePath {
    stages: PathStages,
    inner: Tun,
    outer: Tun,
}

/// IPv6 counterpart of `MAHIMAHI_BASE` (our extension; Mahimahi is IPv4-only).
pub const BASE6_ENV: &str = "MPSHELL_BASE6";

/// Base addresses an enclosing shell already set for the command, if any.
#[derive(Debug, Clone, Default)]
pub struct InheritedBase {
    /// `MAHIMAHI_BASE`.
    pub v4: Option<String>,
    /// [`BASE6_ENV`].
    pub v6: Option<String>,
}

impl InheritedBase {
    /// From this process's environment.
    pub fn from_env() -> InheritedBase {
        InheritedBase { v4: std::env::var("MAHIMAHI_BASE").ok(), v6: std::env::var(BASE6_ENV).ok() }
    }
}

/// Environment of the command: `MAHIMAHI_BASE` (path 0's outside address, unless an
/// enclosing shell already set it: as in Mahimahi it names the outermost host side),
/// `MPSHELL_ADDR_i` / `MPSHELL_PEER_i` (inside / outside address of path i),
/// `MPSHELL_LOCAL_i` (what to give `mpquic-client --local` for path i: here the address;
/// with `--backend mahimahi`, `ADDR@NETNS`), `MPSHELL_PATHS` (count) and the chain of
/// enclosing shells. With `v6`, the IPv6 twins: [`BASE6_ENV`], `MPSHELL_ADDR6_i`,
/// `MPSHELL_PEER6_i`.
pub fn command_env(
    subnets: &[Subnet],
    chain: &str,
    inherited: InheritedBase,
    v6: bool,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let keep = |b: Option<String>| b.filter(|b| !b.is_empty());
    if let Some(b) = keep(inherited.v4).or_else(|| subnets.first().map(|s| s.outer().to_string())) {
        env.push(("MAHIMAHI_BASE".to_string(), b));
    }
    if v6 {
        if let Some(b) = keep(inherited.v6).or_else(|| subnets.first().map(|s| s.outer6().to_string())) {
            env.push((BASE6_ENV.to_string(), b));
        }
    }
    env.push(("MPSHELL_PATHS".to_string(), subnets.len().to_string()));
    for (i, s) in subnets.iter().enumerate() {
        env.push((format!("MPSHELL_ADDR_{i}"), s.inner().to_string()));
        env.push((format!("MPSHELL_PEER_{i}"), s.outer().to_string()));
        env.push((format!("MPSHELL_LOCAL_{i}"), s.inner().to_string()));
        env.push((format!("MPSHELL_IFACE_{i}"), crate::setup::ingress_name(i, subnets.len())));
        if v6 {
            env.push((format!("MPSHELL_ADDR6_{i}"), s.inner6().to_string()));
            env.push((format!("MPSHELL_PEER6_{i}"), s.outer6().to_string()));
        }
    }
    env.push((CHAIN_ENV.to_string(), chain.to_string()));
    env
}

fn setup_err(e: io::Error) -> ShellError {
    ShellError::Setup(e)
}

/// Brings the shell up, runs the command inside it, forwards packets until the command
/// exits, and returns the command's exit code (128 + signal if it was killed).
// A shell is the real-time driver of the sans-IO links: reading the clock is its job.
#[allow(clippy::disallowed_methods)]
pub fn run(cfg: ShellConfig) -> Result<i32, ShellError> {
    netns::check_privileges().map_err(ShellError::Unsupported)?;
    let ShellConfig { kind, paths, stop_after, command, announce, names } = cfg;
    let n = paths.len();
    let pid = std::process::id();
    let home = NetNs::current().map_err(setup_err)?;
    let ancestors = netns::parse_chain(&std::env::var(CHAIN_ENV).unwrap_or_default());

    // Subnets must be free here and in every enclosing namespace that gets a route.
    let mut used = netns::used_addresses().map_err(setup_err)?;
    for a in &ancestors {
        if let Ok(ns) = NetNs::of_pid(a.pid) {
            if ns.enter().is_ok() {
                used.extend(netns::used_addresses().unwrap_or_default());
            }
        }
    }
    home.enter().map_err(setup_err)?;
    let subnets = netns::allocate(n, pid, &used);

    // Egress devices, outside; IPv6 too where this namespace has it.
    let v6 = netns::ipv6_enabled_here();
    let mut outers = Vec::with_capacity(n);
    for (i, s) in subnets.iter().enumerate() {
        outers.push(setup::egress(&egress_name(kind, pid, i, n), s, v6).map_err(setup_err)?);
    }
    let mut routes = AncestorRoutes::new(NetNs::current().map_err(setup_err)?);
    for a in &ancestors {
        for s in &subnets {
            routes.add_subnet(a, s, v6).map_err(setup_err)?;
        }
    }

    NetNs::unshare_new().map_err(setup_err)?;
    let inners = match setup::inside(&subnets, v6) {
        Ok(t) => t,
        Err(e) => {
            let _ = home.enter();
            return Err(ShellError::Setup(e));
        }
    };

    let mut chain = vec![Ancestor { pid, dev: egress_name(kind, pid, 0, n) }];
    chain.extend(ancestors);
    let env = command_env(&subnets, &netns::format_chain(&chain), InheritedBase::from_env(), v6);
    if announce {
        for (i, s) in subnets.iter().enumerate() {
            let name = names.get(i).map(String::as_str).unwrap_or("");
            eprintln!("mpshell: path {i} {name}: {} (MPSHELL_ADDR_{i}), outside {}", s.inner(), s.outer());
            if v6 {
                eprintln!(
                    "mpshell: path {i} {name}: {} (MPSHELL_ADDR6_{i}), outside {}",
                    s.inner6(),
                    s.outer6()
                );
            }
        }
    }

    // The command inherits the inside namespace of this (single) thread.
    let argv = if command.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_string())]
    } else {
        command
    };
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| ShellError::Spawn(String::new(), io::Error::other("empty command")))?;
    // The link clocks start now; programs inside can align their logs with the traces
    // through MPQUIC_SHELL_EPOCH_NS (CLOCK_MONOTONIC, the clock `Instant` uses).
    let start = Instant::now();
    let epoch_ns = monotonic_ns().map_err(setup_err)?;
    let spawned = Command::new(prog).args(args).envs(env).env(EPOCH_ENV, epoch_ns.to_string()).spawn();
    home.enter().map_err(setup_err)?;
    let mut child = spawned.map_err(|e| ShellError::Spawn(prog.clone(), e))?;

    // Terminal signals go to the command; the loop outlives them and exits with it.
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGINT);
    mask.add(Signal::SIGQUIT);
    let _ = mask.thread_block();

    let mut live: Vec<LivePath> = paths
        .into_iter()
        .zip(inners)
        .zip(outers)
        .map(|((stages, inner), outer)| LivePath { stages, inner, outer })
        .collect();
    let result = packet_loop(&mut live, &mut child, start, stop_after);
    drop(routes);
    result
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Moves packets until the child exits (or `stop_after` passes).
fn packet_loop(
    paths: &mut [LivePath],
    child: &mut Child,
    start: Instant,
    stop_after: Option<Duration>,
) -> Result<i32, ShellError> {
    let mut buf = vec![0u8; 65536];
    let mut out = Vec::new();
    loop {
        let now = start.elapsed();
        for p in paths.iter_mut() {
            pump_in(&mut p.inner, &mut *p.stages.up, now, &mut buf).map_err(ShellError::Loop)?;
            pump_in(&mut p.outer, &mut *p.stages.down, now, &mut buf).map_err(ShellError::Loop)?;
        }
        let now = start.elapsed();
        for p in paths.iter_mut() {
            out.clear();
            p.stages.up.dequeue_ready(now, &mut out);
            send_out(&mut p.outer, &mut out).map_err(ShellError::Loop)?;
            p.stages.down.dequeue_ready(now, &mut out);
            send_out(&mut p.inner, &mut out).map_err(ShellError::Loop)?;
        }
        if let Some(status) = child.try_wait().map_err(ShellError::Loop)? {
            return Ok(exit_code(status));
        }
        if stop_after.is_some_and(|t| start.elapsed() >= t) {
            // The traces ran out (`--once`): a normal end of the shell.
            let _ = child.kill();
            child.wait().map_err(ShellError::Loop)?;
            return Ok(0);
        }

        // Sleep until the next departure, a readable device or the next child check.
        let now = start.elapsed();
        let mut timeout = CHILD_CHECK;
        for p in paths.iter() {
            for w in [p.stages.up.next_wakeup(), p.stages.down.next_wakeup()].into_iter().flatten() {
                timeout = timeout.min(w.saturating_sub(now));
            }
        }
        if timeout.is_zero() {
            continue;
        }
        let mut fds: Vec<PollFd<'_>> = paths
            .iter()
            .flat_map(|p| [p.inner.as_fd(), p.outer.as_fd()])
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        match ppoll(&mut fds, Some(TimeSpec::from_duration(timeout)), None) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(ShellError::Loop(io::Error::from(e))),
        }
    }
}

/// Reads up to [`READ_BATCH`] packets from `dev` into `stage`, each charged its IP
/// length (either family) plus the TUN header, with its ECN bits for the AQM.
fn pump_in(dev: &mut Tun, stage: &mut dyn Stage, now: Duration, buf: &mut [u8]) -> io::Result<()> {
    for _ in 0..READ_BATCH {
        let Some(len) = dev.recv(buf)? else {
            break;
        };
        let mut pkt: Packet = ip::packet_in(buf.get(..len).unwrap_or_default().to_vec());
        pkt.size = pkt.size.saturating_add(TUN_HEADER_BYTES);
        stage.enqueue(now, pkt);
    }
    Ok(())
}

/// Writes the packets that left a stage to `dev`, with the CE marks the link's AQM made
/// put into their IP headers.
fn send_out(dev: &mut Tun, out: &mut Vec<Packet>) -> io::Result<()> {
    for mut pkt in out.drain(..) {
        ip::write_ce_mark(&mut pkt);
        dev.send(&pkt.data)?;
    }
    Ok(())
}

/// A loss-free, delay-free stage (the untouched direction of `mm-loss`).
pub fn passthrough() -> Box<dyn Stage> {
    Box::new(emu::stage::DelayStage::new(Duration::ZERO))
}

/// A seed for loss RNGs: `MPQUIC_SHELL_SEED` if set, otherwise from the clock and pid.
#[allow(clippy::disallowed_methods)] // wall clock as entropy, not as time
pub fn loss_seed() -> u64 {
    if let Some(s) = std::env::var("MPQUIC_SHELL_SEED").ok().and_then(|v| v.parse().ok()) {
        return s;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Runs a shell from a `main()`: prints errors with the program name and returns the
/// process exit code.
pub fn main_with(program: &str, cfg: ShellConfig) -> i32 {
    match run(cfg) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{program}: {e}");
            1
        }
    }
}

/// The inside address of path `i` as the command sees it (`MPSHELL_ADDR_i`).
pub fn env_addr(i: usize) -> Option<Ipv4Addr> {
    std::env::var(format!("MPSHELL_ADDR_{i}")).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lists_every_path() {
        let subs = [Subnet::nth(0), Subnet::nth(5)];
        let env = command_env(&subs, "1:x", InheritedBase::default(), true);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
        assert_eq!(get("MAHIMAHI_BASE"), "100.64.0.1");
        assert_eq!(get("MPSHELL_PATHS"), "2");
        assert_eq!(get("MPSHELL_ADDR_1"), "100.64.0.22");
        assert_eq!(get("MPSHELL_PEER_1"), "100.64.0.21");
        assert_eq!(get("MPSHELL_LOCAL_1"), "100.64.0.22");
        assert_eq!(get("MPSHELL_IFACE_1"), "path1");
        assert_eq!(get(CHAIN_ENV), "1:x");
        assert_eq!(get(BASE6_ENV), "fd6d:7368:656c:6c00::6440:1");
        assert_eq!(get("MPSHELL_ADDR6_1"), "fd6d:7368:656c:6c00::6440:16");
        assert_eq!(get("MPSHELL_PEER6_1"), "fd6d:7368:656c:6c00::6440:15");
        let outer = InheritedBase { v4: Some("100.64.9.1".into()), v6: Some("fd6d::1".into()) };
        let nested = command_env(&subs, "", outer, true);
        assert!(nested.contains(&("MAHIMAHI_BASE".into(), "100.64.9.1".into())));
        assert!(nested.contains(&(BASE6_ENV.into(), "fd6d::1".into())));
        let v4_only = command_env(&subs, "", InheritedBase::default(), false);
        assert!(!v4_only.iter().any(|(k, _)| k.contains('6')), "{v4_only:?}");
    }
}
