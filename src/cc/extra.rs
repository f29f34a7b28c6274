//! Builders for the controllers of this module family (BBR, BBRv3, Coupled BBR,
//! LIA, OLIA, BALIA), for the registry to call.

use super::balia::Balia;
use super::bbr::Bbr;
use super::bbr3::Bbr3;
use super::coupled_bbr::CoupledBbr;
use super::lia::Lia;
use super::olia::Olia;
use super::{CcParams, CongestionController};

/// Names [`build_extra`] knows.
pub const EXTRA_NAMES: [&str; 7] = ["bbr", "bbr3", "coupled-bbr", "coupled-bbr-alg1", "lia", "olia", "balia"];

/// Build the controller called `name` (case-insensitive; `coupled_bbr` and
/// `cbbr` are accepted for `coupled-bbr`), or `None` for another name.
pub fn build_extra(name: &str, params: CcParams) -> Option<Box<dyn CongestionController>> {
    let name = name.to_ascii_lowercase();
    let cc: Box<dyn CongestionController> = match name.as_str() {
        "bbr" => Box::new(Bbr::new(params)),
        "bbr3" => Box::new(Bbr3::new(params)),
        "coupled-bbr" | "coupled_bbr" | "cbbr" => Box::new(CoupledBbr::new(params)),
        "coupled-bbr-alg1" => Box::new(CoupledBbr::alg1(params)),
        "lia" => Box::new(Lia::new(params)),
        "olia" => Box::new(Olia::new(params)),
        "balia" => Box::new(Balia::new(params)),
        _ => return None,
    };
    Some(cc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PathId;

    #[test]
    fn builds_each_name() {
        #[allow(clippy::disallowed_methods)]
        let now = std::time::Instant::now();
        let p = CcParams { path_id: PathId(3), mss: 1200, initial_window: 12_000, now, seed: 0 };
        for n in EXTRA_NAMES {
            let cc = build_extra(n, p).map(|c| c.name());
            assert_eq!(cc, Some(n));
        }
        assert_eq!(build_extra("COUPLED_BBR", p).map(|c| c.name()), Some("coupled-bbr"));
        assert!(build_extra("reno", p).is_none());
        let lia = build_extra("lia", p).map(|c| (c.window(), c.in_slow_start()));
        assert_eq!(lia, Some((12_000, true)));
    }
}
