//! `mpquic-sim`: run one simulated transfer over a scenario and print a summary.
//!
//! ```text
//! mpquic-sim --scenario NAME_OR_FILE [--cc X] [--scheduler Y] [--seed N] [--duration S]
//!            [--bytes N] [--workload h3|stream|upload|video] [--interval MS] [--fail PATH@SECONDS]
//!            [--out DIR] [--json] [--qlog-dir DIR]
//! mpquic-sim --bench [--workload W] [--duration S] [--real-aead]
//! ```
//!
//! Packets are protected with the simulation's AEAD (payload in clear, a keyed
//! checksum as tag, same sizes: results are the same bytes); `--real-aead`
//! uses AES-GCM as on a network.
//!
//! The flow under test uses the scenario's `test_paths` with `--cc` / `--scheduler`;
//! the scenario's background flows run beside it and are reported after it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::Parser;
use emu::scenario::{Scenario, MAX_SECONDS};
use sim::{output, Failure, Sim, SimConfig, Workload};

/// Run one simulated transfer over an emulated scenario and print a summary.
#[derive(Parser, Debug)]
#[command(
    name = "mpquic-sim",
    after_help = "--bench runs 60 s (--duration S) on testbed-2x100 and prints the wall time."
)]
struct Args {
    /// A scenario name from traces/ (e.g. testbed-2x100) or a .toml file.
    #[arg(long, required_unless_present = "bench")]
    scenario: Option<String>,
    /// Congestion controller of the flow under test (see the error for the names).
    #[arg(long, default_value = "cubic", value_parser = cc_name)]
    cc: String,
    /// Path scheduler of the flow under test (name[:key=value,...]).
    #[arg(long, default_value = "minrtt", value_parser = scheduler_name)]
    scheduler: String,
    /// Both endpoints of the flow under test mark ECT(0) and validate ECN
    /// (off: runs as before ECN existed); a scenario queue with `ecn = true`
    /// (CoDel, PIE) then marks CE instead of dropping.
    #[arg(long)]
    ecn: bool,
    /// Both endpoints of the flow under test run path MTU discovery (up to
    /// 1500-byte IP packets; a scenario path's `mtu` limits it); off: every
    /// datagram has the same size.
    #[arg(long)]
    pmtud: bool,
    /// The flow under test does not offer the timestamp extension: its
    /// shared-bottleneck detection reads RTT samples, as with peers other
    /// than mpquic (default: one-way delays from the peer's timestamps).
    #[arg(long)]
    no_timestamps: bool,
    /// Seed of the links' loss processes (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated seconds, in (0, 86400] (default: the scenario's; with --bytes, 10x it).
    #[arg(long, allow_negative_numbers = true, value_parser = duration_secs)]
    duration: Option<f64>,
    /// Transfer this many bytes and stop when done (default: unbounded).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    bytes: Option<u64>,
    /// h3: HTTP/3 GET of a generated body; stream: the same download on a plain QUIC
    /// stream; upload: the client sends on a plain stream; video: 5.24 Mbit/s video
    /// for 3 minutes, pictures due at fixed playout times (seed 002).
    #[arg(long, default_value = "h3", value_parser = workload)]
    workload: Workload,
    /// Same as --workload upload.
    #[arg(long)]
    upload: bool,
    /// Time-series sampling interval in ms, in [1, 3600000].
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    interval: u64,
    /// Black-hole path (or link) PATH, by name or index, from SECONDS on (repeatable).
    #[arg(long = "fail", value_name = "PATH@SECONDS", value_parser = fail_spec)]
    fails: Vec<FailSpec>,
    /// Write summary.json, series.json and series.csv into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write every endpoint's qlog into DIR (flow<i>_client.sqlog,
    /// flow<i>_server.sqlog; times are simulated).
    #[arg(long, value_name = "DIR")]
    qlog_dir: Option<PathBuf>,
    /// 60 s (or --duration) on testbed-2x100, timed on the wall clock.
    #[arg(long)]
    bench: bool,
    /// Protect packets with AES-GCM as on a network, instead of the simulation's
    /// AEAD (payload in clear, a keyed checksum as tag, same sizes; the results
    /// are the same, only slower).
    #[arg(long)]
    real_aead: bool,
}

/// A `--fail PATH@SECONDS`.
#[derive(Debug, Clone)]
struct FailSpec {
    path: String,
    at: Duration,
}

fn cc_name(s: &str) -> Result<String, String> {
    match mpquic::cc::registry::canonical(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(format!("unknown controller (known: {})", mpquic::cc::registry::names().join(", "))),
    }
}

fn scheduler_name(s: &str) -> Result<String, String> {
    mpquic::sched::build(s, &mpquic::sched::SchedParams::default())
        .map(|_| s.to_owned())
        .map_err(|e| format!("{e} (known: {})", mpquic::sched::names().join(", ")))
}

fn seconds(s: &str) -> Result<f64, String> {
    s.trim().parse::<f64>().map_err(|_| format!("not a number of seconds: {s:?}"))
}

fn duration_secs(s: &str) -> Result<f64, String> {
    let d = seconds(s)?;
    if d.is_finite() && d > 0.0 && d <= MAX_SECONDS {
        Ok(d)
    } else {
        Err(format!("must be in (0, {MAX_SECONDS}] seconds, got {s}"))
    }
}

fn workload(s: &str) -> Result<Workload, String> {
    Workload::parse(s).map_err(|e| e.to_string())
}

fn fail_spec(s: &str) -> Result<FailSpec, String> {
    let (path, t) = s.split_once('@').ok_or_else(|| format!("expected PATH@SECONDS, got {s:?}"))?;
    let t = seconds(t)?;
    if !(t.is_finite() && (0.0..=MAX_SECONDS).contains(&t)) {
        return Err(format!("time must be in [0, {MAX_SECONDS}] seconds, got {t:?}"));
    }
    Ok(FailSpec { path: path.to_owned(), at: Duration::from_secs_f64(t) })
}

/// Link index of a `--fail` target: a path or link name, or an index.
fn fail_link(scenario: &Scenario, name: &str) -> Result<usize, String> {
    let names: Vec<&str> = scenario
        .paths
        .iter()
        .map(|p| p.name.as_str())
        .chain(scenario.links.iter().map(|l| l.name.as_str()))
        .collect();
    names
        .iter()
        .position(|n| *n == name)
        .or_else(|| name.parse::<usize>().ok().filter(|&i| i < names.len()))
        .ok_or_else(|| format!("--fail: no path or link {name:?} in scenario (known: {})", names.join(", ")))
}

fn run(a: Args) -> Result<(), String> {
    let workload = if a.upload { Workload::Upload } else { a.workload };
    if a.bench {
        return bench(workload, a.duration.unwrap_or(60.0), a.real_aead);
    }
    let name = a.scenario.clone().unwrap_or_default();
    let scenario = Scenario::find(&name).map_err(|e| format!("scenario {name:?}: {e}"))?;
    let seed = a.seed.unwrap_or(scenario.seed);
    let duration = match (a.duration, a.bytes) {
        (Some(d), _) => Duration::from_secs_f64(d),
        (None, Some(_)) => scenario.duration * 10,
        (None, None) => scenario.duration,
    };
    let mut cfg = SimConfig::for_scenario(&scenario, duration);
    cfg.sample_interval = Duration::from_millis(a.interval);
    cfg.qlog_dir = a.qlog_dir.clone();
    cfg.real_aead = a.real_aead;
    for f in &mut cfg.flows {
        f.cc = a.cc.clone();
        f.scheduler = a.scheduler.clone();
        f.ecn = a.ecn;
        f.pmtud = a.pmtud;
        f.timestamps = !a.no_timestamps;
        f.bytes = a.bytes;
        f.workload = workload;
    }
    for fail in &a.fails {
        cfg.failures.push(Failure { path: fail_link(&scenario, &fail.path)?, at: fail.at });
    }
    let mut sim = Sim::from_scenario(&scenario, seed, cfg).map_err(|e| e.to_string())?;
    let report = sim.run(&mut progress());
    if std::io::stderr().is_terminal() {
        eprint!("\r{:60}\r", "");
    }
    if let Some(e) = sim.qlog_error() {
        return Err(format!("--qlog-dir: {e}"));
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
        let write = |file: &str, text: String| {
            let p = dir.join(file);
            std::fs::write(&p, text).map_err(|e| format!("writing {}: {e}", p.display()))
        };
        write("summary.json", output::summary_json(&report))?;
        write("series.json", output::series_json(&report))?;
        write("series.csv", output::csv(&report))?;
    }
    let text = if a.json { output::summary_json(&report) + "\n" } else { output::table(&report) };
    // A closed pipe (e.g. `| head`) is an error to report, not a panic.
    std::io::stdout().lock().write_all(text.as_bytes()).map_err(|e| format!("writing the summary: {e}"))
}

/// A progress line on stderr when it is a terminal.
fn progress() -> impl FnMut(Duration, Duration) {
    let tty = std::io::stderr().is_terminal();
    let mut last_pct = u64::MAX;
    move |now, end| {
        if !tty {
            return;
        }
        let pct = (now.as_secs_f64() / end.as_secs_f64().max(1e-9) * 100.0) as u64;
        if pct != last_pct {
            last_pct = pct;
            eprint!("\r{:6.1} / {:.1} s simulated ({pct:3}%)", now.as_secs_f64(), end.as_secs_f64());
            let _ = std::io::stderr().flush();
        }
    }
}

/// `seconds` (60 by default) of one unbounded download on `testbed-2x100` (both
/// paths when multipath is available), timed on the wall clock.
fn bench(workload: Workload, seconds: f64, real_aead: bool) -> Result<(), String> {
    let scenario = Scenario::find("testbed-2x100").map_err(|e| e.to_string())?;
    let mut cfg =
        SimConfig::new("bench testbed-2x100", scenario.paths.len(), Duration::from_secs_f64(seconds));
    cfg.real_aead = real_aead;
    for f in &mut cfg.flows {
        f.cc = "cubic".into();
        f.workload = workload;
    }
    let mut sim = Sim::from_scenario(&scenario, 1, cfg).map_err(|e| e.to_string())?;
    #[allow(clippy::disallowed_methods)]
    let t0 = std::time::Instant::now();
    let report = sim.run(&mut |_, _| {});
    let wall = t0.elapsed().as_secs_f64();
    print!("{}", output::table(&report));
    println!(
        "bench: {:.1} s simulated in {:.2} s wall ({:.0} datagrams/s)",
        report.duration.as_secs_f64(),
        wall,
        report.datagrams as f64 / wall
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's first paragraph is the error (a missing argument is named on the
            // next line); the usage and hint paragraphs follow. One line of it.
            let text = e.to_string();
            let first = text.split("\n\n").next().unwrap_or("bad arguments");
            let line = first.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("mpquic-sim: {} (see --help)", line.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mpquic-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
