//! 0-RTT (early data, RFC 9001 §4.6, RFC 9000 §7.4.1): the client sends
//! stream data under the limits it remembered with its session; the server
//! buffers 0-RTT packets that arrive before their keys; a rejection makes
//! the client send everything again in 1-RTT.

use std::time::Instant;

use crate::crypto::Level;
use crate::error::{ErrorCode, TransportError};
use crate::stream::PeerLimits;
use crate::transport_params::TransportParams;

use super::{Connection, Error, RecvInfo};

/// Most 0-RTT packets a server keeps while it waits for their keys (a
/// ClientHello in two datagrams, the second lost or late).
const MAX_BUFFERED: usize = 16;

/// A connection's 0-RTT state.
#[derive(Default)]
pub(super) struct EarlyData {
    /// Client: the server's limits remembered with the session, which early
    /// data was sent under (`None`: no 0-RTT attempted).
    remembered: Option<PeerLimits>,
    /// Client: the server rejected our early data.
    rejected: bool,
    /// Server: 0-RTT packets received before their keys, with their
    /// addresses.
    buffered: Vec<(Vec<u8>, RecvInfo)>,
    /// Server: the client's stream limits apply already (0.5-RTT).
    peer_limits: bool,
}

/// The limits of `p` that 0-RTT data is sent under (RFC 9000 §7.4.1).
fn limits(p: &TransportParams) -> PeerLimits {
    PeerLimits {
        initial_max_data: p.initial_max_data,
        initial_max_stream_data_bidi_local: p.initial_max_stream_data_bidi_local,
        initial_max_stream_data_bidi_remote: p.initial_max_stream_data_bidi_remote,
        initial_max_stream_data_uni: p.initial_max_stream_data_uni,
        initial_max_streams_bidi: p.initial_max_streams_bidi,
        initial_max_streams_uni: p.initial_max_streams_uni,
    }
}

/// What a server binds its tickets' early data to: the parameters a client
/// remembers (RFC 9000 §7.4.1). A server whose limits changed since the
/// ticket was issued rejects the 0-RTT sent under the old ones.
pub(super) fn early_data_context(p: &TransportParams) -> Vec<u8> {
    let l = limits(p);
    let mut v = Vec::with_capacity(64);
    for x in [
        l.initial_max_data,
        l.initial_max_stream_data_bidi_local,
        l.initial_max_stream_data_bidi_remote,
        l.initial_max_stream_data_uni,
        l.initial_max_streams_bidi,
        l.initial_max_streams_uni,
        p.active_connection_id_limit,
        p.max_datagram_frame_size.map_or(0, |d| d + 1),
    ] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v
}

impl Connection {
    /// Client: the session came with the server's transport parameters and
    /// allows 0-RTT: open the streams' limits to the remembered values so
    /// data can be sent before the handshake completes.
    pub(super) fn start_early_data(&mut self, params: &[u8]) -> Result<(), Error> {
        let p = TransportParams::decode(params, true).map_err(Error::Transport)?;
        let l = limits(&p);
        self.streams.set_peer_limits(&l).map_err(Error::Transport)?;
        self.early.remembered = Some(l);
        Ok(())
    }

    /// Whether a client may send 0-RTT packets now: it has their keys and
    /// not yet the 1-RTT ones (RFC 9001 §4.6.1).
    pub(super) fn sends_early_data(&self) -> bool {
        self.levels.has_send_keys(Level::ZeroRtt) && !self.levels.has_send_keys(Level::OneRtt)
    }

    /// After TLS ran: on a client, a rejection makes every 0-RTT packet
    /// lost (their data goes again in 1-RTT, RFC 9001 §4.6.2); the 0-RTT
    /// keys go once they are of no more use (§4.9.3).
    pub(super) fn after_tls_early(&mut self) {
        if self.tls.take_early_data_rejected() {
            log::debug!("0-RTT rejected: its data goes again in 1-RTT");
            self.early.rejected = true;
            self.levels.discard(Level::ZeroRtt);
            self.resend_early_packets();
        }
        if self.is_server && self.levels.has_recv_keys(Level::ZeroRtt) && !self.early.peer_limits {
            self.answer_early();
        }
        // A server reads 0-RTT until the handshake completes; later ones
        // are sent again by the client in 1-RTT.
        let done = if self.is_server {
            self.tls.is_handshake_complete()
        } else {
            self.levels.has_send_keys(Level::OneRtt)
        };
        if done {
            self.levels.discard(Level::ZeroRtt);
        }
    }

    /// Client: the 0-RTT packets sent so far will never be acknowledged
    /// (rejected, or sent before a Retry): their frames go again. Before
    /// the handshake the application space holds only 0-RTT packets.
    pub(super) fn resend_early_packets(&mut self) {
        let mut lost = std::mem::take(&mut self.scratch_lost);
        let p = &mut self.paths[0];
        p.space.discard(&mut p.recovery, |_, pkt| lost.push(pkt));
        for pkt in lost.drain(..) {
            for f in pkt.data {
                self.on_frame_lost(f, Level::ZeroRtt, 0);
            }
        }
        self.scratch_lost = lost;
    }

    /// Server that accepted 0-RTT: answer in 0.5-RTT (RFC 9001 §4.1.1)
    /// under the client's stream limits from its ClientHello (checked with
    /// the rest of its parameters when the handshake completes).
    fn answer_early(&mut self) {
        self.early.peer_limits = true;
        let Some(raw) = self.tls.peer_transport_params() else { return };
        if let Ok(p) = TransportParams::decode(raw, false) {
            // A bad value is reported when the handshake completes.
            let _ = self.streams.set_peer_limits(&limits(&p));
        }
    }

    /// Client, at the end of the handshake: after a rejection, the server's
    /// new limits must still cover what was sent under the remembered ones
    /// (the data is sent again, not withdrawn).
    pub(super) fn check_early_limits(&self, p: &TransportParams) -> Result<(), TransportError> {
        let Some(old) = self.early.remembered.as_ref().filter(|_| self.early.rejected) else {
            return Ok(());
        };
        let new = limits(p);
        let lower = new.initial_max_data < old.initial_max_data
            || new.initial_max_stream_data_bidi_remote < old.initial_max_stream_data_bidi_remote
            || new.initial_max_stream_data_uni < old.initial_max_stream_data_uni
            || new.initial_max_streams_bidi < old.initial_max_streams_bidi
            || new.initial_max_streams_uni < old.initial_max_streams_uni;
        if lower {
            return Err(TransportError::new(
                ErrorCode::INTERNAL_ERROR,
                "0-RTT rejected and the server's limits are now below the remembered ones",
            ));
        }
        Ok(())
    }

    /// Server: keep a 0-RTT packet that came before its keys (bounded); it
    /// is processed once TLS installs them, dropped if it never does.
    pub(super) fn buffer_early_packet(&mut self, pkt: &[u8], info: RecvInfo) -> bool {
        let waiting = self.is_server && !self.tls.is_handshake_complete() && self.early_data_enabled;
        if !waiting || self.early.buffered.len() >= MAX_BUFFERED {
            return false;
        }
        self.early.buffered.push((pkt.to_vec(), info));
        true
    }

    /// Server: process the buffered 0-RTT packets once their keys are
    /// installed; drop them once they never will be.
    pub(super) fn replay_early_packets(&mut self, now: Instant) -> Result<(), Error> {
        if self.early.buffered.is_empty() {
            return Ok(());
        }
        if !self.levels.has_recv_keys(Level::ZeroRtt) {
            if self.tls.is_handshake_complete() {
                self.stats.dropped += self.early.buffered.len() as u64;
                self.early.buffered.clear();
            }
            return Ok(());
        }
        // Their bytes were counted for anti-amplification on arrival.
        for (mut pkt, info) in std::mem::take(&mut self.early.buffered) {
            self.recv_packets(&mut pkt, info, false, now)?;
        }
        Ok(())
    }

    /// Whether early data was accepted: the server took our 0-RTT (client)
    /// or we took the client's (server). False before the handshake
    /// completes and when none was offered.
    pub fn is_early_data_accepted(&self) -> bool {
        self.tls.is_handshake_complete() && self.tls.early_data_accepted()
    }

    /// Client: 0-RTT keys are installed and 1-RTT ones not yet: stream data
    /// written now goes out in 0-RTT packets (like quiche's
    /// `is_in_early_data`). Server: the client's 0-RTT is being accepted.
    pub fn is_in_early_data(&self) -> bool {
        if self.is_server {
            self.levels.has_recv_keys(Level::ZeroRtt) && !self.tls.is_handshake_complete()
        } else {
            self.sends_early_data()
        }
    }
}

#[cfg(test)]
mod tests;
