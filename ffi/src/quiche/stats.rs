//! Connection and path statistics in quiche's layout, and the peer's
//! transport parameters. Counters mpquic does not keep are 0 (listed in the
//! README).

use std::ffi::c_int;

use engine::{Connection, PathStats};
use libc::{sockaddr_storage, socklen_t, ssize_t};

use super::conn::{conn_ref, quiche_conn};
use super::{QUICHE_ERR_DONE, QUICHE_ERR_INVALID_STATE};
use crate::addr::{to_c, zeroed_storage};
use crate::guard;

/// Connection-wide counters.
#[repr(C)]
#[derive(Default)]
pub struct quiche_stats {
    /// Packets received.
    pub recv: usize,
    /// Packets sent.
    pub sent: usize,
    /// Packets declared lost.
    pub lost: usize,
    /// 0: not counted by mpquic.
    pub spurious_lost: usize,
    /// 0: mpquic counts retransmitted bytes (stream_retrans_bytes).
    pub retrans: usize,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Bytes of our packets acknowledged (all paths).
    pub acked_bytes: u64,
    /// Bytes of our packets declared lost (all paths).
    pub lost_bytes: u64,
    /// Stream bytes retransmitted.
    pub stream_retrans_bytes: u64,
    /// DATAGRAM frames received.
    pub dgram_recv: usize,
    /// DATAGRAM frames sent.
    pub dgram_sent: usize,
    /// Paths opened over the connection's life.
    pub paths_count: usize,
    /// 0: not counted by mpquic.
    pub reset_stream_count_local: u64,
    /// 0: not counted by mpquic.
    pub stopped_stream_count_local: u64,
    /// 0: not counted by mpquic.
    pub reset_stream_count_remote: u64,
    /// 0: not counted by mpquic.
    pub stopped_stream_count_remote: u64,
    /// 0: not counted by mpquic.
    pub data_blocked_sent_count: u64,
    /// 0: not counted by mpquic.
    pub stream_data_blocked_sent_count: u64,
    /// 0: not counted by mpquic.
    pub data_blocked_recv_count: u64,
    /// 0: not counted by mpquic.
    pub stream_data_blocked_recv_count: u64,
    /// 0: not counted by mpquic.
    pub streams_blocked_bidi_recv_count: u64,
    /// 0: not counted by mpquic.
    pub streams_blocked_uni_recv_count: u64,
    /// 0: not counted by mpquic.
    pub path_challenge_rx_count: u64,
    /// 0: not counted by mpquic.
    pub bytes_in_flight_duration_msec: u64,
    /// Always false.
    pub tx_buffered_inconsistent: bool,
}

/// Fill `out` with the connection's counters (zeros before the first
/// packet of a server connection).
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_stats(conn: *const quiche_conn, out: *mut quiche_stats) {
    let c = conn_ref!(conn);
    // SAFETY: `out` is valid when not NULL.
    let Some(out) = (unsafe { out.as_mut() }) else { return };
    guard((), || *out = c.live().map(stats).unwrap_or_default());
}

fn stats(c: &Connection) -> quiche_stats {
    let s = c.stats();
    let (acked, lost) = c.path_stats().fold((0, 0), |(a, l), p| (a + p.acked_bytes, l + p.lost_bytes));
    quiche_stats {
        recv: s.recv as usize,
        sent: s.sent as usize,
        lost: s.lost as usize,
        sent_bytes: s.sent_bytes,
        recv_bytes: s.recv_bytes,
        acked_bytes: acked,
        lost_bytes: lost,
        stream_retrans_bytes: s.retrans_bytes,
        paths_count: s.paths as usize,
        dgram_recv: s.dgram_recv as usize,
        dgram_sent: s.dgram_sent as usize,
        ..quiche_stats::default()
    }
}

/// One path's statistics.
#[repr(C)]
pub struct quiche_path_stats {
    /// Our address.
    pub local_addr: sockaddr_storage,
    /// Length of `local_addr`.
    pub local_addr_len: socklen_t,
    /// The peer's address.
    pub peer_addr: sockaddr_storage,
    /// Length of `peer_addr`.
    pub peer_addr_len: socklen_t,
    /// 2: validated, 1: validating (mpquic's two states).
    pub validation_state: ssize_t,
    /// Usable for data.
    pub active: bool,
    /// Packets received.
    pub recv: usize,
    /// Packets sent.
    pub sent: usize,
    /// Packets declared lost.
    pub lost: usize,
    /// 0: mpquic counts retransmitted bytes (stream_retrans_bytes).
    pub retrans: usize,
    /// Times the path went silent while another answered (mpquic's
    /// suspicions; quiche counts PTOs).
    pub total_pto_count: usize,
    /// 0: datagrams are not counted per path.
    pub dgram_recv: usize,
    /// 0: datagrams are not counted per path.
    pub dgram_sent: usize,
    /// Smoothed RTT (ns).
    pub rtt: u64,
    /// Minimum RTT (ns).
    pub min_rtt: u64,
    /// 0: not kept by mpquic.
    pub max_rtt: u64,
    /// RTT variation (ns).
    pub rttvar: u64,
    /// Congestion window (bytes).
    pub cwnd: usize,
    /// UDP payload bytes sent.
    pub sent_bytes: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Bytes of this path's packets declared lost.
    pub lost_bytes: u64,
    /// Stream bytes retransmitted on this path.
    pub stream_retrans_bytes: u64,
    /// The datagram size in use (no PMTU discovery).
    pub pmtu: usize,
    /// Bandwidth estimate (bytes/s).
    pub delivery_rate: u64,
    /// Bandwidth estimate (bytes/s; mpquic keeps one estimate).
    pub max_bandwidth: u64,
    /// 0: not kept by mpquic.
    pub startup_exit_cwnd: u64,
}

pub(crate) fn path_stats(p: &PathStats, pmtu: usize) -> quiche_path_stats {
    let mut local_addr = zeroed_storage();
    let mut peer_addr = zeroed_storage();
    quiche_path_stats {
        local_addr_len: to_c(&p.local, &mut local_addr),
        local_addr,
        peer_addr_len: to_c(&p.peer, &mut peer_addr),
        peer_addr,
        validation_state: if p.active { 2 } else { 1 },
        active: p.active,
        recv: p.recv as usize,
        sent: p.sent as usize,
        lost: p.lost as usize,
        retrans: 0,
        total_pto_count: p.suspicions as usize,
        dgram_recv: 0,
        dgram_sent: 0,
        rtt: p.srtt.as_nanos() as u64,
        min_rtt: p.min_rtt.as_nanos() as u64,
        max_rtt: 0,
        rttvar: p.rttvar.as_nanos() as u64,
        cwnd: p.cwnd,
        sent_bytes: p.sent_bytes,
        recv_bytes: p.recv_bytes,
        lost_bytes: p.lost_bytes,
        stream_retrans_bytes: p.retrans_bytes,
        pmtu,
        delivery_rate: p.bandwidth,
        max_bandwidth: p.bandwidth,
        startup_exit_cwnd: 0,
    }
}

/// Fill `out` with the statistics of the `idx`-th path (0: the first).
/// 0, or QUICHE_ERR_DONE if there is no such path.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_path_stats(
    conn: *const quiche_conn,
    idx: usize,
    out: *mut quiche_path_stats,
) -> c_int {
    let c = conn_ref!(conn, QUICHE_ERR_INVALID_STATE.c());
    // SAFETY: `out` is valid when not NULL.
    let Some(out) = (unsafe { out.as_mut() }) else { return QUICHE_ERR_INVALID_STATE.c() };
    guard(QUICHE_ERR_INVALID_STATE.c(), || match c.live().and_then(|l| l.path_stats().nth(idx)) {
        Some(p) => {
            *out = path_stats(&p, c.max_send);
            0
        }
        None => QUICHE_ERR_DONE.c(),
    })
}

/// The peer's transport parameters.
#[repr(C)]
pub struct quiche_transport_params {
    /// max_idle_timeout (ms).
    pub peer_max_idle_timeout: u64,
    /// max_udp_payload_size.
    pub peer_max_udp_payload_size: u64,
    /// initial_max_data.
    pub peer_initial_max_data: u64,
    /// initial_max_stream_data_bidi_local.
    pub peer_initial_max_stream_data_bidi_local: u64,
    /// initial_max_stream_data_bidi_remote.
    pub peer_initial_max_stream_data_bidi_remote: u64,
    /// initial_max_stream_data_uni.
    pub peer_initial_max_stream_data_uni: u64,
    /// initial_max_streams_bidi.
    pub peer_initial_max_streams_bidi: u64,
    /// initial_max_streams_uni.
    pub peer_initial_max_streams_uni: u64,
    /// ack_delay_exponent.
    pub peer_ack_delay_exponent: u64,
    /// max_ack_delay (ms).
    pub peer_max_ack_delay: u64,
    /// disable_active_migration.
    pub peer_disable_active_migration: bool,
    /// active_connection_id_limit.
    pub peer_active_conn_id_limit: u64,
    /// max_datagram_frame_size, -1 if absent.
    pub peer_max_datagram_frame_size: ssize_t,
}

/// Fill `out` with the peer's transport parameters; false before they
/// arrived.
#[no_mangle]
pub unsafe extern "C" fn quiche_conn_peer_transport_params(
    conn: *const quiche_conn,
    out: *mut quiche_transport_params,
) -> bool {
    let c = conn_ref!(conn, false);
    // SAFETY: `out` is valid when not NULL.
    let Some(out) = (unsafe { out.as_mut() }) else { return false };
    guard(false, || {
        let Some(p) = c.live().and_then(Connection::peer_transport_params) else { return false };
        *out = quiche_transport_params {
            peer_max_idle_timeout: p.max_idle_timeout,
            peer_max_udp_payload_size: p.max_udp_payload_size,
            peer_initial_max_data: p.initial_max_data,
            peer_initial_max_stream_data_bidi_local: p.initial_max_stream_data_bidi_local,
            peer_initial_max_stream_data_bidi_remote: p.initial_max_stream_data_bidi_remote,
            peer_initial_max_stream_data_uni: p.initial_max_stream_data_uni,
            peer_initial_max_streams_bidi: p.initial_max_streams_bidi,
            peer_initial_max_streams_uni: p.initial_max_streams_uni,
            peer_ack_delay_exponent: p.ack_delay_exponent,
            peer_max_ack_delay: p.max_ack_delay,
            peer_disable_active_migration: p.disable_active_migration,
            peer_active_conn_id_limit: p.active_connection_id_limit,
            peer_max_datagram_frame_size: p.max_datagram_frame_size.map_or(-1, |v| v as ssize_t),
        };
        true
    })
}
