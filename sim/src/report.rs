//! What a run produces: time series and per-flow summaries (DESIGN.md "Metrics").

use std::time::Duration;

/// One path of one flow at one sample time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathSample {
    /// Bits/s delivered by the link in the data direction during the last interval.
    pub throughput_bps: f64,
    /// Sender's smoothed RTT, ms (0 before the path exists).
    pub srtt_ms: f64,
    /// Sender's congestion window, bytes.
    pub cwnd: u64,
    /// Sender's bytes in flight.
    pub bytes_in_flight: u64,
    /// Sender's pacing rate, bits/s.
    pub pacing_bps: f64,
    /// Sender's shared-bottleneck group (`PathStats::group`).
    pub group: u32,
}

/// One flow at one sample time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Simulated time of the sample.
    pub t: Duration,
    /// Flow index.
    pub flow: usize,
    /// In-order bytes delivered to the receiving application per second, bits/s, over
    /// the last interval.
    pub goodput_bps: f64,
    /// Receiver's out-of-order bytes (reassembly buffers) at the sample time.
    pub ooo_bytes: u64,
    /// Per path of the flow, in the flow's path order.
    pub paths: Vec<PathSample>,
}

/// Summary of one path of a flow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathSummary {
    /// Path name (from the scenario).
    pub name: String,
    /// Bytes the link delivered in the data direction (UDP payloads).
    pub bytes: u64,
    /// Mean throughput over the flow's active time, bits/s.
    pub throughput_bps: f64,
    /// Share of the flow's delivered data-direction bytes.
    pub share: f64,
    /// Mean of the sender's smoothed RTT over samples where the path existed, ms.
    pub srtt_mean_ms: f64,
    /// Sender's minimum RTT at the end, ms.
    pub min_rtt_ms: f64,
    /// Packets the sender declared lost on this path.
    pub lost_packets: u64,
    /// Stream bytes the sender retransmitted on this path.
    pub retrans_bytes: u64,
    /// Stream bytes the sender sent on this path as scheduler copies (the
    /// redundant scheduler, arp's redundant set).
    pub copy_bytes: u64,
    /// Packets dropped by the links of the path's route (loss, queue, outage; data
    /// direction), plus scheduled-failure drops; summed over the route, so a shared
    /// link's drops count every flow crossing it.
    pub link_drops: u64,
    /// The sender's shared-bottleneck group at the end (`PathStats::group`):
    /// paths with equal values were judged to share a bottleneck.
    pub group: u32,
    /// ECN-CE marks the receiver reported for the sender's packets on this
    /// path (0 unless the flow uses ECN and a queue marks).
    pub ecn_ce: u64,
    /// The sender's datagram size on this path at the end (`PathStats::mtu`).
    pub mtu: usize,
}

/// Summary of one flow.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowSummary {
    /// Flow index.
    pub flow: usize,
    /// Congestion controller.
    pub cc: String,
    /// Scheduler.
    pub scheduler: String,
    /// Whether the handshake completed.
    pub established: bool,
    /// Whether multipath was negotiated.
    pub multipath: bool,
    /// In-order application bytes received.
    pub app_bytes: u64,
    /// Goodput over the flow's active time (start to completion or end), bits/s.
    pub goodput_bps: f64,
    /// Download (or upload) completion time since the flow started, if it finished.
    pub completion: Option<Duration>,
    /// Stream bytes retransmitted (all paths).
    pub retrans_bytes: u64,
    /// Stream bytes sent beyond what the receiver got in order: retransmissions plus
    /// data in flight or duplicated (first transmissions + retransmissions − app bytes).
    pub redundant_bytes: u64,
    /// Stream bytes sent as scheduler copies (all paths).
    pub copy_bytes: u64,
    /// New stream bytes sent ahead of older unsent data (arp's P-Scheduling).
    pub sent_ahead_bytes: u64,
    /// Mean receiver out-of-order bytes (sampled every 10 ms).
    pub ooo_mean: f64,
    /// 95th percentile of out-of-order bytes.
    pub ooo_p95: u64,
    /// Maximum out-of-order bytes (exact, checked after every datagram).
    pub ooo_max: u64,
    /// Workload name (`h3`, `stream`, `upload`).
    pub workload: String,
    /// Received body bytes that differed from the generated body (0 for a correct
    /// transfer).
    pub body_mismatches: u64,
    /// HTTP/3 response status the client got (`None` for plain streams or no response).
    pub status: Option<u16>,
    /// Playout of the video workload (`None` for the others).
    pub video: Option<crate::VideoStats>,
    /// Per path.
    pub paths: Vec<PathSummary>,
    /// First setup or send error of the flow, if any.
    pub error: Option<String>,
    /// How the connection ended, if it closed before the run did: which side
    /// closed, the QUIC error code and reason, or the idle timeout.
    pub closed: Option<String>,
    /// A scenario's background flow (not the flow under test).
    pub background: bool,
}

/// Counters of one network link over the run (a path's own link or a shared one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkSummary {
    /// Link name (a path's, or a scenario `[[link]]`'s).
    pub name: String,
    /// Client -> server direction (charged sizes: UDP payload + 28 header bytes).
    pub up: emu::link::LinkStats,
    /// Server -> client direction.
    pub down: emu::link::LinkStats,
    /// Packets dropped by a scheduled failure ([`crate::Failure`]), both directions.
    pub failure_drops: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Scenario (or experiment) name.
    pub name: String,
    /// Seed used.
    pub seed: u64,
    /// Simulated duration.
    pub duration: Duration,
    /// Time series, ordered by time then flow.
    pub samples: Vec<Sample>,
    /// One per flow: the flows of [`crate::SimConfig::flows`] in order (for a scenario,
    /// the flow under test first), then a scenario's background flows.
    pub flows: Vec<FlowSummary>,
    /// One per network link, in the simulator's link order.
    pub links: Vec<LinkSummary>,
    /// Datagrams handled by the event loop (a cost figure, not a metric).
    pub datagrams: u64,
    /// Times the clock had to be nudged past a timer that stayed due (should be 0).
    pub stalls: u64,
}

impl Report {
    /// Mean goodput of `flow` over samples in `[from, to)`, bits/s.
    pub fn mean_goodput(&self, flow: usize, from: Duration, to: Duration) -> f64 {
        let v: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.flow == flow && s.t > from && s.t <= to)
            .map(|s| s.goodput_bps)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }
}

/// The `q`-quantile (0..=1) of `values` (nearest rank); 0 for none.
pub fn quantile(values: &[u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v.get(rank - 1).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.95), 95);
        assert_eq!(quantile(&v, 1.0), 100);
        assert_eq!(quantile(&v, 0.0), 1);
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7, 3, 5], 0.5), 5);
    }
}
