//! Controllers by name, as used by `Config::set_cc`, the apps, the C API and
//! Python. Other controllers are added here as they land.

use super::compound::Compound;
use super::cubic::Cubic;
use super::newreno::NewReno;
use super::{CcParams, CongestionController, UnknownAlgorithm};

/// Canonical names accepted by [`build`] (plus the aliases "reno",
/// "coupled_bbr" and "cbbr").
pub const NAMES: &[&str] = &[
    "newreno",
    "cubic",
    "compound",
    "bbr",
    "bbr3",
    "coupled-bbr",
    "coupled-bbr-alg1",
    "lia",
    "olia",
    "balia",
];

/// The controllers selectable by name.
pub fn names() -> &'static [&'static str] {
    NAMES
}

/// The canonical name for `name` (case-insensitive, aliases resolved), if
/// it names a known controller.
pub fn canonical(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    let n = match n.as_str() {
        "reno" => "newreno",
        "coupled_bbr" | "cbbr" => "coupled-bbr",
        "ctcp" => "compound",
        other => other,
    };
    NAMES.iter().copied().find(|c| *c == n)
}

/// Build the controller called `name` (ASCII case-insensitive).
pub fn build(name: &str, params: CcParams) -> Result<Box<dyn CongestionController>, UnknownAlgorithm> {
    let n = name.to_ascii_lowercase();
    match n.as_str() {
        "newreno" | "reno" => Ok(Box::new(NewReno::new(params))),
        "cubic" => Ok(Box::new(Cubic::new(params))),
        "compound" | "ctcp" => Ok(Box::new(Compound::new(params))),
        _ => super::extra::build_extra(&n, params).ok_or_else(|| UnknownAlgorithm(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PathId;

    #[allow(clippy::disallowed_methods)]
    fn params() -> CcParams {
        CcParams {
            path_id: PathId(1),
            mss: 1200,
            initial_window: 12000,
            now: std::time::Instant::now(),
            seed: 0,
        }
    }

    #[test]
    fn builds_by_name() {
        assert_eq!(build("reno", params()).map(|c| c.name()), Ok("newreno"));
        assert_eq!(build("NewReno", params()).map(|c| c.name()), Ok("newreno"));
        assert_eq!(build("cubic", params()).map(|c| c.window()), Ok(12000));
        for n in NAMES {
            assert!(build(n, params()).is_ok(), "{n}");
        }
        assert_eq!(build("vegas", params()).map(|c| c.name()), Err(UnknownAlgorithm("vegas".into())));
    }
}
