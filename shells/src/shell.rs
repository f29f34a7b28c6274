//! The packet-shell template shared by every shell (Mahimahi's `PacketShell`).
//!
//! A shell owns one or more *paths*. Each path is a /30 subnet split across two TUN
//! devices: the egress device in the namespace where the shell was started (address
//! `.1`) and the ingress device in a new namespace (address `.2`) where the command
//! runs. The packet loop reads IP packets from both devices, passes them through the
//! path's uplink (inside -> outside) or downlink (outside -> inside) [`Stage`] with the
//! real clock as the stage's time, and writes what leaves the stage to the other device.

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

use crate::netns::{self, Ancestor, NetNs, Subnet, CHAIN_ENV};
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

/// Routes this shell added in enclosing namespaces, removed again on drop.
struct AncestorRoutes {
    home: NetNs,
    added: Vec<(NetNs, String, String)>,
}

impl AncestorRoutes {
    fn add(&mut self, anc: &Ancestor, cidr: &str) -> io::Result<()> {
        let ns = NetNs::of_pid(anc.pid)?;
        ns.enter()?;
        let r = netns::ip(&["route", "replace", cidr, "dev", &anc.dev]);
        self.home.enter()?;
        r?;
        self.added.push((ns, cidr.to_string(), anc.dev.clone()));
        Ok(())
    }
}

impl Drop for AncestorRoutes {
    fn drop(&mut self) {
        for (ns, cidr, dev) in self.added.drain(..) {
            if ns.enter().is_ok() {
                let _ = netns::ip(&["route", "del", &cidr, "dev", &dev]);
            }
        }
        let _ = self.home.enter();
    }
}

/// Environment of the command: `MAHIMAHI_BASE` (path 0's outside address, unless an
/// enclosing shell already set it: as in Mahimahi it names the outermost host side),
/// `MPSHELL_ADDR_i` / `MPSHELL_PEER_i` (inside / outside address of path i),
/// `MPSHELL_LOCAL_i` (what to give `mpquic-client --local` for path i: here the address;
/// with `--backend mahimahi`, `ADDR@NETNS`), `MPSHELL_PATHS` (count) and the chain of
/// enclosing shells.
pub fn command_env(subnets: &[Subnet], chain: &str, outer_base: Option<String>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let base =
        outer_base.filter(|b| !b.is_empty()).or_else(|| subnets.first().map(|s| s.outer().to_string()));
    if let Some(b) = base {
        env.push(("MAHIMAHI_BASE".to_string(), b));
    }
    env.push(("MPSHELL_PATHS".to_string(), subnets.len().to_string()));
    for (i, s) in subnets.iter().enumerate() {
        env.push((format!("MPSHELL_ADDR_{i}"), s.inner().to_string()));
        env.push((format!("MPSHELL_PEER_{i}"), s.outer().to_string()));
        env.push((format!("MPSHELL_LOCAL_{i}"), s.inner().to_string()));
    }
    env.push((CHAIN_ENV.to_string(), chain.to_string()));
    env
}

fn egress_name(kind: &str, pid: u32, index: usize, count: usize) -> String {
    if count == 1 {
        format!("{kind}-{pid}")
    } else {
        format!("{kind}{pid}-{index}")
    }
}

fn ingress_name(index: usize, count: usize) -> String {
    if count == 1 {
        "ingress".to_string()
    } else {
        format!("path{index}")
    }
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

    // Egress devices, outside.
    let mut outers = Vec::with_capacity(n);
    for (i, s) in subnets.iter().enumerate() {
        let name = egress_name(kind, pid, i, n);
        let tun = Tun::create(&name).map_err(setup_err)?;
        let _ = netns::sysctl(&format!("net/ipv6/conf/{name}/disable_ipv6"), "1");
        netns::ip(&["addr", "add", &format!("{}/30", s.outer()), "dev", &name]).map_err(setup_err)?;
        netns::ip(&["link", "set", "dev", &name, "up"]).map_err(setup_err)?;
        outers.push(tun);
    }
    let mut routes = AncestorRoutes { home: NetNs::current().map_err(setup_err)?, added: Vec::new() };
    for a in &ancestors {
        for s in &subnets {
            routes.add(a, &s.cidr()).map_err(setup_err)?;
        }
    }

    // The inside namespace: forwarding on (nested shells route through it), loose
    // reverse-path checks (a multipath host receives on any interface).
    NetNs::unshare_new().map_err(setup_err)?;
    let inside = (|| -> io::Result<Vec<Tun>> {
        netns::sysctl("net/ipv4/ip_forward", "1")?;
        for k in ["all", "default"] {
            let _ = netns::sysctl(&format!("net/ipv4/conf/{k}/rp_filter"), "0");
            let _ = netns::sysctl(&format!("net/ipv6/conf/{k}/disable_ipv6"), "1");
        }
        netns::ip(&["link", "set", "dev", "lo", "up"])?;
        let mut inners = Vec::with_capacity(n);
        for (i, s) in subnets.iter().enumerate() {
            let name = ingress_name(i, n);
            let tun = Tun::create(&name)?;
            let addr = format!("{}/30", s.inner());
            netns::ip(&["addr", "add", &addr, "dev", &name])?;
            netns::ip(&["link", "set", "dev", &name, "up"])?;
            if i == 0 {
                netns::ip(&["route", "add", "default", "dev", &name])?;
            }
            if n > 1 {
                // Source-address routing: a socket bound to path i's address leaves
                // through path i.
                let table = (100 + i).to_string();
                let prio = (1000 + i).to_string();
                let from = s.inner().to_string();
                netns::ip(&["rule", "add", "from", &from, "table", &table, "priority", &prio])?;
                netns::ip(&["route", "add", "default", "dev", &name, "table", &table])?;
            }
            inners.push(tun);
        }
        Ok(inners)
    })();
    let inners = match inside {
        Ok(t) => t,
        Err(e) => {
            let _ = home.enter();
            return Err(ShellError::Setup(e));
        }
    };

    let mut chain = vec![Ancestor { pid, dev: egress_name(kind, pid, 0, n) }];
    chain.extend(ancestors);
    let env = command_env(&subnets, &netns::format_chain(&chain), std::env::var("MAHIMAHI_BASE").ok());
    if announce {
        for (i, s) in subnets.iter().enumerate() {
            let name = names.get(i).map(String::as_str).unwrap_or("");
            eprintln!("mpshell: path {i} {name}: {} (MPSHELL_ADDR_{i}), outside {}", s.inner(), s.outer());
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
            for pkt in out.drain(..) {
                p.outer.send(&pkt.data).map_err(ShellError::Loop)?;
            }
            p.stages.down.dequeue_ready(now, &mut out);
            for pkt in out.drain(..) {
                p.inner.send(&pkt.data).map_err(ShellError::Loop)?;
            }
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

/// Reads up to [`READ_BATCH`] packets from `dev` into `stage`.
fn pump_in(dev: &mut Tun, stage: &mut dyn Stage, now: Duration, buf: &mut [u8]) -> io::Result<()> {
    for _ in 0..READ_BATCH {
        let Some(len) = dev.recv(buf)? else {
            break;
        };
        let data = buf.get(..len).unwrap_or_default().to_vec();
        let mut pkt = Packet::new(data);
        pkt.size = pkt.size.saturating_add(TUN_HEADER_BYTES);
        stage.enqueue(now, pkt);
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
        let env = command_env(&subs, "1:x", None);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
        assert_eq!(get("MAHIMAHI_BASE"), "100.64.0.1");
        assert_eq!(get("MPSHELL_PATHS"), "2");
        assert_eq!(get("MPSHELL_ADDR_1"), "100.64.0.22");
        assert_eq!(get("MPSHELL_PEER_1"), "100.64.0.21");
        assert_eq!(get("MPSHELL_LOCAL_1"), "100.64.0.22");
        assert_eq!(get(CHAIN_ENV), "1:x");
        let nested = command_env(&subs, "", Some("100.64.9.1".into()));
        assert!(nested.contains(&("MAHIMAHI_BASE".into(), "100.64.9.1".into())));
    }

    #[test]
    fn device_names_fit_ifnamsiz() {
        assert_eq!(egress_name("delay", 4194304, 0, 1), "delay-4194304");
        assert!(egress_name("mp", 4194304, 99, 100).len() <= crate::tun::MAX_IFNAME);
        assert_eq!(ingress_name(0, 1), "ingress");
        assert_eq!(ingress_name(2, 3), "path2");
    }
}
