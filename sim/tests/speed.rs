//! The simulator's speed target (issue 13): `mpquic-sim --bench`, 60 s of
//! an HTTP/3 download over two 100 Mbit/s paths, at least 60 times faster
//! than real time. A speed figure, so it is run by hand, never in CI.

use std::process::Command;

#[test]
#[ignore = "a speed figure, run by hand: missed. 2.20-2.37 s wall for the 60 s (25-27x real time) on an \
            idle 2-core machine with AES-GCM (650-690 MB/s through both ends of the connection); the \
            simulation's AEAD (the default since; --real-aead turns it off) measured 3.86 s median \
            (15.5x) against 4.64 s (12.9x) with --real-aead in one busy sitting (load 4.5-5, 5 alternating \
            runs), 27% fewer instructions (3.25 G against 4.44 G for --duration 10). 60x is 1.5 GB/s, \
            HTTP/3, two paths, pacing, Cubic's losses and the link model included, where pairbench's two \
            bare engines on one lossless path do 970-1050 MB/s; callgrind: the engine's send 43% and \
            receive 32% (the AEAD's checksum 7.8%), the link model 8.7%, the simulator's own loop 1.5%"]
fn bench_runs_sixty_times_faster_than_real_time() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_mpquic-sim")).arg("--bench").output().expect("mpquic-sim runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("bench:")).expect("a bench line");
    // "bench: 60.0 s simulated in 2.53 s wall (451714 datagrams/s)"
    let words: Vec<&str> = line.split_whitespace().collect();
    let (sim_s, wall_s): (f64, f64) =
        (words[1].parse().expect("simulated s"), words[5].parse().expect("wall s"));
    println!("{line}: {:.1}x real time", sim_s / wall_s);
    assert!(sim_s / wall_s >= 60.0, "{:.1}x real time", sim_s / wall_s);
}
