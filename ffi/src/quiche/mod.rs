//! A second C API with quiche's names and semantics (`include/quiche.h`),
//! so programs written against quiche 0.30's `quiche.h` relink against
//! libmpquic unchanged.
//!
//! Unlike the `mpquic_*` API, this layer reads the monotonic clock itself
//! (as quiche does): quiche's functions take no time argument. The engine
//! still only ever sees the instants passed to it from here.
//!
//! mpquic extensions (multipath, cc and scheduler by name, opening a path,
//! per-path statistics) are in [`mp`]; what is not supported returns
//! quiche's error for it (listed in the README).

mod config;
mod conn;
mod dgram;
mod h3;
mod migration;
mod mp;
mod packet;
mod path_events;
mod paths;
mod stats;
mod stream;
#[cfg(test)]
mod tests;
mod unsupported;

pub use config::*;
pub use conn::*;
pub use dgram::*;
pub use h3::*;
pub use migration::*;
pub use mp::*;
pub use packet::*;
pub use path_events::*;
pub use paths::*;
pub use stats::*;
pub use stream::*;
pub use unsupported::*;

use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;
use std::time::Instant;

/// The QUIC version this library speaks (QUIC v1).
pub const QUICHE_PROTOCOL_VERSION: u32 = 0x0000_0001;
/// Longest connection ID.
pub const QUICHE_MAX_CONN_ID_LEN: usize = 20;
/// Smallest datagram carrying a client Initial.
pub const QUICHE_MIN_CLIENT_INITIAL_LEN: usize = 1200;

/// Transport errors, with quiche's values. Functions return them negated
/// as `ssize_t` / `int`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum quiche_error {
    /// Nothing to do now (no packet to send, no data to read).
    QUICHE_ERR_DONE = -1,
    /// The buffer is too small.
    QUICHE_ERR_BUFFER_TOO_SHORT = -2,
    /// The version is not supported.
    QUICHE_ERR_UNKNOWN_VERSION = -3,
    /// A frame could not be decoded.
    QUICHE_ERR_INVALID_FRAME = -4,
    /// A packet could not be decoded.
    QUICHE_ERR_INVALID_PACKET = -5,
    /// The operation does not fit the connection's state (also: an
    /// unsupported feature, or a bad argument).
    QUICHE_ERR_INVALID_STATE = -6,
    /// The operation does not fit the stream's state.
    QUICHE_ERR_INVALID_STREAM_STATE = -7,
    /// The peer's transport parameters are invalid.
    QUICHE_ERR_INVALID_TRANSPORT_PARAM = -8,
    /// A cryptographic operation failed.
    QUICHE_ERR_CRYPTO_FAIL = -9,
    /// The TLS handshake failed.
    QUICHE_ERR_TLS_FAIL = -10,
    /// The peer broke flow control.
    QUICHE_ERR_FLOW_CONTROL = -11,
    /// The peer broke the stream limit.
    QUICHE_ERR_STREAM_LIMIT = -12,
    /// Data beyond the stream's final size.
    QUICHE_ERR_FINAL_SIZE = -13,
    /// Congestion control failed.
    QUICHE_ERR_CONGESTION_CONTROL = -14,
    /// The peer sent STOP_SENDING (code in `out_error_code`).
    QUICHE_ERR_STREAM_STOPPED = -15,
    /// The peer reset the stream (code in `out_error_code`).
    QUICHE_ERR_STREAM_RESET = -16,
    /// Too many connection IDs from the peer.
    QUICHE_ERR_ID_LIMIT = -17,
    /// No connection ID is available.
    QUICHE_ERR_OUT_OF_IDENTIFIERS = -18,
    /// A key update failed.
    QUICHE_ERR_KEY_UPDATE = -19,
    /// Too much CRYPTO data buffered.
    QUICHE_ERR_CRYPTO_BUFFER_EXCEEDED = -20,
    /// An ACK frame acknowledged packets never sent.
    QUICHE_ERR_INVALID_ACK_RANGE = -21,
    /// The peer acknowledged packets it cannot have received.
    QUICHE_ERR_OPTIMISTIC_ACK_DETECTED = -22,
    /// Bad initial destination connection ID.
    QUICHE_ERR_INVALID_DCID_INITIALIZATION = -23,
}

pub(crate) use quiche_error::*;

impl quiche_error {
    pub(crate) fn c(self) -> c_int {
        self as c_int
    }
    pub(crate) fn ss(self) -> libc::ssize_t {
        self as libc::ssize_t
    }
}

/// Map an engine connection error to quiche's code.
pub(crate) fn conn_error(e: &engine::Error) -> quiche_error {
    use engine::Error as E;
    match e {
        E::Transport(t) => transport_error(t.code.0),
        // quiche answers calls on a closed connection with Done.
        E::PeerClosed { .. } | E::Closed => QUICHE_ERR_DONE,
        E::BufferTooShort => QUICHE_ERR_BUFFER_TOO_SHORT,
        E::Config(_) => QUICHE_ERR_TLS_FAIL,
        E::UnsupportedVersion => QUICHE_ERR_UNKNOWN_VERSION,
        E::InvalidPath => QUICHE_ERR_INVALID_STATE,
    }
}

/// quiche's code for a QUIC transport error code (RFC 9000 §20.1).
fn transport_error(code: u64) -> quiche_error {
    match code {
        0x3 => QUICHE_ERR_FLOW_CONTROL,
        0x4 => QUICHE_ERR_STREAM_LIMIT,
        0x5 => QUICHE_ERR_INVALID_STREAM_STATE,
        0x6 => QUICHE_ERR_FINAL_SIZE,
        0x7 => QUICHE_ERR_INVALID_FRAME,
        0x8 => QUICHE_ERR_INVALID_TRANSPORT_PARAM,
        0x9 => QUICHE_ERR_ID_LIMIT,
        0xd => QUICHE_ERR_CRYPTO_BUFFER_EXCEEDED,
        0xe => QUICHE_ERR_KEY_UPDATE,
        0x100..=0x1ff => QUICHE_ERR_TLS_FAIL,
        _ => QUICHE_ERR_INVALID_STATE,
    }
}

/// Map a stream error to quiche's code and the peer's application code.
pub(crate) fn stream_error(e: &engine::stream::StreamError) -> (quiche_error, Option<u64>) {
    use engine::stream::StreamError as S;
    match e {
        S::Done => (QUICHE_ERR_DONE, None),
        S::InvalidState | S::UnknownStream => (QUICHE_ERR_INVALID_STREAM_STATE, None),
        S::StreamLimit => (QUICHE_ERR_STREAM_LIMIT, None),
        S::Reset(c) => (QUICHE_ERR_STREAM_RESET, Some(*c)),
        S::StopSending(c) => (QUICHE_ERR_STREAM_STOPPED, Some(*c)),
        S::FinalSize => (QUICHE_ERR_FINAL_SIZE, None),
    }
}

/// The current time: the one clock read of the quiche layer (quiche's API
/// takes no time arguments; the engine gets this as `now`).
#[allow(clippy::disallowed_methods)]
pub(crate) fn now() -> Instant {
    Instant::now()
}

/// `t` as a CLOCK_MONOTONIC timespec (Rust's `Instant` is that clock on
/// Linux, but its value is opaque: go through the offset from now).
pub(crate) fn timespec_of(t: Instant) -> libc::timespec {
    let here = now();
    // SAFETY: clock_gettime writes the timespec it is given.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let base = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
    let delta = if t >= here {
        t.duration_since(here).as_nanos() as i128
    } else {
        -(here.duration_since(t).as_nanos() as i128)
    };
    let ns = (base + delta).max(0);
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// The library version, a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn quiche_version() -> *const c_char {
    crate::guard(std::ptr::null(), || {
        static V: &str = concat!("mpquic-", env!("CARGO_PKG_VERSION"), "\0");
        V.as_ptr().cast()
    })
}

/// A debug-log callback and its argument.
struct Logger {
    cb: unsafe extern "C" fn(line: *const c_char, argp: *mut c_void),
    argp: usize,
}

static LOGGER: Mutex<Option<Logger>> = Mutex::new(None);

/// Send one line to the debug-log callback, if one is set. mpquic logs
/// connection milestones (creation, handshake, close), not quiche's
/// packet-level trace.
pub(crate) fn log_line(line: &str) {
    let Ok(g) = LOGGER.lock() else { return };
    let Some(l) = g.as_ref() else { return };
    let Ok(s) = std::ffi::CString::new(line) else { return };
    // SAFETY: the callback was given by the application for this purpose.
    unsafe { (l.cb)(s.as_ptr(), l.argp as *mut c_void) };
}

/// Set the callback that receives debug log lines (once per process, as
/// in quiche; a second call returns -1).
#[no_mangle]
pub unsafe extern "C" fn quiche_enable_debug_logging(
    cb: Option<unsafe extern "C" fn(line: *const c_char, argp: *mut c_void)>,
    argp: *mut c_void,
) -> c_int {
    crate::guard(-1, || {
        let Some(cb) = cb else { return -1 };
        let Ok(mut g) = LOGGER.lock() else { return -1 };
        if g.is_some() {
            return -1;
        }
        *g = Some(Logger { cb, argp: argp as usize });
        0
    })
}

/// Write `val` as a QUIC variable-length integer into `buf`; returns the
/// bytes written, or QUICHE_ERR_BUFFER_TOO_SHORT (also for values of 2^62
/// and more, which have no encoding).
#[no_mangle]
pub unsafe extern "C" fn quiche_put_varint(buf: *mut u8, buf_len: usize, val: u64) -> c_int {
    crate::guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: `buf` holds `buf_len` writable bytes.
        let Some(out) = (unsafe { crate::slice_mut(buf, buf_len) }) else {
            return QUICHE_ERR_INVALID_STATE.c();
        };
        if val >= 1 << 62 {
            return QUICHE_ERR_BUFFER_TOO_SHORT.c();
        }
        let mut w = engine::codec::Writer::new(out);
        match w.varint(val) {
            Ok(()) => w.pos() as c_int,
            Err(_) => QUICHE_ERR_BUFFER_TOO_SHORT.c(),
        }
    })
}

/// Read a variable-length integer from `buf` into `*val`; returns the bytes
/// read, or QUICHE_ERR_BUFFER_TOO_SHORT.
#[no_mangle]
pub unsafe extern "C" fn quiche_get_varint(buf: *const u8, buf_len: usize, val: *mut u64) -> libc::ssize_t {
    crate::guard(QUICHE_ERR_INVALID_STATE.ss(), || {
        // SAFETY: `buf` holds `buf_len` readable bytes.
        let Some(b) = (unsafe { crate::slice(buf, buf_len) }) else { return QUICHE_ERR_INVALID_STATE.ss() };
        let mut r = engine::codec::Reader::new(b);
        match r.varint() {
            Ok(v) => {
                // SAFETY: `val` is writable when not NULL.
                if let Some(out) = unsafe { val.as_mut() } {
                    *out = v;
                }
                r.pos() as libc::ssize_t
            }
            Err(_) => QUICHE_ERR_BUFFER_TOO_SHORT.ss(),
        }
    })
}
