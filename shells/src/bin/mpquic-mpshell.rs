//! `mpquic-mpshell (--path name,up.trace,down.trace,delay_ms[,loss])... [-- command...]`
//! or `mpquic-mpshell --scenario FILE_OR_NAME [--seed N] [-- command...]`: one namespace
//! with one interface per path, each behind its own emulated link, and source-address
//! routing so a socket bound to `MPSHELL_ADDR_i` uses path i.
//!
//! `--backend mahimahi` (or `auto` with `mm-link` on `PATH`) runs each path in its own
//! Mahimahi shell chain instead, and the command opens path i's socket in namespace
//! `MPSHELL_NETNS_i` (see `shells::mahimahi`).

use std::sync::Arc;

use emu::link::{Link, LinkConfig};
use emu::loss::LossModel;
use emu::scenario::Scenario;
use emu::Trace;
use shells::args::{parse_mpshell, PathSource};
use shells::mahimahi::{self, Backend};
use shells::shell::{loss_seed, main_with, PathStages, ShellConfig};

const USAGE: &str =
    "Usage: mpquic-mpshell --path NAME,UP_TRACE,DOWN_TRACE,DELAY_MS[,LOSS] [--path ...] [--seed N]
                      [--backend builtin|mahimahi|auto] [-- command...]
       mpquic-mpshell --scenario FILE_OR_NAME [--seed N] [-- command...]";

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("mpquic-mpshell: {msg}");
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Internal: this binary running inside a path's Mahimahi shells.
    if args.first().map(String::as_str) == Some("--mahimahi-holder") {
        std::process::exit(mahimahi::holder_main(&args[1..]));
    }
    let a = match parse_mpshell(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mpquic-mpshell: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let use_mahimahi = match a.backend {
        Backend::Mahimahi => true,
        Backend::Builtin => false,
        Backend::Auto => {
            matches!(a.source, PathSource::Paths(_)) && a.seed.is_none() && mahimahi::available()
        }
    };
    if use_mahimahi {
        let PathSource::Paths(paths) = &a.source else {
            fail("--backend mahimahi needs --path specs");
        };
        match mahimahi::run(paths, &a.command, true) {
            Ok(code) => std::process::exit(code),
            Err(e) => fail(e),
        }
    }
    let seed = a.seed.unwrap_or_else(loss_seed);
    let (names, configs): (Vec<String>, Vec<(LinkConfig, LinkConfig)>) = match a.source {
        PathSource::Scenario(s) => {
            let sc = Scenario::find(&s).unwrap_or_else(|e| fail(e));
            let sc = if a.seed.is_some() { sc.with_seed(seed) } else { sc };
            sc.paths.into_iter().map(|p| (p.name, (p.up, p.down))).unzip()
        }
        PathSource::Paths(paths) => paths
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let make = |file: &std::path::Path, k: u64| {
                    let trace = Trace::load(file).unwrap_or_else(|e| fail(e));
                    let mut c = LinkConfig::new(Arc::new(trace));
                    c.delay = p.delay;
                    if p.loss > 0.0 {
                        c.loss = LossModel::Bernoulli { p: p.loss };
                    }
                    c.seed = seed ^ (2 * i as u64 + k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    c
                };
                let up = make(&p.up, 0);
                let down = make(&p.down, 1);
                (p.name, (up, down))
            })
            .unzip(),
    };
    let paths = configs
        .iter()
        .map(|(up, down)| PathStages { up: Box::new(Link::new(up)), down: Box::new(Link::new(down)) })
        .collect();
    let cfg = ShellConfig { kind: "mp", paths, stop_after: None, command: a.command, announce: true, names };
    std::process::exit(main_with("mpquic-mpshell", cfg));
}
