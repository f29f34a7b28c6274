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
