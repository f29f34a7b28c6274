//! Unit tests of the quiche layer's stateless functions.
