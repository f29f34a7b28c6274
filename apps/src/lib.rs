//! Shared pieces of the `mpquic-server` and `mpquic-client` binaries: the
//! UDP event loop with pacing, URL and file-path handling, statistics and
//! the per-connection qlog file.

#![warn(missing_docs)]

pub mod batch;
pub mod exit;
pub mod files;
pub mod follow;
pub mod ifwatch;
pub mod kernel;
pub mod migrate;
pub mod net;
pub mod pem;
pub mod qlog;
pub mod server;
pub mod stats;
pub mod target;
pub mod workers;

/// HTTP/3 ALPN.
pub const ALPN: &[u8] = b"h3";

/// H3_NO_ERROR (RFC 9114 §8.1): the code for a graceful close.
pub const H3_NO_ERROR: u64 = 0x100;

/// `--quic-version LIST`: QUIC versions, most preferred first ("v1",
/// "v2,v1", wire numbers too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versions(pub Vec<mpquic::Version>);

/// Parse `--quic-version` (clap's value parser: a bad value is a usage
/// error naming the valid ones).
pub fn parse_versions(s: &str) -> Result<Versions, String> {
    mpquic::version::parse_list(s).map(Versions).map_err(|e| e.to_string())
}

/// Apply `--cc` and `--scheduler` to `config`, with errors that list the
/// valid names.
pub fn set_algorithms(config: &mut mpquic::Config, cc: &str, scheduler: &str) -> Result<(), String> {
    config.set_cc(cc).map_err(|_| {
        format!("unknown congestion controller {cc:?}; valid: {}", mpquic::cc::names().join(", "))
    })?;
    config.set_scheduler(scheduler).map_err(|_| {
        format!(
            "unknown scheduler {scheduler:?}; valid: {} (optionally name:key=value,...)",
            mpquic::sched::names().join(", ")
        )
    })?;
    Ok(())
}

/// Refuses a config with the simulator's AEAD (`mpquic::Config::use_sim_aead`,
/// compiled into the engine when a build unifies mpquic-sim's features):
/// the apps talk to real networks. The server's `Endpoint::new` refuses it
/// too.
pub fn check_network_config(config: &mpquic::Config) -> Result<(), String> {
    if config.uses_sim_aead() {
        return Err(mpquic::endpoint::SIM_AEAD_REFUSED.into());
    }
    Ok(())
}

#[cfg(test)]
mod sim_aead_tests {
    #[test]
    #[allow(clippy::disallowed_methods)] // the endpoint's start time, as in the server
    fn the_simulators_aead_is_refused() {
        let mut config = mpquic::Config::new();
        assert_eq!(super::check_network_config(&config), Ok(()));
        config.use_sim_aead(true);
        assert_eq!(super::check_network_config(&config), Err(mpquic::endpoint::SIM_AEAD_REFUSED.into()));
        let ep = mpquic::endpoint::Endpoint::<()>::new(
            config,
            mpquic::endpoint::EndpointConfig::default(),
            std::time::Instant::now(),
        );
        assert!(ep.is_err(), "the server's endpoint refuses it");
    }
}
