//! Virtual-time simulator: mpquic client/server [`Connection`](mpquic::Connection)s
//! exchanging datagrams over emulated paths ([`emu::link::PathLinks`]) in one process.
//!
//! Time is simulated: one `Instant` is taken when a [`Sim`] is built and every event is an
//! offset from it, so a 60 s experiment runs as fast as the CPU allows and the outcome
//! depends only on the configuration and seed.
//!
//! - `app`: the client and server applications (HTTP/3 or plain streams) and the
//!   generated, receiver-checked body.
//! - [`net`]: building paths programmatically (constant-rate links, loss, queues).
//! - [`sim`]: the event loop ([`Sim`], [`SimConfig`], [`FlowSpec`]).
//! - [`report`]: time series ([`Sample`]) and summaries ([`FlowSummary`]).
//! - [`output`]: CSV, JSON and a text table.
//! - [`qlog`]: every endpoint's qlog file, in simulated time.
#![warn(missing_docs, unreachable_pub)]

mod app;
mod certs;
pub mod net;
pub mod output;
pub mod qlog;
pub mod report;
pub mod sim;
mod tag;

pub use app::{video, VideoStats};
pub use report::{FlowSummary, LinkSummary, PathSample, PathSummary, Report, Sample};
pub use sim::{Failure, FlowSpec, Rebinding, Sim, SimConfig, SimError, Workload};
