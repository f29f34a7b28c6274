//! `mpquic-mpshell --backend mahimahi`: one real Mahimahi shell per path.
//!
//! Mahimahi gives each shell its own network namespace and has no multi-interface
//! shell, so path i gets its own nested chain `mm-delay D [mm-loss ...] mm-link UP DOWN
//! -- HOLDER`. The holder (this binary again, `--mahimahi-holder`) runs inside the
//! innermost shell, reports its pid and its address there, and waits. The command then
//! runs in the runner's own namespace with `MPSHELL_NETNS_i=/proc/PID/ns/net`: a
//! program opens path i's socket inside that namespace (setns, bind, setns back), as
//! `mpquic-client --local "$MPSHELL_LOCAL_i"` does. Any program with Mahimahi's
//! command syntax named `mm-delay`/`mm-link`/`mm-loss` on `PATH` is driven this way,
//! including this crate's own.

use std::ffi::OsStr;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::args::{PathArg, UsageError};

/// How long a path's shells may take to come up (namespace, devices, routes).
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the shells may take to exit once their holder ended.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often waiting loops look again.
const POLL: Duration = Duration::from_millis(50);

/// Which emulation runs the paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// One namespace with one TUN interface per path (this crate's link loop).
    #[default]
    Builtin,
    /// One Mahimahi shell chain per path (`mm-delay`, `mm-loss`, `mm-link` from `PATH`).
    Mahimahi,
    /// Mahimahi if `mm-link` and `mm-delay` are on `PATH` and the paths are `--path`
    /// specs, otherwise built-in.
    Auto,
}

impl Backend {
    /// Parses `builtin`, `mahimahi` or `auto`.
    pub fn parse(s: &str) -> Result<Backend, UsageError> {
        match s {
            "builtin" => Ok(Backend::Builtin),
            "mahimahi" => Ok(Backend::Mahimahi),
            "auto" => Ok(Backend::Auto),
            other => Err(UsageError(format!("--backend must be builtin, mahimahi or auto: {other:?}"))),
        }
    }
}

/// The first executable file `name` in the directories of `path_var` (a `PATH` value).
pub fn which(name: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_var?)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Whether Mahimahi's `mm-link` and `mm-delay` are on this process's `PATH`.
pub fn available() -> bool {
    let path = std::env::var_os("PATH");
    ["mm-link", "mm-delay"].iter().all(|n| which(n, path.as_deref()).is_some())
}

/// The nested Mahimahi commands for one path, ending in `inner` (the holder). Mahimahi's
/// `mm-delay` takes whole milliseconds; loss applies to both directions, as in the
/// built-in backend.
pub fn path_argv(p: &PathArg, inner: &[String]) -> Result<Vec<String>, UsageError> {
    let ms = p.delay.as_micros();
    if ms % 1000 != 0 {
        return Err(UsageError(format!(
            "path {}: Mahimahi's mm-delay takes whole milliseconds, got {} ms",
            p.name,
            ms as f64 / 1000.0
        )));
    }
    let mut v = Vec::new();
    if ms > 0 {
        v.extend(["mm-delay".to_string(), (ms / 1000).to_string()]);
    }
    if p.loss > 0.0 {
        for dir in ["uplink", "downlink"] {
            v.extend(["mm-loss".to_string(), dir.to_string(), p.loss.to_string()]);
        }
    }
    v.push("mm-link".into());
    v.push(p.up.to_string_lossy().into_owned());
    v.push(p.down.to_string_lossy().into_owned());
    // getopt in Mahimahi's mm-link would take the holder's options as its own.
    v.push("--".into());
    v.extend(inner.iter().cloned());
    Ok(v)
}

/// What a holder reports from inside its path's shells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The holder's pid (its `/proc/PID/ns/net` is the path's namespace).
    pub pid: u32,
    /// The holder's address inside the shell (source of packets towards the outside).
    pub addr: IpAddr,
    /// `MAHIMAHI_BASE` inside the shell: the outside address it reaches.
    pub peer: IpAddr,
}

impl Report {
    /// `pid=N addr=A peer=P`.
    pub fn format(&self) -> String {
        format!("pid={} addr={} peer={}\n", self.pid, self.addr, self.peer)
    }

    /// Parses [`Report::format`]'s output.
    pub fn parse(s: &str) -> Result<Report, String> {
        let field = |k: &str| {
            s.split_whitespace()
                .find_map(|kv| kv.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
                .ok_or_else(|| format!("holder report without {k}: {s:?}"))
        };
        let bad = |k: &str| format!("holder report has a bad {k}: {s:?}");
        Ok(Report {
            pid: field("pid")?.parse().map_err(|_| bad("pid"))?,
            addr: field("addr")?.parse().map_err(|_| bad("addr"))?,
            peer: field("peer")?.parse().map_err(|_| bad("peer"))?,
        })
    }
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // Signal 0 only checks existence; EPERM still means the process exists.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        .map_or_else(|e| e == nix::errno::Errno::EPERM, |()| true)
}

/// The holder (`mpquic-mpshell --mahimahi-holder REPORT RUNNER_PID`), run inside a
/// path's shells: writes its [`Report`] to REPORT, then waits until the runner kills it
/// or exits. Returns the exit code.
pub fn holder_main(args: &[String]) -> i32 {
    let [report, runner] = args else {
        eprintln!("mpquic-mpshell --mahimahi-holder: needs REPORT_FILE RUNNER_PID");
        return 2;
    };
    let Ok(runner) = runner.parse::<u32>() else {
        eprintln!("mpquic-mpshell --mahimahi-holder: bad runner pid {runner:?}");
        return 2;
    };
    let r = (|| -> Result<(), String> {
        let base = std::env::var("MAHIMAHI_BASE")
            .map_err(|_| "MAHIMAHI_BASE is not set: not inside a Mahimahi shell".to_string())?;
        let peer: IpAddr = base.parse().map_err(|_| format!("MAHIMAHI_BASE is not an address: {base:?}"))?;
        // The source address the kernel picks towards the outside is the shell's own.
        let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("socket: {e}"))?;
        sock.connect(SocketAddr::new(peer, 9)).map_err(|e| format!("no route to {peer}: {e}"))?;
        let addr = sock.local_addr().map_err(|e| e.to_string())?.ip();
        let text = Report { pid: std::process::id(), addr, peer }.format();
        let tmp = format!("{report}.tmp");
        std::fs::write(&tmp, text).map_err(|e| format!("writing {tmp}: {e}"))?;
        std::fs::rename(&tmp, report).map_err(|e| format!("renaming {tmp}: {e}"))
    })();
    if let Err(e) = r {
        eprintln!("mpquic-mpshell --mahimahi-holder: {e}");
        return 1;
    }
    // Normally the runner ends us with SIGTERM; if it died, do not outlive it.
    while process_alive(runner) {
        std::thread::sleep(Duration::from_millis(200));
    }
    0
}

/// One path's running shells.
struct Running {
    name: String,
    child: Child,
    report: Option<Report>,
}

impl Running {
    /// Ends the holder (the shells then exit by themselves), or the chain if stuck.
    fn stop(&mut self) {
        if let Some(r) = self.report {
            if let Ok(pid) = i32::try_from(r.pid) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGTERM);
            }
        }
        let mut waited = Duration::ZERO;
        while waited < EXIT_TIMEOUT {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(POLL);
            waited += POLL;
        }
        eprintln!("mpquic-mpshell: path {}: Mahimahi shells did not exit; killing them", self.name);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The network namespace identity (`net:[INODE]`) of a `/proc/.../ns/net` file.
fn ns_id(path: &Path) -> Result<String, String> {
    std::fs::read_link(path)
        .map(|l| l.to_string_lossy().into_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The command's environment: per path, the namespace file and the addresses.
pub fn command_env(reports: &[Report]) -> Vec<(String, String)> {
    let mut env = vec![
        ("MPSHELL_PATHS".to_string(), reports.len().to_string()),
        ("MPSHELL_BACKEND".to_string(), "mahimahi".to_string()),
    ];
    for (i, r) in reports.iter().enumerate() {
        let ns = format!("/proc/{}/ns/net", r.pid);
        env.push((format!("MPSHELL_ADDR_{i}"), r.addr.to_string()));
        env.push((format!("MPSHELL_PEER_{i}"), r.peer.to_string()));
        env.push((format!("MPSHELL_LOCAL_{i}"), format!("{}@{ns}", r.addr)));
        env.push((format!("MPSHELL_NETNS_{i}"), ns));
    }
    env
}

fn wait_ready(run: &mut Running, report: &Path) -> Result<Report, String> {
    let mut waited = Duration::ZERO;
    loop {
        if let Ok(text) = std::fs::read_to_string(report) {
            return Report::parse(&text);
        }
        if let Ok(Some(status)) = run.child.try_wait() {
            return Err(format!(
                "path {}: the Mahimahi shells exited ({status}) before they were ready",
                run.name
            ));
        }
        if waited >= READY_TIMEOUT {
            return Err(format!(
                "path {}: the Mahimahi shells were not ready after {READY_TIMEOUT:?}",
                run.name
            ));
        }
        std::thread::sleep(POLL);
        waited += POLL;
    }
}

/// Starts every path's shells, runs `command` (empty: `$SHELL`) with the paths'
/// environment, stops the shells and returns the command's exit code.
pub fn run(paths: &[PathArg], command: &[String], announce: bool) -> Result<i32, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err(
            "--backend mahimahi must run as root (the command opens sockets in the shells' namespaces)"
                .into(),
        );
    }
    let path_var = std::env::var_os("PATH");
    let mut needed = vec!["mm-link", "mm-delay"];
    if paths.iter().any(|p| p.loss > 0.0) {
        needed.push("mm-loss");
    }
    let missing: Vec<&str> = needed.into_iter().filter(|n| which(n, path_var.as_deref()).is_none()).collect();
    if !missing.is_empty() {
        return Err(format!("--backend mahimahi: not on PATH: {}", missing.join(", ")));
    }
    let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
    let dir = std::env::temp_dir().join(format!("mpquic-mpshell-mm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Mahimahi runs the holder as $SUDO_USER: it must be able to write its report.
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777));
    }
    let mut running: Vec<Running> = Vec::new();
    let result = (|| -> Result<i32, String> {
        let mut reports = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            let report = dir.join(format!("path{i}"));
            let holder = [
                exe.to_string_lossy().into_owned(),
                "--mahimahi-holder".into(),
                report.to_string_lossy().into_owned(),
                std::process::id().to_string(),
            ];
            let argv = path_argv(p, &holder).map_err(|e| e.0)?;
            let child = Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| format!("path {}: cannot start {}: {e}", p.name, argv[0]))?;
            running.push(Running { name: p.name.clone(), child, report: None });
            let run = running.last_mut().ok_or("no shell")?;
            let r = wait_ready(run, &report)?;
            run.report = Some(r);
            let ns = PathBuf::from(format!("/proc/{}/ns/net", r.pid));
            if ns_id(&ns)? == ns_id(Path::new("/proc/self/ns/net"))? {
                return Err(format!("path {}: the holder is not in a separate network namespace", p.name));
            }
            if announce {
                eprintln!(
                    "mpshell: path {i} {}: {} in {} (MPSHELL_LOCAL_{i}), outside {} [{}]",
                    p.name,
                    r.addr,
                    ns.display(),
                    r.peer,
                    argv[..argv.len() - holder.len() - 1].join(" ")
                );
            }
            reports.push(r);
        }
        let cmd = if command.is_empty() {
            vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
        } else {
            command.to_vec()
        };
        let status = Command::new(&cmd[0])
            .args(&cmd[1..])
            .envs(command_env(&reports))
            .status()
            .map_err(|e| format!("cannot run {}: {e}", cmd[0]))?;
        use std::os::unix::process::ExitStatusExt;
        Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
    })();
    for r in &mut running {
        r.stop();
    }
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(delay_us: u64, loss: f64) -> PathArg {
        PathArg {
            name: "p".into(),
            up: "u.tr".into(),
            down: "d.tr".into(),
            delay: Duration::from_micros(delay_us),
            loss,
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn chain_of_mahimahi_commands() {
        let inner = s(&["holder", "--x"]);
        assert_eq!(
            path_argv(&path(20_000, 0.0), &inner).unwrap(),
            s(&["mm-delay", "20", "mm-link", "u.tr", "d.tr", "--", "holder", "--x"])
        );
        assert_eq!(
            path_argv(&path(0, 0.01), &inner).unwrap(),
            s(&[
                "mm-loss", "uplink", "0.01", "mm-loss", "downlink", "0.01", "mm-link", "u.tr", "d.tr", "--",
                "holder", "--x"
            ])
        );
        let e = path_argv(&path(2_500, 0.0), &inner).unwrap_err();
        assert!(e.0.contains("whole milliseconds"), "{e}");
    }

    #[test]
    fn backend_names() {
        assert_eq!(Backend::parse("mahimahi"), Ok(Backend::Mahimahi));
        assert_eq!(Backend::parse("auto"), Ok(Backend::Auto));
        assert_eq!(Backend::parse("builtin"), Ok(Backend::Builtin));
        assert!(Backend::parse("mininet").unwrap_err().0.contains("builtin, mahimahi or auto"));
    }

    #[test]
    fn report_round_trip_and_errors() {
        let r = Report { pid: 42, addr: "100.64.0.2".parse().unwrap(), peer: "100.64.0.1".parse().unwrap() };
        assert_eq!(Report::parse(&r.format()), Ok(r));
        assert!(Report::parse("pid=1 addr=1.2.3.4").unwrap_err().contains("without peer"));
        assert!(Report::parse("pid=x addr=1.2.3.4 peer=1.2.3.5").unwrap_err().contains("bad pid"));
    }

    #[test]
    fn env_gives_each_path_its_namespace() {
        let r = |pid, a: &str| Report { pid, addr: a.parse().unwrap(), peer: "10.0.0.1".parse().unwrap() };
        let env = command_env(&[r(10, "100.64.0.2"), r(11, "100.64.0.6")]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("MPSHELL_PATHS"), Some("2"));
        assert_eq!(get("MPSHELL_NETNS_1"), Some("/proc/11/ns/net"));
        assert_eq!(get("MPSHELL_LOCAL_1"), Some("100.64.0.6@/proc/11/ns/net"));
        assert_eq!(get("MPSHELL_ADDR_0"), Some("100.64.0.2"));
        assert_eq!(get("MPSHELL_PEER_0"), Some("10.0.0.1"));
    }

    #[test]
    fn which_finds_executables_only() {
        let dir = std::env::temp_dir().join(format!("mpquic-which-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mm-link"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join("mm-delay"), "").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("mm-link"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.join("mm-delay"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let pv = std::env::join_paths([PathBuf::from("/nonexistent"), dir.clone()]).unwrap();
        assert_eq!(which("mm-link", Some(&pv)), Some(dir.join("mm-link")));
        assert_eq!(which("mm-delay", Some(&pv)), None);
        assert_eq!(which("mm-link", None), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
