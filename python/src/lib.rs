//! Python bindings for mpquic, imported as `mpquic._native` and re-exported by the
//! pure-Python package `mpquic` (python/mpquic/), which adds pandas DataFrames,
//! sweeps and plots on top.
//!
//! Long runs (simulations, downloads) release the GIL, so sweeps can run several
//! simulations at once on threads.
#![warn(missing_docs, unreachable_pub)]

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod download;
mod scenario;
mod serve;
mod simulate;

create_exception!(
    mpquic,
    ScenarioError,
    PyValueError,
    "A scenario is unknown, cannot be read, or is invalid."
);
create_exception!(
    mpquic,
    ConfigError,
    PyValueError,
    "A congestion controller, scheduler or other setting is unknown or invalid."
);
create_exception!(mpquic, SimulationError, PyRuntimeError, "A simulation could not be set up.");
create_exception!(
    mpquic,
    DownloadError,
    PyRuntimeError,
    "A download failed (connection, handshake, HTTP status or timeout)."
);

/// Checks a congestion controller name, returning its canonical form.
pub(crate) fn check_cc(name: &str) -> PyResult<String> {
    mpquic::cc::registry::canonical(name).map(str::to_owned).ok_or_else(|| {
        ConfigError::new_err(format!(
            "unknown congestion controller {name:?} (known: {})",
            mpquic::cc::registry::names().join(", ")
        ))
    })
}

/// Checks a scheduler specification (`name[:key=value,...]`).
pub(crate) fn check_scheduler(spec: &str) -> PyResult<()> {
    mpquic::sched::build(spec, &mpquic::sched::SchedParams::default()).map(|_| ()).map_err(|e| {
        ConfigError::new_err(format!("{e} (known schedulers: {})", mpquic::sched::names().join(", ")))
    })
}

/// Names of the congestion controllers (`cc=` arguments).
#[pyfunction]
fn congestion_controllers() -> Vec<&'static str> {
    mpquic::cc::registry::names().to_vec()
}

/// Names of the path schedulers (`scheduler=` arguments; parameters may follow as
/// `"name:key=value,..."`).
#[pyfunction]
fn schedulers() -> Vec<&'static str> {
    mpquic::sched::names().to_vec()
}

/// Adds `paths`, `links` (names of the shared links), `test_paths` (the flow under
/// test's) and `background_flows` (dicts: `paths`, `cc` (None: the flow under
/// test's), `scheduler`, `start`, `bytes`) to a scenario description.
fn describe_topology(d: &Bound<'_, PyDict>, s: &emu::scenario::Scenario) -> PyResult<()> {
    let py = d.py();
    let name = |i: &usize| s.paths[*i].name.clone();
    d.set_item("paths", s.paths.iter().map(|p| p.name.as_str()).collect::<Vec<_>>())?;
    d.set_item("links", s.links.iter().map(|l| l.name.as_str()).collect::<Vec<_>>())?;
    d.set_item("test_paths", s.test_paths.iter().map(name).collect::<Vec<_>>())?;
    let flows = PyList::empty(py);
    for f in &s.flows {
        let fd = PyDict::new(py);
        fd.set_item("paths", f.paths.iter().map(name).collect::<Vec<_>>())?;
        fd.set_item("cc", f.cc.as_deref())?;
        fd.set_item("scheduler", &f.scheduler)?;
        fd.set_item("start", f.start.as_secs_f64())?;
        fd.set_item("bytes", f.bytes)?;
        flows.append(fd)?;
    }
    d.set_item("background_flows", flows)
}

/// The scenarios found in `./traces` and the repository's `traces/`: a list of
/// dicts with `name`, `description`, `duration` (s), `paths` (names), `links`,
/// `test_paths`, `background_flows` and `file`.
/// Scenarios that fail to load are listed with an `error` key instead.
#[pyfunction]
fn scenarios<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, file) in scenario::list() {
        let d = PyDict::new(py);
        d.set_item("name", &name)?;
        d.set_item("file", file.to_string_lossy())?;
        match emu::scenario::Scenario::load(&file) {
            Ok(s) => {
                d.set_item("description", &s.description)?;
                d.set_item("duration", s.duration.as_secs_f64())?;
                describe_topology(&d, &s)?;
            }
            Err(e) => d.set_item("error", e.to_string())?,
        }
        out.append(d)?;
    }
    Ok(out)
}

/// Loads and validates a scenario (name, path or dict) and describes it as a dict
/// (`name`, `description`, `duration`, `seed`, `paths`, `links`, `test_paths`,
/// `background_flows`, `file`); raises
/// `ScenarioError` when it is invalid.
#[pyfunction]
#[pyo3(signature = (scenario, base_dir=None))]
fn load_scenario<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    base_dir: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let s = scenario::resolve(scenario, base_dir)?;
    let d = PyDict::new(py);
    d.set_item("name", &s.name)?;
    d.set_item("description", &s.description)?;
    d.set_item("duration", s.duration.as_secs_f64())?;
    d.set_item("seed", s.seed)?;
    describe_topology(&d, &s)?;
    d.set_item("file", s.file.to_string_lossy())?;
    Ok(d)
}

/// The TOML text a scenario dict is turned into.
#[pyfunction]
fn scenario_toml(scenario: &Bound<'_, PyDict>) -> PyResult<String> {
    scenario::dict_to_toml(scenario)
}

/// Called once by the package on import with its own directory
/// (`python/mpquic` in a checkout): scenarios are looked up beside it.
#[pyfunction]
fn set_package_dir(dir: std::path::PathBuf) {
    let _ = scenario::PACKAGE_DIR.set(dir);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("DownloadError", py.get_type::<DownloadError>())?;
    m.add_function(wrap_pyfunction!(set_package_dir, m)?)?;
    m.add_function(wrap_pyfunction!(congestion_controllers, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(load_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_toml, m)?)?;
    m.add_function(wrap_pyfunction!(download::download, m)?)?;
    m.add_class::<serve::Server>()?;
    m.add_function(wrap_pyfunction!(simulate::simulate, m)?)?;
    Ok(())
}
