//! Controllers by name, as used by `Config::set_cc`, the apps, the C API and
//! Python. Other controllers are added here as they land.

use super::cubic::Cubic;
use super::newreno::NewReno;
use super::{CcParams, CongestionController, UnknownAlgorithm};

/// Names accepted by [`build`] (aliases included).
pub const NAMES: &[&str] = &["newreno", "reno", "cubic"];

/// Build the controller called `name` (ASCII case-insensitive).
pub fn build(
    name: &str,
    params: CcParams,
) -> Result<Box<dyn CongestionController>, UnknownAlgorithm> {
    let n = name.to_ascii_lowercase();
    match n.as_str() {
        "newreno" | "reno" => Ok(Box::new(NewReno::new(params))),
        "cubic" => Ok(Box::new(Cubic::new(params))),
        _ => Err(UnknownAlgorithm(name.to_string())),
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
        }
    }

    #[test]
    fn builds_by_name() {
        assert_eq!(build("reno", params()).map(|c| c.name()), Ok("newreno"));
        assert_eq!(build("NewReno", params()).map(|c| c.name()), Ok("newreno"));
        assert_eq!(build("cubic", params()).map(|c| c.window()), Ok(12000));
        assert_eq!(
            build("vegas", params()).map(|c| c.name()),
            Err(UnknownAlgorithm("vegas".into()))
        );
    }
}
