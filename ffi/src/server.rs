//! Server helpers: `mpquic_validator` (Version Negotiation, Retry, tokens)
//! and connection-ID lookup for demultiplexing datagrams.

use std::ffi::c_char;

use engine::server::{Accept, Validator};
use libc::{sockaddr, socklen_t};

use crate::addr::from_c;
use crate::{guard, slice, slice_mut, MPQUIC_ERROR_INTERNAL, MPQUIC_ERROR_INVALID_ARGUMENT};

/// Stateless front end of a server (opaque): decides what to do with a
/// datagram that matched no connection. Create with mpquic_validator_new,
/// free with mpquic_validator_free. Read-only after creation, so it may be
/// shared between threads.
pub struct mpquic_validator {
    inner: Validator,
    /// Whether Retry was asked for at creation.
    retry: bool,
}

/// What mpquic_validator_handle decided.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_accept_kind {
    /// Create a connection with mpquic_accept using the IDs in the
    /// mpquic_accept_info, then pass the datagram to mpquic_conn_recv.
    MPQUIC_ACCEPT_NEW = 0,
    /// Send the first `reply_len` bytes of the output buffer (Version
    /// Negotiation or Retry) back to the sender and forget the datagram.
    MPQUIC_ACCEPT_REPLY = 1,
    /// Drop the datagram.
    MPQUIC_ACCEPT_DROP = 2,
}

/// Details of mpquic_validator_handle's decision.
#[repr(C)]
pub struct mpquic_accept_info {
    /// The decision.
    pub kind: mpquic_accept_kind,
    /// MPQUIC_ACCEPT_NEW: the client's original DCID (pass as `odcid`).
    pub odcid: [u8; 20],
    /// Length of `odcid`.
    pub odcid_len: usize,
    /// MPQUIC_ACCEPT_NEW after a Retry: the Retry's SCID, to use as both
    /// `scid` and `retry_scid` of mpquic_accept; length 0 without Retry.
    pub retry_scid: [u8; 20],
    /// Length of `retry_scid`.
    pub retry_scid_len: usize,
    /// MPQUIC_ACCEPT_REPLY: bytes of the output buffer to send.
    pub reply_len: usize,
}

/// A new validator. With `retry`, token-less Initials are answered with a
/// Retry (address validation before keeping state); tokens live 30 s.
/// Returns NULL if the token key cannot be created. Free with
/// mpquic_validator_free.
#[no_mangle]
pub extern "C" fn mpquic_validator_new(retry: bool) -> *mut mpquic_validator {
    guard(std::ptr::null_mut(), || match Validator::new(retry) {
        Ok(inner) => Box::into_raw(Box::new(mpquic_validator { inner, retry })),
        Err(_) => std::ptr::null_mut(),
    })
}

/// A NEW_TOKEN token for the client at `peer` (send it with
/// mpquic_conn_send_new_token): its next connection from the same IP within
/// a day skips the Retry. `now_secs` as for mpquic_validator_handle. Returns
/// the token's length, or MPQUIC_ERROR_BUFFER_TOO_SHORT (128 bytes suffice)
/// or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_validator_new_token(
    v: *const mpquic_validator,
    peer: *const sockaddr,
    peer_len: socklen_t,
    now_secs: u64,
    out: *mut u8,
    out_len: usize,
) -> i64 {
    guard(i64::from(MPQUIC_ERROR_INTERNAL.code()), || {
        // SAFETY: argument contracts as documented.
        let (v, peer, out) = unsafe { (v.as_ref(), from_c(peer, peer_len), slice_mut(out, out_len)) };
        let (Some(v), Some(peer), Some(out)) = (v, peer, out) else {
            return i64::from(MPQUIC_ERROR_INVALID_ARGUMENT.code());
        };
        let t = v.inner.new_token(&peer, now_secs);
        match out.get_mut(..t.len()) {
            Some(dst) => {
                dst.copy_from_slice(&t);
                t.len() as i64
            }
            None => i64::from(crate::MPQUIC_ERROR_BUFFER_TOO_SHORT.code()),
        }
    })
}

/// The QUIC versions the validator accepts (the server config's list, e.g.
/// "v1,v2"; default "v1"): Initials of other versions get Version
/// Negotiation listing these. Call before sharing the validator. Returns 0
/// or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_validator_set_versions(v: *mut mpquic_validator, list: *const c_char) -> i32 {
    guard(MPQUIC_ERROR_INVALID_ARGUMENT.code(), || {
        // SAFETY: the caller passes a live validator not yet shared, and a
        // NUL-terminated string or NULL.
        let (Some(v), false) = (unsafe { v.as_mut() }, list.is_null()) else {
            return MPQUIC_ERROR_INVALID_ARGUMENT.code();
        };
        // SAFETY: as above.
        let s = unsafe { std::ffi::CStr::from_ptr(list) }.to_str().ok();
        match s.map(crate::config::versions_arg) {
            Some(Ok(list)) => {
                v.inner.set_versions(&list);
                0
            }
            _ => MPQUIC_ERROR_INVALID_ARGUMENT.code(),
        }
    })
}

/// Free a validator (NULL is ignored).
#[no_mangle]
pub unsafe extern "C" fn mpquic_validator_free(v: *mut mpquic_validator) {
    if v.is_null() {
        return;
    }
    // SAFETY: `v` came from mpquic_validator_new and is freed once.
    let b = unsafe { Box::from_raw(v) };
    crate::guard((), move || drop(b));
}

/// Decide what to do with datagram `dgram` from `from` that matched no
/// connection. `now_secs` is any clock in seconds (wall clock if tokens
/// must survive restarts; tokens carry it). Replies go to `out` (at least
/// 1200 bytes recommended). MPQUIC_ACCEPT_NEW only for an Initial that
/// decrypts, in a datagram of at least 1200 bytes: garbage behind a
/// valid-looking long header is dropped before any state exists. Fills
/// `*info` and returns its kind (>= 0), or a negative mpquic_error for
/// invalid arguments. Same as mpquic_validator_handle_bounded without a
/// half-open bound.
#[no_mangle]
pub unsafe extern "C" fn mpquic_validator_handle(
    v: *const mpquic_validator,
    dgram: *const u8,
    dgram_len: usize,
    from: *const sockaddr,
    from_len: socklen_t,
    now_secs: u64,
    out: *mut u8,
    out_len: usize,
    info: *mut mpquic_accept_info,
) -> i32 {
    // SAFETY: same contract.
    unsafe {
        mpquic_validator_handle_bounded(
            v,
            dgram,
            dgram_len,
            from,
            from_len,
            now_secs,
            0,
            usize::MAX,
            out,
            out_len,
            info,
        )
    }
}

/// As mpquic_validator_handle, for a server that has `half_open`
/// connections whose handshake has not completed (count those not yet
/// mpquic_conn_is_established): from `max_half_open` on, clients must pass
/// a Retry even if the validator was made without (RFC 9000 §8.1), so a
/// flood of Initials cannot hold unbounded state.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mpquic_validator_handle_bounded(
    v: *const mpquic_validator,
    dgram: *const u8,
    dgram_len: usize,
    from: *const sockaddr,
    from_len: socklen_t,
    now_secs: u64,
    half_open: usize,
    max_half_open: usize,
    out: *mut u8,
    out_len: usize,
    info: *mut mpquic_accept_info,
) -> i32 {
    guard(MPQUIC_ERROR_INTERNAL.code(), || {
        // SAFETY: argument contracts as documented.
        let (v, dgram, from, out, info) = unsafe {
            (
                v.as_ref(),
                slice(dgram, dgram_len),
                from_c(from, from_len),
                slice_mut(out, out_len),
                info.as_mut(),
            )
        };
        let (Some(v), Some(dgram), Some(from), Some(out), Some(info)) = (v, dgram, from, out, info) else {
            return MPQUIC_ERROR_INVALID_ARGUMENT.code();
        };
        *info = mpquic_accept_info {
            kind: mpquic_accept_kind::MPQUIC_ACCEPT_DROP,
            odcid: [0; 20],
            odcid_len: 0,
            retry_scid: [0; 20],
            retry_scid_len: 0,
            reply_len: 0,
        };
        let retry = v.retry || half_open >= max_half_open;
        match v.inner.handle_retrying(dgram, &from, now_secs, out, retry) {
            Accept::New { .. } if !engine::endpoint::client_initial_decrypts(dgram) => {}
            Accept::New { odcid, retry_scid } => {
                info.kind = mpquic_accept_kind::MPQUIC_ACCEPT_NEW;
                info.odcid_len = copy_cid(odcid.as_slice(), &mut info.odcid);
                if let Some(r) = retry_scid {
                    info.retry_scid_len = copy_cid(r.as_slice(), &mut info.retry_scid);
                }
            }
            Accept::Reply(n) => {
                info.kind = mpquic_accept_kind::MPQUIC_ACCEPT_REPLY;
                info.reply_len = n;
            }
            Accept::Drop => {}
        }
        info.kind as i32
    })
}

/// Write into `out` a Stateless Reset (RFC 9000 §10.3) answering `dgram`, a
/// short-header datagram whose `cid_len`-byte destination connection ID
/// matches no connection, with tokens derived from the 32-byte `key` given to
/// mpquic_config_set_stateless_reset_key. Returns its length (send it back to
/// the sender), 0 when none may be sent (long header, or too short for a
/// reset smaller than itself), or a negative mpquic_error.
#[no_mangle]
pub unsafe extern "C" fn mpquic_stateless_reset(
    key: *const u8,
    dgram: *const u8,
    dgram_len: usize,
    cid_len: usize,
    out: *mut u8,
    out_len: usize,
) -> i64 {
    guard(i64::from(MPQUIC_ERROR_INTERNAL.code()), || {
        // SAFETY: argument contracts as documented.
        let (key, dgram, out) = unsafe { (slice(key, 32), slice(dgram, dgram_len), slice_mut(out, out_len)) };
        let (Some(key), Some(dgram), Some(out)) = (key, dgram, out) else {
            return i64::from(MPQUIC_ERROR_INVALID_ARGUMENT.code());
        };
        let mut k = [0u8; 32];
        k.copy_from_slice(key);
        let key = engine::server::StatelessResetKey::from_bytes(k);
        engine::server::stateless_reset(&key, dgram, cid_len, out).map_or(0, |n| n as i64)
    })
}

fn copy_cid(src: &[u8], dst: &mut [u8; 20]) -> usize {
    let n = src.len().min(20);
    for (d, s) in dst.iter_mut().zip(src.iter().take(n)) {
        *d = *s;
    }
    n
}

/// Extract the destination connection ID of a datagram's first packet, for
/// routing it to its connection. Long headers carry its length; for short
/// headers pass the length of the IDs this server issues as
/// `short_dcid_len`. Copies the ID into `out` (20 bytes suffice) and
/// returns its length, or MPQUIC_ERROR_INVALID_ARGUMENT for a truncated or
/// malformed header or a too-small `out`.
#[no_mangle]
pub unsafe extern "C" fn mpquic_header_dcid(
    dgram: *const u8,
    dgram_len: usize,
    short_dcid_len: usize,
    out: *mut u8,
    out_len: usize,
) -> i32 {
    guard(MPQUIC_ERROR_INTERNAL.code(), || {
        // SAFETY: argument contracts as documented.
        let (Some(dgram), Some(out)) =
            (unsafe { slice(dgram, dgram_len) }, unsafe { slice_mut(out, out_len) })
        else {
            return MPQUIC_ERROR_INVALID_ARGUMENT.code();
        };
        let dcid = match dgram.first() {
            Some(b) if b & 0x80 != 0 => match engine::packet::invariant_header(dgram) {
                Some(h) => h.dcid,
                None => return MPQUIC_ERROR_INVALID_ARGUMENT.code(),
            },
            Some(_) => match dgram.get(1..1 + short_dcid_len) {
                Some(d) if short_dcid_len <= 20 => d,
                _ => return MPQUIC_ERROR_INVALID_ARGUMENT.code(),
            },
            None => return MPQUIC_ERROR_INVALID_ARGUMENT.code(),
        };
        let Some(dst) = out.get_mut(..dcid.len()) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
        dst.copy_from_slice(dcid);
        dcid.len() as i32
    })
}
