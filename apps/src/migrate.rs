//! A client's active migration (RFC 9000 §9.2) mid-download, as
//! `mpquic-client --migrate-to ADDR --migrate-after BYTES` and Python's
//! `download(migrate_to=..., migrate_after=...)` ask: once that much body
//! has arrived, a new socket is bound at ADDR and the first path moves
//! there ([`mpquic::Connection::migrate`]). The old socket stays open: the
//! path keeps using it until the new address pair is validated, and late
//! datagrams may still arrive there.

use std::net::SocketAddr;
use std::time::Instant;

use mpquic::{Connection, PathError, PathEvent, PathId};
use serde_json::{json, Value};

use crate::net::Sockets;

/// Where the migration stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not enough body yet, or the engine cannot start it yet (handshake
    /// not confirmed, no spare connection ID of the server's).
    Pending,
    /// PATH_CHALLENGEs are out on the new address pair.
    Validating,
    /// The path moved: [`PathEvent::Migrated`].
    Migrated,
    /// The new pair did not answer: [`PathEvent::FailedValidation`]; the
    /// path stayed where it was.
    FailedValidation,
    /// The socket could not be bound, or the engine refused (e.g. the
    /// server disabled active migration).
    Refused(String),
}

impl Outcome {
    fn name(&self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Validating => "validating",
            Outcome::Migrated => "migrated",
            Outcome::FailedValidation => "failed_validation",
            Outcome::Refused(_) => "refused",
        }
    }
}

/// One planned migration of path 0 and what became of it.
pub struct Migrator {
    /// The local address asked for (port 0: any free port).
    pub to: SocketAddr,
    /// Body bytes to receive before moving.
    pub after_bytes: u64,
    /// The new socket's bound address, once bound.
    pub bound: Option<SocketAddr>,
    /// Body bytes received when the engine started the move.
    pub started_at_bytes: Option<u64>,
    /// Where it stands.
    pub outcome: Outcome,
    /// The (local, peer) pair the path had before.
    pub from: Option<(SocketAddr, SocketAddr)>,
}

impl Migrator {
    /// Plan a move to `to` after `after_bytes` of body.
    pub fn new(to: SocketAddr, after_bytes: u64) -> Migrator {
        Migrator {
            to,
            after_bytes,
            bound: None,
            started_at_bytes: None,
            outcome: Outcome::Pending,
            from: None,
        }
    }

    /// Call after each round of received datagrams with the body bytes
    /// received so far: starts the move when due, and follows path 0's
    /// events (the application's other path events are consumed too; the
    /// apps use none).
    pub fn poll(&mut self, conn: &mut Connection, socks: &mut Sockets, received: u64, now: Instant) {
        while let Some(ev) = conn.path_event_next() {
            self.on_event(ev);
        }
        if self.outcome != Outcome::Pending || received < self.after_bytes {
            return;
        }
        let local = match self.bound {
            Some(a) => a,
            None => match socks.add(self.to) {
                Ok(a) => *self.bound.insert(a),
                Err(e) => {
                    self.outcome = Outcome::Refused(e.to_string());
                    return;
                }
            },
        };
        self.from = conn.paths().find(|p| p.0 == PathId::ZERO).map(|p| (p.1, p.2));
        match conn.migrate(PathId::ZERO, local, now) {
            Ok(()) => {
                self.outcome = Outcome::Validating;
                self.started_at_bytes = Some(received);
            }
            // Not yet: the handshake is not confirmed, or the server has
            // not issued a connection ID to spare yet.
            Err(PathError::NotMultipath | PathError::NoConnectionId) => {}
            Err(e) => self.outcome = Outcome::Refused(e.to_string()),
        }
    }

    fn on_event(&mut self, ev: PathEvent) {
        if self.outcome != Outcome::Validating {
            return;
        }
        match ev {
            PathEvent::Migrated(PathId::ZERO, local, _) if Some(local) == self.bound => {
                self.outcome = Outcome::Migrated
            }
            PathEvent::FailedValidation(PathId::ZERO) => self.outcome = Outcome::FailedValidation,
            _ => {}
        }
    }

    /// The JSON summary's `migration` object.
    pub fn report(&self) -> Value {
        json!({
            "to": self.bound.unwrap_or(self.to).to_string(),
            "from": self.from.map(|(local, _)| local.to_string()),
            "peer": self.from.map(|(_, peer)| peer.to_string()),
            "after_bytes": self.after_bytes,
            "started_at_bytes": self.started_at_bytes,
            "outcome": self.outcome.name(),
            "error": match &self.outcome {
                Outcome::Refused(e) => Some(e.as_str()),
                _ => None,
            },
        })
    }

    /// One line for the human summary.
    pub fn describe(&self) -> String {
        let to = self.bound.unwrap_or(self.to);
        match &self.outcome {
            Outcome::Migrated => format!(
                "migrated path 0 to {to} after {} body bytes",
                self.started_at_bytes.unwrap_or_default()
            ),
            Outcome::FailedValidation => format!("migration to {to} failed validation; path 0 stayed"),
            Outcome::Validating => format!("migration to {to} still validating at the end"),
            Outcome::Pending => format!("no migration to {to}: the download ended first"),
            Outcome::Refused(e) => format!("no migration to {to}: {e}"),
        }
    }
}
