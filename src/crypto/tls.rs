//! TLS 1.3 for QUIC through BoringSSL's QUIC API (RFC 9001 §4).
//!
//! BoringSSL drives the handshake and calls back into us (`SSL_QUIC_METHOD`)
//! with handshake bytes to send and traffic secrets to install. The callbacks
//! find the session's Rust state through SSL ex_data; the state lives in its
//! own heap allocation so its address never changes while the `SSL` exists.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use boring_sys as ffi;

use super::{Algorithm, Keys, Level, Secret};
use crate::error::{ErrorCode, TransportError};
use crate::version::Version;

mod versions;

/// TLS alert internal_error, used when BoringSSL fails without an alert.
const ALERT_INTERNAL_ERROR: u8 = 80;

/// A TLS failure, with the QUIC error code to close the connection with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsError {
    /// 0x100 + TLS alert for handshake failures (RFC 9001 §4.8); transport
    /// codes for misuse of the CRYPTO stream.
    pub code: ErrorCode,
    /// What failed.
    pub reason: &'static str,
    /// BoringSSL's packed error code (0 if none), for diagnostics.
    pub ssl_error: u32,
}

impl TlsError {
    fn new(code: ErrorCode, reason: &'static str) -> TlsError {
        // SAFETY: plain call; pops the oldest queued error, if any.
        let ssl_error = unsafe { ffi::ERR_get_error() };
        // SAFETY: plain call; the rest of the queue is stale now.
        unsafe { ffi::ERR_clear_error() };
        TlsError { code, reason, ssl_error }
    }

    /// The TLS alert, if this is a crypto error.
    pub fn alert(&self) -> Option<u8> {
        let c = self.code.0;
        (0x100..0x200).contains(&c).then(|| (c - 0x100) as u8)
    }

    /// BoringSSL's description of `ssl_error`.
    pub fn ssl_reason(&self) -> String {
        if self.ssl_error == 0 {
            return String::new();
        }
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf is writable for its length; the result is NUL-terminated.
        unsafe {
            ffi::ERR_error_string_n(self.ssl_error, buf.as_mut_ptr(), buf.len());
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        }
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.reason)?;
        if self.ssl_error != 0 {
            write!(f, " ({})", self.ssl_reason())?;
        }
        Ok(())
    }
}

impl std::error::Error for TlsError {}

impl From<TlsError> for TransportError {
    fn from(e: TlsError) -> Self {
        TransportError::new(e.code, e.reason)
    }
}

/// Which side of the connection a secret protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Opening the peer's packets.
    Read,
    /// Sealing our packets.
    Write,
}

struct SslCtx(NonNull<ffi::SSL_CTX>);

impl Drop for SslCtx {
    fn drop(&mut self) {
        // SAFETY: we own one reference, released once.
        unsafe { ffi::SSL_CTX_free(self.0.as_ptr()) }
    }
}

// SAFETY: an SSL_CTX is reference-counted and internally locked; after
// configuration we only create SSLs from it, which BoringSSL allows from any
// thread.
unsafe impl Send for SslCtx {}
// SAFETY: see above.
unsafe impl Sync for SslCtx {}

struct Ssl(NonNull<ffi::SSL>);

impl Drop for Ssl {
    fn drop(&mut self) {
        // SAFETY: we own the SSL, freed once.
        unsafe { ffi::SSL_free(self.0.as_ptr()) }
    }
}

struct ConfigInner {
    ctx: SslCtx,
    is_server: bool,
    /// Protocols in preference order (the server picks its first that the
    /// client also offers).
    alpn: Vec<Vec<u8>>,
    verify_peer: bool,
    early_data: bool,
    keylog: Option<Mutex<File>>,
    /// Keys derived from TLS secrets use the simulator's AEAD.
    #[cfg(feature = "sim-aead")]
    sim_aead: bool,
}

/// Shared TLS configuration (an `SSL_CTX`): build once, create one
/// [`TlsSession`] per connection. Cheap to clone.
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<ConfigInner>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("is_server", &self.inner.is_server)
            .field("verify_peer", &self.inner.verify_peer)
            .finish_non_exhaustive()
    }
}

/// Builder for [`TlsConfig`].
#[derive(Clone, Debug)]
pub struct TlsConfigBuilder {
    is_server: bool,
    alpn: Vec<Vec<u8>>,
    cert_chain: Option<PathBuf>,
    private_key: Option<PathBuf>,
    verify_peer: bool,
    ca_file: Option<PathBuf>,
    default_verify_paths: bool,
    keylog: Option<PathBuf>,
    ciphers: Vec<Algorithm>,
    tickets: bool,
    early_data: bool,
    #[cfg(feature = "sim-aead")]
    sim_aead: bool,
}

impl TlsConfig {
    /// A client configuration: peer verification is on unless
    /// [`TlsConfigBuilder::verify_peer`] turns it off.
    pub fn client() -> TlsConfigBuilder {
        TlsConfigBuilder::new(false)
    }

    /// A server configuration: needs a certificate chain and a private key;
    /// client certificates are not requested unless `verify_peer(true)`.
    pub fn server() -> TlsConfigBuilder {
        TlsConfigBuilder::new(true)
    }

    /// Whether this is a server configuration.
    pub fn is_server(&self) -> bool {
        self.inner.is_server
    }
}

fn c_path(p: &Path) -> Result<CString, TlsError> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| TlsError::new(ErrorCode::INTERNAL_ERROR, "path contains NUL"))
}

fn config_err(reason: &'static str) -> TlsError {
    TlsError::new(ErrorCode::INTERNAL_ERROR, reason)
}

impl TlsConfigBuilder {
    fn new(is_server: bool) -> Self {
        TlsConfigBuilder {
            is_server,
            alpn: Vec::new(),
            cert_chain: None,
            private_key: None,
            verify_peer: !is_server,
            ca_file: None,
            default_verify_paths: false,
            keylog: None,
            ciphers: Vec::new(),
            tickets: false,
            early_data: false,
            #[cfg(feature = "sim-aead")]
            sim_aead: false,
        }
    }

    /// Application protocols in preference order (e.g. `[b"h3"]`). QUIC
    /// requires ALPN: a handshake without overlap fails with
    /// no_application_protocol (0x178).
    pub fn alpn<P: AsRef<[u8]>>(mut self, protocols: &[P]) -> Self {
        self.alpn = protocols.iter().map(|p| p.as_ref().to_vec()).collect();
        self
    }

    /// PEM file with our certificate chain (leaf first).
    pub fn cert_chain_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.cert_chain = Some(path.into());
        self
    }

    /// PEM file with our private key.
    pub fn private_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.private_key = Some(path.into());
        self
    }

    /// Verify the peer's certificate (default: on for clients, off for
    /// servers; a server with it on requires a client certificate).
    pub fn verify_peer(mut self, on: bool) -> Self {
        self.verify_peer = on;
        self
    }

    /// PEM file of trusted CA certificates.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Also trust the system's default CA locations. Used automatically by a
    /// verifying client that has no [`ca_file`](Self::ca_file).
    pub fn default_verify_paths(mut self) -> Self {
        self.default_verify_paths = true;
        self
    }

    /// Append NSS key-log lines (the SSLKEYLOGFILE format) to this file. The
    /// application chooses the path, e.g. from `SSLKEYLOGFILE`.
    pub fn keylog_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.keylog = Some(path.into());
        self
    }

    /// TLS 1.3 cipher suites in preference order (default: BoringSSL's
    /// order, which prefers AES-GCM when the CPU has AES instructions).
    pub fn ciphers(mut self, suites: &[Algorithm]) -> Self {
        self.ciphers = suites.to_vec();
        self
    }

    /// Session resumption (RFC 8446 §4.6.1): a server issues session tickets
    /// after the handshake; a client keeps the last one it received
    /// ([`TlsSession::session`]). Off by default.
    pub fn session_tickets(mut self, on: bool) -> Self {
        self.tickets = on;
        self
    }

    /// 0-RTT (RFC 9001 §4.6): a client offers early data when it resumes a
    /// session whose ticket allows it; a server accepts it when the client's
    /// early-data context ([`TlsSession::set_early_data_context`]) matches.
    /// Needs [`session_tickets`](Self::session_tickets). Off by default.
    pub fn early_data(mut self, on: bool) -> Self {
        self.early_data = on;
        self
    }

    /// Packet keys derived from the handshake's secrets (Handshake, 0-RTT,
    /// 1-RTT) use the simulator's AEAD: for simulations only, where both
    /// ends do the same (see `Config::use_sim_aead`).
    #[cfg(feature = "sim-aead")]
    #[doc(hidden)]
    pub fn sim_aead(mut self, on: bool) -> Self {
        self.sim_aead = on;
        self
    }

    /// Creates the `SSL_CTX`. Fails if a file cannot be read or the key does
    /// not match the certificate.
    pub fn build(self) -> Result<TlsConfig, TlsError> {
        // SAFETY: plain call.
        unsafe { ffi::ERR_clear_error() };
        // SAFETY: TLS_method returns a static method table.
        let raw = unsafe { ffi::SSL_CTX_new(ffi::TLS_method()) };
        let ctx = SslCtx(NonNull::new(raw).ok_or_else(|| config_err("SSL_CTX_new failed"))?);
        let c = ctx.0.as_ptr();
        // SAFETY (whole block): `c` is a live SSL_CTX we own; every pointer
        // passed is valid for the call.
        unsafe {
            let v = ffi::TLS1_3_VERSION as u16;
            if ffi::SSL_CTX_set_min_proto_version(c, v) != 1 || ffi::SSL_CTX_set_max_proto_version(c, v) != 1
            {
                return Err(config_err("cannot restrict to TLS 1.3"));
            }
            if ffi::SSL_CTX_set_quic_method(c, &QUIC_METHOD) != 1 {
                return Err(config_err("SSL_CTX_set_quic_method failed"));
            }
            if !self.tickets {
                ffi::SSL_CTX_set_options(c, ffi::SSL_OP_NO_TICKET as u32);
            } else if !self.is_server {
                // Clients hear of each ticket through the callback.
                ffi::SSL_CTX_set_session_cache_mode(c, ffi::SSL_SESS_CACHE_CLIENT as c_int);
                ffi::SSL_CTX_sess_set_new_cb(c, Some(new_session));
            }
            if self.early_data && self.tickets {
                ffi::SSL_CTX_set_early_data_enabled(c, 1);
            }
            if !self.ciphers.is_empty() {
                let ids: Vec<u16> = self.ciphers.iter().map(|a| a.suite()).collect();
                if ffi::SSL_CTX_set1_tls13_ciphers(c, ids.as_ptr(), std::ptr::null(), ids.len()) != 1 {
                    return Err(config_err("cannot set TLS 1.3 ciphers"));
                }
            }
            if let Some(p) = &self.cert_chain {
                let p = c_path(p)?;
                if ffi::SSL_CTX_use_certificate_chain_file(c, p.as_ptr()) != 1 {
                    return Err(config_err("cannot load certificate chain"));
                }
            }
            if let Some(p) = &self.private_key {
                let p = c_path(p)?;
                if ffi::SSL_CTX_use_PrivateKey_file(c, p.as_ptr(), ffi::SSL_FILETYPE_PEM) != 1 {
                    return Err(config_err("cannot load private key"));
                }
                if ffi::SSL_CTX_check_private_key(c) != 1 {
                    return Err(config_err("private key does not match certificate"));
                }
            }
            if self.is_server && (self.cert_chain.is_none() || self.private_key.is_none()) {
                return Err(config_err("a server needs a certificate chain and a private key"));
            }
            let mode = match (self.verify_peer, self.is_server) {
                (false, _) => ffi::SSL_VERIFY_NONE,
                (true, false) => ffi::SSL_VERIFY_PEER,
                (true, true) => ffi::SSL_VERIFY_PEER | ffi::SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
            };
            ffi::SSL_CTX_set_verify(c, mode, None);
            if let Some(p) = &self.ca_file {
                let p = c_path(p)?;
                if ffi::SSL_CTX_load_verify_locations(c, p.as_ptr(), std::ptr::null()) != 1 {
                    return Err(config_err("cannot load CA file"));
                }
            }
            let want_defaults =
                self.default_verify_paths || (self.verify_peer && !self.is_server && self.ca_file.is_none());
            if want_defaults && ffi::SSL_CTX_set_default_verify_paths(c) != 1 {
                return Err(config_err("cannot load default CA paths"));
            }
            if self.is_server {
                ffi::SSL_CTX_set_alpn_select_cb(c, Some(alpn_select), std::ptr::null_mut());
                ffi::SSL_CTX_set_select_certificate_cb(c, Some(versions::on_client_hello));
            } else if !self.alpn.is_empty() {
                let mut wire = Vec::new();
                for p in &self.alpn {
                    let len = u8::try_from(p.len()).map_err(|_| config_err("ALPN protocol too long"))?;
                    if len == 0 {
                        return Err(config_err("empty ALPN protocol"));
                    }
                    wire.push(len);
                    wire.extend_from_slice(p);
                }
                // Note: returns 0 on success.
                if ffi::SSL_CTX_set_alpn_protos(c, wire.as_ptr(), wire.len()) != 0 {
                    return Err(config_err("cannot set ALPN"));
                }
            }
            if self.keylog.is_some() {
                ffi::SSL_CTX_set_keylog_callback(c, Some(keylog_line));
            }
        }
        let keylog = match &self.keylog {
            Some(p) => Some(Mutex::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|_| config_err("cannot open key log file"))?,
            )),
            None => None,
        };
        Ok(TlsConfig {
            inner: Arc::new(ConfigInner {
                ctx,
                is_server: self.is_server,
                alpn: self.alpn,
                verify_peer: self.verify_peer,
                early_data: self.early_data && self.tickets,
                keylog,
                #[cfg(feature = "sim-aead")]
                sim_aead: self.sim_aead,
            }),
        })
    }
}

/// What the callbacks write to; owned by the session, reached through ex_data.
struct State {
    config: Arc<ConfigInner>,
    outgoing: [Vec<u8>; 4],
    new_keys: VecDeque<(Level, Direction, Keys)>,
    alert: Option<u8>,
    /// The last session ticket received (client), serialized with the
    /// server's transport parameters ([`SessionBlob`]).
    session: Option<Vec<u8>>,
    /// The QUIC version whose labels derive keys from the secrets.
    version: Version,
    /// Server: our encoded transport parameters for each version we would
    /// use, in our order of preference (see `versions`).
    offers: Vec<(Version, Vec<u8>)>,
}

/// Owns the callback state through a raw pointer: the `SSL` keeps a copy of
/// that pointer in ex_data, so the state must not sit behind a `Box` that
/// Rust could assume unaliased while BoringSSL writes through it.
struct StatePtr(NonNull<State>);

impl Drop for StatePtr {
    fn drop(&mut self) {
        // SAFETY: created by Box::into_raw in TlsSession::new, freed once,
        // after the SSL that referenced it (field order in TlsSession).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// One connection's TLS handshake (an `SSL`).
///
/// Usage: feed CRYPTO frame data with [`provide_data`](Self::provide_data)
/// (in order, at the current read level), then call
/// [`advance`](Self::advance); afterwards drain
/// [`take_new_keys`](Self::take_new_keys) (install read keys before
/// processing further packets) and [`take_outgoing`](Self::take_outgoing).
/// A client calls `advance` once before anything else to produce its
/// ClientHello.
pub struct TlsSession {
    // Field order matters: the SSL is freed before the state it points to.
    ssl: Ssl,
    state: StatePtr,
    complete: bool,
    /// Client: the server rejected our early data (taken by
    /// [`TlsSession::take_early_data_rejected`]).
    early_rejected: bool,
}

// SAFETY: the SSL and its state are only touched through &mut self (or
// &self for read-only queries), never shared between threads.
unsafe impl Send for TlsSession {}

impl fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSession")
            .field("is_server", &self.is_server())
            .field("complete", &self.complete)
            .finish_non_exhaustive()
    }
}

fn ex_index() -> c_int {
    static INDEX: OnceLock<c_int> = OnceLock::new();
    // SAFETY: plain call registering an index with no callbacks.
    *INDEX.get_or_init(|| unsafe {
        ffi::SSL_get_ex_new_index(0, std::ptr::null_mut(), std::ptr::null_mut(), None, None)
    })
}

/// The state behind `ssl`, if it is one of ours.
///
/// # Safety
/// `ssl` must be a live SSL; the returned reference must not outlive the
/// callback and no other reference to the state may be live.
unsafe fn state_of<'a>(ssl: *const ffi::SSL) -> Option<&'a mut State> {
    let idx = ex_index();
    if idx < 0 {
        return None;
    }
    // SAFETY: per the contract, ssl is live; the ex_data slot holds either
    // null or our State pointer.
    unsafe { (ffi::SSL_get_ex_data(ssl, idx) as *mut State).as_mut() }
}

impl TlsSession {
    /// A session for one connection. `server_name` (clients only) is sent as
    /// SNI and, when verification is on, checked against the certificate (a
    /// literal IP address is matched against IP SANs and not sent as SNI).
    /// `transport_params` is our encoded transport parameters extension.
    pub fn new(
        config: &TlsConfig,
        server_name: Option<&str>,
        transport_params: &[u8],
    ) -> Result<TlsSession, TlsError> {
        // SAFETY: plain call.
        unsafe { ffi::ERR_clear_error() };
        let idx = ex_index();
        if idx < 0 {
            return Err(config_err("no ex_data index"));
        }
        // SAFETY: the SSL_CTX is live (held by config).
        let raw = unsafe { ffi::SSL_new(config.inner.ctx.0.as_ptr()) };
        let ssl = Ssl(NonNull::new(raw).ok_or_else(|| config_err("SSL_new failed"))?);
        let state = Box::new(State {
            config: config.inner.clone(),
            outgoing: Default::default(),
            new_keys: VecDeque::new(),
            alert: None,
            session: None,
            version: Version::V1,
            offers: Vec::new(),
        });
        let state = StatePtr(NonNull::from(Box::leak(state)));
        let session = TlsSession { ssl, state, complete: false, early_rejected: false };
        let s = session.ssl.0.as_ptr();
        // SAFETY (whole block): `s` is our live SSL; pointers are valid for
        // each call; the state pointer outlives the SSL (field order).
        unsafe {
            if ffi::SSL_set_ex_data(s, idx, session.state.0.as_ptr().cast()) != 1 {
                return Err(config_err("SSL_set_ex_data failed"));
            }
            ffi::SSL_set_quic_use_legacy_codepoint(s, 0);
            if ffi::SSL_set_quic_transport_params(s, transport_params.as_ptr(), transport_params.len()) != 1 {
                return Err(config_err("cannot set transport parameters"));
            }
            if config.inner.is_server {
                ffi::SSL_set_accept_state(s);
            } else {
                ffi::SSL_set_connect_state(s);
                if let Some(name) = server_name {
                    let cname = CString::new(name).map_err(|_| config_err("server name contains NUL"))?;
                    let is_ip = name.parse::<std::net::IpAddr>().is_ok();
                    if !is_ip && ffi::SSL_set_tlsext_host_name(s, cname.as_ptr()) != 1 {
                        return Err(config_err("cannot set SNI"));
                    }
                    if config.inner.verify_peer {
                        let param = ffi::SSL_get0_param(s);
                        let ok = if is_ip {
                            ffi::X509_VERIFY_PARAM_set1_ip_asc(param, cname.as_ptr())
                        } else {
                            ffi::X509_VERIFY_PARAM_set1_host(param, cname.as_ptr(), name.len())
                        };
                        if ok != 1 {
                            return Err(config_err("cannot set verification name"));
                        }
                    }
                }
            }
        }
        Ok(session)
    }

    fn ptr(&self) -> *mut ffi::SSL {
        self.ssl.0.as_ptr()
    }

    fn state(&self) -> &State {
        // SAFETY: the state lives as long as self; BoringSSL only writes to
        // it from inside calls that take &mut self.
        unsafe { self.state.0.as_ref() }
    }

    fn state_mut(&mut self) -> &mut State {
        // SAFETY: as above, and &mut self guarantees exclusivity.
        unsafe { self.state.0.as_mut() }
    }

    /// The error for a failed handshake step: the alert BoringSSL sent, or
    /// internal_error.
    fn failure(&self, reason: &'static str) -> TlsError {
        let alert = self.state().alert.unwrap_or(ALERT_INTERNAL_ERROR);
        TlsError::new(ErrorCode::crypto(alert), reason)
    }

    /// Hands CRYPTO-stream bytes received at `level` to TLS. Data must be in
    /// stream order and at the current [`read_level`](Self::read_level)
    /// (call [`advance`](Self::advance) after each chunk so the level moves
    /// on); otherwise this fails with PROTOCOL_VIOLATION, or
    /// CRYPTO_BUFFER_EXCEEDED when too much is buffered.
    pub fn provide_data(&mut self, level: Level, data: &[u8]) -> Result<(), TlsError> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: our SSL, data valid for its length.
        let ok = unsafe {
            ffi::ERR_clear_error();
            ffi::SSL_provide_quic_data(self.ptr(), level.to_ssl(), data.as_ptr(), data.len())
        };
        if ok == 1 {
            return Ok(());
        }
        // SAFETY: plain call.
        let reason = unsafe { ffi::ERR_peek_error() } & 0xfff;
        Err(if reason == ffi::SSL_R_EXCESSIVE_MESSAGE_SIZE as u32 {
            TlsError::new(ErrorCode::CRYPTO_BUFFER_EXCEEDED, "too much buffered CRYPTO data")
        } else if reason == ffi::SSL_R_WRONG_ENCRYPTION_LEVEL_RECEIVED as u32 {
            TlsError::new(ErrorCode::PROTOCOL_VIOLATION, "CRYPTO data at wrong encryption level")
        } else {
            self.failure("cannot accept CRYPTO data")
        })
    }

    /// Runs the handshake as far as the data provided allows; after it
    /// completes, processes post-handshake messages. Errors are fatal and
    /// carry the QUIC code to close with (0x100 + alert).
    pub fn advance(&mut self) -> Result<(), TlsError> {
        let s = self.ptr();
        // SAFETY: plain call.
        unsafe { ffi::ERR_clear_error() };
        if !self.complete {
            // SAFETY: our SSL; callbacks reach the state via ex_data while no
            // Rust reference to it is live.
            let mut rc = unsafe { ffi::SSL_do_handshake(s) };
            // SAFETY: our SSL, rc from the call above.
            if rc != 1 && unsafe { ffi::SSL_get_error(s, rc) } == ffi::SSL_ERROR_EARLY_DATA_REJECTED {
                // The client's 0-RTT was refused: carry on with a plain
                // handshake (the connection resends what 0-RTT carried).
                self.early_rejected = true;
                // SAFETY: our SSL, in the state this call is meant for.
                rc = unsafe {
                    ffi::SSL_reset_early_data_reject(s);
                    ffi::SSL_do_handshake(s)
                };
            }
            if rc != 1 {
                // SAFETY: our SSL, rc from the call above.
                let err = unsafe { ffi::SSL_get_error(s, rc) };
                if err == ffi::SSL_ERROR_WANT_READ {
                    return Ok(());
                }
                return Err(self.failure("TLS handshake failed"));
            }
            // With early data, BoringSSL returns before the handshake ends
            // (client: after its ClientHello; server: after its flight).
            // SAFETY: our SSL.
            if unsafe { ffi::SSL_in_init(s) } == 1 {
                return Ok(());
            }
            self.complete = true;
        }
        // SAFETY: our SSL, as above.
        if unsafe { ffi::SSL_process_quic_post_handshake(s) } != 1 {
            return Err(self.failure("TLS post-handshake processing failed"));
        }
        Ok(())
    }

    /// The next chunk of handshake bytes to send in CRYPTO frames, lowest
    /// level first; `None` when nothing is pending.
    pub fn take_outgoing(&mut self) -> Option<(Level, Vec<u8>)> {
        let st = self.state_mut();
        let i = st.outgoing.iter().position(|b| !b.is_empty())?;
        let level = Level::ALL.get(i).copied()?;
        Some((level, std::mem::take(st.outgoing.get_mut(i)?)))
    }

    /// Whether handshake bytes are waiting in [`take_outgoing`](Self::take_outgoing).
    pub fn has_outgoing(&self) -> bool {
        self.state().outgoing.iter().any(|b| !b.is_empty())
    }

    /// The next installed secret, in the order TLS produced them, as keys
    /// ready to use (the raw secret is kept in [`Keys::secret`] for key
    /// update).
    pub fn take_new_keys(&mut self) -> Option<(Level, Direction, Keys)> {
        self.state_mut().new_keys.pop_front()
    }

    /// Client: resume the session `bytes` (from [`session`](Self::session)
    /// of an earlier connection to the same server). Call before the first
    /// [`advance`](Self::advance). Bytes that do not parse are an error; a
    /// session the server no longer accepts just means a full handshake.
    /// Returns the server's transport parameters stored with the session
    /// (RFC 9000 §7.4.1) when the session allows 0-RTT and early data is
    /// enabled: the caller then sends early data under them.
    pub fn set_session(&mut self, bytes: &[u8]) -> Result<Option<Vec<u8>>, TlsError> {
        if self.is_server() || self.complete {
            return Err(config_err("only a client can resume, before its handshake"));
        }
        let blob = SessionBlob::decode(bytes)
            .ok_or_else(|| TlsError::new(ErrorCode::INTERNAL_ERROR, "not a TLS session"))?;
        let ctx = self.state().config.ctx.0.as_ptr();
        // SAFETY: the bytes are valid for their length; ctx is live (held by the state).
        let sess = unsafe { ffi::SSL_SESSION_from_bytes(blob.tls.as_ptr(), blob.tls.len(), ctx) };
        if sess.is_null() {
            return Err(TlsError::new(ErrorCode::INTERNAL_ERROR, "not a TLS session"));
        }
        // SAFETY: our SSL and a live session; SSL_set_session takes its own
        // reference, so ours is released right after.
        let (ok, early) = unsafe {
            let early = ffi::SSL_SESSION_early_data_capable(sess) == 1;
            let ok = ffi::SSL_set_session(self.ptr(), sess);
            ffi::SSL_SESSION_free(sess);
            (ok, early)
        };
        if ok != 1 {
            return Err(config_err("SSL_set_session failed"));
        }
        let enabled = self.state().config.early_data;
        Ok((early && enabled && !blob.params.is_empty()).then(|| blob.params.to_vec()))
    }

    /// Server: bind 0-RTT to `context` (what of our configuration early
    /// data relies on, e.g. the encoded flow-control limits): a ticket issued
    /// under a different context gets its early data rejected (RFC 9001
    /// §4.6.1). Call before the first [`advance`](Self::advance).
    pub fn set_early_data_context(&mut self, context: &[u8]) -> Result<(), TlsError> {
        // SAFETY: our SSL; BoringSSL copies the context.
        let ok = unsafe { ffi::SSL_set_quic_early_data_context(self.ptr(), context.as_ptr(), context.len()) };
        if ok != 1 {
            return Err(config_err("cannot set the early data context"));
        }
        Ok(())
    }

    /// Whether the server accepted our early data (client) / we accepted
    /// the client's (server). Meaningful once the handshake completed.
    pub fn early_data_accepted(&self) -> bool {
        // SAFETY: our live SSL.
        unsafe { ffi::SSL_early_data_accepted(self.ptr()) == 1 }
    }

    /// Client: the server rejected the early data we sent; true once.
    pub fn take_early_data_rejected(&mut self) -> bool {
        std::mem::take(&mut self.early_rejected)
    }

    /// Client: the last session ticket the server sent, serialized (for
    /// [`set_session`](Self::set_session) on a later connection).
    pub fn session(&self) -> Option<&[u8]> {
        self.state().session.as_deref()
    }

    /// The handshake resumed an earlier session.
    pub fn is_resumed(&self) -> bool {
        // SAFETY: our live SSL.
        self.complete && unsafe { ffi::SSL_session_reused(self.ptr()) } == 1
    }

    /// The peer's encoded transport parameters, once received.
    pub fn peer_transport_params(&self) -> Option<&[u8]> {
        let mut p: *const u8 = std::ptr::null();
        let mut len = 0usize;
        // SAFETY: our SSL; the returned buffer lives as long as the SSL,
        // which &self borrows.
        unsafe {
            ffi::SSL_get_peer_quic_transport_params(self.ptr(), &mut p, &mut len);
            (!p.is_null() && len > 0).then(|| std::slice::from_raw_parts(p, len))
        }
    }

    /// The negotiated application protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        let mut p: *const u8 = std::ptr::null();
        let mut len: c_uint = 0;
        // SAFETY: as for peer_transport_params.
        unsafe {
            ffi::SSL_get0_alpn_selected(self.ptr(), &mut p, &mut len);
            (!p.is_null() && len > 0).then(|| std::slice::from_raw_parts(p, len as usize))
        }
    }

    /// The negotiated AEAD, once known.
    pub fn algorithm(&self) -> Option<Algorithm> {
        // SAFETY: our SSL; the cipher is a static table entry.
        unsafe {
            let c = ffi::SSL_get_current_cipher(self.ptr());
            if c.is_null() {
                return None;
            }
            Algorithm::from_suite(ffi::SSL_CIPHER_get_protocol_id(c))
        }
    }

    /// Whether the TLS handshake has completed (RFC 9001 §4.1.1).
    pub fn is_handshake_complete(&self) -> bool {
        self.complete
    }

    /// Whether this is the server side.
    pub fn is_server(&self) -> bool {
        self.state().config.is_server
    }

    /// The SNI: the name the client sent (server side) or set (client side).
    pub fn server_name(&self) -> Option<&str> {
        // SAFETY: our SSL; the string lives as long as the SSL.
        unsafe {
            let p = ffi::SSL_get_servername(self.ptr(), ffi::TLSEXT_NAMETYPE_host_name);
            if p.is_null() {
                return None;
            }
            CStr::from_ptr(p).to_str().ok()
        }
    }

    /// The current read level: where [`provide_data`](Self::provide_data)
    /// accepts bytes.
    pub fn read_level(&self) -> Level {
        // SAFETY: our SSL.
        Level::from_ssl(unsafe { ffi::SSL_quic_read_level(self.ptr()) }).unwrap_or(Level::Initial)
    }

    /// The current write level: the highest level TLS has produced data at.
    pub fn write_level(&self) -> Level {
        // SAFETY: our SSL.
        Level::from_ssl(unsafe { ffi::SSL_quic_write_level(self.ptr()) }).unwrap_or(Level::Initial)
    }

    /// Whether the peer presented a certificate that verified (always false
    /// when verification is off or no certificate was sent).
    pub fn peer_verified(&self) -> bool {
        // SAFETY: our SSL.
        unsafe {
            self.state().config.verify_peer
                && !ffi::SSL_get0_peer_certificates(self.ptr()).is_null()
                && ffi::SSL_get_verify_result(self.ptr()) == ffi::X509_V_OK as std::ffi::c_long
        }
    }

    /// The X.509 verification result code (0 = OK), for diagnostics.
    pub fn verify_result(&self) -> i64 {
        // SAFETY: our SSL.
        unsafe { ffi::SSL_get_verify_result(self.ptr()) as i64 }
    }
}

static QUIC_METHOD: ffi::SSL_QUIC_METHOD = ffi::SSL_QUIC_METHOD {
    set_read_secret: Some(set_read_secret),
    set_write_secret: Some(set_write_secret),
    add_handshake_data: Some(add_handshake_data),
    flush_flight: Some(flush_flight),
    send_alert: Some(send_alert),
};

/// # Safety
/// Called by BoringSSL with a live SSL and a secret of `len` bytes.
unsafe fn on_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
    dir: Direction,
) -> c_int {
    // SAFETY: per BoringSSL's callback contract.
    let Some(st) = (unsafe { state_of(ssl) }) else {
        return 0;
    };
    let Some(level) = Level::from_ssl(level) else {
        return 0;
    };
    if cipher.is_null() || secret.is_null() {
        return 0;
    }
    // SAFETY: cipher is a static table entry.
    let Some(alg) = Algorithm::from_suite(unsafe { ffi::SSL_CIPHER_get_protocol_id(cipher) }) else {
        return 0;
    };
    // SAFETY: BoringSSL passes `len` valid bytes.
    let secret = unsafe { std::slice::from_raw_parts(secret, len) };
    let secret = Secret::new(alg, secret).map(|s| s.for_version(st.version));
    #[cfg(feature = "sim-aead")]
    let secret = secret.map(|s| s.with_sim_aead(st.config.sim_aead));
    match secret.and_then(|s| s.keys()) {
        Ok(keys) => {
            st.new_keys.push_back((level, dir, keys));
            1
        }
        Err(_) => 0,
    }
}

unsafe extern "C" fn set_read_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: forwarded callback arguments.
    unsafe { on_secret(ssl, level, cipher, secret, len, Direction::Read) }
}

unsafe extern "C" fn set_write_secret(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    cipher: *const ffi::SSL_CIPHER,
    secret: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: forwarded callback arguments.
    unsafe { on_secret(ssl, level, cipher, secret, len, Direction::Write) }
}

unsafe extern "C" fn add_handshake_data(
    ssl: *mut ffi::SSL,
    level: ffi::ssl_encryption_level_t,
    data: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: live SSL per the callback contract.
    let Some(st) = (unsafe { state_of(ssl) }) else {
        return 0;
    };
    let Some(buf) = st.outgoing.get_mut(level.0 as usize) else {
        return 0;
    };
    if len > 0 {
        if data.is_null() {
            return 0;
        }
        // SAFETY: BoringSSL passes `len` valid bytes.
        buf.extend_from_slice(unsafe { std::slice::from_raw_parts(data, len) });
    }
    1
}

unsafe extern "C" fn flush_flight(_ssl: *mut ffi::SSL) -> c_int {
    // Bytes are buffered per level until the connection drains them.
    1
}

unsafe extern "C" fn send_alert(ssl: *mut ffi::SSL, _level: ffi::ssl_encryption_level_t, alert: u8) -> c_int {
    // SAFETY: live SSL per the callback contract.
    if let Some(st) = unsafe { state_of(ssl) } {
        // Keep the first alert: it names the original failure.
        st.alert.get_or_insert(alert);
    }
    1
}

/// A client received a session ticket: keep it serialized.
unsafe extern "C" fn new_session(ssl: *mut ffi::SSL, sess: *mut ffi::SSL_SESSION) -> c_int {
    let mut out: *mut u8 = std::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: BoringSSL passes a live SSL and session; `out` receives a
    // buffer we free with OPENSSL_free.
    unsafe {
        if ffi::SSL_SESSION_to_bytes(sess, &mut out, &mut len) == 1 && !out.is_null() {
            let mut p: *const u8 = std::ptr::null();
            let mut plen = 0usize;
            ffi::SSL_get_peer_quic_transport_params(ssl, &mut p, &mut plen);
            let params = if p.is_null() { &[][..] } else { std::slice::from_raw_parts(p, plen) };
            if let Some(st) = state_of(ssl) {
                let tls = std::slice::from_raw_parts(out, len);
                st.session = Some(SessionBlob { tls, params }.encode());
            }
            ffi::OPENSSL_free(out.cast());
        }
    }
    // 0: BoringSSL keeps ownership of the session.
    0
}

/// What [`TlsSession::session`] hands out: BoringSSL's serialized session
/// and the server's transport parameters, which 0-RTT must remember (RFC
/// 9000 §7.4.1): `MAGIC`, the session's length (4 bytes, big endian), the
/// session, the encoded parameters. Bytes without `MAGIC` are a bare
/// session (from before the parameters were kept): resumable, no 0-RTT.
struct SessionBlob<'a> {
    tls: &'a [u8],
    params: &'a [u8],
}

impl<'a> SessionBlob<'a> {
    const MAGIC: &'static [u8; 4] = b"mqs1";

    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(8 + self.tls.len() + self.params.len());
        v.extend_from_slice(Self::MAGIC);
        v.extend_from_slice(&(self.tls.len() as u32).to_be_bytes());
        v.extend_from_slice(self.tls);
        v.extend_from_slice(self.params);
        v
    }

    fn decode(b: &'a [u8]) -> Option<Self> {
        let Some(rest) = b.strip_prefix(Self::MAGIC) else {
            return Some(SessionBlob { tls: b, params: &[] });
        };
        let (len, rest) = rest.split_first_chunk::<4>()?;
        let len = u32::from_be_bytes(*len) as usize;
        (rest.len() >= len).then(|| SessionBlob { tls: &rest[..len], params: &rest[len..] })
    }
}

unsafe extern "C" fn keylog_line(ssl: *const ffi::SSL, line: *const c_char) {
    // SAFETY: live SSL per the callback contract.
    let Some(st) = (unsafe { state_of(ssl) }) else {
        return;
    };
    if line.is_null() {
        return;
    }
    // SAFETY: BoringSSL passes a NUL-terminated line.
    let line = unsafe { CStr::from_ptr(line) }.to_bytes();
    if let Some(file) = &st.config.keylog {
        if let Ok(mut f) = file.lock() {
            // Key logging is best-effort diagnostics; a write error must not
            // break the handshake.
            let _ = f.write_all(line).and_then(|_| f.write_all(b"\n"));
        }
    }
}

/// Server-side ALPN choice: our first protocol that the client offers.
unsafe extern "C" fn alpn_select(
    ssl: *mut ffi::SSL,
    out: *mut *const u8,
    out_len: *mut u8,
    input: *const u8,
    input_len: c_uint,
    _arg: *mut c_void,
) -> c_int {
    const FATAL: c_int = ffi::SSL_TLSEXT_ERR_ALERT_FATAL;
    // SAFETY: live SSL per the callback contract.
    let Some(st) = (unsafe { state_of(ssl) }) else {
        return FATAL;
    };
    if input.is_null() || out.is_null() || out_len.is_null() {
        return FATAL;
    }
    // SAFETY: BoringSSL passes input_len valid bytes.
    let offered = unsafe { std::slice::from_raw_parts(input, input_len as usize) };
    for ours in &st.config.alpn {
        let mut rest = offered;
        while let Some((&len, tail)) = rest.split_first() {
            let Some(proto) = tail.get(..usize::from(len)) else {
                break;
            };
            if proto == ours.as_slice() {
                // SAFETY: out/out_len are valid; proto points into `input`,
                // which BoringSSL keeps alive until it copies the choice.
                unsafe {
                    *out = proto.as_ptr();
                    *out_len = len;
                }
                return ffi::SSL_TLSEXT_ERR_OK;
            }
            rest = tail.get(usize::from(len)..).unwrap_or(&[]);
        }
    }
    // BoringSSL turns this into the no_application_protocol alert (120).
    FATAL
}

#[cfg(test)]
mod tests;
