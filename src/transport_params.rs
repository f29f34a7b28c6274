//! QUIC transport parameters (RFC 9000 §18), plus version_information
//! (RFC 9368 §3), max_datagram_frame_size (RFC 9221 §3) and
//! initial_max_path_id (draft-ietf-quic-multipath-21 §2.1).
//!
//! Encoded once per handshake into the TLS extension, so a `Vec` is used.
//! Every validation failure is a TRANSPORT_PARAMETER_ERROR (RFC 9000 §7.4).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

use crate::codec::{varint_len, Reader, VARINT_MAX};
use crate::error::{ErrorCode, TransportError};
use crate::packet::{ConnectionId, MAX_CID_LEN, RESET_TOKEN_LEN};
use crate::version::VersionInfo;

/// Transport parameter IDs (RFC 9000 §18.2, RFC 9221 §3, multipath §2.1).
pub mod id {
    #![allow(missing_docs)]
    pub const ORIGINAL_DESTINATION_CONNECTION_ID: u64 = 0x00;
    pub const MAX_IDLE_TIMEOUT: u64 = 0x01;
    pub const STATELESS_RESET_TOKEN: u64 = 0x02;
    pub const MAX_UDP_PAYLOAD_SIZE: u64 = 0x03;
    pub const INITIAL_MAX_DATA: u64 = 0x04;
    pub const INITIAL_MAX_STREAM_DATA_BIDI_LOCAL: u64 = 0x05;
    pub const INITIAL_MAX_STREAM_DATA_BIDI_REMOTE: u64 = 0x06;
    pub const INITIAL_MAX_STREAM_DATA_UNI: u64 = 0x07;
    pub const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;
    pub const INITIAL_MAX_STREAMS_UNI: u64 = 0x09;
    pub const ACK_DELAY_EXPONENT: u64 = 0x0a;
    pub const MAX_ACK_DELAY: u64 = 0x0b;
    pub const DISABLE_ACTIVE_MIGRATION: u64 = 0x0c;
    pub const PREFERRED_ADDRESS: u64 = 0x0d;
    pub const ACTIVE_CONNECTION_ID_LIMIT: u64 = 0x0e;
    pub const INITIAL_SOURCE_CONNECTION_ID: u64 = 0x0f;
    pub const RETRY_SOURCE_CONNECTION_ID: u64 = 0x10;
    pub const VERSION_INFORMATION: u64 = 0x11;
    pub const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x20;
    pub const INITIAL_MAX_PATH_ID: u64 = 0x3e;
}

/// The server's preferred address (RFC 9000 §18.2, §9.6). An all-zero
/// address and port for a family means that family is not offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// IPv4 address and port, if offered.
    pub ipv4: Option<SocketAddrV4>,
    /// IPv6 address and port, if offered.
    pub ipv6: Option<SocketAddrV6>,
    /// Connection ID to use on it (sequence number 1; path ID 0 with multipath).
    pub cid: ConnectionId,
    /// Stateless reset token for `cid`.
    pub reset_token: [u8; RESET_TOKEN_LEN],
}

/// Every transport parameter this implementation understands; `Default`
/// gives the RFC defaults (the values that apply when a parameter is absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParams {
    /// Server only: DCID of the client's first Initial (0x00).
    pub original_destination_connection_id: Option<ConnectionId>,
    /// Idle timeout in milliseconds; 0 = none (0x01).
    pub max_idle_timeout: u64,
    /// Server only: reset token for the handshake connection ID (0x02).
    pub stateless_reset_token: Option<[u8; RESET_TOKEN_LEN]>,
    /// Largest UDP payload accepted, >= 1200; default 65527 (0x03).
    pub max_udp_payload_size: u64,
    /// Connection flow-control limit (0x04).
    pub initial_max_data: u64,
    /// Limit for locally initiated bidirectional streams (0x05).
    pub initial_max_stream_data_bidi_local: u64,
    /// Limit for peer-initiated bidirectional streams (0x06).
    pub initial_max_stream_data_bidi_remote: u64,
    /// Limit for unidirectional streams (0x07).
    pub initial_max_stream_data_uni: u64,
    /// Bidirectional stream count, <= 2^60 (0x08).
    pub initial_max_streams_bidi: u64,
    /// Unidirectional stream count, <= 2^60 (0x09).
    pub initial_max_streams_uni: u64,
    /// ACK Delay scaling exponent, <= 20; default 3 (0x0a).
    pub ack_delay_exponent: u64,
    /// Maximum ACK delay in milliseconds, < 2^14; default 25 (0x0b).
    pub max_ack_delay: u64,
    /// Peer must not migrate the handshake path (0x0c).
    pub disable_active_migration: bool,
    /// Server only: preferred address (0x0d).
    pub preferred_address: Option<PreferredAddress>,
    /// Connection IDs the sender will store, >= 2; default 2 (0x0e).
    /// With multipath this is per path (draft §2.2).
    pub active_connection_id_limit: u64,
    /// SCID of the sender's first Initial (0x0f); required from both sides.
    pub initial_source_connection_id: Option<ConnectionId>,
    /// Server only: SCID of its Retry packet (0x10).
    pub retry_source_connection_id: Option<ConnectionId>,
    /// RFC 9368: the version in use and the versions supported (0x11).
    pub version_information: Option<VersionInfo>,
    /// RFC 9221: largest DATAGRAM frame accepted; `None` = DATAGRAM not
    /// supported (0x20).
    pub max_datagram_frame_size: Option<u64>,
    /// Multipath: the initial maximum path ID, <= 2^32-1; `None` = the
    /// multipath extension is not offered (0x3e).
    pub initial_max_path_id: Option<u64>,
    /// Unknown, non-GREASE parameters in the order received, for extensions
    /// implemented outside this module; encoded verbatim after the rest.
    pub extra: Vec<(u64, Vec<u8>)>,
}

impl Default for TransportParams {
    fn default() -> Self {
        Self {
            original_destination_connection_id: None,
            max_idle_timeout: 0,
            stateless_reset_token: None,
            max_udp_payload_size: 65527,
            initial_max_data: 0,
            initial_max_stream_data_bidi_local: 0,
            initial_max_stream_data_bidi_remote: 0,
            initial_max_stream_data_uni: 0,
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            ack_delay_exponent: 3,
            max_ack_delay: 25,
            disable_active_migration: false,
            preferred_address: None,
            active_connection_id_limit: 2,
            initial_source_connection_id: None,
            retry_source_connection_id: None,
            version_information: None,
            max_datagram_frame_size: None,
            initial_max_path_id: None,
            extra: Vec::new(),
        }
    }
}

/// Reserved IDs of the form 31 * N + 27 (RFC 9000 §18.1).
pub fn is_grease(id: u64) -> bool {
    id % 31 == 27
}

fn err(reason: &'static str) -> TransportError {
    TransportError::new(ErrorCode::TRANSPORT_PARAMETER_ERROR, reason)
}

fn push_varint(out: &mut Vec<u8>, v: u64) {
    let v = v.min(VARINT_MAX);
    let len = varint_len(v);
    let tag: u8 = match len {
        1 => 0x00,
        2 => 0x40,
        4 => 0x80,
        _ => 0xc0,
    };
    let start = out.len();
    out.extend((0..len).rev().map(|i| (v >> (8 * i)) as u8));
    if let Some(b) = out.get_mut(start) {
        *b |= tag;
    }
}

fn push_param(out: &mut Vec<u8>, id: u64, value: &[u8]) {
    push_varint(out, id);
    push_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn push_int(out: &mut Vec<u8>, id: u64, v: u64) {
    push_varint(out, id);
    push_varint(out, varint_len(v.min(VARINT_MAX)) as u64);
    push_varint(out, v);
}

fn int_value(v: &[u8]) -> Result<u64, TransportError> {
    let mut r = Reader::new(v);
    let x = r.varint().map_err(|_| err("truncated integer parameter"))?;
    if !r.is_empty() {
        return Err(err("integer parameter length mismatch"));
    }
    Ok(x)
}

/// RFC 9368 §3: a Chosen Version and zero or more Available Versions, 4
/// bytes each, none of them the reserved version 0.
fn version_info_value(v: &[u8]) -> Result<VersionInfo, TransportError> {
    if v.is_empty() || v.len() % 4 != 0 {
        return Err(err("version_information length not a positive multiple of 4"));
    }
    let mut words = v.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    let chosen = words.next().unwrap_or(0);
    let available: Vec<u32> = words.collect();
    if chosen == 0 || available.contains(&0) {
        return Err(err("version_information lists version 0"));
    }
    Ok(VersionInfo { chosen, available })
}

fn cid_value(v: &[u8]) -> Result<ConnectionId, TransportError> {
    ConnectionId::from_slice(v).ok_or(err("connection ID longer than 20 bytes"))
}

impl PreferredAddress {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(41 + self.cid.len());
        let v4 = self.ipv4.unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        v.extend_from_slice(&v4.ip().octets());
        v.extend_from_slice(&v4.port().to_be_bytes());
        let v6 = self.ipv6.unwrap_or(SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0));
        v.extend_from_slice(&v6.ip().octets());
        v.extend_from_slice(&v6.port().to_be_bytes());
        v.push(self.cid.len() as u8);
        v.extend_from_slice(self.cid.as_slice());
        v.extend_from_slice(&self.reset_token);
        v
    }

    fn decode(v: &[u8]) -> Result<Self, TransportError> {
        let bad = |_| err("malformed preferred_address");
        let mut r = Reader::new(v);
        let mut a4 = [0u8; 4];
        a4.copy_from_slice(r.bytes(4).map_err(bad)?);
        let p4 = r.u16().map_err(bad)?;
        let mut a6 = [0u8; 16];
        a6.copy_from_slice(r.bytes(16).map_err(bad)?);
        let p6 = r.u16().map_err(bad)?;
        let cid_len = r.u8().map_err(bad)? as usize;
        // RFC 9000 §18.2: a zero-length CID is not allowed here.
        if cid_len == 0 || cid_len > MAX_CID_LEN {
            return Err(err("preferred_address connection ID length"));
        }
        let cid = cid_value(r.bytes(cid_len).map_err(bad)?)?;
        let mut reset_token = [0u8; RESET_TOKEN_LEN];
        reset_token.copy_from_slice(r.bytes(RESET_TOKEN_LEN).map_err(bad)?);
        if !r.is_empty() {
            return Err(err("preferred_address length mismatch"));
        }
        let ip4 = Ipv4Addr::from(a4);
        let ip6 = Ipv6Addr::from(a6);
        Ok(Self {
            ipv4: (!ip4.is_unspecified() || p4 != 0).then(|| SocketAddrV4::new(ip4, p4)),
            ipv6: (!ip6.is_unspecified() || p6 != 0).then(|| SocketAddrV6::new(ip6, p6, 0, 0)),
            cid,
            reset_token,
        })
    }
}

impl TransportParams {
    /// Append the encoded parameters to `out`. Integer parameters equal to
    /// their default are left out.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let d = TransportParams::default();
        if let Some(c) = &self.original_destination_connection_id {
            push_param(out, id::ORIGINAL_DESTINATION_CONNECTION_ID, c.as_slice());
        }
        let ints = [
            (id::MAX_IDLE_TIMEOUT, self.max_idle_timeout, d.max_idle_timeout),
            (id::MAX_UDP_PAYLOAD_SIZE, self.max_udp_payload_size, d.max_udp_payload_size),
            (id::INITIAL_MAX_DATA, self.initial_max_data, d.initial_max_data),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
                self.initial_max_stream_data_bidi_local,
                d.initial_max_stream_data_bidi_local,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
                self.initial_max_stream_data_bidi_remote,
                d.initial_max_stream_data_bidi_remote,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_UNI,
                self.initial_max_stream_data_uni,
                d.initial_max_stream_data_uni,
            ),
            (id::INITIAL_MAX_STREAMS_BIDI, self.initial_max_streams_bidi, d.initial_max_streams_bidi),
            (id::INITIAL_MAX_STREAMS_UNI, self.initial_max_streams_uni, d.initial_max_streams_uni),
            (id::ACK_DELAY_EXPONENT, self.ack_delay_exponent, d.ack_delay_exponent),
            (id::MAX_ACK_DELAY, self.max_ack_delay, d.max_ack_delay),
            (id::ACTIVE_CONNECTION_ID_LIMIT, self.active_connection_id_limit, d.active_connection_id_limit),
        ];
        for (pid, v, def) in ints {
            if v != def {
                push_int(out, pid, v);
            }
        }
        if let Some(t) = &self.stateless_reset_token {
            push_param(out, id::STATELESS_RESET_TOKEN, t);
        }
        if self.disable_active_migration {
            push_param(out, id::DISABLE_ACTIVE_MIGRATION, &[]);
        }
        if let Some(pa) = &self.preferred_address {
            push_param(out, id::PREFERRED_ADDRESS, &pa.encode());
        }
        if let Some(c) = &self.initial_source_connection_id {
            push_param(out, id::INITIAL_SOURCE_CONNECTION_ID, c.as_slice());
        }
        if let Some(c) = &self.retry_source_connection_id {
            push_param(out, id::RETRY_SOURCE_CONNECTION_ID, c.as_slice());
        }
        if let Some(vi) = &self.version_information {
            let bytes: Vec<u8> = std::iter::once(vi.chosen)
                .chain(vi.available.iter().copied())
                .flat_map(u32::to_be_bytes)
                .collect();
            push_param(out, id::VERSION_INFORMATION, &bytes);
        }
        if let Some(v) = self.max_datagram_frame_size {
            push_int(out, id::MAX_DATAGRAM_FRAME_SIZE, v);
        }
        if let Some(v) = self.initial_max_path_id {
            push_int(out, id::INITIAL_MAX_PATH_ID, v);
        }
        for (pid, v) in &self.extra {
            push_param(out, *pid, v);
        }
    }

    /// Decode and validate the peer's parameters. `from_server` says who
    /// sent them: server-only parameters from a client are rejected, and a
    /// server must send original_destination_connection_id. Both sides must
    /// send initial_source_connection_id (RFC 9000 §7.3). Comparing the
    /// connection IDs with the ones seen on the wire is the caller's job.
    pub fn decode(buf: &[u8], from_server: bool) -> Result<Self, TransportError> {
        let mut p = TransportParams::default();
        let mut seen = 0u64; // bit per known ID (all known IDs are < 64)
        let mut r = Reader::new(buf);
        while !r.is_empty() {
            let pid = r.varint().map_err(|_| err("truncated parameter ID"))?;
            let v = r.varint_prefixed().map_err(|_| err("parameter length past end"))?;
            let known = pid < 64 && p.set_known(pid, v, from_server)?;
            if known {
                if seen & (1 << pid) != 0 {
                    return Err(err("duplicate transport parameter"));
                }
                seen |= 1 << pid;
            } else if !is_grease(pid) {
                p.extra.push((pid, v.to_vec()));
            }
        }
        // Sort-based check keeps a flood of unknown IDs from costing O(n^2).
        let mut ids: Vec<u64> = p.extra.iter().map(|(x, _)| *x).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(err("duplicate transport parameter"));
        }
        if p.initial_source_connection_id.is_none() {
            return Err(err("missing initial_source_connection_id"));
        }
        if from_server && p.original_destination_connection_id.is_none() {
            return Err(err("missing original_destination_connection_id"));
        }
        Ok(p)
    }

    /// Apply one known parameter; `Ok(false)` if `pid` is not one we know.
    fn set_known(&mut self, pid: u64, v: &[u8], from_server: bool) -> Result<bool, TransportError> {
        let server_only = matches!(
            pid,
            id::ORIGINAL_DESTINATION_CONNECTION_ID
                | id::STATELESS_RESET_TOKEN
                | id::PREFERRED_ADDRESS
                | id::RETRY_SOURCE_CONNECTION_ID
        );
        if server_only && !from_server {
            return Err(err("server-only transport parameter sent by client"));
        }
        match pid {
            id::ORIGINAL_DESTINATION_CONNECTION_ID => {
                self.original_destination_connection_id = Some(cid_value(v)?)
            }
            id::MAX_IDLE_TIMEOUT => self.max_idle_timeout = int_value(v)?,
            id::STATELESS_RESET_TOKEN => {
                let t: [u8; RESET_TOKEN_LEN] =
                    v.try_into().map_err(|_| err("stateless_reset_token length"))?;
                self.stateless_reset_token = Some(t);
            }
            id::MAX_UDP_PAYLOAD_SIZE => {
                self.max_udp_payload_size = int_value(v)?;
                if self.max_udp_payload_size < 1200 {
                    return Err(err("max_udp_payload_size below 1200"));
                }
            }
            id::INITIAL_MAX_DATA => self.initial_max_data = int_value(v)?,
            id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => self.initial_max_stream_data_bidi_local = int_value(v)?,
            id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => {
                self.initial_max_stream_data_bidi_remote = int_value(v)?
            }
            id::INITIAL_MAX_STREAM_DATA_UNI => self.initial_max_stream_data_uni = int_value(v)?,
            id::INITIAL_MAX_STREAMS_BIDI | id::INITIAL_MAX_STREAMS_UNI => {
                let n = int_value(v)?;
                if n > 1 << 60 {
                    return Err(err("initial_max_streams above 2^60"));
                }
                if pid == id::INITIAL_MAX_STREAMS_BIDI {
                    self.initial_max_streams_bidi = n;
                } else {
                    self.initial_max_streams_uni = n;
                }
            }
            id::ACK_DELAY_EXPONENT => {
                self.ack_delay_exponent = int_value(v)?;
                if self.ack_delay_exponent > 20 {
                    return Err(err("ack_delay_exponent above 20"));
                }
            }
            id::MAX_ACK_DELAY => {
                self.max_ack_delay = int_value(v)?;
                if self.max_ack_delay >= 1 << 14 {
                    return Err(err("max_ack_delay of 2^14 or more"));
                }
            }
            id::DISABLE_ACTIVE_MIGRATION => {
                if !v.is_empty() {
                    return Err(err("disable_active_migration with a value"));
                }
                self.disable_active_migration = true;
            }
            id::PREFERRED_ADDRESS => self.preferred_address = Some(PreferredAddress::decode(v)?),
            id::ACTIVE_CONNECTION_ID_LIMIT => {
                self.active_connection_id_limit = int_value(v)?;
                if self.active_connection_id_limit < 2 {
                    return Err(err("active_connection_id_limit below 2"));
                }
            }
            id::INITIAL_SOURCE_CONNECTION_ID => self.initial_source_connection_id = Some(cid_value(v)?),
            id::RETRY_SOURCE_CONNECTION_ID => self.retry_source_connection_id = Some(cid_value(v)?),
            id::VERSION_INFORMATION => self.version_information = Some(version_info_value(v)?),
            id::MAX_DATAGRAM_FRAME_SIZE => self.max_datagram_frame_size = Some(int_value(v)?),
            id::INITIAL_MAX_PATH_ID => {
                let m = int_value(v)?;
                if m > u32::MAX as u64 {
                    return Err(err("initial_max_path_id above 2^32-1"));
                }
                self.initial_max_path_id = Some(m);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The value of an unknown parameter kept in [`TransportParams::extra`].
    pub fn extra_param(&self, pid: u64) -> Option<&[u8]> {
        self.extra.iter().find(|(x, _)| *x == pid).map(|(_, v)| v.as_slice())
    }
}

#[cfg(test)]
mod tests;
