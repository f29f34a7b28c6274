//! `quiche_config`: connection settings with quiche's defaults and names.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use engine::{Config, ConfigError};

use super::{
    QUICHE_ERR_BUFFER_TOO_SHORT, QUICHE_ERR_CONGESTION_CONTROL, QUICHE_ERR_INVALID_STATE, QUICHE_ERR_TLS_FAIL,
};
use crate::{c_str, guard, slice};

type Op = Box<dyn Fn(&mut Config) -> Result<(), ConfigError> + Send + Sync>;

/// Connection settings (opaque). Connections copy what they need: a config
/// may be changed or freed after quiche_connect / quiche_accept.
pub struct quiche_config {
    /// Every setting applied so far, in order, to rebuild the engine config
    /// when a connection still holds the current one (a server connection
    /// waiting for its first packet).
    ops: Vec<Op>,
    built: Arc<Config>,
    /// The version given to quiche_config_new (mpquic always speaks v1).
    pub(crate) version: u32,
    /// Largest UDP payload we send (the engine keeps it private).
    pub(crate) max_send: usize,
}

impl quiche_config {
    /// Apply one setting, remembered for rebuilds.
    fn apply(
        &mut self,
        op: impl Fn(&mut Config) -> Result<(), ConfigError> + Send + Sync + 'static,
    ) -> c_int {
        let res = match Arc::get_mut(&mut self.built) {
            Some(c) => op(c),
            None => {
                let mut c = base();
                self.ops.iter().for_each(|o| drop(o(&mut c)));
                let r = op(&mut c);
                self.built = Arc::new(c);
                r
            }
        };
        match res {
            Ok(()) => {
                self.ops.push(Box::new(op));
                0
            }
            Err(ConfigError::UnknownAlgorithm(_)) => QUICHE_ERR_CONGESTION_CONTROL.c(),
            Err(ConfigError::Tls(_)) => QUICHE_ERR_TLS_FAIL.c(),
            Err(ConfigError::InvalidValue(_)) => QUICHE_ERR_INVALID_STATE.c(),
        }
    }

    /// The engine config for a new connection.
    pub(crate) fn engine(&self) -> Arc<Config> {
        self.built.clone()
    }
}

/// An engine config with quiche's defaults where they differ from mpquic's:
/// no flow-control credit and no idle timeout until the program sets them,
/// 1200-byte datagrams, two active connection IDs.
fn base() -> Config {
    let mut c = Config::new();
    c.set_max_idle_timeout(0);
    c.set_initial_max_data(0);
    c.set_initial_max_stream_data_bidi_local(0);
    c.set_initial_max_stream_data_bidi_remote(0);
    c.set_initial_max_stream_data_uni(0);
    c.set_initial_max_streams_bidi(0);
    c.set_initial_max_streams_uni(0);
    c.set_max_send_udp_payload_size(1200);
    let _ = c.set_active_connection_id_limit(2);
    c
}

/// Borrow a config, or return `err` for NULL.
macro_rules! cfg {
    ($p:expr) => {
        // SAFETY: the caller passes a live config used by one thread.
        match unsafe { $p.as_mut() } {
            Some(c) => c,
            None => return,
        }
    };
    ($p:expr, $err:expr) => {
        // SAFETY: the caller passes a live config used by one thread.
        match unsafe { $p.as_mut() } {
            Some(c) => c,
            None => return $err,
        }
    };
}

/// A new config. `version` is recorded but mpquic always connects with
/// QUIC v1 (a client configured with another version does not go through
/// Version Negotiation first). Free with quiche_config_free.
#[no_mangle]
pub extern "C" fn quiche_config_new(version: u32) -> *mut quiche_config {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(quiche_config {
            ops: Vec::new(),
            built: Arc::new(base()),
            version,
            max_send: 1200,
        }))
    })
}

/// Release a config (NULL is accepted).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_free(config: *mut quiche_config) {
    if !config.is_null() {
        // SAFETY: made by quiche_config_new and not freed before.
        guard((), || drop(unsafe { Box::from_raw(config) }));
    }
}

/// A readable file's path from C, for the TLS loaders (which read it when
/// the first connection is made): QUICHE_ERR_TLS_FAIL now if it cannot be
/// read, as quiche reports.
unsafe fn tls_file(path: *const c_char) -> Result<String, c_int> {
    // SAFETY: `path` is NUL-terminated.
    let p = unsafe { c_str(path) }.ok_or(QUICHE_ERR_TLS_FAIL.c())?;
    std::fs::File::open(p).map_err(|_| QUICHE_ERR_TLS_FAIL.c())?;
    Ok(p.to_owned())
}

/// Load the certificate chain (PEM) a server presents. 0 or QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_cert_chain_from_pem_file(
    config: *mut quiche_config,
    path: *const c_char,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_TLS_FAIL.c());
    guard(QUICHE_ERR_TLS_FAIL.c(), || match unsafe { tls_file(path) } {
        Ok(p) => c.apply(move |e| e.load_cert_chain_from_pem_file(&p)),
        Err(e) => e,
    })
}

/// Load the private key (PEM) of the certificate. 0 or QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_priv_key_from_pem_file(
    config: *mut quiche_config,
    path: *const c_char,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_TLS_FAIL.c());
    guard(QUICHE_ERR_TLS_FAIL.c(), || match unsafe { tls_file(path) } {
        Ok(p) => c.apply(move |e| e.load_priv_key_from_pem_file(&p)),
        Err(e) => e,
    })
}

/// Trust the CA certificates in this PEM file to verify the peer (instead
/// of the system's). 0 or QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_load_verify_locations_from_file(
    config: *mut quiche_config,
    path: *const c_char,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_TLS_FAIL.c());
    guard(QUICHE_ERR_TLS_FAIL.c(), || match unsafe { tls_file(path) } {
        Ok(p) => c.apply(move |e| e.load_verify_locations_from_file(&p)),
        Err(e) => e,
    })
}

/// Not supported (a CA directory): returns QUICHE_ERR_TLS_FAIL. Use
/// quiche_config_load_verify_locations_from_file.
#[no_mangle]
pub extern "C" fn quiche_config_load_verify_locations_from_directory(
    _config: *mut quiche_config,
    _path: *const c_char,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_TLS_FAIL.c())
}

/// Not supported (TLS groups are BoringSSL's defaults): QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub extern "C" fn quiche_config_set_curves_list(
    _config: *mut quiche_config,
    _curves: *const c_char,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_TLS_FAIL.c())
}

/// Not supported (no session resumption): QUICHE_ERR_TLS_FAIL.
#[no_mangle]
pub extern "C" fn quiche_config_set_ticket_key(
    _config: *mut quiche_config,
    _key: *const u8,
    _key_len: usize,
) -> c_int {
    crate::guard(crate::quiche::QUICHE_ERR_INVALID_STATE.c(), || QUICHE_ERR_TLS_FAIL.c())
}

/// Verify the peer's certificate (default: clients yes, servers no).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_verify_peer(config: *mut quiche_config, v: bool) {
    let c = cfg!(config);
    guard((), || {
        c.apply(move |e| {
            e.verify_peer(v);
            Ok(())
        });
    });
}

/// Write TLS secrets to the file named by SSLKEYLOGFILE, if set (quiche
/// enables key logging here and takes the file per connection).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_log_keys(config: *mut quiche_config) {
    let c = cfg!(config);
    guard((), || {
        if let Ok(path) = std::env::var("SSLKEYLOGFILE") {
            c.apply(move |e| {
                e.log_keys_to(&path);
                Ok(())
            });
        }
    });
}

/// ALPN protocols in wire format: each a length byte and the name (e.g.
/// "\x02h3"). 0 or QUICHE_ERR_BUFFER_TOO_SHORT for a malformed list.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_application_protos(
    config: *mut quiche_config,
    protos: *const u8,
    protos_len: usize,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        // SAFETY: `protos` holds `protos_len` bytes.
        let Some(mut b) = (unsafe { slice(protos, protos_len) }) else { return QUICHE_ERR_INVALID_STATE.c() };
        let mut list: Vec<Vec<u8>> = Vec::new();
        while let Some((&n, rest)) = b.split_first() {
            let Some(name) = rest.get(..n as usize) else { return QUICHE_ERR_BUFFER_TOO_SHORT.c() };
            list.push(name.to_vec());
            b = &rest[n as usize..];
        }
        c.apply(move |e| e.set_application_protos(&list.iter().map(Vec::as_slice).collect::<Vec<_>>()))
    })
}

/// Apply a void setting to a config (NULL is ignored).
unsafe fn set(
    config: *mut quiche_config,
    op: impl Fn(&mut Config) -> Result<(), ConfigError> + Send + Sync + 'static,
) {
    let c = cfg!(config);
    guard((), || {
        c.apply(op);
    })
}

/// Apply a setting that cannot fail.
unsafe fn set_unit(config: *mut quiche_config, op: impl Fn(&mut Config) + Send + Sync + 'static) {
    // SAFETY: forwarded.
    unsafe {
        set(config, move |e| {
            op(e);
            Ok(())
        })
    };
}

/// Idle timeout in milliseconds (0: none).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_max_idle_timeout(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_max_idle_timeout(v)) };
}
/// Largest UDP payload sent (clamped to 1200..65527).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_max_send_udp_payload_size(config: *mut quiche_config, v: usize) {
    let c = cfg!(config);
    guard((), || {
        c.max_send = v.clamp(1200, 65527);
        c.apply(move |e| {
            e.set_max_send_udp_payload_size(v);
            Ok(())
        });
    })
}
/// Connection flow-control credit given to the peer.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_data(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_data(v)) };
}
/// Credit on bidirectional streams we open.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_stream_data_bidi_local(
    config: *mut quiche_config,
    v: u64,
) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_stream_data_bidi_local(v)) };
}
/// Credit on bidirectional streams the peer opens.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_stream_data_bidi_remote(
    config: *mut quiche_config,
    v: u64,
) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_stream_data_bidi_remote(v)) };
}
/// Credit on unidirectional streams.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_stream_data_uni(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_stream_data_uni(v)) };
}
/// Bidirectional streams the peer may open.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_streams_bidi(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_streams_bidi(v)) };
}
/// Unidirectional streams the peer may open.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_streams_uni(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_initial_max_streams_uni(v)) };
}
/// ACK delay exponent (at most 20; larger values are ignored).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_ack_delay_exponent(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set(config, move |e| e.set_ack_delay_exponent(v)) };
}
/// Largest ACK delay in milliseconds (below 2^14; larger are ignored).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_max_ack_delay(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set(config, move |e| e.set_max_ack_delay(v)) };
}
/// Ask the peer not to migrate (it may still open multipath paths).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_disable_active_migration(config: *mut quiche_config, v: bool) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_disable_active_migration(v)) };
}
/// Pace sending (default on); quiche_send_info.at says when.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_enable_pacing(config: *mut quiche_config, v: bool) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.enable_pacing(v)) };
}
/// Largest connection flow-control window auto-tuning may reach.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_max_connection_window(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_max_connection_window(v)) };
}
/// Largest stream flow-control window auto-tuning may reach.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_max_stream_window(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.set_max_stream_window(v)) };
}
/// How many connection IDs of ours the peer may hold (at least 2).
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_active_connection_id_limit(config: *mut quiche_config, v: u64) {
    // SAFETY: forwarded.
    unsafe { set(config, move |e| e.set_active_connection_id_limit(v)) };
}

/// Accepted, no effect (mpquic sends no QUIC grease).
#[no_mangle]
pub extern "C" fn quiche_config_grease(_config: *mut quiche_config, _v: bool) {
    crate::guard((), || {})
}
/// Path MTU discovery on or off (mpquic's default: on); each new size is a
/// QUICHE_PATH_EVENT_PMTU_UPDATED path event.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_discover_pmtu(config: *mut quiche_config, v: bool) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.enable_pmtud(v)) };
}
/// Accepted, no effect (no 0-RTT).
#[no_mangle]
pub extern "C" fn quiche_config_enable_early_data(_config: *mut quiche_config) {
    crate::guard((), || {})
}
/// Accepted, no effect (the limit is RFC 9000's factor of 3).
#[no_mangle]
pub extern "C" fn quiche_config_set_max_amplification_factor(_config: *mut quiche_config, _v: usize) {
    crate::guard((), || {})
}
/// Accepted, no effect (mpquic accepts datagrams up to 65527 bytes).
#[no_mangle]
pub extern "C" fn quiche_config_set_max_recv_udp_payload_size(_config: *mut quiche_config, _v: usize) {
    crate::guard((), || {})
}
/// Accepted, no effect (each controller has its own initial window).
#[no_mangle]
pub extern "C" fn quiche_config_set_initial_congestion_window_packets(
    _config: *mut quiche_config,
    _packets: usize,
) {
    crate::guard((), || {})
}
/// Accepted, no effect (CUBIC's slow start is the controller's own).
#[no_mangle]
pub extern "C" fn quiche_config_enable_hystart(_config: *mut quiche_config, _v: bool) {
    crate::guard((), || {})
}
/// Accepted, no effect.
#[no_mangle]
pub extern "C" fn quiche_config_set_enable_cubic_idle_restart_fix(_config: *mut quiche_config, _v: bool) {
    crate::guard((), || {})
}
/// Accepted, no effect (windows auto-tune up to the max windows).
#[no_mangle]
pub extern "C" fn quiche_config_set_use_initial_max_data_as_flow_control_win(
    _config: *mut quiche_config,
    _v: bool,
) {
    crate::guard((), || {})
}
/// Accepted, no effect (no pacing rate cap).
#[no_mangle]
pub extern "C" fn quiche_config_set_max_pacing_rate(_config: *mut quiche_config, _v: u64) {
    crate::guard((), || {})
}
/// DATAGRAM frames (RFC 9221): advertise them and keep up to
/// `recv_queue_len` received and `send_queue_len` waiting to be sent.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_enable_dgram(
    config: *mut quiche_config,
    enabled: bool,
    recv_queue_len: usize,
    send_queue_len: usize,
) {
    // SAFETY: forwarded.
    unsafe { set_unit(config, move |e| e.enable_dgram(enabled, recv_queue_len, send_queue_len)) };
}
/// Accepted, no effect (tokens derive from a per-config random key).
#[no_mangle]
pub extern "C" fn quiche_config_set_stateless_reset_token(_config: *mut quiche_config, _v: *const u8) {
    crate::guard((), || {})
}
/// Accepted, no effect.
#[no_mangle]
pub extern "C" fn quiche_config_set_disable_dcid_reuse(_config: *mut quiche_config, _v: bool) {
    crate::guard((), || {})
}

/// quiche's congestion controllers, by number.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum quiche_cc_algorithm {
    /// NewReno.
    QUICHE_CC_RENO = 0,
    /// CUBIC (the default).
    QUICHE_CC_CUBIC = 1,
    /// quiche's BBRv2; mpquic runs BBRv3 (`bbr3`) for it.
    QUICHE_CC_BBR2_GCONGESTION = 4,
}

/// The mpquic controller for a quiche or mpquic name.
pub(crate) fn cc_name(name: &str) -> &str {
    match name {
        "reno" => "newreno",
        "bbr2_gcongestion" | "bbr2" => "bbr3",
        other => other,
    }
}

/// Choose the congestion controller by number.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_cc_algorithm(
    config: *mut quiche_config,
    algo: quiche_cc_algorithm,
) {
    let c = cfg!(config);
    let name = match algo {
        quiche_cc_algorithm::QUICHE_CC_RENO => "newreno",
        quiche_cc_algorithm::QUICHE_CC_CUBIC => "cubic",
        quiche_cc_algorithm::QUICHE_CC_BBR2_GCONGESTION => "bbr3",
    };
    guard((), || {
        c.apply(move |e| e.set_cc(name));
    });
}

/// Choose the congestion controller by name: quiche's ("reno", "cubic",
/// "bbr2_gcongestion") or, an mpquic extension, any of mpquic's ("bbr",
/// "bbr3", "coupled-bbr", "coupled-bbr-alg1", "lia", "olia", "balia",
/// "compound", "newreno"). 0 or QUICHE_ERR_CONGESTION_CONTROL for an unknown name.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_cc_algorithm_name(
    config: *mut quiche_config,
    algo: *const c_char,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_CONGESTION_CONTROL.c());
    guard(QUICHE_ERR_CONGESTION_CONTROL.c(), || {
        // SAFETY: `algo` is NUL-terminated.
        let Some(name) = (unsafe { c_str(algo) }) else { return QUICHE_ERR_CONGESTION_CONTROL.c() };
        let name = cc_name(name).to_owned();
        c.apply(move |e| e.set_cc(&name))
    })
}

/// mpquic extension: the path scheduler by name ("minrtt", "rr",
/// "redundant", "arp", "capacity", "lpc", "let", ...). 0 or
/// QUICHE_ERR_CONGESTION_CONTROL for an unknown name.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_scheduler_name(
    config: *mut quiche_config,
    name: *const c_char,
) -> c_int {
    let c = cfg!(config, QUICHE_ERR_CONGESTION_CONTROL.c());
    guard(QUICHE_ERR_CONGESTION_CONTROL.c(), || {
        // SAFETY: `name` is NUL-terminated.
        let Some(name) = (unsafe { c_str(name) }) else { return QUICHE_ERR_CONGESTION_CONTROL.c() };
        let name = name.to_owned();
        c.apply(move |e| e.set_scheduler(&name))
    })
}

/// mpquic extension: offer multipath (draft-ietf-quic-multipath-21) with
/// path IDs up to `v` (so up to v+1 paths at once); 0 turns the offer off
/// again. Both peers must offer it.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_initial_max_path_id(config: *mut quiche_config, v: u64) -> c_int {
    let c = cfg!(config, QUICHE_ERR_INVALID_STATE.c());
    guard(QUICHE_ERR_INVALID_STATE.c(), || {
        let Ok(v) = u32::try_from(v) else { return QUICHE_ERR_INVALID_STATE.c() };
        c.apply(move |e| {
            e.set_initial_max_path_id((v > 0).then_some(v));
            Ok(())
        })
    })
}
