//! Exit codes of `mpquic-client` (and, for the first two, `mpquic-server`).

/// Everything downloaded.
pub const OK: i32 = 0;
/// Local I/O failure (cannot write the output file, cannot bind a socket).
pub const IO: i32 = 1;
/// Bad command line: unknown option, bad URL, unknown cc or scheduler name,
/// bad `--local` (or one of another address family than the server), a
/// missing or unusable `--ca` / `--cert` / `--key` file or `--qlog-dir`.
pub const USAGE: i32 = 2;
/// Name resolution failed, or the server did not answer in time
/// (unreachable host or port, handshake timeout, idle timeout).
pub const NETWORK: i32 = 3;
/// TLS failure: certificate verification, handshake alert, no common ALPN.
pub const TLS: i32 = 4;
/// The server answered with an HTTP error status (4xx or 5xx).
pub const HTTP_STATUS: i32 = 5;
/// The QUIC or HTTP/3 connection failed after the handshake.
pub const TRANSPORT: i32 = 6;
