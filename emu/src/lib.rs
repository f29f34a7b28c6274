//! Mahimahi-compatible, trace-driven link emulation, sans-IO.
//!
//! The crate never reads a clock: every call takes `now` as a [`Duration`](std::time::Duration)
//! offset from the link's epoch (the moment the emulated link "starts", which is also
//! when the Mahimahi trace clock starts). A virtual-time simulator passes simulated time;
//! a shell driving TUN devices passes `Instant::now() - start`.
//!
//! Layers:
//! - [`trace`]: parsing Mahimahi trace files (one millisecond offset per line).
//! - [`stage`]: the [`Stage`](stage::Stage) trait and its implementations (queue +
//!   trace-driven service, fixed delay, random loss), composed by wrapping.
//! - [`aqm`]: CoDel and PIE for the link queue.
//! - [`impair`]: reordering, duplication and corruption (for robustness tests).
//! - [`profile`]: piecewise time-varying parameters (delay spikes, loss ramps, rate
//!   scaling, outages).
//! - [`link`]: [`Link`](link::Link), one direction of one path, and
//!   [`PathLinks`](link::PathLinks) (uplink + downlink).
//! - [`scenario`]: TOML scenario files describing several paths.
#![warn(missing_docs, unreachable_pub)]

pub mod aqm;
pub mod impair;
pub mod link;
pub mod loss;
pub mod profile;
pub mod queue;
pub mod scenario;
pub mod stage;
pub mod trace;

pub use link::{Link, LinkConfig, LinkStats, PathLinks};
pub use stage::{Packet, Stage};
pub use trace::{Trace, TraceError};
