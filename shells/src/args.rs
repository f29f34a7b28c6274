//! Command-line parsing for the shells, with Mahimahi's syntax. Pure functions, so the
//! syntax is unit-tested without root.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use emu::queue::{QueueArgs, QueueConfig};

use crate::mahimahi::Backend;

/// A usage error: the message to print before the usage text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Drops one leading `--` (accepted for convenience before a command).
fn command_tail(rest: &[String]) -> Vec<String> {
    match rest.split_first() {
        Some((first, tail)) if first == "--" => tail.to_vec(),
        _ => rest.to_vec(),
    }
}

/// `mm-delay DELAY_MS [command...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayArgs {
    /// One-way delay applied in each direction.
    pub delay: Duration,
    /// Command to run (empty: the user's `$SHELL`).
    pub command: Vec<String>,
}

/// Parses `mm-delay` arguments (without the program name).
pub fn parse_delay(args: &[String]) -> Result<DelayArgs, UsageError> {
    let (first, rest) = args.split_first().ok_or_else(|| usage("missing delay"))?;
    let ms: u64 = first
        .parse()
        .map_err(|_| usage(format!("delay must be a whole number of milliseconds: {first:?}")))?;
    Ok(DelayArgs { delay: Duration::from_millis(ms), command: command_tail(rest) })
}

/// Which direction `mm-loss` drops packets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From inside the shell towards the outside.
    Uplink,
    /// From the outside into the shell.
    Downlink,
}

/// `mm-loss uplink|downlink RATE [command...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LossArgs {
    /// Direction that loses packets (the other is untouched).
    pub direction: Direction,
    /// Independent loss probability in [0, 1].
    pub rate: f64,
    /// Command to run (empty: the user's `$SHELL`).
    pub command: Vec<String>,
}

fn parse_probability(s: &str) -> Result<f64, UsageError> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(usage(format!("loss rate must be a number in [0, 1]: {s:?}"))),
    }
}

/// Parses `mm-loss` arguments (without the program name).
pub fn parse_loss(args: &[String]) -> Result<LossArgs, UsageError> {
    let [dir, rate, rest @ ..] = args else {
        return Err(usage("missing direction or rate"));
    };
    let direction = match dir.as_str() {
        "uplink" => Direction::Uplink,
        "downlink" => Direction::Downlink,
        other => return Err(usage(format!("direction must be \"uplink\" or \"downlink\": {other:?}"))),
    };
    Ok(LossArgs { direction, rate: parse_probability(rate)?, command: command_tail(rest) })
}

/// `mm-link UPLINK_TRACE DOWNLINK_TRACE [OPTION]... [command...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkArgs {
    /// Uplink (inside -> outside) trace file.
    pub uplink_trace: PathBuf,
    /// Downlink (outside -> inside) trace file.
    pub downlink_trace: PathBuf,
    /// Uplink queue.
    pub uplink_queue: QueueConfig,
    /// Downlink queue.
    pub downlink_queue: QueueConfig,
    /// Play the traces once, then end the shell (`--once`).
    pub once: bool,
    /// Command to run (empty: the user's `$SHELL`).
    pub command: Vec<String>,
}

/// Applies Mahimahi queue arguments `NAME=NUMBER[, NAME2=NUMBER2 ...]` to `args`
/// (`packets`, `bytes`; CoDel `target`, `interval`; PIE `qdelay_ref`, `max_burst`, in ms).
pub fn parse_queue_args(s: &str, args: &mut QueueArgs) -> Result<(), UsageError> {
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| usage(format!("queue argument is not NAME=NUMBER: {item:?}")))?;
        let n: u64 = value
            .trim()
            .parse()
            .map_err(|_| usage(format!("queue argument value is not a number: {item:?}")))?;
        args.set(name.trim(), n).map_err(usage)?;
    }
    Ok(())
}

/// The queue of discipline `kind` (`infinite`, `droptail`, `drophead`, `codel`, `pie`)
/// with its arguments, for direction `dir` (`uplink`/`downlink`, for messages).
pub fn build_queue(kind: &str, args: &QueueArgs, dir: &str) -> Result<QueueConfig, UsageError> {
    args.build(kind).map_err(|e| usage(format!("--{dir}-queue={kind}: {e}")))
}

/// Parses `mm-link` arguments (without the program name). Options may come before,
/// between or after the two traces; `--` or the first word after the traces starts the
/// command.
pub fn parse_link(args: &[String]) -> Result<LinkArgs, UsageError> {
    let mut traces = Vec::new();
    let mut once = false;
    let (mut up_kind, mut down_kind) = ("infinite".to_string(), "infinite".to_string());
    let (mut up_q, mut down_q) = (QueueArgs::default(), QueueArgs::default());
    let mut command = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            command = args.get(i..).unwrap_or_default().to_vec();
            break;
        }
        if let Some(opt) = arg.strip_prefix("--") {
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (opt, None),
            };
            let need = || value.ok_or_else(|| usage(format!("--{name} needs =VALUE")));
            match name {
                "once" if value.is_none() => once = true,
                "uplink-queue" => up_kind = need()?.to_string(),
                "downlink-queue" => down_kind = need()?.to_string(),
                "uplink-queue-args" => parse_queue_args(need()?, &mut up_q)?,
                "downlink-queue-args" => parse_queue_args(need()?, &mut down_q)?,
                n if n.starts_with("meter") || n.ends_with("-log") => {
                    return Err(usage(format!("--{n} is not supported here")))
                }
                _ => return Err(usage(format!("unknown option {arg:?}"))),
            }
            continue;
        }
        if traces.len() < 2 {
            traces.push(PathBuf::from(arg));
        } else {
            command = args.get(i - 1..).unwrap_or_default().to_vec();
            break;
        }
    }
    let [up, down] =
        <[PathBuf; 2]>::try_from(traces).map_err(|_| usage("need an uplink and a downlink trace"))?;
    Ok(LinkArgs {
        uplink_trace: up,
        downlink_trace: down,
        uplink_queue: build_queue(&up_kind, &up_q, "uplink")?,
        downlink_queue: build_queue(&down_kind, &down_q, "downlink")?,
        once,
        command,
    })
}

/// One `--path name,up.trace,down.trace,delay_ms[,loss]` of `mpquic-mpshell`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathArg {
    /// Path name.
    pub name: String,
    /// Uplink trace file.
    pub up: PathBuf,
    /// Downlink trace file.
    pub down: PathBuf,
    /// One-way delay, each direction.
    pub delay: Duration,
    /// Independent loss probability, each direction.
    pub loss: f64,
}

/// Where `mpquic-mpshell` gets its paths from.
#[derive(Debug, Clone, PartialEq)]
pub enum PathSource {
    /// Explicit `--path` arguments.
    Paths(Vec<PathArg>),
    /// A scenario file or name (`--scenario`).
    Scenario(String),
}

/// `mpquic-mpshell (--path SPEC)... | --scenario FILE [--seed N] [-- command...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MpShellArgs {
    /// The paths.
    pub source: PathSource,
    /// Seed for the loss RNGs (default: random).
    pub seed: Option<u64>,
    /// Which emulation runs the paths (`--backend`).
    pub backend: Backend,
    /// Command to run (empty: the user's `$SHELL`).
    pub command: Vec<String>,
}

/// Parses one `--path` value.
pub fn parse_path_spec(s: &str) -> Result<PathArg, UsageError> {
    let fields: Vec<&str> = s.split(',').map(str::trim).collect();
    let (name, up, down, delay, loss) = match fields.as_slice() {
        [n, u, d, ms] => (*n, *u, *d, *ms, None),
        [n, u, d, ms, l] => (*n, *u, *d, *ms, Some(*l)),
        _ => return Err(usage(format!("--path wants name,up.trace,down.trace,delay_ms[,loss]: {s:?}"))),
    };
    if name.is_empty() {
        return Err(usage("--path: empty name"));
    }
    let delay_ms: f64 = match delay.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => v,
        _ => return Err(usage(format!("--path: bad delay_ms {delay:?}"))),
    };
    Ok(PathArg {
        name: name.to_string(),
        up: PathBuf::from(up),
        down: PathBuf::from(down),
        delay: Duration::from_secs_f64(delay_ms / 1000.0),
        loss: loss.map(parse_probability).transpose()?.unwrap_or(0.0),
    })
}

/// Parses `mpquic-mpshell` arguments (without the program name).
pub fn parse_mpshell(args: &[String]) -> Result<MpShellArgs, UsageError> {
    let mut paths = Vec::new();
    let mut scenario = None;
    let mut seed = None;
    let mut backend = Backend::Builtin;
    let mut command = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            command = args.get(i..).unwrap_or_default().to_vec();
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String, UsageError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            let v = args.get(i).cloned().ok_or_else(|| usage(format!("{name} needs a value")))?;
            i += 1;
            Ok(v)
        };
        match name {
            "--path" => paths.push(parse_path_spec(&value()?)?),
            "--scenario" => scenario = Some(value()?),
            "--backend" => backend = Backend::parse(&value()?)?,
            "--seed" => {
                let v = value()?;
                seed = Some(v.parse().map_err(|_| usage(format!("bad --seed {v:?}")))?);
            }
            n if n.starts_with('-') => return Err(usage(format!("unknown option {n:?}"))),
            _ => {
                command = args.get(i - 1..).unwrap_or_default().to_vec();
                break;
            }
        }
    }
    let source = match (scenario, paths.is_empty()) {
        (Some(s), true) => PathSource::Scenario(s),
        (None, false) => PathSource::Paths(paths),
        (Some(_), false) => return Err(usage("give either --path or --scenario, not both")),
        (None, true) => return Err(usage("need at least one --path or a --scenario")),
    };
    if backend == Backend::Mahimahi {
        if matches!(source, PathSource::Scenario(_)) {
            return Err(usage(
                "--backend mahimahi needs --path specs: a scenario's schedules and loss models cannot be expressed with mm-link",
            ));
        }
        if seed.is_some() {
            return Err(usage("--seed has no effect with --backend mahimahi (mm-loss seeds itself)"));
        }
    }
    Ok(MpShellArgs { source, seed, backend, command })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu::queue::QueueKind;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn delay_syntax() {
        let a = parse_delay(&v("20 iperf -c host")).unwrap();
        assert_eq!(a.delay, Duration::from_millis(20));
        assert_eq!(a.command, v("iperf -c host"));
        assert!(parse_delay(&v("20")).unwrap().command.is_empty());
        assert_eq!(parse_delay(&v("5 -- ls -l")).unwrap().command, v("ls -l"));
        assert!(parse_delay(&v("2.5")).is_err());
        assert!(parse_delay(&[]).is_err());
    }

    #[test]
    fn loss_syntax() {
        let a = parse_loss(&v("downlink 0.1 sh")).unwrap();
        assert_eq!(a.direction, Direction::Downlink);
        assert_eq!(a.rate, 0.1);
        assert_eq!(a.command, v("sh"));
        assert_eq!(parse_loss(&v("uplink 1")).unwrap().direction, Direction::Uplink);
        assert!(parse_loss(&v("sideways 0.1")).is_err());
        assert!(parse_loss(&v("uplink 1.5")).is_err());
        assert!(parse_loss(&v("uplink NaN")).is_err());
        assert!(parse_loss(&v("uplink")).is_err());
    }

    #[test]
    fn link_syntax() {
        let a = parse_link(&v(
            "up.tr down.tr --uplink-queue=droptail --uplink-queue-args=packets=100,bytes=30000 --once -- sh -c x",
        ))
        .unwrap();
        assert_eq!(a.uplink_trace, PathBuf::from("up.tr"));
        assert_eq!(a.downlink_trace, PathBuf::from("down.tr"));
        assert_eq!(a.uplink_queue.kind, QueueKind::DropTail);
        assert_eq!(a.uplink_queue.packets, Some(100));
        assert_eq!(a.uplink_queue.bytes, Some(30000));
        assert_eq!(a.downlink_queue, QueueConfig::default());
        assert!(a.once);
        assert_eq!(a.command, v("sh -c x"));
        // Options before the traces, command without `--` keeps its own options.
        let b = parse_link(&v("--downlink-queue=drophead --downlink-queue-args=bytes=9000 u d ls --once"))
            .unwrap();
        assert_eq!(b.downlink_queue.kind, QueueKind::DropHead);
        assert_eq!(b.downlink_queue.bytes, Some(9000));
        assert!(!b.once);
        assert_eq!(b.command, v("ls --once"));
        // Mahimahi writes "packets=1, bytes=2" with a space too.
        let mut q = QueueArgs::default();
        parse_queue_args("packets=1, bytes=2", &mut q).unwrap();
        assert_eq!((q.packets, q.bytes), (Some(1), Some(2)));
        assert!(parse_link(&v("u")).is_err());
        assert!(parse_link(&v("u d --uplink-queue=droptail")).is_err());
        assert!(parse_link(&v("u d --meter-all")).is_err());
        assert!(parse_link(&v("u d --bogus")).is_err());
        assert!(parse_link(&v("u d --uplink-queue-args=packets=x")).is_err());
    }

    #[test]
    fn link_aqm_queues() {
        use emu::aqm::{CodelParams, PieParams};
        let ms = Duration::from_millis;
        let a = parse_link(&v(
            "u d --uplink-queue=codel --uplink-queue-args=packets=100,target=5,interval=100 --downlink-queue=pie --downlink-queue-args=packets=200,qdelay_ref=20,max_burst=100 -- sh",
        ))
        .unwrap();
        assert_eq!(
            a.uplink_queue.kind,
            QueueKind::CoDel(CodelParams { target: ms(5), interval: ms(100), ecn: false })
        );
        assert_eq!(a.uplink_queue.packets, Some(100));
        assert_eq!(
            a.downlink_queue.kind,
            QueueKind::Pie(PieParams { qdelay_ref: ms(20), max_burst: ms(100), ecn: false })
        );
        assert_eq!(a.downlink_queue.packets, Some(200));
        // Arguments may come before the type; a bare type takes the RFC defaults.
        let b = parse_link(&v("u d --uplink-queue-args=target=10 --uplink-queue=codel")).unwrap();
        assert_eq!(
            b.uplink_queue.kind,
            QueueKind::CoDel(CodelParams { target: ms(10), interval: ms(100), ecn: false })
        );
        let e = |s: &str| parse_link(&v(s)).unwrap_err().0;
        assert!(e("u d --uplink-queue=codel --uplink-queue-args=target=0")
            .contains("target must be at least 1 ms"));
        assert!(e("u d --uplink-queue=codel --uplink-queue-args=qdelay_ref=5").contains("PIE arguments"));
        assert!(
            e("u d --downlink-queue=pie --downlink-queue-args=interval=5").contains("--downlink-queue=pie")
        );
        assert!(e("u d --uplink-queue=pie --uplink-queue-args=burst=5").contains("unknown queue argument"));
        assert!(e("u d --uplink-queue=red").contains("unknown queue type"));
        assert!(e("u d --uplink-queue-args=packets=10").contains("infinite queue"));
    }

    /// `ecn=1` turns CE marking on for CoDel and PIE; anything else is refused.
    #[test]
    fn link_aqm_ecn() {
        let a = parse_link(&v(
            "u d --downlink-queue=codel --downlink-queue-args=packets=1000,target=2,interval=20,ecn=1 --uplink-queue=pie --uplink-queue-args=ecn=1",
        ))
        .unwrap();
        assert!(matches!(a.downlink_queue.kind, QueueKind::CoDel(p) if p.ecn));
        assert!(matches!(a.uplink_queue.kind, QueueKind::Pie(p) if p.ecn));
        let off = parse_link(&v("u d --downlink-queue=codel --downlink-queue-args=ecn=0")).unwrap();
        assert!(matches!(off.downlink_queue.kind, QueueKind::CoDel(p) if !p.ecn));
        let e = |s: &str| parse_link(&v(s)).unwrap_err().0;
        assert!(e("u d --downlink-queue=codel --downlink-queue-args=ecn=2").contains("ecn is 0 or 1, got 2"));
        assert!(e("u d --downlink-queue=codel --downlink-queue-args=ecn=on").contains("not a number"));
        assert!(e("u d --downlink-queue=droptail --downlink-queue-args=packets=9,ecn=1")
            .contains("ecn is a CoDel and PIE argument, not droptail"));
    }

    #[test]
    fn mpshell_syntax() {
        let a = parse_mpshell(&v(
            "--path lte,a.up,a.down,20 --path=wifi,b.up,b.down,5.5,0.01 --seed 7 -- client x",
        ))
        .unwrap();
        let PathSource::Paths(p) = &a.source else { panic!("expected paths") };
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].name, "lte");
        assert_eq!(p[0].delay, Duration::from_millis(20));
        assert_eq!(p[0].loss, 0.0);
        assert_eq!(p[1].up, PathBuf::from("b.up"));
        assert_eq!(p[1].delay, Duration::from_micros(5500));
        assert_eq!(p[1].loss, 0.01);
        assert_eq!(a.seed, Some(7));
        assert_eq!(a.command, v("client x"));
        let s = parse_mpshell(&v("--scenario traces/break.toml -- sh")).unwrap();
        assert_eq!(s.source, PathSource::Scenario("traces/break.toml".into()));
        assert!(parse_mpshell(&v("-- sh")).is_err());
        assert!(parse_mpshell(&v("--path a,b,c")).is_err());
        assert!(parse_mpshell(&v("--path a,b,c,-1")).is_err());
        assert!(parse_mpshell(&v("--path a,b,c,1,2")).is_err());
        assert!(parse_mpshell(&v("--scenario x --path a,b,c,1")).is_err());
        assert!(parse_mpshell(&v("--seed")).is_err());
        assert_eq!(a.backend, Backend::Builtin);
    }

    #[test]
    fn mpshell_backend_option() {
        let a = parse_mpshell(&v("--backend mahimahi --path a,u,d,10 -- sh")).unwrap();
        assert_eq!(a.backend, Backend::Mahimahi);
        assert_eq!(parse_mpshell(&v("--backend=auto --scenario x")).unwrap().backend, Backend::Auto);
        let e = |s: &str| parse_mpshell(&v(s)).unwrap_err().0;
        assert!(e("--backend mm --path a,u,d,1").contains("builtin, mahimahi or auto"));
        assert!(e("--backend mahimahi --scenario x").contains("needs --path"));
        assert!(e("--backend mahimahi --seed 3 --path a,u,d,1").contains("--seed"));
    }
}
