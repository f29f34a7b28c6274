//! Connection deadlines in a binary heap with lazy invalidation: moving a
//! deadline pushes a new entry and leaves the old one to be skipped when it
//! surfaces, so each update is O(log n) and nothing scans all connections.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use super::Handle;

#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, Handle)>>,
    /// The one live deadline of each connection that has one.
    current: HashMap<Handle, Instant>,
}

impl Timers {
    pub(super) fn set(&mut self, h: Handle, at: Option<Instant>) {
        match at {
            None => {
                self.current.remove(&h);
            }
            Some(t) => {
                if self.current.insert(h, t) != Some(t) {
                    self.heap.push(Reverse((t, h)));
                }
            }
        }
        // Stale entries pile up when deadlines keep moving later; rebuild
        // when they outnumber live ones, which keeps the heap O(live).
        if self.heap.len() > 2 * self.current.len() + 64 {
            self.heap = self.current.iter().map(|(&h, &t)| Reverse((t, h))).collect();
        }
    }

    fn is_live(&self, t: Instant, h: Handle) -> bool {
        self.current.get(&h) == Some(&t)
    }

    /// The earliest live deadline.
    pub(super) fn next(&mut self) -> Option<Instant> {
        while let Some(&Reverse((t, h))) = self.heap.peek() {
            if self.is_live(t, h) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// A connection whose deadline is at or before `now`, and that
    /// deadline; it is cleared (the caller sets the next one).
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Handle, Instant)> {
        if self.next()? > now {
            return None;
        }
        let Reverse((t, h)) = self.heap.pop()?;
        self.current.remove(&h);
        Some((h, t))
    }

    #[cfg(test)]
    pub(super) fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn moved_deadlines_fire_once_at_their_latest_time() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let (a, b) = (Handle::from_u64(1), Handle::from_u64(2));
        let mut tm = Timers::default();
        tm.set(a, Some(ms(10)));
        tm.set(b, Some(ms(20)));
        tm.set(a, Some(ms(30))); // the entry at 10 goes stale
        assert_eq!(tm.next(), Some(ms(20)));
        assert_eq!(tm.pop_due(ms(15)), None);
        assert_eq!(tm.pop_due(ms(25)), Some((b, ms(20))));
        assert_eq!(tm.pop_due(ms(25)), None);
        tm.set(a, None);
        assert_eq!((tm.next(), tm.pop_due(ms(100))), (None, None));
        // Many moves of one deadline keep the heap small.
        for i in 0..10_000 {
            tm.set(a, Some(ms(1000 + i)));
        }
        assert!(tm.heap_len() <= 66, "heap holds {}", tm.heap_len());
        assert_eq!(tm.pop_due(ms(20_000)), Some((a, ms(10_999))));
    }
}
