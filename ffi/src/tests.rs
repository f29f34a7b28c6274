//! Unit tests of the C API, calling the exported functions as C would.
