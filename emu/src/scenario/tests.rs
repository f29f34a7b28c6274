use super::*;
use crate::aqm::{CodelParams, PieParams};
use crate::queue::QueueKind;

/// The trace files the scenarios name, written once per test process: tests
/// run in parallel, and rewriting a file while another test reads it would
/// let that test see it empty.
fn dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("emu-scenario-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("c.up"), "1\n").unwrap();
        std::fs::write(d.join("c.down"), "1\n1\n").unwrap();
        std::fs::write(d.join("bad.down"), "1\n3\n2\n").unwrap();
        d
    })
    .clone()
}

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(&dir().join("s.toml"), text)
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = r#"
duration = 30.0
seed = 9
[[path]]
name = "a"
up = "c.up"
down = "c.down"
delay_ms = 20.0
loss_down = { model = "gilbert", p_good_to_bad = 0.01, p_bad_to_good = 0.5 }
queue = { kind = "droptail", packets = 50 }
[[path.schedule]]
param = "outage"
direction = "up"
start = 10.0
end = 12.0
[[path.schedule]]
param = "loss"
points = [[0.0, 0.0], [10.0, 0.05]]
[[path]]
name = "b"
up = "c.up"
down = "c.up"
"#;

#[test]
fn loads_valid_scenario() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.name, "s");
    assert_eq!(s.duration, Duration::from_secs(30));
    assert_eq!(s.paths.len(), 2);
    let a = &s.paths[0];
    assert_eq!(a.up.delay, Duration::from_millis(20));
    assert_eq!(a.up.loss, LossModel::None);
    assert!(matches!(a.down.loss, LossModel::GilbertElliott { loss_bad, .. } if loss_bad == 1.0));
    assert_eq!(a.up.queue.packets, Some(50));
    assert_eq!(a.up.outages.len(), 1);
    assert!(a.down.outages.is_empty());
    assert_eq!(a.down.loss_profiles.len(), 1);
    assert_eq!(a.down.trace.len(), 2);
    assert_ne!(a.up.seed, a.down.seed);
    assert_ne!(a.up.seed, s.paths[1].up.seed);
    // Traces are shared, not reloaded.
    assert!(Arc::ptr_eq(&s.paths[0].up.trace, &s.paths[1].down.trace));
    let links = s.build();
    assert_eq!(links[1].name, "b");
    let reseeded = parse(GOOD).unwrap().with_seed(10);
    assert_ne!(reseeded.paths[0].up.seed, a.up.seed);
}

#[test]
fn aqm_queues_in_scenarios() {
    let base = "duration = 10.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.down\"\n";
    let codel =
        parse(&format!("{base}queue = {{ kind = \"codel\", packets = 100, target = 5, interval = 100 }}\n"))
            .unwrap();
    let q = codel.paths[0].up.queue;
    assert_eq!(q.packets, Some(100));
    assert_eq!(
        q.kind,
        QueueKind::CoDel(CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            ecn: false
        })
    );
    let marking =
        parse(&format!("{base}queue = {{ kind = \"codel\", packets = 100, ecn = true }}\n")).unwrap();
    assert!(matches!(marking.paths[0].up.queue.kind, QueueKind::CoDel(p) if p.ecn));
    let pie = parse(&format!(
        "{base}queue = {{ kind = \"pie\", packets = 80, qdelay_ref = 20, max_burst = 100 }}\n"
    ))
    .unwrap();
    assert_eq!(
        pie.paths[0].down.queue.kind,
        QueueKind::Pie(PieParams {
            qdelay_ref: Duration::from_millis(20),
            max_burst: Duration::from_millis(100),
            ecn: false
        })
    );
}

#[test]
fn rejects_bad_scenarios() {
    let base = "duration = 10.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.down\"\n";
    assert!(err(&format!("{base}colour = 3\n")).contains("colour"));
    assert!(err(&format!("{base}delay_ms = -1.0\n")).contains("delay_ms must be in [0, 60000]"));
    assert!(
        err(&format!("{base}loss = {{ model = \"bernoulli\", p = 1.5 }}\n")).contains("p must be in [0, 1]")
    );
    assert!(err(&format!("{base}loss = {{ model = \"bernoulli\" }}\n")).contains("missing p"));
    assert!(err(&format!("{base}loss = {{ model = \"bernoulli\", p = 0.1, loss_bad = 0.2 }}\n"))
        .contains("loss_bad"));
    assert!(err(&format!("{base}queue = {{ kind = \"droptail\" }}\n")).contains("packets"));
    assert!(err(&format!("{base}queue = {{ kind = \"red\" }}\n")).contains("unknown queue"));
    assert!(err(&format!("{base}queue = {{ kind = \"codel\", target = 0 }}\n")).contains("target must be"));
    assert!(err(&format!("{base}queue = {{ kind = \"pie\", interval = 10 }}\n")).contains("CoDel arguments"));
    assert!(err(&format!("{base}queue = {{ kind = \"pie\", flows = 10 }}\n")).contains("flows"));
    assert!(err(&format!("{base}[[path.schedule]]\nparam = \"loss\"\npoints = [[0.0, 2.0]]\n"))
        .contains("out of range"));
    assert!(err(&format!("{base}[[path.schedule]]\nparam = \"jitter\"\npoints = [[0.0, 2.0]]\n"))
        .contains("unknown param"));
    assert!(err(&format!("{base}[[path.schedule]]\nparam = \"rate\"\npoints = [[5.0, 1.0], [1.0, 1.0]]\n"))
        .contains("non-decreasing"));
    assert!(err(&format!("{base}[[path.schedule]]\nparam = \"outage\"\nstart = 5.0\nend = 1.0\n"))
        .contains("start < end"));
    let missing = err("duration = 1.0\n[[path]]\nname = \"a\"\nup = \"nope.up\"\ndown = \"c.down\"\n");
    assert!(missing.contains("nope.up"), "{missing}");
    let bad = err("duration = 1.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"bad.down\"\n");
    assert!(bad.contains("bad.down:3:"), "{bad}");
    assert!(
        err("duration = 0.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.up\"\n").contains("duration")
    );
    assert!(err("duration = 1.0\n").contains("at least one"));
    assert!(
        err(&format!("{base}[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.up\"\n")).contains("duplicate")
    );
    assert!(err("duration = \"x\"\n").contains("duration"));
}

#[test]
fn find_reports_unknown_names() {
    let e = Scenario::find("no-such-scenario-xyz").unwrap_err();
    assert!(e.to_string().contains("no-such-scenario-xyz"));
}

const SHARED: &str = r#"
duration = 20.0
seed = 3
test_paths = ["a", "b"]
[[link]]
name = "neck"
up = "c.up"
down = "c.down"
delay_ms = 25.0
queue = { kind = "droptail", bytes = 625000 }
[[path]]
name = "a"
up = "c.up"
down = "c.up"
via = ["neck"]
[[path]]
name = "b"
up = "c.up"
down = "c.up"
delay_ms = 1.0
via = ["neck"]
[[path]]
name = "c"
up = "c.up"
down = "c.up"
via = ["neck"]
[[flow]]
paths = ["c"]
cc = "bbr"
[[flow]]
paths = ["c", "a"]
scheduler = "rr"
start = 2.5
bytes = 1000
"#;

#[test]
fn loads_links_flows_and_test_paths() {
    let s = parse(SHARED).unwrap();
    assert_eq!(s.links.len(), 1);
    assert_eq!(s.links[0].name, "neck");
    assert_eq!(s.links[0].down.delay, Duration::from_millis(25));
    assert_eq!(s.links[0].up.queue.bytes, Some(625_000));
    assert_eq!(s.paths[1].via, vec![0]);
    assert_eq!(s.test_paths, vec![0, 1]);
    assert_eq!(
        s.flows,
        vec![
            BackgroundFlow {
                paths: vec![2],
                cc: Some("bbr".into()),
                scheduler: "minrtt".into(),
                start: Duration::ZERO,
                bytes: None
            },
            BackgroundFlow {
                paths: vec![2, 0],
                cc: None,
                scheduler: "rr".into(),
                start: Duration::from_millis(2500),
                bytes: Some(1000)
            },
        ]
    );
    // Link seeds differ from every path's and follow the scenario seed.
    let path_seeds: Vec<u64> = s.paths.iter().flat_map(|p| [p.up.seed, p.down.seed]).collect();
    assert!(!path_seeds.contains(&s.links[0].up.seed));
    assert_ne!(s.links[0].up.seed, s.links[0].down.seed);
    let re = parse(SHARED).unwrap().with_seed(4);
    assert_ne!(re.links[0].up.seed, s.links[0].up.seed);
    let net = s.build_network();
    assert_eq!(net.links.len(), 4);
    assert_eq!(net.links[3].name, "neck");
    assert_eq!(net.routes[1], crate::link::Route { name: "b".into(), links: vec![1, 3] });
}

#[test]
fn scenarios_without_links_keep_their_defaults() {
    let s = parse(GOOD).unwrap();
    assert!(s.links.is_empty() && s.flows.is_empty());
    assert_eq!(s.test_paths, vec![0, 1]);
    let net = s.build_network();
    assert_eq!(net.routes.iter().map(|r| r.links.clone()).collect::<Vec<_>>(), vec![vec![0], vec![1]]);
}

#[test]
fn set_queue_overrides_a_link_or_path() {
    let mut s = parse(SHARED).unwrap();
    let q = QueueConfig { kind: QueueKind::DropTail, packets: None, bytes: Some(1_250_000) };
    s.set_queue("neck", q).unwrap();
    assert_eq!((s.links[0].up.queue, s.links[0].down.queue), (q, q));
    s.set_queue("b", q).unwrap();
    assert_eq!(s.paths[1].down.queue, q);
    assert!(s.set_queue("nope", q).unwrap_err().to_string().contains("nope"));
}

/// `SHARED` with `from` replaced by `to` (which must occur).
fn shared_with(from: &str, to: &str) -> String {
    assert!(SHARED.contains(from), "{from}");
    SHARED.replacen(from, to, 1)
}

#[test]
fn rejects_bad_topologies() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "via = [\"neck\"]\n[[path]]\nname = \"b\"",
            "via = [\"nek\"]\n[[path]]\nname = \"b\"",
            "unknown link \"nek\" (links: neck)",
        ),
        (
            "via = [\"neck\"]\n[[path]]\nname = \"b\"",
            "via = [\"neck\", \"neck\"]\n[[path]]\nname = \"b\"",
            "twice",
        ),
        ("paths = [\"c\"]\ncc", "paths = [\"x\"]\ncc", "flow 1: paths: unknown path \"x\" (paths: a, b, c)"),
        ("paths = [\"c\"]\ncc", "paths = []\ncc", "paths must not be empty"),
        ("test_paths = [\"a\", \"b\"]", "test_paths = [\"a\", \"z\"]", "test_paths: unknown path \"z\""),
        ("test_paths = [\"a\", \"b\"]", "test_paths = []", "test_paths: paths must not be empty"),
        ("test_paths = [\"a\", \"b\"]", "test_paths = [\"a\"]", "path \"b\": used by no flow"),
        ("start = 2.5", "start = -1.0", "start must be in [0, 86400]"),
        ("start = 2.5", "start = nan", "start must be in [0, 86400], got NaN"),
        ("start = 2.5", "start = 1e300", "start must be in [0, 86400]"),
        ("bytes = 1000", "bytes = 0", "bytes must be in [1, "),
        ("cc = \"bbr\"", "cc = \"\"", "cc must not be empty"),
        ("name = \"neck\"\nup", "name = \"a\"\nup", "duplicate name"),
        ("[[flow]]\npaths = [\"c\"]", "[[flow]]\ncolour = 1\npaths = [\"c\"]", "colour"),
        ("delay_ms = 25.0", "delay_ms = 1e300", "link \"neck\": delay_ms must be in [0, 60000], got 1e300"),
        ("delay_ms = 25.0", "delay_ms = 25.0\nvia = [\"neck\"]", "via only applies to a [[path]]"),
        ("duration = 20.0", "duration = 1e300", "duration must be in ["),
        ("duration = 20.0", "duration = inf", "duration must be in ["),
        ("bytes = 625000", "bytes = 10000000000000000", "bytes must be at most"),
    ];
    for (from, to, want) in cases {
        let e = err(&shared_with(from, to));
        assert!(e.contains(want), "{to}: {e}");
    }
    // A link no path crosses.
    let unused = format!("{SHARED}[[link]]\nname = \"spare\"\nup = \"c.up\"\ndown = \"c.up\"\n");
    assert!(err(&unused).contains("link \"spare\": used by no path"));
}

#[test]
fn rejects_huge_schedule_values() {
    let base = "duration = 10.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.down\"\n";
    for (sched, want) in [
        ("param = \"outage\"\nstart = 1e300\n", "start must be in [0, 86400]"),
        ("param = \"outage\"\nstart = 1.0\nend = 1e20\n", "end must be in [0, 86400]"),
        ("param = \"delay_ms\"\npoints = [[0.0, 1e300]]\n", "out of range"),
        ("param = \"rate\"\npoints = [[1e300, 1.0]]\n", "point times must be in [0, 86400]"),
    ] {
        let e = err(&format!("{base}[[path.schedule]]\n{sched}"));
        assert!(e.contains(want), "{sched}: {e}");
    }
}

#[test]
fn impairments_apply_to_both_directions_and_are_checked() {
    let base = "duration = 10.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.down\"\n";
    let s =
        parse(&format!("{base}impair = {{ reorder = 0.02, reorder_ms = 8.0, duplicate = 0.01 }}\n")).unwrap();
    for cfg in [&s.paths[0].up, &s.paths[0].down] {
        assert_eq!(cfg.impair.reorder, 0.02);
        assert_eq!(cfg.impair.reorder_delay, Duration::from_millis(8));
        assert_eq!(cfg.impair.duplicate, 0.01);
        assert_eq!(cfg.impair.corrupt, 0.0);
    }
    assert!(parse(base).unwrap().paths[0].up.impair.is_none());
    assert!(err(&format!("{base}impair = {{ corrupt = 2.0 }}\n")).contains("corrupt must be a probability"));
    assert!(err(&format!("{base}impair = {{ reorder_ms = 1e300 }}\n")).contains("reorder_ms must be in"));
    assert!(err(&format!("{base}impair = {{ jitter = 1.0 }}\n")).contains("jitter"));
}

#[test]
fn path_mtus_and_their_schedules() {
    let base = "duration = 10.0\n[[path]]\nname = \"a\"\nup = \"c.up\"\ndown = \"c.down\"\n";
    let s = parse(&format!("{base}mtu = 1400\n")).unwrap();
    assert_eq!(s.paths[0].up.mtu, [(Duration::ZERO, 1400)]);
    assert_eq!(s.paths[0].down.mtu, [(Duration::ZERO, 1400)]);
    let sched =
        "[[path.schedule]]\nparam = \"mtu\"\ndirection = \"down\"\npoints = [[0.0, 1500.0], [3.0, 1300.0]]\n";
    let s = parse(&format!("{base}{sched}")).unwrap();
    assert!(s.paths[0].up.mtu.is_empty());
    assert_eq!(s.paths[0].down.mtu, [(Duration::ZERO, 1500), (Duration::from_secs(3), 1300)]);
    assert!(err(&format!("{base}mtu = 40\n")).contains("mtu must be a whole number of bytes in [68, 65535]"));
    let fractional = sched.replace("1300.0", "1300.5");
    assert!(err(&format!("{base}{fractional}")).contains("mtu must be a whole number"));
    let linear = sched.replace("direction", "interp = \"linear\"\ndirection");
    assert!(err(&format!("{base}{linear}")).contains("step function"));
}
