//! Time-varying parameters: piecewise-constant or piecewise-linear profiles.
//!
//! A profile is a list of `(time, value)` points. Before the first point it has no value
//! (the parameter keeps its base setting); after the last point it holds the last value.
//! Delay spikes, loss ramps, rate cuts and outages are all profiles.

use std::time::Duration;

/// How a profile moves between two points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    /// Holds each value until the next point.
    Step,
    /// Linear interpolation between points.
    Linear,
}

/// A time-varying value.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    points: Vec<(Duration, f64)>,
    interp: Interp,
}

impl Profile {
    /// Builds a profile; `points` are sorted by time (stable, so equal times keep their
    /// order and give an instantaneous jump).
    pub fn new(mut points: Vec<(Duration, f64)>, interp: Interp) -> Profile {
        points.sort_by_key(|p| p.0);
        Profile { points, interp }
    }

    /// A profile holding `value` from `from` to `until`, and `after` from `until` on.
    pub fn window(from: Duration, until: Duration, value: f64, after: f64) -> Profile {
        Profile::new(vec![(from, value), (until, after)], Interp::Step)
    }

    /// The points.
    pub fn points(&self) -> &[(Duration, f64)] {
        &self.points
    }

    /// Value at `t`, or `None` before the first point.
    pub fn value_at(&self, t: Duration) -> Option<f64> {
        // Index of the first point strictly after t.
        let after = self.points.partition_point(|p| p.0 <= t);
        let (t0, v0) = *self.points.get(after.checked_sub(1)?)?;
        match (self.interp, self.points.get(after)) {
            (Interp::Linear, Some(&(t1, v1))) if t1 > t0 => {
                let f = (t - t0).as_secs_f64() / (t1 - t0).as_secs_f64();
                Some(v0 + (v1 - v0) * f)
            }
            _ => Some(v0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn step_and_linear() {
        let s = Profile::new(vec![(ms(10), 1.0), (ms(20), 2.0)], Interp::Step);
        assert_eq!(s.value_at(ms(9)), None);
        assert_eq!(s.value_at(ms(10)), Some(1.0));
        assert_eq!(s.value_at(ms(19)), Some(1.0));
        assert_eq!(s.value_at(ms(25)), Some(2.0));
        let l = Profile::new(vec![(ms(20), 3.0), (ms(10), 1.0)], Interp::Linear);
        assert_eq!(l.value_at(ms(15)), Some(2.0));
        assert_eq!(l.value_at(ms(30)), Some(3.0));
        let w = Profile::window(ms(5), ms(8), 0.0, 1.0);
        assert_eq!(w.value_at(ms(4)), None);
        assert_eq!(w.value_at(ms(7)), Some(0.0));
        assert_eq!(w.value_at(ms(8)), Some(1.0));
    }
}
