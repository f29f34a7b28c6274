//! The in-kernel MPTCP path manager's state for one run, through `ip mptcp`
//! (iproute2): subflow endpoints for extra local addresses and the
//! subflow limits, undone when the guard drops (on errors too).

use std::net::IpAddr;
use std::process::Command;

/// `--subflow-from ADDR[@DEV]`: a local address to open a subflow from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubflowFrom {
    /// The local address.
    pub addr: IpAddr,
    /// Its interface (found from the address when not given).
    pub dev: Option<String>,
}

/// Parses `ADDR[@DEV]` (clap value parser).
pub fn parse_subflow_from(s: &str) -> Result<SubflowFrom, String> {
    let (addr, dev) = match s.split_once('@') {
        Some((a, d)) if !d.is_empty() => (a, Some(d.to_string())),
        Some(_) => return Err(format!("{s:?}: empty interface after '@'")),
        None => (s, None),
    };
    let addr = addr.parse().map_err(|_| format!("{s:?}: want ADDR or ADDR@DEV, ADDR an IP address"))?;
    Ok(SubflowFrom { addr, dev })
}

/// Runs `ip ARGS`, returning its stdout; the error names the command.
fn ip(args: &[&str]) -> Result<String, String> {
    let out =
        Command::new("ip").args(args).output().map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `(subflows, add_addr_accepted)` from `ip mptcp limits show`
/// ("add_addr_accepted 0 subflows 2").
fn parse_limits(text: &str) -> Option<(u32, u32)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let value = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)?.parse().ok());
    Some((value("subflows")?, value("add_addr_accepted")?))
}

/// The ID of the endpoint with address `addr` in `ip mptcp endpoint show`
/// ("10.0.0.2 id 3 subflow dev path1").
fn endpoint_id(text: &str, addr: IpAddr) -> Option<u8> {
    text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w.first()?.parse::<IpAddr>().ok()? == addr && *w.get(1)? == "id").then(|| w.get(2)?.parse().ok())?
    })
}

/// The interface holding `addr`.
fn device_of(addr: IpAddr) -> Result<String, String> {
    let ifaces = if_addrs::get_if_addrs().map_err(|e| format!("listing interfaces: {e}"))?;
    ifaces
        .into_iter()
        .find(|i| i.ip() == addr)
        .map(|i| i.name)
        .ok_or_else(|| format!("--subflow-from {addr}: no interface here has this address (give ADDR@DEV)"))
}

/// Endpoints and limits set for this run; dropping it undoes them.
#[derive(Debug, Default)]
pub struct PathManager {
    endpoints: Vec<u8>,
    saved_limits: Option<(u32, u32)>,
}

impl PathManager {
    /// Raises the limits to at least `n` subflows and `n` accepted
    /// addresses (on a server: the joins it accepts; on a client: the
    /// subflows it opens), remembering the old ones.
    pub fn raise_limits(&mut self, n: u32) -> Result<(), String> {
        let text = ip(&["mptcp", "limits", "show"])?;
        let (subflows, accepted) = parse_limits(&text)
            .ok_or_else(|| format!("unexpected `ip mptcp limits show` output: {text:?}"))?;
        if subflows >= n && accepted >= n {
            return Ok(());
        }
        let (s, a) = (subflows.max(n).to_string(), accepted.max(n).to_string());
        ip(&["mptcp", "limits", "set", "subflow", &s, "add_addr_accepted", &a])?;
        self.saved_limits.get_or_insert((subflows, accepted));
        Ok(())
    }

    /// Adds a `subflow` endpoint for each address (the kernel then opens a
    /// subflow from it on every new connection) and the limits they need.
    pub fn add_subflows(&mut self, from: &[SubflowFrom]) -> Result<(), String> {
        self.raise_limits(from.len() as u32)?;
        for f in from {
            let dev = match &f.dev {
                Some(d) => d.clone(),
                None => device_of(f.addr)?,
            };
            let addr = f.addr.to_string();
            ip(&["mptcp", "endpoint", "add", &addr, "dev", &dev, "subflow"])?;
            let shown = ip(&["mptcp", "endpoint", "show"])?;
            let id = endpoint_id(&shown, f.addr)
                .ok_or_else(|| format!("endpoint {addr} added but not listed by `ip mptcp endpoint show`"))?;
            self.endpoints.push(id);
        }
        Ok(())
    }
}

impl Drop for PathManager {
    fn drop(&mut self) {
        for id in self.endpoints.drain(..) {
            if let Err(e) = ip(&["mptcp", "endpoint", "delete", "id", &id.to_string()]) {
                eprintln!("mpquic-tcp: {e}");
            }
        }
        if let Some((s, a)) = self.saved_limits.take() {
            if let Err(e) = ip(&[
                "mptcp",
                "limits",
                "set",
                "subflow",
                &s.to_string(),
                "add_addr_accepted",
                &a.to_string(),
            ]) {
                eprintln!("mpquic-tcp: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ip_outputs_and_specs() {
        assert_eq!(parse_limits("add_addr_accepted 0 subflows 2 \n"), Some((2, 0)));
        assert_eq!(parse_limits("garbage"), None);
        let shown = "10.0.0.1 id 1 signal dev eth0 \n100.64.0.6 id 2 subflow dev path1 \n";
        assert_eq!(endpoint_id(shown, "100.64.0.6".parse().unwrap()), Some(2));
        assert_eq!(endpoint_id(shown, "100.64.0.7".parse().unwrap()), None);
        let f = parse_subflow_from("100.64.0.6@path1").unwrap();
        assert_eq!((f.addr.to_string(), f.dev.as_deref()), ("100.64.0.6".into(), Some("path1")));
        assert_eq!(parse_subflow_from("::1").unwrap().dev, None);
        assert!(parse_subflow_from("path1").is_err());
        assert!(parse_subflow_from("10.0.0.1@").is_err());
    }
}
