//! The `mpquic-sim` binary: bad input is a one-line error and a non-zero exit code,
//! never a panic; `--json` lists the flow under test, then the background flows.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpquic-sim")).args(args).output().expect("run mpquic-sim")
}

/// Runs with bad arguments; returns the error line after checking the exit code,
/// that there is exactly one line, and that nothing panicked.
fn rejected(args: &[&str]) -> String {
    let out = sim(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}: {:?}", out.status);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("mpquic-sim: "), "{err}");
    err
}

#[test]
fn fail_time_out_of_range() {
    for t in ["0@1e300", "0@1e20", "0@-1", "0@nan", "a@inf"] {
        let e = rejected(&["--scenario", "break", "--fail", t]);
        assert!(e.contains("time must be in [0, 86400]") || e.contains("not a number"), "{e}");
    }
    assert!(rejected(&["--scenario", "break", "--fail", "0"]).contains("PATH@SECONDS"));
    assert!(rejected(&["--scenario", "break", "--fail", "zz@1"]).contains("known: a, b"));
}

#[test]
fn unknown_cc_lists_the_controllers() {
    let e = rejected(&["--scenario", "break", "--cc", "vegas"]);
    for name in mpquic::cc::registry::names() {
        assert!(e.contains(name), "{name} missing from {e}");
    }
}

#[test]
fn unknown_scheduler_lists_the_schedulers() {
    let e = rejected(&["--scenario", "break", "--scheduler", "fastest"]);
    for name in mpquic::sched::names() {
        assert!(e.contains(name), "{name} missing from {e}");
    }
}

#[test]
fn duration_out_of_range() {
    for d in ["0", "-1", "1e300", "86401", "nan", "x"] {
        let e = rejected(&["--scenario", "break", "--duration", d]);
        assert!(e.contains("--duration"), "{e}");
    }
}

#[test]
fn other_bad_arguments() {
    assert!(rejected(&[]).contains("--scenario"));
    assert!(rejected(&["--scenario", "break", "--bytes", "0"]).contains("--bytes"));
    assert!(rejected(&["--scenario", "break", "--interval", "0"]).contains("--interval"));
    assert!(rejected(&["--scenario", "break", "--workload", "x"]).contains("h3, stream, upload, video"));
    assert!(rejected(&["--scenario", "break", "--colour"]).contains("--colour"));
    assert!(rejected(&["--scenario", "no-such-scenario-xyz"]).contains("no-such-scenario-xyz"));
}

#[test]
fn json_lists_background_flows_after_the_flow_under_test() {
    let out = sim(&["--scenario", "shared-bottleneck", "--cc", "cubic", "--duration", "3", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let flows = v["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0]["background"], false);
    assert_eq!(flows[0]["cc"], "cubic");
    assert_eq!(flows[1]["background"], true);
    assert_eq!(flows[1]["cc"], "bbr");
    assert_eq!(flows[1]["scheduler"], "minrtt");
    let names = |f: &serde_json::Value| -> Vec<String> {
        f["paths"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(names(&flows[0]), ["a", "b"]);
    assert_eq!(names(&flows[1]), ["c"]);
    assert!(flows.iter().all(|f| f["goodput_bps"].as_f64().is_some_and(|g| g > 0.0)));
    let links: Vec<&str> =
        v["links"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(links, ["a", "b", "c", "bottleneck"]);
    // The text summary shows the background flow and the links too.
    let text = sim(&["--scenario", "shared-bottleneck", "--duration", "1"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("(background) [h3 / bbr / minrtt]") && text.contains("bottleneck"), "{text}");
}

/// The JSON-SEQ records of a qlog file.
fn qlog_records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split('\u{1e}')
        .filter(|r| !r.trim().is_empty())
        .map(|r| serde_json::from_str(r).expect("JSON"))
        .collect()
}

/// `--qlog-dir`: one file per endpoint of every flow (the background flow
/// too), the header first, then the engine's events in time order, stamped
/// in simulated time (a 2 s run's events reach past 1 s, however fast it ran).
#[test]
fn qlog_dir_writes_each_endpoint_in_simulated_time() {
    let dir = std::env::temp_dir().join(format!("mpquic-sim-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let out = sim(&["--scenario", "shared-bottleneck", "--duration", "2", "--qlog-dir", d]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (file, vantage) in [
        ("flow0_client", "client"),
        ("flow0_server", "server"),
        ("flow1_client", "client"),
        ("flow1_server", "server"),
    ] {
        let records = qlog_records(&dir.join(format!("{file}.sqlog")));
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ", "{file}");
        assert_eq!(records[0]["trace"]["vantage_point"]["type"], vantage, "{file}");
        assert!(records[0]["trace"]["common_fields"]["reference_time"].get("wall_clock_time").is_none());
        let times: Vec<f64> = records[1..].iter().map(|r| r["time"].as_f64().expect("time")).collect();
        assert!(times.len() > 100, "{file}: {} events", times.len());
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{file}: events out of time order");
        let last = times[times.len() - 1];
        assert!(last > 1000.0 && last <= 2000.0, "{file}: last event at {last} ms");
        let names = records[1..].iter().filter(|r| r["name"] == "quic:packet_received").count();
        assert!(names > 10, "{file}: {names} packets received");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unusable_qlog_dir_is_an_error() {
    let file = std::env::temp_dir().join(format!("mpquic-sim-qlog-file-{}", std::process::id()));
    std::fs::write(&file, b"not a directory").unwrap();
    let under = file.join("qlog");
    let e = rejected(&["--scenario", "break", "--duration", "1", "--qlog-dir", under.to_str().unwrap()]);
    assert!(e.contains("qlog directory") && e.contains(under.to_str().unwrap()), "{e}");
    let _ = std::fs::remove_file(&file);
}

/// The simulation's AEAD (the default) and AES-GCM (`--real-aead`) give the same
/// results to the byte: same packet sizes, same losses, same series. With a
/// 1% loss on both paths of testbed-2x100 for 4 s.
#[test]
fn real_aead_changes_no_result() {
    let dir = std::env::temp_dir().join(format!("mpquic-sim-aead-{}", std::process::id()));
    let run = |extra: &[&str], out: &str| {
        let out_dir = dir.join(out);
        let mut args = vec!["--scenario", "testbed-2x100-loss1", "--duration", "4", "--json", "--out"];
        let out_str = out_dir.to_str().unwrap().to_owned();
        args.push(&out_str);
        args.extend_from_slice(extra);
        let o = sim(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let read = |f: &str| std::fs::read(out_dir.join(f)).unwrap();
        (o.stdout, read("summary.json"), read("series.json"))
    };
    let fast = run(&[], "sim");
    let real = run(&["--real-aead"], "real");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fast.0.len() > 500, "{}", String::from_utf8_lossy(&fast.0));
    assert!(fast.0 == real.0, "JSON reports differ");
    assert!(fast.1 == real.1, "summary.json differs");
    assert!(fast.2 == real.2, "series.json differs");
}
