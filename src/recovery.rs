//! Loss recovery (RFC 9002) for a multipath connection.
//!
//! Each path has one [`PathRecovery`] (RTT estimator, congestion controller,
//! pacer, bytes in flight, PTO backoff, delivery-rate state), and each packet
//! number space has one [`PacketSpace`] holding the packets sent in it. The
//! Initial and Handshake spaces exist only on the first path; every path has
//! its own application-data space (draft-ietf-quic-multipath-21 §4, §5.3).
//! The receive side of a space is an [`AckTracker`].
//!
//! The connection owns all of these and passes the ones that belong together
//! to each call: `space.on_ack_received(&mut path, ..)`,
//! `path.loss_detection_timer(&[&initial, &handshake, &data], ..)`.
//! Packets leave a space through a callback `FnMut(PacketFate, SentPacket<T>)`
//! so the packet path allocates nothing beyond the sent-queue slot.

use std::time::Instant;

mod ack_tracker;
mod path;
mod space;
#[cfg(test)]
mod tests;

pub use ack_tracker::{AckTracker, Ecn, DEFAULT_MAX_RANGES};
pub use path::{PathRecovery, TimeoutAction};
pub use space::{AckSummary, PacketSpace};

/// RFC 9002 §6.1.1 packet reordering threshold.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §7.6.1 persistent congestion threshold (in PTO periods).
pub const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;

/// Which kind of packet number space (RFC 9000 §12.3). Application data
/// spaces are per path; Initial and Handshake only exist on the first path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpaceKind {
    /// Initial packets.
    Initial,
    /// Handshake packets.
    Handshake,
    /// 0-RTT and 1-RTT packets of one path.
    Data,
}

/// What happened to a packet handed back by a [`PacketSpace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketFate {
    /// The peer acknowledged it.
    Acked,
    /// It was declared lost; its data must be retransmitted (on any path).
    Lost,
    /// Its space was discarded (RFC 9002 §6.4); nothing to retransmit.
    Discarded,
}

/// Handshake facts loss recovery depends on (RFC 9002 §6.2, Appendix A).
/// After the handshake every flag but `amplification_limited` is true; use
/// [`HandshakeStatus::CONFIRMED`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandshakeStatus {
    /// We are the client (only clients send anti-deadlock probes).
    pub is_client: bool,
    /// Handshake keys are available (anti-deadlock probe goes in Handshake).
    pub has_handshake_keys: bool,
    /// The handshake is confirmed (RFC 9001 §4.1.2): application-data PTO is
    /// armed and ack delays are capped at max_ack_delay.
    pub handshake_confirmed: bool,
    /// The peer has validated our address: always true for a server; for a
    /// client, once a Handshake ACK arrived or the handshake is confirmed.
    pub peer_completed_address_validation: bool,
    /// A server has hit the anti-amplification limit (no PTO may be armed).
    pub amplification_limited: bool,
}

impl HandshakeStatus {
    /// The state after the handshake is confirmed.
    pub const CONFIRMED: Self = Self {
        is_client: false,
        has_handshake_keys: true,
        handshake_confirmed: true,
        peer_completed_address_validation: true,
        amplification_limited: false,
    };
}

/// One sent packet as loss recovery tracks it.
#[derive(Clone, Debug)]
pub struct SentPacket<T> {
    /// Packet number.
    pub pn: u64,
    /// When it was sent.
    pub time_sent: Instant,
    /// When the pacer let it leave (`SendInfo::at`; `time_sent` if unpaced).
    pub released: Instant,
    /// Size of the UDP payload it occupied, in bytes.
    pub size: usize,
    /// Contains frames other than ACK, PADDING and CONNECTION_CLOSE.
    pub ack_eliciting: bool,
    /// Counts towards bytes in flight (ack-eliciting or PADDING).
    pub in_flight: bool,
    /// Path's delivered bytes when it was sent (BBR draft §4.5.2.2).
    pub delivered: u64,
    /// Path's delivered_time when it was sent.
    pub delivered_time: Instant,
    /// Path's first_sent_time when it was sent.
    pub first_sent_time: Instant,
    /// Sent while the path was application-limited.
    pub is_app_limited: bool,
    /// Bytes in flight on the path including this packet.
    pub tx_in_flight: usize,
    /// Sent with the ECT(0) codepoint (ECN validation counts these).
    pub ect: bool,
    /// A probe — of the path MTU, or of another address pair — whose loss
    /// is no congestion signal (RFC 9000 §14.4, §9.4).
    pub probe: bool,
    /// The connection's record of what the packet carried.
    pub data: T,
}

impl<T> SentPacket<T> {
    /// A packet about to be handed to [`PacketSpace::on_packet_sent`], which
    /// fills in the delivery-rate fields from the path.
    pub fn new(
        pn: u64,
        time_sent: Instant,
        size: usize,
        ack_eliciting: bool,
        in_flight: bool,
        data: T,
    ) -> Self {
        Self {
            pn,
            time_sent,
            released: time_sent,
            size,
            ack_eliciting,
            in_flight,
            delivered: 0,
            delivered_time: time_sent,
            first_sent_time: time_sent,
            is_app_limited: false,
            tx_in_flight: 0,
            ect: false,
            probe: false,
            data,
        }
    }
}
