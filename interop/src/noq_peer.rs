//! noq 1.4's side of a cell (in-process, on a one-worker tokio runtime):
//! multipath (draft-21), key updates on demand, cipher suites restricted
//! through rustls, a server's preferred address (its client does not move
//! to one).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::crypto::ring::{cipher_suite, default_provider};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::content::{fill, Check, File, ALPN};
use crate::{cert, Mp, ServerHandle, Side, Spec};

type Res<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn runtime() -> Res<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().map_err(err)
}

/// TLS 1.3 only; ChaCha20-Poly1305 only when asked (the Initial keeps
/// AES-128-GCM, which QUIC fixes).
fn provider(spec: &Spec) -> Arc<CryptoProvider> {
    let mut p = default_provider();
    if spec.chacha {
        p.cipher_suites = vec![cipher_suite::TLS13_CHACHA20_POLY1305_SHA256];
    }
    Arc::new(p)
}

fn initial_suite() -> Res<rustls::quic::Suite> {
    cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .ok_or_else(|| "no AES-128-GCM QUIC suite".to_string())
}

fn transport(spec: &Spec) -> Arc<noq::TransportConfig> {
    let mut t = noq::TransportConfig::default();
    if spec.mp.is_some() {
        t.max_concurrent_multipath_paths(5);
    }
    t.max_idle_timeout(crate::IDLE_TIMEOUT.try_into().ok());
    // Under 2048 full packets: noq 1.4's reassembly gives up ("too many gaps
    // in stream buffer") once it holds more than 2048 well-filled packets
    // and 1024 after merging, where well-filled ones are never merged, gaps
    // or not (quinn issue #2809, fixed upstream by PR #2814).
    t.stream_receive_window((2u32 << 20).into());
    t.receive_window((32u32 << 20).into());
    t.max_concurrent_bidi_streams(200u32.into());
    Arc::new(t)
}

fn client_config(spec: &Spec) -> Res<noq::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert("rootca.pem")).map_err(err)? {
        roots.add(c.map_err(err)?).map_err(err)?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(provider(spec))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(err)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = spec.early_data;
    let crypto =
        noq::crypto::rustls::QuicClientConfig::with_initial(Arc::new(tls), initial_suite()?).map_err(err)?;
    let mut c = noq::ClientConfig::new(Arc::new(crypto));
    c.transport_config(transport(spec));
    Ok(c)
}

fn server_config(spec: &Spec) -> Res<noq::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert("cert.pem"))
        .map_err(err)?
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let key = PrivateKeyDer::from_pem_file(cert("key.pem")).map_err(err)?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider(spec))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(err)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(err)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    // QUIC allows 0 or u32::MAX here (RFC 9001 §4.6.1).
    if spec.early_data {
        tls.max_early_data_size = u32::MAX;
    }
    let crypto =
        noq::crypto::rustls::QuicServerConfig::with_initial(Arc::new(tls), initial_suite()?).map_err(err)?;
    let mut c = noq::ServerConfig::with_crypto(Arc::new(crypto));
    c.transport_config(transport(spec));
    match spec.preferred {
        Some(SocketAddr::V4(a)) => c.preferred_address_v4(Some(a)),
        Some(SocketAddr::V6(a)) => c.preferred_address_v6(Some(a)),
        None => &mut c,
    };
    Ok(c)
}

/// Starts key updates every 20 ms while the connection lives (noq ignores
/// one while the previous is in progress).
fn keep_updating(conn: &noq::Connection) {
    let weak = conn.weak_handle();
    tokio::spawn(async move {
        while let Some(c) = weak.upgrade() {
            c.force_key_update();
            drop(c);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

/// Runs the client's connections against the relay fronts.
pub fn client(spec: &Spec, servers: &[SocketAddr]) -> Side {
    let run = || -> Res<Side> {
        let rt = runtime()?;
        rt.block_on(async {
            tokio::time::timeout(spec.timeout, run_client(spec, servers))
                .await
                .unwrap_or_else(|_| Err("timed out".into()))
        })
    };
    run().unwrap_or_else(|e| Side { errors: vec![e], ..Side::default() })
}

async fn run_client(spec: &Spec, servers: &[SocketAddr]) -> Res<Side> {
    let any: IpAddr =
        if spec.ipv6 { "::1".parse().map_err(err)? } else { "127.0.0.1".parse().map_err(err)? };
    let ep = noq::Endpoint::client(SocketAddr::new(any, 0)).map_err(err)?;
    ep.set_default_client_config(client_config(spec)?);
    let mut side = Side::default();
    for _ in 0..spec.connections {
        // With a ticket allowing it, the requests go in 0-RTT.
        let connecting = ep.connect(servers[0], "localhost").map_err(err)?;
        let (conn, zero_rtt) = match connecting.into_0rtt() {
            Ok((conn, accepted)) if spec.early_data => (conn, Some(accepted)),
            Ok((conn, _)) => (conn, None),
            Err(connecting) => (connecting.await.map_err(err)?, None),
        };
        if spec.key_update {
            keep_updating(&conn);
        }
        let received = Arc::new(AtomicU64::new(0));
        let path = match spec.mp {
            Some(mp) => Some(open_second_path(&conn, servers[1], mp).await?),
            None => None,
        };
        let mut tasks = Vec::new();
        for f in &spec.files {
            let (conn, f, received) = (conn.clone(), *f, received.clone());
            tasks.push(tokio::spawn(async move { fetch(conn, f, received).await }));
        }
        if let (Some(path), Some(Mp::Abandon(at))) = (path, spec.mp) {
            while received.load(Ordering::Relaxed) < at && !tasks.iter().all(|t| t.is_finished()) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            path.close().map_err(|e| format!("abandon: {e:?}"))?;
        }
        if let Some(accepted) = zero_rtt {
            *side.early_data.get_or_insert(0) += usize::from(accepted.await);
        }
        for t in tasks {
            match t.await.map_err(err)? {
                Ok(()) => side.files += 1,
                Err(e) => side.errors.push(e),
            }
        }
        conn.close(0u32.into(), b"done");
        if !side.errors.is_empty() {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
    Ok(side)
}

async fn open_second_path(conn: &noq::Connection, to: SocketAddr, mp: Mp) -> Res<noq::Path> {
    if !conn.is_multipath_enabled() {
        return Err("multipath not negotiated".into());
    }
    // Our PATH_NEW_CONNECTION_IDs arrive just after the handshake: retry.
    for _ in 0..100 {
        match conn.open_path(to, noq::PathStatus::Available).await {
            Ok(p) => {
                // noq tells the peer a status only when it changes (a path
                // opened as backup sends no PATH_STATUS_BACKUP).
                if mp == Mp::Backup {
                    p.set_status(noq::PathStatus::Backup).map_err(|e| format!("set_status: {e:?}"))?;
                }
                return Ok(p);
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    Err("could not open the second path".into())
}

async fn fetch(conn: noq::Connection, f: File, received: Arc<AtomicU64>) -> Res<()> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(err)?;
    send.write_all(f.request().as_bytes()).await.map_err(err)?;
    send.finish().map_err(err)?;
    let mut check = Check::new(f);
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(n) = recv.read(&mut buf).await.map_err(err)? {
        check.push(&buf[..n]);
        received.fetch_add(n as u64, Ordering::Relaxed);
    }
    check.verdict().map_or(Ok(()), Err)
}

/// Starts a noq server (Retry when the case asks).
pub fn server(spec: &Spec) -> Result<ServerHandle, String> {
    let cfg = server_config(spec)?;
    let ip: IpAddr =
        if spec.ipv6 { "::1".parse().map_err(err)? } else { "127.0.0.1".parse().map_err(err)? };
    let rt = runtime()?;
    let ep = {
        let _g = rt.enter();
        noq::Endpoint::server(cfg, SocketAddr::new(ip, 0)).map_err(err)?
    };
    // One socket: the relay sends what reaches the preferred address there too.
    let addr = ep.local_addr().map_err(err)?;
    let addrs = if spec.preferred.is_some() { vec![addr; 2] } else { vec![addr] };
    let stop = Arc::new(AtomicBool::new(false));
    let (s, spec) = (stop.clone(), spec.clone());
    let join = std::thread::Builder::new()
        .name("noq-server".into())
        .spawn(move || rt.block_on(serve(ep, spec, s)))
        .map_err(err)?;
    Ok(ServerHandle::new(addrs, stop, join))
}

async fn serve(ep: noq::Endpoint, spec: Spec, stop: Arc<AtomicBool>) -> Side {
    let served = Arc::new(AtomicUsize::new(0));
    let early = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (ep2, served2, errors2, early2) = (ep.clone(), served.clone(), errors.clone(), early.clone());
    let accept = tokio::spawn(async move {
        while let Some(inc) = ep2.accept().await {
            if spec.retry && !inc.remote_address_validated() {
                let _ = inc.retry();
                continue;
            }
            let (served, errors, ku) = (served2.clone(), errors2.clone(), spec.key_update);
            let early = early2.clone();
            tokio::spawn(async move {
                // 0.5-RTT: streams the client opened in 0-RTT are served at once.
                let Ok(connecting) = inc.accept() else { return };
                let conn = match connecting.into_0rtt() {
                    Ok((conn, _)) => conn,
                    Err(connecting) => {
                        let Ok(conn) = connecting.await else { return };
                        conn
                    }
                };
                if ku {
                    keep_updating(&conn);
                }
                let mut saw_early = false;
                while let Ok((send, recv)) = conn.accept_bi().await {
                    if recv.is_0rtt() && !saw_early {
                        saw_early = true;
                        early.fetch_add(1, Ordering::Relaxed);
                    }
                    let (served, errors) = (served.clone(), errors.clone());
                    tokio::spawn(async move {
                        match answer(send, recv).await {
                            Ok(()) => served.fetch_add(1, Ordering::Relaxed),
                            Err(e) => {
                                errors.lock().map(|mut v| v.push(e)).ok();
                                0
                            }
                        };
                    });
                }
            });
        }
    });
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    accept.abort();
    ep.close(0u32.into(), b"bye");
    let errors = errors.lock().map(|v| v.clone()).unwrap_or_default();
    let early = Some(early.load(Ordering::Relaxed)).filter(|_| spec.early_data);
    Side { files: served.load(Ordering::Relaxed), errors, early_data: early, ..Side::default() }
}

async fn answer(mut send: noq::SendStream, mut recv: noq::RecvStream) -> Res<()> {
    let req = recv.read_to_end(4096).await.map_err(err)?;
    let f = File::parse(&req).ok_or_else(|| format!("bad request {:?}", String::from_utf8_lossy(&req)))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut off = 0;
    while off < f.size {
        let n = buf.len().min((f.size - off) as usize);
        fill(f.salt(), off, &mut buf[..n]);
        send.write_all(&buf[..n]).await.map_err(err)?;
        off += n as u64;
    }
    send.finish().map_err(err)
}
