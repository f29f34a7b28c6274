//! Building emulated paths without a scenario file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use emu::impair::Impairments;
use emu::link::{Link, LinkConfig, PathLinks};
use emu::loss::LossModel;
use emu::queue::{QueueConfig, QueueKind};
use emu::trace::{Trace, TraceError};

/// The repository's `traces/data` directory (where the generated traces live).
pub fn trace_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/data"))
}

/// A constant-rate trace of `mbps` Mbit/s (1500 bytes per opportunity, Mahimahi's
/// convention): `n` opportunities spread evenly over a period, exact for integer rates.
pub fn constant_trace(mbps: u32) -> Result<Trace, TraceError> {
    // 12 Mbit/s = one opportunity per ms: a period of 12 ms holds `mbps` opportunities.
    let n = u64::from(mbps.max(1));
    let period = 12u64;
    let times: Vec<u64> = (1..=n).map(|i| (i * period).div_ceil(n)).collect();
    Trace::from_times(&format!("const-{mbps}mbps"), times)
}

/// Parameters of one symmetric path.
#[derive(Debug, Clone)]
pub struct PathParams {
    /// Name used in outputs.
    pub name: String,
    /// Capacity each way, Mbit/s.
    pub mbps: u32,
    /// One-way delay each way.
    pub delay: Duration,
    /// Bernoulli loss probability each way.
    pub loss: f64,
    /// Drop-tail queue limit in bytes (`None`: infinite).
    pub queue_bytes: Option<u64>,
    /// Drop-tail queue limit in packets (`None`: no packet limit).
    pub queue_packets: Option<u64>,
    /// An AQM instead of drop-tail (`QueueKind::CoDel` or `QueueKind::Pie`); the limits
    /// above still apply (tail drop at the limit).
    pub aqm: Option<QueueKind>,
    /// Reordering, duplication and corruption, each way.
    pub impair: Impairments,
    /// Path MTU steps each way (`LinkConfig::mtu`; IP packet bytes): from
    /// each time on, larger packets are dropped. Empty: any size.
    pub mtu: Vec<(Duration, u32)>,
}

impl PathParams {
    /// A lossless path with a one-BDP drop-tail queue (BDP at 2 × `delay`).
    pub fn new(name: &str, mbps: u32, delay: Duration) -> PathParams {
        let bdp = u64::from(mbps) * 1_000_000 / 8 * 2 * delay.as_micros() as u64 / 1_000_000;
        PathParams {
            name: name.to_string(),
            mbps,
            delay,
            loss: 0.0,
            queue_bytes: Some(bdp.max(15_000)),
            queue_packets: None,
            aqm: None,
            impair: Impairments::default(),
            mtu: Vec::new(),
        }
    }

    /// Builds both directions; `seed` feeds the loss RNGs.
    pub fn build(&self, seed: u64) -> Result<PathLinks, TraceError> {
        let trace = Arc::new(constant_trace(self.mbps)?);
        let mut cfg = LinkConfig::new(trace);
        cfg.delay = self.delay;
        cfg.impair = self.impair;
        cfg.mtu = self.mtu.clone();
        cfg.loss = if self.loss > 0.0 { LossModel::Bernoulli { p: self.loss } } else { LossModel::None };
        cfg.queue =
            QueueConfig { kind: QueueKind::DropTail, packets: self.queue_packets, bytes: self.queue_bytes };
        if let Some(kind) = self.aqm {
            cfg.queue.kind = kind;
        } else if self.queue_bytes.is_none() && self.queue_packets.is_none() {
            cfg.queue.kind = QueueKind::Infinite;
        }
        let mut up = cfg.clone();
        up.seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555;
        let mut down = cfg;
        down.seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xaaaa;
        Ok(PathLinks { name: self.name.clone(), up: Link::new(&up), down: Link::new(&down) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_trace_rates() {
        for mbps in [12u32, 20, 50, 100] {
            let t = constant_trace(mbps).unwrap();
            let bps = t.mean_rate_bps();
            assert!((bps - f64::from(mbps) * 1e6).abs() < 1.0, "{mbps}: {bps}");
        }
    }
}
