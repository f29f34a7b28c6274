//! Shared-bottleneck detection end to end: randomized 2- and 3-path networks
//! where some paths cross one link and others their own, with random rates,
//! delays, random loss and background traffic. After 5 s the sender's groups
//! (`PathStats::group`) must say which paths share a link.

use std::time::Duration;

use sim::net::PathParams;
use sim::{FlowSpec, Sim, SimConfig};

/// The engine's splitmix64, with ranges.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        mpquic::cc::splitmix64(&mut self.0)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Trial {
    /// Link of each flow path.
    route: Vec<usize>,
    links: Vec<PathParams>,
    background: Option<&'static str>,
}

fn trial(seed: u64) -> Trial {
    let mut rng = Rng(seed);
    let n_paths = rng.range(2, 3) as usize;
    // Path 0 has link 0; each later path shares it with probability 1/2.
    let mut route = vec![0];
    let mut links = Vec::new();
    for k in 0..n_paths {
        if k > 0 && rng.unit() < 0.5 {
            route.push(0);
            continue;
        }
        let mbps = rng.range(5, 100) as u32;
        let delay = Duration::from_millis(rng.range(5, 100));
        let mut p = PathParams::new(&format!("l{}", links.len()), mbps, delay);
        p.loss = rng.unit() * 0.02;
        route.push(links.len());
        links.push(p);
    }
    route.remove(0);
    let background = match rng.range(0, 2) {
        0 => None,
        1 => Some("cubic"),
        _ => Some("bbr"),
    };
    Trial { route, links, background }
}

/// Runs `seed`'s network for 5 s, the flow under test reading one-way delays
/// from the peer's `timestamps` or else from RTT samples; returns (paths
/// that share a link and were grouped, pairs in all, pairs wrongly called
/// shared, pairs wrongly split).
fn judge(seed: u64, timestamps: bool) -> (bool, usize, usize, usize) {
    let t = trial(seed);
    let built = t.links.iter().enumerate().map(|(i, p)| p.build(seed * 7 + i as u64).unwrap()).collect();
    let mut cfg = SimConfig::new("sbd", t.links.len(), Duration::from_secs(5));
    cfg.seed = seed;
    cfg.flows = vec![FlowSpec::new(t.route.clone()).cc("coupled-bbr").timestamps(timestamps)];
    if let Some(cc) = t.background {
        cfg.flows.push(FlowSpec::new(vec![0]).cc(cc));
    }
    let r = Sim::new(built, cfg).unwrap().run(&mut |_, _| {});
    let f = &r.flows[0];
    assert!(f.multipath && f.error.is_none(), "seed {seed}: {:?}", f.error);
    let (mut pairs, mut false_shared, mut false_split) = (0, 0, 0);
    for a in 0..t.route.len() {
        for b in a + 1..t.route.len() {
            pairs += 1;
            let truth = t.route[a] == t.route[b];
            let said = f.paths[a].group == f.paths[b].group;
            false_shared += usize::from(said && !truth);
            false_split += usize::from(truth && !said);
        }
    }
    (false_shared + false_split == 0, pairs, false_shared, false_split)
}

/// The 100 trials (seeds 1-100, or `MPQUIC_SBD_FIRST_SEED` and the 99
/// after it): (networks grouped right, path pairs, wrongly shared, wrongly
/// split), each miss printed with its seed.
fn trials(timestamps: bool) -> (usize, usize, usize, usize) {
    let first = std::env::var("MPQUIC_SBD_FIRST_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let (mut right, mut pairs, mut fs, mut fsplit) = (0, 0, 0, 0);
    for seed in first..first + 100 {
        let (ok, p, a, b) = judge(seed, timestamps);
        if !ok {
            let t = trial(seed);
            println!(
                "seed {seed}: route {:?}, links {:?}, background {:?}: wrongly shared {a}, wrongly split {b}",
                t.route,
                t.links
                    .iter()
                    .map(|l| (l.mbps, l.delay.as_millis(), (l.loss * 1e3).round() / 1e3))
                    .collect::<Vec<_>>(),
                t.background
            );
        }
        right += usize::from(ok);
        pairs += p;
        fs += a;
        fsplit += b;
    }
    let source = if timestamps { "timestamps" } else { "RTT samples" };
    println!("SBD from {source} over 100 randomized networks at 5 s: {right} grouped right; of {pairs} path pairs {fs} wrongly shared, {fsplit} wrongly split");
    (right, pairs, fs, fsplit)
}

/// At 5 s, at least 95 of the 100 networks are grouped right and at most
/// 5% of path pairs wrongly called shared (coupling paths that share
/// nothing is the costly mistake: their total would shrink towards one
/// flow's share), reading the peer's timestamps: one-way delays, which do
/// not carry the return path's queues as RTT samples do.
#[test]
fn groups_are_right_within_five_seconds_in_randomized_networks() {
    let (right, pairs, fs, _) = trials(true);
    assert!(right >= 95, "{right} of 100 right");
    assert!(fs as f64 <= 0.05 * pairs as f64, "{fs} of {pairs} pairs wrongly shared");
}

/// The same from RTT samples: what a sender has with peers that do not send
/// timestamps (noq, quiche).
#[test]
fn groups_are_right_within_five_seconds_from_rtt_samples() {
    let (right, pairs, fs, _) = trials(false);
    assert!(right >= 95, "{right} of 100 right");
    assert!(fs as f64 <= 0.05 * pairs as f64, "{fs} of {pairs} pairs wrongly shared");
}
