//! C API of mpquic: the sans-IO QUIC engine and HTTP/3, for C programs.
//!
//! The header `include/mpquic.h` is generated from this crate by cbindgen
//! (`tests/header.rs` regenerates it and fails if the committed copy
//! differs). Conventions, stated once here and in the header:
//!
//! * **Time** crosses the boundary as nanoseconds on the caller's monotonic
//!   clock (e.g. `clock_gettime(CLOCK_MONOTONIC)`); each connection handle
//!   anchors the first value it sees to an internal `Instant`, so only
//!   differences matter and the clock must never go backwards.
//! * **Errors** are negative `mpquic_error` codes; `MPQUIC_ERROR_DONE` (-1)
//!   means "nothing to do now" and is not a failure.
//! * **Ownership**: every `*_new`, `mpquic_connect`, `mpquic_accept` result
//!   is owned by the caller and released with the matching `*_free`.
//!   Borrowed pointer arguments need only live for the call.
//! * **Threads**: handles are not synchronised; a handle may move between
//!   threads but must be used by one thread at a time. A config may be
//!   shared by connections created from it but not modified concurrently.
//! * No panic crosses the boundary: every entry point of both C APIs (this
//!   and `quiche`) runs its body through `guard` (lib.rs), which catches
//!   unwinding and returns the function's error value (`MPQUIC_ERROR_INTERNAL`,
//!   a QUICHE_ERR_* code, NULL, false or 0); `tests/panic_policy.rs`
//!   checks that every `extern "C"` function reaches it.

#![warn(missing_docs)]
// The exported names follow C conventions (`mpquic_*`).
#![allow(non_camel_case_types)]
// Every exported function checks its pointers; the safety contract is the
// documentation of each function in the header.
#![allow(clippy::missing_safety_doc)]

mod addr;
mod config;
mod conn;
mod dgram;
mod endpoint;
mod fetch;
mod h3;
pub mod quiche;
mod server;
#[cfg(test)]
mod tests;

pub use config::*;
pub use conn::*;
pub use dgram::*;
pub use endpoint::*;
pub use fetch::*;
pub use h3::*;
pub use server::*;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Error codes returned (negated values) by the C API.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mpquic_error {
    /// Nothing to do now (no packet to send, no data to read, no event).
    MPQUIC_ERROR_DONE = -1,
    /// The output buffer is too small.
    MPQUIC_ERROR_BUFFER_TOO_SHORT = -2,
    /// A NULL pointer, bad socket address, non-UTF-8 string or
    /// out-of-range argument.
    MPQUIC_ERROR_INVALID_ARGUMENT = -3,
    /// Unknown congestion controller or scheduler name.
    MPQUIC_ERROR_UNKNOWN_ALGORITHM = -4,
    /// A certificate, key or CA file could not be loaded, or TLS setup
    /// failed.
    MPQUIC_ERROR_TLS = -5,
    /// The connection failed with a transport error (we closed it).
    MPQUIC_ERROR_TRANSPORT = -6,
    /// The peer closed the connection.
    MPQUIC_ERROR_PEER_CLOSED = -7,
    /// The connection is closed.
    MPQUIC_ERROR_CLOSED = -8,
    /// The server supports no version we speak.
    MPQUIC_ERROR_UNSUPPORTED_VERSION = -9,
    /// No such path, or no path available for the operation.
    MPQUIC_ERROR_INVALID_PATH = -10,
    /// The operation does not fit the stream's (or HTTP/3 message's) state.
    MPQUIC_ERROR_INVALID_STATE = -11,
    /// The peer's stream limit allows no new stream now.
    MPQUIC_ERROR_STREAM_LIMIT = -12,
    /// The peer reset the stream.
    MPQUIC_ERROR_STREAM_RESET = -13,
    /// The peer sent STOP_SENDING for the stream.
    MPQUIC_ERROR_STREAM_STOPPED = -14,
    /// The stream does not exist (never opened or already closed).
    MPQUIC_ERROR_UNKNOWN_STREAM = -15,
    /// Data beyond the stream's final size.
    MPQUIC_ERROR_FINAL_SIZE = -16,
    /// The HTTP/3 connection failed (protocol error); it is closed.
    MPQUIC_ERROR_H3_CLOSED = -17,
    /// Headers given to an HTTP/3 send function do not form a valid
    /// message.
    MPQUIC_ERROR_H3_INVALID_HEADERS = -18,
    /// A panic was caught inside the library (a bug); the handle should be
    /// freed.
    MPQUIC_ERROR_INTERNAL = -19,
    /// Multipath was not negotiated (or the handshake is not complete), or
    /// the operation is for the other role (only clients open paths).
    MPQUIC_ERROR_NOT_MULTIPATH = -20,
    /// The peer's path ID limit or connection IDs allow no new path now
    /// (retry after the peer issues more).
    MPQUIC_ERROR_PATH_LIMIT = -21,
    /// The last usable path cannot be abandoned; close the connection.
    MPQUIC_ERROR_LAST_PATH = -22,
    /// A path with these addresses already exists.
    MPQUIC_ERROR_PATH_EXISTS = -23,
}

impl mpquic_error {
    /// The value C sees.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }
}

pub(crate) use mpquic_error::*;

/// Map an engine error to its C code.
pub(crate) fn conn_error(e: &engine::Error) -> mpquic_error {
    match e {
        engine::Error::Transport(_) => MPQUIC_ERROR_TRANSPORT,
        engine::Error::PeerClosed { .. } => MPQUIC_ERROR_PEER_CLOSED,
        engine::Error::BufferTooShort => MPQUIC_ERROR_BUFFER_TOO_SHORT,
        engine::Error::Closed => MPQUIC_ERROR_CLOSED,
        engine::Error::Config(_) => MPQUIC_ERROR_TLS,
        engine::Error::UnsupportedVersion => MPQUIC_ERROR_UNSUPPORTED_VERSION,
        engine::Error::InvalidPath => MPQUIC_ERROR_INVALID_PATH,
    }
}

/// Map a stream error to its C code.
pub(crate) fn stream_error(e: &engine::stream::StreamError) -> mpquic_error {
    use engine::stream::StreamError as S;
    match e {
        S::Done => MPQUIC_ERROR_DONE,
        S::InvalidState => MPQUIC_ERROR_INVALID_STATE,
        S::StreamLimit => MPQUIC_ERROR_STREAM_LIMIT,
        S::Reset(_) => MPQUIC_ERROR_STREAM_RESET,
        S::StopSending(_) => MPQUIC_ERROR_STREAM_STOPPED,
        S::UnknownStream => MPQUIC_ERROR_UNKNOWN_STREAM,
        S::FinalSize => MPQUIC_ERROR_FINAL_SIZE,
    }
}

/// Map a path-management error to its C code.
pub(crate) fn path_error(e: &engine::PathError) -> mpquic_error {
    use engine::PathError as P;
    match e {
        P::NotMultipath | P::NotClient => MPQUIC_ERROR_NOT_MULTIPATH,
        P::PathIdLimit | P::NoConnectionId => MPQUIC_ERROR_PATH_LIMIT,
        P::UnknownPath => MPQUIC_ERROR_INVALID_PATH,
        P::LastPath => MPQUIC_ERROR_LAST_PATH,
        P::Exists => MPQUIC_ERROR_PATH_EXISTS,
        P::MigrationDisabled => MPQUIC_ERROR_INVALID_STATE,
    }
}

/// Map a configuration error to its C code.
pub(crate) fn config_error(e: &engine::ConfigError) -> mpquic_error {
    match e {
        engine::ConfigError::Tls(_) => MPQUIC_ERROR_TLS,
        engine::ConfigError::UnknownAlgorithm(_) => MPQUIC_ERROR_UNKNOWN_ALGORITHM,
        engine::ConfigError::InvalidValue(_) => MPQUIC_ERROR_INVALID_ARGUMENT,
    }
}

/// Run `f`, turning a panic into `on_panic`. Every exported function goes
/// through this so unwinding never reaches C (which would be undefined
/// behaviour). State touched by a panicking call may be inconsistent; the
/// caller gets MPQUIC_ERROR_INTERNAL and is told to free the handle, which
/// is why asserting unwind safety is acceptable here.
pub(crate) fn guard<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(|| {
        #[cfg(test)]
        fault::panic_if_armed();
        f()
    }))
    .unwrap_or(on_panic)
}

/// A byte slice from a C pointer and length; an empty slice for length 0
/// (any pointer, even NULL), `None` for NULL with a non-zero length.
pub(crate) unsafe fn slice<'a>(p: *const u8, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises `p` points to `len` readable bytes.
    Some(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A mutable byte slice from a C pointer and length (see [`slice`]).
pub(crate) unsafe fn slice_mut<'a>(p: *mut u8, len: usize) -> Option<&'a mut [u8]> {
    if len == 0 {
        return Some(&mut []);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises `p` points to `len` writable bytes not
    // aliased for the duration of the call.
    Some(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// A UTF-8 string from a NUL-terminated C string.
pub(crate) unsafe fn c_str<'a>(p: *const libc::c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()
}

/// The library version, a static NUL-terminated string (never free it).
#[no_mangle]
pub extern "C" fn mpquic_version() -> *const libc::c_char {
    crate::guard(std::ptr::null(), || {
        static V: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
        V.as_ptr().cast()
    })
}

/// Fill `out` with `len` random bytes (a fresh connection ID, at most 20
/// bytes for QUIC). Returns 0, or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_random_cid(out: *mut u8, len: usize) -> i32 {
    guard(MPQUIC_ERROR_INTERNAL.code(), || {
        // SAFETY: see slice_mut.
        let Some(out) = (unsafe { slice_mut(out, len) }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
        if len > 20 {
            return MPQUIC_ERROR_INVALID_ARGUMENT.code();
        }
        out.copy_from_slice(engine::random_cid(len).as_slice());
        0
    })
}

/// Fault injection for tests: the next [`guard`] entered on this thread
/// panics inside, as a bug in the library would.
#[cfg(test)]
pub(crate) mod fault {
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
    }

    /// Make the next guarded call on this thread panic.
    pub(crate) fn arm() {
        ARMED.with(|a| a.set(true));
    }

    /// Whether the armed panic has not happened yet (disarms).
    pub(crate) fn disarm() -> bool {
        ARMED.with(|a| a.replace(false))
    }

    pub(super) fn panic_if_armed() {
        if disarm() {
            panic!("fault injected by a test");
        }
    }
}
