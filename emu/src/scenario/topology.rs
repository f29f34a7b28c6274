//! Resolving a scenario's topology: names of paths and links, each path's `via`, the
//! background flows and the flow under test's paths. Errors are `(context, message)`.

use std::time::Duration;

use super::{in_range, BackgroundFlow, PathSpec, RawLink, RawScenario, MAX_FLOW_BYTES, MAX_SECONDS};

type Error = (String, String);

/// Names are unique across paths and links (outputs name both), and not empty.
pub(super) fn check_names(raw: &RawScenario) -> Result<(), Error> {
    let all: Vec<(&str, &str)> = raw
        .path
        .iter()
        .map(|p| ("path", p.name.as_str()))
        .chain(raw.link.iter().map(|l| ("link", l.name.as_str())))
        .collect();
    for (i, (kind, name)) in all.iter().enumerate() {
        let ctx = format!("{kind} {name:?}");
        if name.is_empty() {
            return Err((ctx, "a name must not be empty".into()));
        }
        if all.iter().take(i).any(|(_, o)| o == name) {
            return Err((ctx, "duplicate name (paths and links share one namespace)".into()));
        }
    }
    Ok(())
}

/// Indices of a path's `via` links, in order; each link at most once.
pub(super) fn resolve_via(path: &RawLink, links: &[RawLink]) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for name in path.via.iter().flatten() {
        let j = links.iter().position(|l| &l.name == name).ok_or_else(|| {
            let known: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
            format!("via: unknown link {name:?} (links: {})", list(&known))
        })?;
        if out.contains(&j) {
            return Err(format!("via: link {name:?} twice"));
        }
        out.push(j);
    }
    Ok(out)
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Indices of the named paths: none unknown, none twice, at least one.
fn path_indices(raw: &RawScenario, names: &[String]) -> Result<Vec<usize>, String> {
    if names.is_empty() {
        return Err("paths must not be empty".into());
    }
    let mut out = Vec::new();
    for name in names {
        let i = raw.path.iter().position(|p| &p.name == name).ok_or_else(|| {
            let known: Vec<&str> = raw.path.iter().map(|p| p.name.as_str()).collect();
            format!("unknown path {name:?} (paths: {})", list(&known))
        })?;
        if out.contains(&i) {
            return Err(format!("path {name:?} twice"));
        }
        out.push(i);
    }
    Ok(out)
}

/// The flow under test's paths: `test_paths`, or every path.
pub(super) fn test_paths(raw: &RawScenario) -> Result<Vec<usize>, Error> {
    match &raw.test_paths {
        None => Ok((0..raw.path.len()).collect()),
        Some(names) => path_indices(raw, names).map_err(|m| ("test_paths".into(), m)),
    }
}

/// The `[[flow]]` tables.
pub(super) fn flows(raw: &RawScenario) -> Result<Vec<BackgroundFlow>, Error> {
    let mut out = Vec::new();
    for (i, f) in raw.flow.iter().enumerate() {
        let bad = |m: String| (format!("flow {}", i + 1), m);
        let paths = path_indices(raw, &f.paths).map_err(|m| bad(format!("paths: {m}")))?;
        let start = in_range("start", f.start, 0.0, MAX_SECONDS).map_err(bad)?;
        if let Some(b) = f.bytes {
            if !(1..=MAX_FLOW_BYTES).contains(&b) {
                return Err(bad(format!("bytes must be in [1, {MAX_FLOW_BYTES}], got {b}")));
            }
        }
        for (key, v) in [("cc", &f.cc), ("scheduler", &f.scheduler)] {
            if v.as_deref().is_some_and(str::is_empty) {
                return Err(bad(format!("{key} must not be empty (omit it for the default)")));
            }
        }
        out.push(BackgroundFlow {
            paths,
            cc: f.cc.clone(),
            scheduler: f.scheduler.clone().unwrap_or_else(|| "minrtt".into()),
            start: Duration::from_secs_f64(start),
            bytes: f.bytes,
        });
    }
    Ok(out)
}

/// Every path carries some flow and every link some path: anything else is
/// most likely a typo in a name.
pub(super) fn check_used(
    raw: &RawScenario,
    paths: &[PathSpec],
    test_paths: &[usize],
    flows: &[BackgroundFlow],
) -> Result<(), Error> {
    for (i, p) in paths.iter().enumerate() {
        if !test_paths.contains(&i) && !flows.iter().any(|f| f.paths.contains(&i)) {
            return Err((format!("path {:?}", p.name), "used by no flow (test_paths or [[flow]])".into()));
        }
    }
    for (j, l) in raw.link.iter().enumerate() {
        if !paths.iter().any(|p| p.via.contains(&j)) {
            return Err((format!("link {:?}", l.name), "used by no path (add it to a path's via)".into()));
        }
    }
    Ok(())
}
