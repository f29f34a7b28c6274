//! Resolving the `scenario` argument: a name from `traces/`, a path to a `.toml`
//! file, or a dict with the same keys as a scenario file (serialised to TOML here so
//! that one parser, `emu::scenario`, validates every form).

use std::path::{Path, PathBuf};

use emu::scenario::Scenario;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::ScenarioError;

/// The Python package's directory, given by its `__init__` on import.
pub(crate) static PACKAGE_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The repository's `traces/` directory (scenario files and trace data): beside
/// the package imported (`python/mpquic/`, in a checkout), else where the
/// crate was compiled. The first matters when one
/// target directory serves several checkouts: cargo does not rebuild for a
/// moved checkout, so the compiled-in path may name another one.
pub(crate) fn repo_traces() -> PathBuf {
    let beside = PACKAGE_DIR.get().and_then(|d| Some(d.parent()?.parent()?.join("traces")));
    beside
        .filter(|d| d.is_dir())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("traces"))
}

/// Directories searched for scenarios by name, in order: `./traces`, then the
/// repository's.
pub(crate) fn search_dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("traces"), repo_traces()]
}

/// Converts a Python value to TOML. `ctx` names the key, for error messages.
fn to_toml(v: &Bound<'_, PyAny>, ctx: &str) -> PyResult<toml::Value> {
    // bool before int: Python's bool is a subclass of int.
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract::<i64>()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract::<f64>()?));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(toml::Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::map::Map::new();
        for (k, val) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                ScenarioError::new_err(format!("scenario dict: key {k} in {ctx} is not a string"))
            })?;
            // None means "not given", as an absent key would.
            if val.is_none() {
                continue;
            }
            let sub = if ctx.is_empty() { key.clone() } else { format!("{ctx}.{key}") };
            t.insert(key, to_toml(&val, &sub)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            out.push(to_toml(&item?, &format!("{ctx}[{i}]"))?);
        }
        return Ok(toml::Value::Array(out));
    }
    // numpy scalars and other numbers: anything float() accepts.
    if let Ok(f) = v.extract::<f64>() {
        return Ok(toml::Value::Float(f));
    }
    Err(ScenarioError::new_err(format!(
        "scenario dict: value of {ctx} has unsupported type {}",
        v.get_type().name()?
    )))
}

/// Serialises a scenario dict to TOML text (exposed as `mpquic.scenario_toml`).
pub(crate) fn dict_to_toml(d: &Bound<'_, PyDict>) -> PyResult<String> {
    let value = to_toml(d.as_any(), "")?;
    toml::to_string(&value)
        .map_err(|e| ScenarioError::new_err(format!("scenario dict cannot be written as TOML: {e}")))
}

/// Loads the scenario named by `obj` (see the module doc). Dict scenarios resolve
/// their trace paths against `base_dir` (default: the repository's `traces/`).
pub(crate) fn resolve(obj: &Bound<'_, PyAny>, base_dir: Option<PathBuf>) -> PyResult<Scenario> {
    if let Ok(d) = obj.cast::<PyDict>() {
        let text = dict_to_toml(d)?;
        // Traces resolve against `base`; the dict's own name (which may hold
        // any character, "/" too) wins over the file stem "scenario".
        let base = base_dir.unwrap_or_else(repo_traces);
        let file = base.join("scenario.toml");
        return Scenario::parse(&file, &text).map_err(|e| ScenarioError::new_err(e.to_string()));
    }
    // str or os.PathLike.
    let os = obj.py().import("os")?;
    let s: String = os.call_method1("fspath", (obj,)).and_then(|p| p.extract()).map_err(|_| {
        PyTypeError::new_err(format!(
            "scenario must be a name, a path to a .toml file or a dict, not {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    find(&s)
}

/// Loads a scenario by name or path, with a message listing the known names when
/// nothing matches.
pub(crate) fn find(name_or_path: &str) -> PyResult<Scenario> {
    let p = Path::new(name_or_path);
    if p.is_file() {
        return Scenario::load(p).map_err(|e| ScenarioError::new_err(e.to_string()));
    }
    for dir in search_dirs() {
        let candidate = dir.join(format!("{name_or_path}.toml"));
        if candidate.is_file() {
            return Scenario::load(&candidate).map_err(|e| ScenarioError::new_err(e.to_string()));
        }
    }
    let known: Vec<String> = list().into_iter().map(|(name, _)| name).collect();
    Err(ScenarioError::new_err(format!(
        "unknown scenario {name_or_path:?}: not a file, and not a scenario in traces/ (known: {})",
        known.join(", ")
    )))
}

/// Scenario names and files found in the search directories (first one wins).
pub(crate) fn list() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for dir in search_dirs() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let Some(stem) = f.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            if !out.iter().any(|(n, _)| *n == stem) {
                out.push((stem, f));
            }
        }
    }
    out
}
