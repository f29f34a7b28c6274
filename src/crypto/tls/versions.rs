//! Compatible version negotiation inside the handshake (RFC 9368 §2.3):
//! the server learns the client's Available Versions from the
//! version_information transport parameter of the ClientHello, and must
//! pick the connection's version before its ServerHello goes out, since
//! the ServerHello's Initial packets and every later key use that version.
//! BoringSSL's early (select-certificate) callback is that moment: it sees
//! the parsed ClientHello and may still set our transport parameters.

use std::ffi::c_int;

use boring_sys as ffi;

use super::{state_of, TlsSession};
use crate::transport_params::TransportParams;
use crate::version::Version;

impl TlsSession {
    /// The version whose labels derive the keys of secrets from now on.
    /// A client sets the version it switched to before feeding the
    /// ServerHello; a server sets the client's version before its first
    /// ClientHello byte.
    pub fn set_version(&mut self, version: Version) {
        self.state_mut().version = version;
    }

    /// The version keys are derived for: for a server, the one it chose.
    pub fn version(&self) -> Version {
        self.state().version
    }

    /// Server: our encoded transport parameters for each version we accept,
    /// in our order of preference. On the ClientHello the first one the
    /// client lists as available (and the current one when it lists none)
    /// becomes the connection's version and its parameters are sent.
    pub fn offer_versions(&mut self, offers: Vec<(Version, Vec<u8>)>) {
        self.state_mut().offers = offers;
    }
}

/// The client's Available Versions, read from its transport parameters
/// (parameters that do not decode are reported once the handshake ends).
fn client_version_info(hello: &ffi::SSL_CLIENT_HELLO) -> Option<crate::version::VersionInfo> {
    let mut p: *const u8 = std::ptr::null();
    let mut len = 0usize;
    // SAFETY: a live ClientHello per the callback contract; the buffer
    // lives as long as it.
    let raw = unsafe {
        if ffi::SSL_early_callback_ctx_extension_get(hello, QUIC_TP_EXTENSION, &mut p, &mut len) != 1
            || p.is_null()
        {
            return None;
        }
        std::slice::from_raw_parts(p, len)
    };
    TransportParams::decode(raw, false).ok()?.version_information
}

/// The quic_transport_parameters TLS extension (RFC 9001 §8.2).
const QUIC_TP_EXTENSION: u16 = 0x39;

/// BoringSSL's early callback: choose the version, send its parameters.
pub(super) unsafe extern "C" fn on_client_hello(
    hello: *const ffi::SSL_CLIENT_HELLO,
) -> ffi::ssl_select_cert_result_t {
    let ok = ffi::ssl_select_cert_result_t::ssl_select_cert_success;
    // SAFETY: BoringSSL passes a live ClientHello whose `ssl` is live.
    let Some(hello) = (unsafe { hello.as_ref() }) else { return ok };
    // SAFETY: as above.
    let Some(st) = (unsafe { state_of(hello.ssl) }) else { return ok };
    if st.offers.is_empty() {
        return ok;
    }
    let ours: Vec<Version> = st.offers.iter().map(|(v, _)| *v).collect();
    let chosen =
        client_version_info(hello).and_then(|vi| vi.negotiate(st.version, &ours)).unwrap_or(st.version);
    let Some((_, params)) = st.offers.iter().find(|(v, _)| *v == chosen) else { return ok };
    // SAFETY: live SSL; params valid for its length (BoringSSL copies it).
    let set: c_int = unsafe { ffi::SSL_set_quic_transport_params(hello.ssl, params.as_ptr(), params.len()) };
    if set != 1 {
        return ffi::ssl_select_cert_result_t::ssl_select_cert_error;
    }
    if chosen != st.version {
        log::debug!("compatible version negotiation: {} -> {chosen}", st.version);
    }
    st.version = chosen;
    ok
}
