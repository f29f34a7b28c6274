//! The detector on synthetic one-way-delay series: a queue that several paths
//! see (shared), queues of their own (independent), uncongested paths.

use super::*;

#[allow(clippy::disallowed_methods)]
fn base() -> Instant {
    Instant::now()
}

/// Uniform in [0, 1), from the controllers' splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        (crate::cc::splitmix64(&mut self.0) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A bottleneck queue in ms over time: a sawtooth (a loss-based flow) with a
/// random period, plus random bursts, sampled every millisecond.
fn queue(rng: &mut Rng, ms: usize) -> Vec<f64> {
    let mut q = Vec::with_capacity(ms);
    let mut level: f64 = 0.0;
    let slope = 0.02 + rng.next() * 0.05;
    let cap = 20.0 + rng.next() * 40.0;
    for _ in 0..ms {
        level += slope + (rng.next() - 0.5) * 0.3;
        if level > cap {
            level = cap * (0.3 + rng.next() * 0.4);
        }
        level = level.max(0.0);
        q.push(level);
    }
    q
}

/// Feed `paths` for `ms` milliseconds: path i samples `series[i]` (plus its
/// base delay and noise) every `every[i]` ms, `lag[i]` ms late.
fn feed(
    sbd: &mut Sbd,
    t0: Instant,
    series: &[(PathId, f64, &[f64], usize, usize)],
    ms: usize,
    rng: &mut Rng,
) {
    for t in 0..ms {
        for &(id, base_ms, q, every, lag) in series {
            if t % every == 0 && t >= lag {
                let v = base_ms + q[t - lag] + rng.next() * 0.2;
                sbd.on_sample(id, t0 + Duration::from_millis(t as u64), v);
            }
        }
    }
}

#[test]
fn paths_behind_one_queue_are_grouped_within_five_seconds() {
    let mut rng = Rng(1);
    let q = queue(&mut rng, 5000);
    let mut sbd = Sbd::default();
    let (a, b) = (PathId(0), PathId(1));
    feed(&mut sbd, base(), &[(a, 20.0, &q, 2, 0), (b, 60.0, &q, 3, 40)], 5000, &mut rng);
    assert!(sbd.summary(a).unwrap().bottlenecked, "{:?}", sbd.summary(a));
    assert_eq!(sbd.group(a), 0);
    assert_eq!(sbd.group(b), 0, "{:?} {:?}", sbd.summary(a), sbd.summary(b));
}

#[test]
fn paths_behind_queues_of_their_own_stay_apart() {
    for seed in 0..20 {
        let mut rng = Rng(100 + seed);
        let (qa, qb) = (queue(&mut rng, 8000), queue(&mut rng, 8000));
        let mut sbd = Sbd::default();
        let (a, b) = (PathId(0), PathId(1));
        feed(&mut sbd, base(), &[(a, 20.0, &qa, 2, 0), (b, 40.0, &qb, 2, 0)], 8000, &mut rng);
        assert!(sbd.summary(a).unwrap().bottlenecked && sbd.summary(b).unwrap().bottlenecked);
        assert_eq!((sbd.group(a), sbd.group(b)), (0, 1), "seed {seed}");
    }
}

#[test]
fn uncongested_paths_are_not_bottlenecked() {
    let mut rng = Rng(7);
    // No queue: the delay is its base plus sub-millisecond noise.
    let q = vec![0.0; 6000];
    let mut sbd = Sbd::default();
    let (a, b) = (PathId(2), PathId(5));
    feed(&mut sbd, base(), &[(a, 10.0, &q, 1, 0), (b, 10.0, &q, 1, 0)], 6000, &mut rng);
    let s = sbd.summary(a).unwrap();
    assert!(!s.bottlenecked && s.intervals == 50, "{s:?}");
    assert_eq!((sbd.group(a), sbd.group(b)), (2, 5));
}

/// A BBR-controlled queue: drained most of the time, a spike while a flow
/// probes (right-skewed, which RFC 8382's skewness test would reject).
#[test]
fn a_probing_queue_is_grouped() {
    let mut rng = Rng(11);
    let q: Vec<f64> = (0..6000).map(|t| if t % 400 < 50 { 12.0 } else { 1.0 }).collect();
    let mut sbd = Sbd::default();
    let (a, b) = (PathId(0), PathId(1));
    feed(&mut sbd, base(), &[(a, 10.0, &q, 1, 0), (b, 30.0, &q, 2, 10)], 6000, &mut rng);
    let s = sbd.summary(a).unwrap();
    assert!(s.bottlenecked && s.skew > 0.3, "{s:?}");
    assert_eq!((sbd.group(a), sbd.group(b)), (0, 0));
}

#[test]
fn two_share_and_one_is_disjoint() {
    let mut rng = Rng(3);
    let (q, other) = (queue(&mut rng, 6000), queue(&mut rng, 6000));
    let mut sbd = Sbd::default();
    let (a, b, c) = (PathId(1), PathId(2), PathId(3));
    feed(
        &mut sbd,
        base(),
        &[(a, 20.0, &q, 2, 0), (b, 35.0, &q, 2, 20), (c, 15.0, &other, 2, 0)],
        6000,
        &mut rng,
    );
    assert_eq!([sbd.group(a), sbd.group(b), sbd.group(c)], [1, 1, 3]);
    sbd.remove_path(a);
    assert_eq!([sbd.group(b), sbd.group(c)], [2, 3]);
}

#[test]
fn not_judged_before_enough_intervals() {
    let mut rng = Rng(9);
    let q = queue(&mut rng, 1500);
    let mut sbd = Sbd::default();
    feed(&mut sbd, base(), &[(PathId(0), 20.0, &q, 2, 0), (PathId(1), 20.0, &q, 2, 0)], 1500, &mut rng);
    assert_eq!(sbd.group(PathId(1)), 1, "1.5 s is less than the 2 s needed");
    assert_eq!(sbd.group(PathId(9)), 9, "paths without samples are alone");
}

#[test]
fn silence_and_extreme_samples_do_not_panic() {
    let mut sbd = Sbd::default();
    let t0 = base();
    sbd.on_sample(PathId(0), t0, 0.0);
    sbd.on_sample(PathId(0), t0 + Duration::from_secs(3600 * 24), -1e300);
    sbd.on_sample(PathId(1), t0 + Duration::from_secs(3600 * 24 + 1), f64::MAX);
    sbd.on_sample(PathId(1), t0 + Duration::from_secs(3600 * 24 + 1), f64::NAN);
    assert_eq!(sbd.group(PathId(1)), 1, "neither judged");
    assert_eq!(crossings([0.0, 5.0, 2.0, 0.0, 5.0].into_iter(), 2.5, 1.0), 3);
}

/// One path sees the shared queue 0-80 ms after the other (its ACKs come
/// back later), sampled at other rates: grouped at every lag, half-interval
/// offsets included (with whole-interval lags only, at ρ ≥ 0.7: 4 of 10 at 50 ms).
#[test]
fn lagged_views_of_one_queue_are_grouped() {
    for lag in [0, 20, 50, 80] {
        let mut grouped = 0;
        for seed in 0..10 {
            let mut rng = Rng(1 + seed);
            let q = queue(&mut rng, 5000);
            let mut sbd = Sbd::default();
            feed(
                &mut sbd,
                base(),
                &[(PathId(0), 20.0, &q, 2, 0), (PathId(1), 60.0, &q, 3, lag)],
                5000,
                &mut rng,
            );
            grouped += usize::from(sbd.group(PathId(1)) == 0);
        }
        assert!(grouped >= 9, "lag {lag} ms: {grouped} of 10 grouped");
    }
}

/// Paths judged shared stay one group while their queue is drained (no
/// variation to judge by), and split once each shows a queue of its own.
#[test]
fn a_group_outlasts_a_quiet_queue_but_not_queues_of_their_own() {
    let mut rng = Rng(21);
    let (a, b) = (PathId(0), PathId(1));
    let mut sbd = Sbd::default();
    let t0 = base();
    let q = queue(&mut rng, 5000);
    feed(&mut sbd, t0, &[(a, 20.0, &q, 2, 0), (b, 40.0, &q, 2, 10)], 5000, &mut rng);
    assert_eq!((sbd.group(a), sbd.group(b)), (0, 0));
    let quiet = vec![0.0; 8000];
    let t1 = t0 + Duration::from_millis(5000);
    feed(&mut sbd, t1, &[(a, 20.0, &quiet, 2, 0), (b, 40.0, &quiet, 2, 0)], 8000, &mut rng);
    assert!(!sbd.summary(a).unwrap().bottlenecked, "{:?}", sbd.summary(a));
    assert_eq!((sbd.group(a), sbd.group(b)), (0, 0), "a quiet window is no evidence of a split");
    let (qa, qb) = (queue(&mut rng, 8000), queue(&mut rng, 8000));
    let t2 = t1 + Duration::from_millis(8000);
    feed(&mut sbd, t2, &[(a, 20.0, &qa, 2, 0), (b, 40.0, &qb, 2, 0)], 8000, &mut rng);
    assert_eq!((sbd.group(a), sbd.group(b)), (0, 1));
}
