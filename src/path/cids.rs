//! Connection IDs in both directions, per path (RFC 9000 §5.1, draft-21 §4.6).

use crate::crypto;
use crate::packet::ConnectionId;
use crate::PathId;

/// A connection ID we issued.
#[derive(Clone, Debug)]
pub(crate) struct LocalCid {
    pub(crate) path: PathId,
    pub(crate) seq: u64,
    pub(crate) cid: ConnectionId,
    pub(crate) reset_token: [u8; 16],
    /// Announced to the peer (NEW_CONNECTION_ID acknowledged or pending).
    pub(crate) announce_pending: bool,
}

/// A connection ID the peer issued.
#[derive(Clone, Debug)]
pub(crate) struct PeerCid {
    pub(crate) path: PathId,
    pub(crate) seq: u64,
    pub(crate) cid: ConnectionId,
    pub(crate) reset_token: Option<[u8; 16]>,
    pub(crate) in_use: bool,
}

/// Connection IDs in both directions (RFC 9000 §5.1, draft-21 §4.6).
pub(crate) struct CidState {
    pub(crate) local: Vec<LocalCid>,
    pub(crate) peer: Vec<PeerCid>,
    /// Peer CID sequence numbers to retire (path, seq).
    pub(crate) retire_pending: Vec<(PathId, u64)>,
    /// Local limit on peer CIDs per path (our active_connection_id_limit).
    pub(crate) peer_limit: u64,
    /// The peer's limit on our CIDs per path.
    pub(crate) local_limit: u64,
    cid_len: usize,
    /// First byte of every ID we issue (Config::set_cid_prefix).
    prefix: Option<u8>,
    reset_key: [u8; 32],
    next_local_seq: Vec<(PathId, u64)>,
    /// Bumped whenever `local` gains or loses an ID, so a router can
    /// re-read the list only when it changed.
    pub(crate) local_generation: u64,
}

impl CidState {
    pub(crate) fn new(
        scid: ConnectionId,
        peer_limit: u64,
        reset_key: Option<[u8; 32]>,
        prefix: Option<u8>,
    ) -> CidState {
        let reset_key = reset_key.unwrap_or_else(|| {
            let mut k = [0u8; 32];
            crypto::fill_random(&mut k);
            k
        });
        let mut s = CidState {
            local: Vec::new(),
            peer: Vec::new(),
            retire_pending: Vec::new(),
            peer_limit,
            local_limit: 2,
            cid_len: scid.len(),
            prefix,
            reset_key,
            next_local_seq: vec![(PathId::ZERO, 1)],
            local_generation: 0,
        };
        let reset_token = s.reset_token_for(&scid);
        s.local.push(LocalCid {
            path: PathId::ZERO,
            seq: 0,
            cid: scid,
            reset_token,
            announce_pending: false,
        });
        s
    }

    pub(crate) fn cid_len(&self) -> usize {
        self.cid_len
    }

    pub(crate) fn reset_token_for(&self, cid: &ConnectionId) -> [u8; 16] {
        crypto::reset_token(&self.reset_key, cid.as_slice())
    }

    pub(crate) fn initial_scid(&self) -> ConnectionId {
        self.local.first().map(|c| c.cid).unwrap_or(ConnectionId::EMPTY)
    }

    /// Which path a packet's DCID belongs to.
    pub(crate) fn path_of(&self, dcid: &ConnectionId) -> Option<PathId> {
        self.local.iter().find(|c| c.cid == *dcid).map(|c| c.path)
    }

    pub(crate) fn set_initial_peer_cid(&mut self, cid: ConnectionId) {
        self.peer.retain(|c| !(c.path == PathId::ZERO && c.seq == 0));
        self.peer.insert(0, PeerCid { path: PathId::ZERO, seq: 0, cid, reset_token: None, in_use: true });
    }

    /// The DCID to use on a path.
    pub(crate) fn dcid_for(&self, path: PathId) -> Option<ConnectionId> {
        self.peer.iter().find(|c| c.path == path && c.in_use).map(|c| c.cid)
    }

    /// The DCID for a path, taking an unused one of the peer's CIDs for the
    /// path if none is in use yet.
    pub(crate) fn assign_dcid(&mut self, path: PathId) -> Option<ConnectionId> {
        if let Some(c) = self.dcid_for(path) {
            return Some(c);
        }
        let c = self.peer.iter_mut().filter(|c| c.path == path).min_by_key(|c| c.seq)?;
        c.in_use = true;
        Some(c.cid)
    }

    /// The peer gave us a connection ID for this path.
    pub(crate) fn has_peer_cid(&self, path: PathId) -> bool {
        self.peer.iter().any(|c| c.path == path)
    }

    /// Sequence number of the next CID we will issue for `path`.
    pub(crate) fn next_seq(&self, path: PathId) -> u64 {
        self.next_local_seq.iter().find(|(p, _)| *p == path).map(|(_, s)| *s).unwrap_or(0)
    }

    /// Highest path ID we issued CIDs for.
    pub(crate) fn max_issued_path(&self) -> Option<PathId> {
        self.local.iter().map(|c| c.path).max()
    }

    /// Abandoned path: the peer's CIDs are retired at once (draft-21 §3.4),
    /// without RETIRE frames.
    pub(crate) fn retire_peer_path(&mut self, path: PathId) {
        self.peer.retain(|c| c.path != path);
        self.retire_pending.retain(|(p, _)| *p != path);
    }

    /// Forget the CIDs we issued for a path whose state is dropped.
    pub(crate) fn drop_local_path(&mut self, path: PathId) {
        self.local.retain(|c| c.path != path);
        self.local_generation += 1;
    }

    /// Stop answering to one of our IDs (the peer retired it).
    pub(crate) fn retire_local(&mut self, path: PathId, seq: u64) {
        self.local.retain(|c| !(c.path == path && c.seq == seq));
        self.local_generation += 1;
    }

    /// Issue the connection ID of a server's preferred address: sequence
    /// number 1 on path 0, announced in the transport parameter rather than
    /// by NEW_CONNECTION_ID (RFC 9000 §5.1.1). Returns it with its reset
    /// token.
    pub(crate) fn issue_preferred(&mut self) -> Option<(ConnectionId, [u8; 16])> {
        if self.cid_len == 0 || self.next_seq(PathId::ZERO) != 1 {
            return None;
        }
        let cid = crate::conn::random_cid_with_prefix(self.cid_len, self.prefix);
        let reset_token = self.reset_token_for(&cid);
        self.local.push(LocalCid { path: PathId::ZERO, seq: 1, cid, reset_token, announce_pending: false });
        if let Some((_, s)) = self.next_local_seq.iter_mut().find(|(p, _)| *p == PathId::ZERO) {
            *s = 2;
        }
        self.local_generation += 1;
        Some((cid, reset_token))
    }

    /// The peer gave us ID number `seq` for `path`.
    pub(crate) fn has_peer_cid_seq(&self, path: PathId, seq: u64) -> bool {
        self.peer.iter().any(|c| c.path == path && c.seq == seq)
    }

    /// Record an ID of the peer's given other than by NEW_CONNECTION_ID
    /// (the preferred address's).
    pub(crate) fn add_peer_cid(&mut self, path: PathId, seq: u64, cid: ConnectionId, token: [u8; 16]) {
        self.peer.push(PeerCid { path, seq, cid, reset_token: Some(token), in_use: false });
    }

    /// The peer's connection ID with sequence number `seq` on `path`.
    pub(crate) fn peer_cid(&self, path: PathId, seq: u64) -> Option<ConnectionId> {
        self.peer.iter().find(|c| c.path == path && c.seq == seq).map(|c| c.cid)
    }

    /// An unused connection ID of the peer's for `path` (to move the path
    /// to a new address pair with, RFC 9000 §9.5).
    pub(crate) fn spare_peer_cid(&self, path: PathId) -> Option<u64> {
        self.peer.iter().filter(|c| c.path == path && !c.in_use).map(|c| c.seq).min()
    }

    /// Use the peer's ID `seq` on `path` from now on and retire the one in
    /// use before.
    pub(crate) fn switch_peer_cid(&mut self, path: PathId, seq: u64) {
        for c in self.peer.iter_mut().filter(|c| c.path == path) {
            if c.in_use && c.seq != seq {
                c.in_use = false;
                self.retire_pending.push((path, c.seq));
            }
            c.in_use |= c.seq == seq;
        }
        let retired = &self.retire_pending;
        self.peer.retain(|c| !(c.path == path && !c.in_use && retired.contains(&(path, c.seq))));
    }

    /// Issue more CIDs for `path` up to the peer's limit.
    pub(crate) fn issue(&mut self, path: PathId) {
        if self.cid_len == 0 {
            return;
        }
        let have = self.local.iter().filter(|c| c.path == path).count() as u64;
        // Non-initial paths need one CID to open and one spare for rotation.
        let want = self.local_limit.min(if path == PathId::ZERO { 8 } else { 4 });
        for _ in have..want {
            let seq = match self.next_local_seq.iter_mut().find(|(p, _)| *p == path) {
                Some((_, s)) => {
                    *s += 1;
                    *s - 1
                }
                None => {
                    self.next_local_seq.push((path, 1));
                    0
                }
            };
            let cid = crate::conn::random_cid_with_prefix(self.cid_len, self.prefix);
            let reset_token = self.reset_token_for(&cid);
            self.local.push(LocalCid { path, seq, cid, reset_token, announce_pending: true });
            self.local_generation += 1;
        }
    }

    /// A stateless reset token of the peer matches `token`.
    pub(crate) fn is_stateless_reset(&self, token: &[u8; 16]) -> bool {
        self.peer.iter().any(|c| c.reset_token.is_some_and(|t| crate::packet::reset_token_eq(&t, token)))
    }
}
