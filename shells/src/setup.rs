//! Devices, addresses and routes of a shell's paths, IPv4 and IPv6.
//!
//! Path i is a /30 (and its IPv6 twin /126, see [`Subnet`]) split across two TUN
//! devices: the egress one in the namespace where the shell starts (`.1`), the ingress
//! one in the new namespace (`.2`).

use std::io;

use crate::netns::{self, Ancestor, NetNs, Subnet};
use crate::tun::Tun;

/// Name of path `index`'s egress device (one of `count`).
pub(crate) fn egress_name(kind: &str, pid: u32, index: usize, count: usize) -> String {
    if count == 1 {
        format!("{kind}-{pid}")
    } else {
        format!("{kind}{pid}-{index}")
    }
}

/// Name of path `index`'s ingress device inside (one of `count`).
pub(crate) fn ingress_name(index: usize, count: usize) -> String {
    if count == 1 {
        "ingress".to_string()
    } else {
        format!("path{index}")
    }
}

/// Gives device `name` its address of each family and brings it up. IPv6 goes on
/// without duplicate address detection (the address would stay unusable for about a
/// second otherwise) and without a link-local address, so the kernel sends no router
/// solicitations through the emulated link.
fn address_device(name: &str, v4: String, v6: Option<String>) -> io::Result<()> {
    netns::ip(&["addr", "add", &v4, "dev", name])?;
    if let Some(v6) = v6 {
        netns::sysctl(&format!("net/ipv6/conf/{name}/disable_ipv6"), "0")?;
        netns::ip(&["link", "set", "dev", name, "addrgenmode", "none"])?;
        netns::ip(&["-6", "addr", "add", &v6, "dev", name, "nodad"])?;
    }
    netns::ip(&["link", "set", "dev", name, "up"])
}

/// Creates path `s`'s egress device `name` in the current namespace.
pub(crate) fn egress(name: &str, s: &Subnet, v6: bool) -> io::Result<Tun> {
    let tun = Tun::create(name)?;
    let v6_addr = v6.then(|| format!("{}/126", s.outer6()));
    address_device(name, format!("{}/30", s.outer()), v6_addr)?;
    Ok(tun)
}

/// Sets up the (new, current) inside namespace: forwarding on in both families
/// (nested shells route through it), loose reverse-path checks (a multipath host
/// receives on any interface), then one ingress device per path.
pub(crate) fn inside(subnets: &[Subnet], v6: bool) -> io::Result<Vec<Tun>> {
    netns::sysctl("net/ipv4/ip_forward", "1")?;
    for k in ["all", "default"] {
        let _ = netns::sysctl(&format!("net/ipv4/conf/{k}/rp_filter"), "0");
        let _ = netns::sysctl(&format!("net/ipv6/conf/{k}/disable_ipv6"), if v6 { "0" } else { "1" });
    }
    if v6 {
        netns::sysctl("net/ipv6/conf/all/forwarding", "1")?;
    }
    netns::ip(&["link", "set", "dev", "lo", "up"])?;
    let n = subnets.len();
    subnets.iter().enumerate().map(|(i, s)| ingress(i, n, s, v6)).collect()
}

/// Path `i`'s ingress device: path 0 carries the default route; with several paths,
/// source-address routing sends what a socket bound to path i's address emits through
/// path i, in each family.
fn ingress(i: usize, n: usize, s: &Subnet, v6: bool) -> io::Result<Tun> {
    let name = ingress_name(i, n);
    let tun = Tun::create(&name)?;
    let v6_addr = v6.then(|| format!("{}/126", s.inner6()));
    address_device(&name, format!("{}/30", s.inner()), v6_addr)?;
    let mut families = vec![("-4", s.inner().to_string())];
    if v6 {
        families.push(("-6", s.inner6().to_string()));
    }
    for (family, from) in &families {
        if i == 0 {
            netns::ip(&[family, "route", "add", "default", "dev", &name])?;
        }
        if n > 1 {
            let table = (100 + i).to_string();
            let prio = (1000 + i).to_string();
            netns::ip(&[family, "rule", "add", "from", from, "table", &table, "priority", &prio])?;
            netns::ip(&[family, "route", "add", "default", "dev", &name, "table", &table])?;
        }
    }
    Ok(tun)
}

/// Routes this shell added in enclosing namespaces, removed again on drop.
pub(crate) struct AncestorRoutes {
    home: NetNs,
    added: Vec<(NetNs, String, String)>,
}

impl AncestorRoutes {
    /// None yet; `home` is the namespace to return to after each change.
    pub(crate) fn new(home: NetNs) -> AncestorRoutes {
        AncestorRoutes { home, added: Vec::new() }
    }

    /// Routes subnet `s` (both families when `v6`) in `anc`'s namespace via its egress
    /// device, so replies from there find this shell without NAT.
    pub(crate) fn add_subnet(&mut self, anc: &Ancestor, s: &Subnet, v6: bool) -> io::Result<()> {
        self.add(anc, &s.cidr())?;
        if v6 {
            self.add(anc, &s.cidr6())?;
        }
        Ok(())
    }

    fn add(&mut self, anc: &Ancestor, cidr: &str) -> io::Result<()> {
        let ns = NetNs::of_pid(anc.pid)?;
        ns.enter()?;
        // `ip route` takes the family from the prefix.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_fit_ifnamsiz() {
        assert_eq!(egress_name("delay", 4194304, 0, 1), "delay-4194304");
        assert!(egress_name("mp", 4194304, 99, 100).len() <= crate::tun::MAX_IFNAME);
        assert_eq!(ingress_name(0, 1), "ingress");
        assert_eq!(ingress_name(2, 3), "path2");
    }
}
