//! `mpquic.Server`: the HTTP/3 file server of `mpquic-server`
//! (`mpquic_apps::server`, on `mpquic::Endpoint`) from Python.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mpquic_apps::server::{Options, Server as AppServer};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{check_cc, check_scheduler};

/// A bound HTTP/3 file server; see the Python docs of `mpquic.Server`.
#[pyclass(module = "mpquic._native")]
pub(crate) struct Server {
    inner: Mutex<AppServer>,
    addresses: Vec<String>,
    stop: Arc<AtomicBool>,
    /// `serve` ran: a server closes every connection when it stops, so it
    /// serves once.
    served: AtomicBool,
}

#[pymethods]
impl Server {
    #[new]
    #[pyo3(signature = (root, cert, key, listen, cc, scheduler, retry, max_paths, max_half_open, idle_timeout_ms, access_log, quic_version, early_data, qlog_dir, ecn, pmtud))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        root: PathBuf,
        cert: String,
        key: String,
        listen: Vec<String>,
        cc: &str,
        scheduler: &str,
        retry: bool,
        max_paths: u32,
        max_half_open: usize,
        idle_timeout_ms: u64,
        access_log: Option<PathBuf>,
        quic_version: &str,
        early_data: bool,
        qlog_dir: Option<PathBuf>,
        ecn: bool,
        pmtud: bool,
    ) -> PyResult<Server> {
        let versions =
            mpquic::version::parse_list(quic_version).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let cc = check_cc(cc)?;
        check_scheduler(scheduler)?;
        let listen = listen
            .iter()
            .map(|a| {
                a.parse::<SocketAddr>()
                    .map_err(|_| PyValueError::new_err(format!("bad listen address {a:?}: expected IP:PORT")))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let opts = Options {
            listen,
            root,
            cert,
            key,
            retry,
            cc,
            scheduler: scheduler.to_owned(),
            max_paths,
            access_log,
            qlog_dir,
            idle_timeout: idle_timeout_ms,
            max_half_open,
            early_data,
            ecn,
            pmtud,
            versions,
        };
        let inner = AppServer::new(opts).map_err(|(code, e)| {
            if code == mpquic_apps::exit::USAGE {
                PyValueError::new_err(e)
            } else {
                PyOSError::new_err(e)
            }
        })?;
        let addresses = inner.local_addrs().iter().map(|a| a.to_string()).collect();
        Ok(Server {
            inner: Mutex::new(inner),
            addresses,
            stop: Arc::new(AtomicBool::new(false)),
            served: AtomicBool::new(false),
        })
    }

    /// The bound addresses as "IP:PORT" strings.
    fn addresses(&self) -> Vec<String> {
        self.addresses.clone()
    }

    /// Serve (without the GIL) until `stop()` or `duration` seconds.
    #[pyo3(signature = (duration=None))]
    fn serve(&self, py: Python<'_>, duration: Option<f64>) -> PyResult<()> {
        if self.served.swap(true, Ordering::Relaxed) {
            return Err(PyRuntimeError::new_err("this server has served already: make a new one"));
        }
        if let Some(d) = duration {
            if !(d.is_finite() && d > 0.0 && d < 1e7) {
                return Err(PyValueError::new_err("duration must be a positive number of seconds"));
            }
            let stop = self.stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(d));
                stop.store(true, Ordering::Relaxed);
            });
        }
        let (inner, stop) = (&self.inner, &self.stop);
        py.detach(|| match inner.lock() {
            Ok(mut s) => s.run(stop).map_err(PyOSError::new_err),
            Err(_) => Err(PyRuntimeError::new_err("server poisoned by an earlier panic")),
        })
    }

    /// Ask `serve()` to close every connection and return.
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The endpoint's counters (dict); not while `serve()` runs.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match self.inner.try_lock() {
            Ok(s) => s.stats(),
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err("serving: call stats() after serve() returns"))
            }
            Err(_) => return Err(PyRuntimeError::new_err("server poisoned by an earlier panic")),
        };
        let d = PyDict::new(py);
        d.set_item("routed", s.routed)?;
        d.set_item("accepted", s.accepted)?;
        d.set_item("undecryptable", s.undecryptable)?;
        d.set_item("unknown_cid", s.unknown_cid)?;
        d.set_item("version_negotiations", s.version_negotiations)?;
        d.set_item("retries", s.retries)?;
        d.set_item("forced_retries", s.forced_retries)?;
        d.set_item("stateless_resets", s.stateless_resets)?;
        d.set_item("dropped", s.dropped)?;
        Ok(d)
    }
}
