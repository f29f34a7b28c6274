//! The `--json` rows of a kernel connection, with `mpquic-client`'s key
//! names where the kernel has the same quantity:
//!
//! - `recv_bytes` / `sent_bytes`: `tcpi_bytes_received` / `tcpi_bytes_sent`
//!   of the subflow (payload bytes, retransmissions included);
//! - `lost_packets`: `tcpi_total_retrans`, segments retransmitted (the
//!   kernel counts what it resends, not a loss total);
//! - `srtt_ms`, `min_rtt_ms`: `tcpi_rtt`, `tcpi_min_rtt`; `cwnd`:
//!   `tcpi_snd_cwnd` × `tcpi_snd_mss` bytes; `mtu`: `tcpi_pmtu`;
//! - `out_of_order_packets`: `tcpi_rcv_ooopack`, segments the subflow
//!   received out of its own sequence. MPTCP's connection-level
//!   out-of-order queue (data reordered across subflows) is not exposed to
//!   user space, so there is no counterpart of mpquic's receiver
//!   out-of-order bytes: `out_of_order_bytes` is `null`.

use serde_json::{json, Value};

use super::sockopt::Subflow;

/// One row per subflow; `share` of received bytes (`by_sent`: of sent
/// bytes, the sender's view).
pub fn path_rows(subflows: &[Subflow], by_sent: bool) -> Vec<Value> {
    let part = |s: &Subflow| if by_sent { s.tcp.tcpi_bytes_sent } else { s.tcp.tcpi_bytes_received };
    let total: u64 = subflows.iter().map(part).sum();
    subflows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = &s.tcp;
            json!({
                "id": i, "local": s.local.map(|a| a.to_string()), "peer": s.peer.map(|a| a.to_string()),
                "active": true, "recv_bytes": t.tcpi_bytes_received, "sent_bytes": t.tcpi_bytes_sent,
                "share": if total == 0 { 0.0 } else { part(s) as f64 / total as f64 },
                "srtt_ms": f64::from(t.tcpi_rtt) / 1e3, "min_rtt_ms": f64::from(t.tcpi_min_rtt) / 1e3,
                "lost_packets": t.tcpi_total_retrans, "retrans_bytes": t.tcpi_bytes_retrans,
                "cwnd": u64::from(t.tcpi_snd_cwnd) * u64::from(t.tcpi_snd_mss), "mtu": t.tcpi_pmtu,
                "out_of_order_packets": t.tcpi_rcv_ooopack,
            })
        })
        .collect()
}

/// Connection totals over the rows: (retransmitted segments, retransmitted
/// bytes, out-of-order segments received).
pub fn totals(subflows: &[Subflow]) -> (u64, u64, u64) {
    subflows.iter().fold((0, 0, 0), |(l, r, o), s| {
        (
            l + u64::from(s.tcp.tcpi_total_retrans),
            r + s.tcp.tcpi_bytes_retrans,
            o + u64::from(s.tcp.tcpi_rcv_ooopack),
        )
    })
}
