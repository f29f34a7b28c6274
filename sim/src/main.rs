//! `mpquic-sim`: run one simulated transfer over a scenario and print a summary.
//!
//! ```text
//! mpquic-sim --scenario NAME_OR_FILE [--cc X] [--scheduler Y] [--seed N] [--duration S]
//!            [--bytes N] [--workload h3|stream|upload] [--interval MS] [--fail PATH@SECONDS]
//!            [--out DIR] [--json]
//! mpquic-sim --bench [--workload W]
//! ```

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use emu::scenario::Scenario;
use sim::{output, Failure, Sim, SimConfig, Workload};

const USAGE: &str = "usage: mpquic-sim --scenario NAME_OR_FILE [--cc NAME] [--scheduler NAME] [--seed N]
                  [--duration SECONDS] [--bytes N] [--workload h3|stream|upload]
                  [--interval MS] [--fail PATH@SECONDS]... [--out DIR] [--json]
       mpquic-sim --bench [--workload W]   (60 s on testbed-2x100, prints wall time)

  --scenario   a scenario name from traces/ (e.g. testbed-2x100) or a .toml file
  --cc         newreno | cubic | bbr | coupled-bbr | lia | olia | balia (default cubic)
  --scheduler  path scheduler name (default minrtt)
  --seed       seed of the links' loss processes (default: the scenario's)
  --duration   simulated seconds (default: the scenario's; with --bytes, 10x it)
  --bytes      transfer this many bytes and stop when done (default: unbounded)
  --workload   h3: HTTP/3 GET of a generated body (default); stream: the same download
               on a plain QUIC stream; upload: the client sends on a plain stream
  --upload     same as --workload upload
  --interval   time-series sampling interval in ms (default 100)
  --fail       black-hole path PATH (name or index) from SECONDS on
  --out        write summary.json, series.json and series.csv into DIR
  --json       print the summary as JSON instead of a table";

struct Args {
    scenario: Option<String>,
    cc: String,
    scheduler: String,
    seed: Option<u64>,
    duration: Option<f64>,
    bytes: Option<u64>,
    workload: Workload,
    interval_ms: u64,
    fails: Vec<(String, f64)>,
    out: Option<PathBuf>,
    json: bool,
    bench: bool,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut a = Args {
        scenario: None,
        cc: "cubic".into(),
        scheduler: "minrtt".into(),
        seed: None,
        duration: None,
        bytes: None,
        workload: Workload::H3,
        interval_ms: 100,
        fails: Vec::new(),
        out: None,
        json: false,
        bench: false,
    };
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let mut val = |name: &str| -> Result<String, String> {
            it.next().cloned().ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--scenario" => a.scenario = Some(val(arg)?),
            "--cc" => a.cc = val(arg)?,
            "--scheduler" => a.scheduler = val(arg)?,
            "--seed" => {
                let v = val(arg)?;
                a.seed = Some(v.parse().map_err(|_| format!("--seed: not an integer: {v:?}"))?);
            }
            "--duration" => {
                let v = val(arg)?;
                let d: f64 = v.parse().map_err(|_| format!("--duration: not a number: {v:?}"))?;
                if !(d.is_finite() && d > 0.0 && d <= 86_400.0) {
                    return Err(format!("--duration: must be in (0, 86400] seconds, got {v}"));
                }
                a.duration = Some(d);
            }
            "--bytes" => {
                let v = val(arg)?;
                let b: u64 = v.parse().map_err(|_| format!("--bytes: not an integer: {v:?}"))?;
                if b == 0 {
                    return Err("--bytes: must be > 0".into());
                }
                a.bytes = Some(b);
            }
            "--upload" => a.workload = Workload::Upload,
            "--workload" => {
                a.workload = Workload::parse(&val(arg)?).map_err(|e| format!("--workload: {e}"))?
            }
            "--interval" => {
                let v = val(arg)?;
                let ms: u64 = v.parse().map_err(|_| format!("--interval: not an integer: {v:?}"))?;
                if ms == 0 {
                    return Err("--interval: must be > 0 ms".into());
                }
                a.interval_ms = ms;
            }
            "--fail" => {
                let v = val(arg)?;
                let (p, t) =
                    v.split_once('@').ok_or_else(|| format!("--fail: expected PATH@SECONDS, got {v:?}"))?;
                let t: f64 = t.parse().map_err(|_| format!("--fail: not a number of seconds: {t:?}"))?;
                if !(t.is_finite() && t >= 0.0) {
                    return Err(format!("--fail: time must be >= 0, got {t}"));
                }
                a.fails.push((p.to_string(), t));
            }
            "--out" => a.out = Some(PathBuf::from(val(arg)?)),
            "--json" => a.json = true,
            "--bench" => a.bench = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.scenario.is_none() && !a.bench {
        return Err("--scenario is required".into());
    }
    Ok(a)
}

fn run(a: Args) -> Result<(), String> {
    if a.bench {
        return bench(a.workload);
    }
    let name = a.scenario.clone().unwrap_or_default();
    let scenario = Scenario::find(&name).map_err(|e| format!("scenario {name:?}: {e}"))?;
    let seed = a.seed.unwrap_or(scenario.seed);
    let duration = match (a.duration, a.bytes) {
        (Some(d), _) => Duration::from_secs_f64(d),
        (None, Some(_)) => scenario.duration * 10,
        (None, None) => scenario.duration,
    };
    let mut cfg = SimConfig::new(&scenario.name, scenario.paths.len(), duration);
    cfg.sample_interval = Duration::from_millis(a.interval_ms);
    for f in &mut cfg.flows {
        f.cc = a.cc.clone();
        f.scheduler = a.scheduler.clone();
        f.bytes = a.bytes;
        f.workload = a.workload;
    }
    for (p, t) in &a.fails {
        let idx = scenario
            .paths
            .iter()
            .position(|s| &s.name == p)
            .or_else(|| p.parse::<usize>().ok().filter(|&i| i < scenario.paths.len()))
            .ok_or_else(|| {
                let names: Vec<&str> = scenario.paths.iter().map(|s| s.name.as_str()).collect();
                format!("--fail: no path {p:?} in scenario (paths: {})", names.join(", "))
            })?;
        cfg.failures.push(Failure { path: idx, at: Duration::from_secs_f64(*t) });
    }
    let mut sim = Sim::from_scenario(&scenario, seed, cfg).map_err(|e| e.to_string())?;
    let tty = std::io::stderr().is_terminal();
    let mut last_pct = u64::MAX;
    let report = sim.run(&mut |now, end| {
        if !tty {
            return;
        }
        let pct = (now.as_secs_f64() / end.as_secs_f64().max(1e-9) * 100.0) as u64;
        if pct != last_pct {
            last_pct = pct;
            eprint!("\r{:6.1} / {:.1} s simulated ({pct:3}%)", now.as_secs_f64(), end.as_secs_f64());
            let _ = std::io::stderr().flush();
        }
    });
    if tty {
        eprint!("\r{:60}\r", "");
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
    if a.json {
        println!("{}", output::summary_json(&report));
    } else {
        print!("{}", output::table(&report));
    }
    Ok(())
}

/// 60 s of one unbounded download on `testbed-2x100` (both paths when multipath is
/// available), timed on the wall clock.
fn bench(workload: Workload) -> Result<(), String> {
    let scenario = Scenario::find("testbed-2x100").map_err(|e| e.to_string())?;
    let mut cfg = SimConfig::new("bench testbed-2x100", scenario.paths.len(), Duration::from_secs(60));
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
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            if e.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("mpquic-sim: {e}\n{USAGE}");
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
