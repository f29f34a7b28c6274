//! The video workload (seed 002): a 5.24 Mbit/s stream whose pictures are due at
//! fixed playout times. Run with `--release`.

use std::time::Duration;

use sim::net::PathParams;
use sim::{video, FlowSpec, Report, Sim, SimConfig, Workload};

fn one_path(mbit: u32, secs: u64) -> Report {
    let p = PathParams::new("p", mbit, Duration::from_millis(20));
    let mut cfg = SimConfig::new("video", 1, Duration::from_secs(secs));
    cfg.flows = vec![FlowSpec::new(vec![0]).workload(Workload::Video)];
    Sim::new(vec![p.build(1).unwrap()], cfg).unwrap().run(&mut |_, _| {})
}

#[test]
fn a_fast_path_plays_every_picture_in_time() {
    let r = one_path(20, 200);
    let f = &r.flows[0];
    let v = f.video.expect("video stats");
    assert_eq!(f.error, None);
    assert_eq!(f.body_mismatches, 0);
    assert_eq!(f.app_bytes, video::BYTES);
    // The stream lasts its 3 minutes: it cannot end before its last picture is made.
    let done = f.completion.expect("stream finished");
    assert!(done >= Duration::from_secs(video::LENGTH_S - 1), "{done:?}");
    assert_eq!((v.frames, v.played, v.discarded, v.underflows), (video::FRAMES, video::FRAMES, 0, 0));
}

#[test]
fn a_path_slower_than_the_video_runs_dry_and_discards() {
    // 4 Mbit/s against 5.24: pictures fall further and further behind.
    let r = one_path(4, 60);
    let v = r.flows[0].video.expect("video stats");
    assert!(v.discarded > 500, "{v:?}");
    assert!(v.underflows >= 1 && v.underflows <= v.discarded, "{v:?}");
    assert!(v.played + v.discarded < v.frames, "pictures not yet due are not counted: {v:?}");
}

#[test]
fn other_workloads_have_no_video_stats() {
    let p = PathParams::new("p", 20, Duration::from_millis(20));
    let mut cfg = SimConfig::new("h3", 1, Duration::from_secs(5));
    cfg.flows = vec![FlowSpec::new(vec![0]).bytes(1_000_000)];
    let r = Sim::new(vec![p.build(1).unwrap()], cfg).unwrap().run(&mut |_, _| {});
    assert_eq!(r.flows[0].video, None);
}
