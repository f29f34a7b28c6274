//! The `frames` array of `quic:packet_sent` / `quic:packet_received`
//! (quic-events draft 12 §8.13, `$QuicFrame`), decoded from a packet's
//! plaintext. Lengths of data-carrying frames go in `raw.payload_length`.
//! The multipath frames (draft-ietf-quic-multipath-21 §4) and PATH_DSR are
//! mpquic extensions of `$QuicFrame` ([`super::QUIC_EXTENSION`]).

use std::fmt::Write as _;

use crate::frame::{self, Frame};

use super::{hex, json_str};

/// Append `,"frames":[...]` for the frames in `payload`, then `padding`
/// bytes of PADDING. Frames after one that does not decode are left out
/// (the engine never sends such a packet, and drops one it receives).
pub(super) fn write_frames(s: &mut String, payload: &[u8], padding: usize) {
    s.push_str(",\"frames\":[");
    let mut first = true;
    let mut sep = |s: &mut String| {
        if !first {
            s.push(',');
        }
        first = false;
    };
    let mut pad = 0usize;
    let _ = frame::for_each_frame(payload, |f| {
        // Consecutive PADDING (the decoder may split it) is one entry.
        if let Frame::Padding { len } = f {
            pad += len;
            return Ok(());
        }
        if pad > 0 {
            sep(s);
            padding_frame(s, pad);
            pad = 0;
        }
        sep(s);
        write_frame(s, &f);
        Ok(())
    });
    pad += padding;
    if pad > 0 {
        sep(s);
        padding_frame(s, pad);
    }
    s.push(']');
}

fn padding_frame(s: &mut String, len: usize) {
    let _ = write!(s, "{{\"frame_type\":\"padding\",\"raw\":{{\"length\":{len},\"payload_length\":{len}}}}}");
}

/// A flow-control frame: `{"frame_type", ["stream_id"], ["stream_type"], key: v}`.
fn limit(s: &mut String, ty: &str, key: &str, v: u64, stream_id: Option<u64>, bidi: Option<bool>) {
    let _ = write!(s, "{{\"frame_type\":\"{ty}\",");
    if let Some(id) = stream_id {
        let _ = write!(s, "\"stream_id\":{id},");
    }
    if let Some(b) = bidi {
        let _ = write!(s, "\"stream_type\":\"{}\",", if b { "bidirectional" } else { "unidirectional" });
    }
    let _ = write!(s, "\"{key}\":{v}}}");
}

/// One frame as a JSON object.
fn write_frame(s: &mut String, f: &Frame<'_>) {
    match f {
        Frame::Padding { len } => padding_frame(s, *len),
        Frame::Ping => s.push_str("{\"frame_type\":\"ping\"}"),
        Frame::Ack { path_id, ranges, ecn, .. } => {
            match path_id {
                Some(p) => {
                    let _ = write!(s, "{{\"frame_type\":\"path_ack\",\"path_id\":{p},");
                }
                None => s.push_str("{\"frame_type\":\"ack\","),
            }
            // AckRange: [first, last] inclusive, or [n] for one packet.
            s.push_str("\"acked_ranges\":[");
            for (i, r) in ranges.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let last = r.end.saturating_sub(1);
                if r.start == last {
                    let _ = write!(s, "[{last}]");
                } else {
                    let _ = write!(s, "[{},{last}]", r.start);
                }
            }
            s.push(']');
            if let Some(e) = ecn {
                let _ = write!(s, ",\"ect1\":{},\"ect0\":{},\"ce\":{}", e.ect1, e.ect0, e.ce);
            }
            s.push('}');
        }
        Frame::ResetStream { stream_id, error_code, final_size } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"reset_stream\",\"stream_id\":{stream_id},\"error_code\":{error_code},\"final_size\":{final_size}}}"
            );
        }
        Frame::StopSending { stream_id, error_code } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"stop_sending\",\"stream_id\":{stream_id},\"error_code\":{error_code}}}"
            );
        }
        Frame::Crypto { offset, data } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"crypto\",\"offset\":{offset},\"raw\":{{\"payload_length\":{}}}}}",
                data.len()
            );
        }
        Frame::NewToken { token } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"new_token\",\"token\":{{\"raw\":{{\"length\":{}}}}}}}",
                token.len()
            );
        }
        Frame::Stream { stream_id, offset, data, fin } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"stream\",\"stream_id\":{stream_id},\"offset\":{offset},\"fin\":{fin},\
                 \"raw\":{{\"payload_length\":{}}}}}",
                data.len()
            );
        }
        Frame::MaxData(v) => limit(s, "max_data", "maximum", *v, None, None),
        Frame::DataBlocked(v) => limit(s, "data_blocked", "limit", *v, None, None),
        Frame::MaxStreamData { stream_id, max } => {
            limit(s, "max_stream_data", "maximum", *max, Some(*stream_id), None)
        }
        Frame::StreamDataBlocked { stream_id, limit: v } => {
            limit(s, "stream_data_blocked", "limit", *v, Some(*stream_id), None)
        }
        Frame::MaxStreams { bidi, max } => limit(s, "max_streams", "maximum", *max, None, Some(*bidi)),
        Frame::StreamsBlocked { bidi, limit: v } => {
            limit(s, "streams_blocked", "limit", *v, None, Some(*bidi))
        }
        Frame::NewConnectionId { path_id, seq, retire_prior_to, cid, .. } => {
            match path_id {
                Some(p) => {
                    let _ = write!(s, "{{\"frame_type\":\"path_new_connection_id\",\"path_id\":{p},");
                }
                None => s.push_str("{\"frame_type\":\"new_connection_id\","),
            }
            let _ = write!(
                s,
                "\"sequence_number\":{seq},\"retire_prior_to\":{retire_prior_to},\"connection_id_length\":{},\"connection_id\":\"",
                cid.len()
            );
            hex(s, cid.as_slice());
            s.push_str("\"}");
        }
        Frame::RetireConnectionId { path_id, seq } => match path_id {
            Some(p) => {
                let _ = write!(
                    s,
                    "{{\"frame_type\":\"path_retire_connection_id\",\"path_id\":{p},\"sequence_number\":{seq}}}"
                );
            }
            None => {
                let _ = write!(s, "{{\"frame_type\":\"retire_connection_id\",\"sequence_number\":{seq}}}");
            }
        },
        Frame::PathChallenge(d) | Frame::PathResponse(d) => {
            let ty = if matches!(f, Frame::PathChallenge(_)) { "path_challenge" } else { "path_response" };
            let _ = write!(s, "{{\"frame_type\":\"{ty}\",\"data\":\"");
            hex(s, d);
            s.push_str("\"}");
        }
        Frame::ConnectionClose { error_code, frame_type, reason } => {
            let space = if frame_type.is_some() { "transport" } else { "application" };
            let _ = write!(
                s,
                "{{\"frame_type\":\"connection_close\",\"error_space\":\"{space}\",\"raw_error_code\":{error_code}"
            );
            if let Some(t) = frame_type {
                let _ = write!(s, ",\"trigger_frame_type\":{t}");
            }
            if let Ok(r) = std::str::from_utf8(reason) {
                s.push_str(",\"reason\":");
                json_str(s, r);
            }
            s.push('}');
        }
        Frame::HandshakeDone => s.push_str("{\"frame_type\":\"handshake_done\"}"),
        Frame::Datagram { data } => {
            let _ =
                write!(s, "{{\"frame_type\":\"datagram\",\"raw\":{{\"payload_length\":{}}}}}", data.len());
        }
        Frame::PathAbandon { path_id, error_code } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"path_abandon\",\"path_id\":{path_id},\"error_code\":{error_code}}}"
            );
        }
        Frame::PathStatusBackup { path_id, seq } | Frame::PathStatusAvailable { path_id, seq } => {
            let ty = if matches!(f, Frame::PathStatusBackup { .. }) {
                "path_status_backup"
            } else {
                "path_status_available"
            };
            let _ = write!(
                s,
                "{{\"frame_type\":\"{ty}\",\"path_id\":{path_id},\"path_status_sequence_number\":{seq}}}"
            );
        }
        Frame::MaxPathId(m) => {
            let _ = write!(s, "{{\"frame_type\":\"max_path_id\",\"maximum_path_id\":{m}}}");
        }
        Frame::PathsBlocked(m) => {
            let _ = write!(s, "{{\"frame_type\":\"paths_blocked\",\"maximum_path_id\":{m}}}");
        }
        Frame::PathCidsBlocked { path_id, next_seq } => {
            let _ = write!(
                s,
                "{{\"frame_type\":\"path_cids_blocked\",\"path_id\":{path_id},\"next_sequence_number\":{next_seq}}}"
            );
        }
        Frame::PathDsr { path_id, dsr } => {
            let _ = write!(s, "{{\"frame_type\":\"path_dsr\",\"path_id\":{path_id},\"desired_rate\":{dsr}}}");
        }
        Frame::Timestamp(t) => {
            let _ = write!(s, "{{\"frame_type\":\"time_stamp\",\"time_stamp\":{t}}}");
        }
    }
}
