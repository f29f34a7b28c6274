//! `mpquic_config`: connection settings.

use std::ffi::c_char;

use engine::Config;

use crate::{c_str, config_error, guard, slice, MPQUIC_ERROR_INTERNAL, MPQUIC_ERROR_INVALID_ARGUMENT};

/// Settings for connections (opaque). Create with mpquic_config_new, free
/// with mpquic_config_free. One config may be used for many connections; a
/// connection copies what it needs, so the config may be freed once the
/// connections are created.
pub struct mpquic_config {
    pub(crate) inner: Config,
}

/// A new config with the defaults: CUBIC, minRTT scheduler, peer
/// verification on for clients, 30 s idle timeout, 1350-byte datagrams,
/// multipath off. Returns NULL only on internal error. Free with
/// mpquic_config_free.
#[no_mangle]
pub extern "C" fn mpquic_config_new() -> *mut mpquic_config {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::new(mpquic_config { inner: Config::new() })))
}

/// Free a config (NULL is ignored). Connections created from it are not
/// affected.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_free(cfg: *mut mpquic_config) {
    if cfg.is_null() {
        return;
    }
    // SAFETY: `cfg` came from mpquic_config_new and is freed once.
    let b = unsafe { Box::from_raw(cfg) };
    crate::guard((), move || drop(b));
}

/// Run `f` on the config behind `cfg`; INVALID_ARGUMENT for NULL.
unsafe fn with_cfg(
    cfg: *mut mpquic_config,
    f: impl FnOnce(&mut Config) -> Result<(), engine::ConfigError>,
) -> i32 {
    // SAFETY: the caller passes a live config used by this thread only.
    let Some(c) = (unsafe { cfg.as_mut() }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    guard(MPQUIC_ERROR_INTERNAL.code(), move || match f(&mut c.inner) {
        Ok(()) => 0,
        Err(e) => config_error(&e).code(),
    })
}

/// Run `f` with a UTF-8 string argument.
unsafe fn with_str(
    cfg: *mut mpquic_config,
    s: *const c_char,
    f: impl FnOnce(&mut Config, &str) -> Result<(), engine::ConfigError>,
) -> i32 {
    // SAFETY: NUL-terminated string (caller's contract).
    let Some(s) = (unsafe { c_str(s) }) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
    // SAFETY: see with_cfg.
    unsafe { with_cfg(cfg, |c| f(c, s)) }
}

/// Choose the congestion controller by name ("newreno", "cubic", "compound",
/// "bbr", "bbr3", "coupled-bbr", "coupled-bbr-alg1", "lia", "olia", "balia").
/// Returns 0, or
/// MPQUIC_ERROR_UNKNOWN_ALGORITHM (config unchanged).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_cc(cfg: *mut mpquic_config, name: *const c_char) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, name, |c, s| c.set_cc(s)) }
}

/// Choose the path scheduler by name (e.g. "minrtt", "roundrobin",
/// "redundant", "arp"). Returns 0, or MPQUIC_ERROR_UNKNOWN_ALGORITHM.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_scheduler(cfg: *mut mpquic_config, name: *const c_char) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, name, |c, s| c.set_scheduler(s)) }
}

/// Certificate chain (PEM file) presented to the peer. Returns 0 or
/// MPQUIC_ERROR_TLS if the file cannot be read.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_load_cert_chain_from_pem_file(
    cfg: *mut mpquic_config,
    path: *const c_char,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, path, |c, s| c.load_cert_chain_from_pem_file(s)) }
}

/// Private key (PEM file) of the certificate. Returns 0 or MPQUIC_ERROR_TLS.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_load_priv_key_from_pem_file(
    cfg: *mut mpquic_config,
    path: *const c_char,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, path, |c, s| c.load_priv_key_from_pem_file(s)) }
}

/// Trusted CA certificates (PEM file) for verifying the peer. Returns 0 or
/// MPQUIC_ERROR_TLS.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_load_verify_locations_from_file(
    cfg: *mut mpquic_config,
    path: *const c_char,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, path, |c, s| c.load_verify_locations_from_file(s)) }
}

/// Whether to verify the peer's certificate (default: clients yes, servers
/// no). Returns 0 or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_verify_peer(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.verify_peer(v);
            Ok(())
        })
    }
}

/// Append TLS secrets in NSS key-log format to the file `path`.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_log_keys_to(cfg: *mut mpquic_config, path: *const c_char) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_str(cfg, path, |c, s| {
            c.log_keys_to(s);
            Ok(())
        })
    }
}

/// ALPN protocols in wire format: each protocol preceded by its length
/// byte, e.g. "\x02h3" (as quiche_config_set_application_protos). Returns
/// 0 or MPQUIC_ERROR_INVALID_ARGUMENT for a malformed list.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_application_protos(
    cfg: *mut mpquic_config,
    protos: *const u8,
    protos_len: usize,
) -> i32 {
    // SAFETY: `protos` points to `protos_len` bytes.
    let Some(mut b) = (unsafe { slice(protos, protos_len) }) else {
        return MPQUIC_ERROR_INVALID_ARGUMENT.code();
    };
    let mut list: Vec<&[u8]> = Vec::new();
    while let Some((&n, rest)) = b.split_first() {
        let Some(p) = rest.get(..n as usize) else { return MPQUIC_ERROR_INVALID_ARGUMENT.code() };
        list.push(p);
        b = rest.get(n as usize..).unwrap_or_default();
    }
    if list.is_empty() {
        return MPQUIC_ERROR_INVALID_ARGUMENT.code();
    }
    // SAFETY: forwarded contract.
    unsafe { with_cfg(cfg, |c| c.set_application_protos(&list)) }
}

/// Idle timeout in milliseconds (0 disables it).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_idle_timeout(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_max_idle_timeout(v);
            Ok(())
        })
    }
}

/// Largest UDP payload we send (clamped to 1200..=65527).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_send_udp_payload_size(
    cfg: *mut mpquic_config,
    v: usize,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_max_send_udp_payload_size(v);
            Ok(())
        })
    }
}

/// Initial connection-level flow-control window.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_data(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_data(v);
            Ok(())
        })
    }
}

/// Initial window of bidirectional streams we open.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_stream_data_bidi_local(
    cfg: *mut mpquic_config,
    v: u64,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_stream_data_bidi_local(v);
            Ok(())
        })
    }
}

/// Initial window of bidirectional streams the peer opens.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_stream_data_bidi_remote(
    cfg: *mut mpquic_config,
    v: u64,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_stream_data_bidi_remote(v);
            Ok(())
        })
    }
}

/// Initial window of unidirectional streams the peer opens.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_stream_data_uni(
    cfg: *mut mpquic_config,
    v: u64,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_stream_data_uni(v);
            Ok(())
        })
    }
}

/// How many bidirectional streams the peer may open.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_streams_bidi(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_streams_bidi(v);
            Ok(())
        })
    }
}

/// How many unidirectional streams the peer may open.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_max_streams_uni(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_streams_uni(v);
            Ok(())
        })
    }
}

/// Upper bound of connection-window auto-tuning.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_connection_window(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_max_connection_window(v);
            Ok(())
        })
    }
}

/// Upper bound of stream-window auto-tuning.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_stream_window(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_max_stream_window(v);
            Ok(())
        })
    }
}

/// Advertise disable_active_migration.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_disable_active_migration(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_disable_active_migration(v);
            Ok(())
        })
    }
}

/// Whether mpquic_send_info.at_ns carries pacing release times
/// (default on).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_pacing(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_pacing(v);
            Ok(())
        })
    }
}

/// Mark packets ECT(0) and validate ECN on every path (default on): the
/// codepoint to set is in mpquic_send_info.ecn, the one received goes in
/// mpquic_recv_info.ecn. A caller whose sockets cannot do either loses
/// nothing: its paths stop marking after their test.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_ecn(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_ecn(v);
            Ok(())
        })
    }
}

/// Path MTU discovery (default on): each path probes for datagrams larger
/// than mpquic_config_set_max_send_udp_payload_size up to the link MTU of
/// mpquic_config_set_max_mtu, and falls back to 1200 bytes on a black hole.
/// mpquic_path_stats.mtu says where a path is. Probes are only sent into
/// buffers that hold them (1472 bytes over IPv4 by default).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_pmtud(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_pmtud(v);
            Ok(())
        })
    }
}

/// Offer the receive-timestamp extension when multipath is offered
/// (default on): with a peer that offers it too, ACKs carry the peer's send
/// time and shared-bottleneck detection reads one-way delays instead of RTT
/// samples. Other peers ignore the offer.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_timestamps(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_timestamps(v);
            Ok(())
        })
    }
}

/// Server: offer `addr` as the preferred address (RFC 9000 §9.6; one IPv4
/// and one IPv6 address). Clients move there once the handshake is
/// confirmed; feed the datagrams received on it to the same connection.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_preferred_address(
    cfg: *mut mpquic_config,
    addr: *const libc::sockaddr,
    addr_len: libc::socklen_t,
) -> i32 {
    // SAFETY: forwarded contract; the address covers its length.
    unsafe {
        let Some(a) = crate::addr::from_c(addr, addr_len) else {
            return crate::MPQUIC_ERROR_INVALID_ARGUMENT.code();
        };
        with_cfg(cfg, |c| {
            c.set_preferred_address(a);
            Ok(())
        })
    }
}

/// The largest IP packet path MTU discovery tries (default 1500).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_mtu(cfg: *mut mpquic_config, bytes: usize) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_max_mtu(bytes);
            Ok(())
        })
    }
}

/// Servers: send TLS session tickets, so that clients can resume
/// (mpquic_connect_with_session). Clients: keep the ticket a server sends
/// (mpquic_conn_session). Default off.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_session_tickets(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_session_tickets(v);
            Ok(())
        })
    }
}

/// 0-RTT (default off; needs mpquic_config_enable_session_tickets too).
/// Clients: send stream data written before the handshake completes in
/// 0-RTT when resuming a session that allows it. Servers: accept it from
/// tickets issued under the same flow-control limits. 0-RTT data can be
/// replayed by an attacker: accept it only for requests that are safe to
/// repeat.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_early_data(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_early_data(v);
            Ok(())
        })
    }
}

/// DATAGRAM frames (RFC 9221, off by default): advertise them and keep up
/// to `recv_queue_len` datagrams received (the oldest pushed out beyond)
/// and `send_queue_len` waiting to be sent (mpquic_conn_dgram_send).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_dgram(
    cfg: *mut mpquic_config,
    enabled: bool,
    recv_queue_len: usize,
    send_queue_len: usize,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_dgram(enabled, recv_queue_len, send_queue_len);
            Ok(())
        })
    }
}

/// Log every connection made with this config in qlog (main schema
/// draft-13, QUIC events draft-12, with mpquic's multipath extensions):
/// read the records with mpquic_conn_qlog_next. Off by default; off, it
/// costs one branch per packet.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_qlog(cfg: *mut mpquic_config, v: bool) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.enable_qlog(v);
            Ok(())
        })
    }
}

/// Initial RTT estimate in nanoseconds, used before the first sample.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_rtt_ns(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_rtt(std::time::Duration::from_nanos(v));
            Ok(())
        })
    }
}

/// Per-stream send buffer: bytes mpquic_conn_stream_send accepts ahead
/// of the network.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_stream_send_buffer(cfg: *mut mpquic_config, v: usize) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_stream_send_buffer(v);
            Ok(())
        })
    }
}

/// Per-stream cap on bytes written but not sent yet (default: none beyond
/// the send buffer): a stream then holds what is in flight plus this, so
/// a server with many connections uses memory by need.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_stream_send_unsent(cfg: *mut mpquic_config, v: usize) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_stream_send_unsent(v);
            Ok(())
        })
    }
}

/// Max ACK delay we advertise, in milliseconds (< 16384). Returns
/// MPQUIC_ERROR_INVALID_ARGUMENT when out of range.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_max_ack_delay(cfg: *mut mpquic_config, v: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_cfg(cfg, |c| c.set_max_ack_delay(v)) }
}

/// How many connection IDs per path we accept (>= 2).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_active_connection_id_limit(
    cfg: *mut mpquic_config,
    v: u64,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_cfg(cfg, |c| c.set_active_connection_id_limit(v)) }
}

/// Enable multipath (draft-ietf-quic-multipath-21) by advertising
/// initial_max_path_id = `max_path_id` (so up to max_path_id + 1 paths).
/// Both sides must enable it.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_enable_multipath(cfg: *mut mpquic_config, max_path_id: u32) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_path_id(Some(max_path_id));
            Ok(())
        })
    }
}

/// Derive the stateless reset tokens of this config's connections from the
/// 32-byte `key` (servers: the same key for every connection and for
/// mpquic_stateless_reset). Without it each connection uses a random key.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_stateless_reset_key(
    cfg: *mut mpquic_config,
    key: *const u8,
) -> i32 {
    // SAFETY: `key` points to 32 readable bytes (caller contract); checked for NULL.
    let Some(k) = (unsafe { crate::slice(key, 32) }) else {
        return crate::MPQUIC_ERROR_INVALID_ARGUMENT.code();
    };
    let mut b = [0u8; 32];
    b.copy_from_slice(k);
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_stateless_reset_key(engine::server::StatelessResetKey::from_bytes(b));
            Ok(())
        })
    }
}

/// Start a key update after `packets` packets with the same keys (at least
/// 1000; default 2^22). Returns 0 or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_key_update_interval(cfg: *mut mpquic_config, packets: u64) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_key_update_interval(packets);
            Ok(())
        })
    }
}

/// The QUIC versions accepted, most preferred first, as a comma-separated
/// list ("v1", "v2", "v2,v1"; default "v1"): both sides send them in
/// version_information (RFC 9368), a server switches a client to the first
/// of them the client offers, a client starts with the first (see
/// mpquic_config_set_initial_version). A server's validator takes the same
/// list (mpquic_validator_set_versions). Returns 0 or
/// MPQUIC_ERROR_INVALID_ARGUMENT (config unchanged).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_versions(cfg: *mut mpquic_config, list: *const c_char) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { with_str(cfg, list, |c, s| c.set_versions(&versions_arg(s)?)) }
}

/// Client: the version of the first Initial ("v1" or "v2"), one of the
/// accepted versions. Returns 0 or MPQUIC_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_set_initial_version(
    cfg: *mut mpquic_config,
    version: *const c_char,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_str(cfg, version, |c, s| {
            let v = s.parse().map_err(|_| engine::ConfigError::InvalidValue("unknown QUIC version"))?;
            c.set_initial_version(v)
        })
    }
}

/// A version list from C, or the config error for it.
pub(crate) fn versions_arg(s: &str) -> Result<Vec<engine::Version>, engine::ConfigError> {
    engine::version::parse_list(s).map_err(|_| engine::ConfigError::InvalidValue("unknown QUIC version"))
}

/// Disable multipath (the default).
#[no_mangle]
pub unsafe extern "C" fn mpquic_config_disable_multipath(cfg: *mut mpquic_config) -> i32 {
    // SAFETY: forwarded contract.
    unsafe {
        with_cfg(cfg, |c| {
            c.set_initial_max_path_id(None);
            Ok(())
        })
    }
}
