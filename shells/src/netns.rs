//! Network namespaces, `ip` invocations, sysctls and address allocation.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsFd;
use std::process::Command;

use nix::sched::{setns, unshare, CloneFlags};

/// Environment variable listing the enclosing shells, innermost first, as
/// `PID:EGRESS_DEV` items separated by `,`. A nested shell adds a route to its own
/// subnet in each of those namespaces (via that shell's egress device), which replaces
/// Mahimahi's NAT: replies find their way back without address translation.
pub const CHAIN_ENV: &str = "MPQUIC_SHELL_CHAIN";

/// A handle on a network namespace (an open `/proc/.../ns/net`).
#[derive(Debug)]
pub struct NetNs {
    file: File,
}

impl NetNs {
    /// The calling thread's current network namespace.
    pub fn current() -> io::Result<NetNs> {
        Ok(NetNs { file: File::open("/proc/thread-self/ns/net")? })
    }

    /// The network namespace of process `pid`.
    pub fn of_pid(pid: u32) -> io::Result<NetNs> {
        Ok(NetNs { file: File::open(format!("/proc/{pid}/ns/net"))? })
    }

    /// The network namespace named by a file such as `/proc/PID/ns/net`.
    pub fn open(path: &std::path::Path) -> io::Result<NetNs> {
        let file =
            File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(NetNs { file })
    }

    /// Moves the calling thread into this namespace.
    pub fn enter(&self) -> io::Result<()> {
        setns(self.file.as_fd(), CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
    }

    /// Moves the calling thread into a fresh, empty network namespace and returns it.
    pub fn unshare_new() -> io::Result<NetNs> {
        unshare(CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
        NetNs::current()
    }
}

/// Runs `ip ARGS...` in the calling thread's namespace; fails with its stderr.
pub fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run `ip` (iproute2): {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Runs `ip ARGS...` and returns its stdout.
pub fn ip_output(args: &[&str]) -> io::Result<String> {
    let out = Command::new("ip").args(args).output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes a sysctl of the current network namespace (`key` like `net/ipv4/ip_forward`).
pub fn sysctl(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(format!("/proc/sys/{key}"), value)
}

/// Whether the current namespace has IPv6 on: the kernel has it (not booted with
/// `ipv6.disable=1`) and `net.ipv6.conf.all.disable_ipv6` is 0. Otherwise the shell is
/// IPv4-only, as Mahimahi's are, and sets no IPv6 variables.
pub fn ipv6_enabled_here() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").is_ok_and(|v| v.trim() == "0")
}

/// Checks that shells can run here: root, `/dev/net/tun`, `ip`, and a new network
/// namespace (tried on a throw-away thread). The error says what is missing.
pub fn check_privileges() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("must run as root (network namespaces and TUN devices need it)".into());
    }
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun") {
        return Err(format!("cannot open /dev/net/tun: {e}"));
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        _ => return Err("`ip` from iproute2 is not installed".into()),
    }
    // unshare(CLONE_NEWNET) only affects the calling thread, so this leaves us alone.
    let probe = std::thread::spawn(|| unshare(CloneFlags::CLONE_NEWNET));
    match probe.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("cannot create a network namespace: {e}")),
        Err(_) => Err("cannot create a network namespace".into()),
    }
}

/// A /30 subnet: `.1` is the outside (egress) address, `.2` the inside (ingress) one.
/// Its IPv6 twin is the /126 of [`V6_PREFIX`] whose low 32 bits are the IPv4 ones, so
/// one allocation keeps both families apart from other shells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    base: u32,
}

/// The shared address space (RFC 6598) Mahimahi also uses for its shells.
const POOL_BASE: u32 = u32::from_be_bytes([100, 64, 0, 0]);
/// Number of /30 subnets in 100.64.0.0/10.
const POOL_SLOTS: u32 = 1 << 20;
/// The unique-local /96 (RFC 4193) holding the shells' IPv6 subnets; the last 32 bits
/// are the IPv4 address. Its global ID spells "msh" + "ell" ("mm shell").
pub const V6_PREFIX: [u16; 6] = [0xfd6d, 0x7368, 0x656c, 0x6c00, 0, 0];

/// The address of [`V6_PREFIX`] whose low 32 bits are `v4`.
fn v6_of(v4: u32) -> Ipv6Addr {
    let [a, b, c, d, e, f] = V6_PREFIX;
    Ipv6Addr::new(a, b, c, d, e, f, (v4 >> 16) as u16, v4 as u16)
}

/// The IPv4 address embedded in `v6`, if it lies in [`V6_PREFIX`].
fn v4_in(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    (s[..6] == V6_PREFIX).then(|| Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7])))
}

impl Subnet {
    /// The `index`-th /30 of 100.64.0.0/10 (wrapping).
    pub fn nth(index: u32) -> Subnet {
        Subnet { base: POOL_BASE + (index % POOL_SLOTS) * 4 }
    }

    /// Outside (egress, `MAHIMAHI_BASE`) address.
    pub fn outer(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 1)
    }

    /// Inside (ingress) address.
    pub fn inner(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 2)
    }

    /// `a.b.c.d/30`.
    pub fn cidr(&self) -> String {
        format!("{}/30", Ipv4Addr::from(self.base))
    }

    /// Outside (egress) IPv6 address.
    pub fn outer6(&self) -> Ipv6Addr {
        v6_of(self.base + 1)
    }

    /// Inside (ingress) IPv6 address.
    pub fn inner6(&self) -> Ipv6Addr {
        v6_of(self.base + 2)
    }

    /// The IPv6 subnet, `PREFIX::/126`.
    pub fn cidr6(&self) -> String {
        format!("{}/126", v6_of(self.base))
    }

    /// Whether `addr` lies in this subnet.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & !3 == self.base
    }
}

/// Every IPv4 address or route prefix start mentioned in the current namespace
/// (addresses, and route destinations of all tables), and the IPv4 twins of the
/// shells' IPv6 ones found there.
pub fn used_addresses() -> io::Result<Vec<Ipv4Addr>> {
    let mut text = ip_output(&["-4", "-o", "addr", "show"])?;
    text.push_str(&ip_output(&["-4", "route", "show", "table", "all"])?);
    // Without IPv6 in this namespace there is nothing of ours to find there.
    text.push_str(&ip_output(&["-6", "-o", "addr", "show"]).unwrap_or_default());
    text.push_str(&ip_output(&["-6", "route", "show", "table", "all"]).unwrap_or_default());
    Ok(addresses_in(&text))
}

/// The IPv4 addresses in `ip` output, with IPv6 ones of [`V6_PREFIX`] mapped back.
fn addresses_in(text: &str) -> Vec<Ipv4Addr> {
    text.split(|c: char| c.is_whitespace() || c == '/')
        .filter_map(|w| w.parse::<Ipv4Addr>().ok().or_else(|| w.parse().ok().and_then(v4_in)))
        .collect()
}

/// Picks `count` free /30s, starting the search at a slot derived from `seed` (the
/// process id keeps concurrent shells apart) and skipping any subnet that holds an
/// address in `used`.
pub fn allocate(count: usize, seed: u32, used: &[Ipv4Addr]) -> Vec<Subnet> {
    let mut out = Vec::with_capacity(count);
    let mut slot = seed.wrapping_mul(8) % POOL_SLOTS;
    while out.len() < count {
        let s = Subnet::nth(slot);
        slot = slot.wrapping_add(1);
        if !used.iter().any(|a| s.contains(*a)) {
            out.push(s);
        }
    }
    out
}

/// One enclosing shell: its packet-loop process (living in the namespace outside that
/// shell) and its egress device there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ancestor {
    /// Process id of the enclosing shell's packet loop.
    pub pid: u32,
    /// Its egress device, in the loop's namespace.
    pub dev: String,
}

/// Parses [`CHAIN_ENV`]; malformed items are ignored.
pub fn parse_chain(s: &str) -> Vec<Ancestor> {
    s.split(',')
        .filter_map(|item| {
            let (pid, dev) = item.split_once(':')?;
            Some(Ancestor { pid: pid.trim().parse().ok()?, dev: dev.trim().to_string() })
        })
        .filter(|a| !a.dev.is_empty())
        .collect()
}

/// Formats a chain for [`CHAIN_ENV`].
pub fn format_chain(chain: &[Ancestor]) -> String {
    chain.iter().map(|a| format!("{}:{}", a.pid, a.dev)).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnet_addresses() {
        let s = Subnet::nth(1);
        assert_eq!(s.outer(), Ipv4Addr::new(100, 64, 0, 5));
        assert_eq!(s.inner(), Ipv4Addr::new(100, 64, 0, 6));
        assert_eq!(s.cidr(), "100.64.0.4/30");
        assert!(s.contains(Ipv4Addr::new(100, 64, 0, 7)));
        assert!(!s.contains(Ipv4Addr::new(100, 64, 0, 8)));
        // The pool wraps inside 100.64.0.0/10.
        assert_eq!(Subnet::nth(POOL_SLOTS), Subnet::nth(0));
        assert_eq!(Subnet::nth(POOL_SLOTS - 1).inner(), Ipv4Addr::new(100, 127, 255, 254));
    }

    #[test]
    fn ipv6_twin_embeds_the_ipv4_subnet() {
        let s = Subnet::nth(1);
        assert_eq!(s.outer6().to_string(), "fd6d:7368:656c:6c00::6440:5");
        assert_eq!(s.inner6().to_string(), "fd6d:7368:656c:6c00::6440:6");
        assert_eq!(s.cidr6(), "fd6d:7368:656c:6c00::6440:4/126");
        assert_eq!(v4_in(s.inner6()), Some(s.inner()));
        assert_eq!(v4_in("fd00::2".parse().unwrap()), None);
    }

    #[test]
    fn used_ipv6_addresses_block_their_ipv4_twin() {
        let text = "5: link-1 inet6 fd6d:7368:656c:6c00::6440:5/126 scope global\n\
                    fd00::/64 dev eth0 proto kernel\n100.64.0.9 dev x";
        let used = addresses_in(text);
        assert_eq!(used, vec![Ipv4Addr::new(100, 64, 0, 5), Ipv4Addr::new(100, 64, 0, 9)]);
        assert_eq!(allocate(2, 0, &used), vec![Subnet::nth(0), Subnet::nth(3)]);
    }

    #[test]
    fn allocation_skips_used() {
        let first = allocate(1, 0, &[]);
        assert_eq!(first, vec![Subnet::nth(0)]);
        let used = [Ipv4Addr::new(100, 64, 0, 1), Ipv4Addr::new(100, 64, 0, 10)];
        assert_eq!(allocate(2, 0, &used), vec![Subnet::nth(1), Subnet::nth(3)]);
    }

    #[test]
    fn chain_round_trip() {
        let c = parse_chain("12:delay-12,7:link-7, bad ,:x,9:");
        assert_eq!(
            c,
            vec![Ancestor { pid: 12, dev: "delay-12".into() }, Ancestor { pid: 7, dev: "link-7".into() }]
        );
        assert_eq!(format_chain(&c), "12:delay-12,7:link-7");
        assert!(parse_chain("").is_empty());
    }
}
