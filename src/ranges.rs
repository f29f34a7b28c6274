//! A set of non-overlapping, non-adjacent `u64` ranges kept sorted. Used for
//! received packet numbers (ACK generation), acknowledged stream data, and
//! stream reassembly bookkeeping. Inserting in ascending order — the common case
//! on the packet path — is O(1) amortised.

use std::ops::Range;

/// Sorted, coalesced set of half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<Range<u64>>,
}

impl RangeSet {
    /// An empty set.
    pub const fn new() -> Self {
        Self { ranges: Vec::new() }
    }

    /// Number of disjoint ranges.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Smallest value in the set.
    #[inline]
    pub fn min(&self) -> Option<u64> {
        self.ranges.first().map(|r| r.start)
    }

    /// Largest value in the set.
    #[inline]
    pub fn max(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.end - 1)
    }

    /// The ranges in ascending order (use `.rev()` for descending).
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Range<u64>> {
        self.ranges.iter()
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        // Fast path: most lookups are near the top.
        if let Some(last) = self.ranges.last() {
            if v >= last.end {
                return false;
            }
            if v >= last.start {
                return true;
            }
        }
        let i = self.ranges.partition_point(|r| r.end <= v);
        i < self.ranges.len() && self.ranges[i].start <= v
    }

    /// Insert a single value. Returns false if it was already present.
    #[inline]
    pub fn insert_one(&mut self, v: u64) -> bool {
        if let Some(last) = self.ranges.last_mut() {
            if last.end == v {
                last.end += 1;
                return true;
            }
            if v > last.end {
                self.ranges.push(v..v + 1);
                return true;
            }
        } else {
            self.ranges.push(v..v + 1);
            return true;
        }
        if self.contains(v) {
            return false;
        }
        self.insert(v..v + 1);
        true
    }

    /// Insert a range, merging with neighbours it overlaps or touches.
    pub fn insert(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        if let Some(last) = self.ranges.last_mut() {
            if r.start > last.end {
                self.ranges.push(r);
                return;
            }
            if r.start >= last.start {
                last.end = last.end.max(r.end);
                return;
            }
        } else {
            self.ranges.push(r);
            return;
        }
        // General case: find the first range whose end >= r.start (may merge).
        let lo = self.ranges.partition_point(|x| x.end < r.start);
        // First range whose start > r.end (cannot merge).
        let hi = self.ranges.partition_point(|x| x.start <= r.end);
        if lo == hi {
            self.ranges.insert(lo, r);
            return;
        }
        let start = r.start.min(self.ranges[lo].start);
        let end = r.end.max(self.ranges[hi - 1].end);
        self.ranges[lo] = start..end;
        self.ranges.drain(lo + 1..hi);
    }

    /// Remove every value below `v`.
    pub fn remove_below(&mut self, v: u64) {
        let i = self.ranges.partition_point(|x| x.end <= v);
        self.ranges.drain(..i);
        if let Some(first) = self.ranges.first_mut() {
            if first.start < v {
                first.start = v;
            }
        }
    }

    /// Remove a range of values.
    pub fn remove(&mut self, r: Range<u64>) {
        if r.start >= r.end {
            return;
        }
        let lo = self.ranges.partition_point(|x| x.end <= r.start);
        let hi = self.ranges.partition_point(|x| x.start < r.end);
        if lo >= hi {
            return;
        }
        let first = self.ranges[lo].clone();
        let last = self.ranges[hi - 1].clone();
        let mut keep = Vec::with_capacity(2);
        if first.start < r.start {
            keep.push(first.start..r.start);
        }
        if last.end > r.end {
            keep.push(r.end..last.end);
        }
        self.ranges.splice(lo..hi, keep);
    }

    /// Drop the lowest ranges until at most `n` remain (bounds ACK frame size).
    pub fn truncate_to_newest(&mut self, n: usize) {
        if self.ranges.len() > n {
            let extra = self.ranges.len() - n;
            self.ranges.drain(..extra);
        }
    }

    /// Remove and return the lowest range.
    pub fn pop_min(&mut self) -> Option<Range<u64>> {
        if self.ranges.is_empty() {
            None
        } else {
            Some(self.ranges.remove(0))
        }
    }

    /// Remove all values.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &RangeSet) -> Vec<Range<u64>> {
        s.iter().cloned().collect()
    }

    #[test]
    fn insert_merges_and_orders() {
        let mut s = RangeSet::new();
        s.insert(10..20);
        s.insert(30..40);
        s.insert(0..5);
        assert_eq!(v(&s), vec![0..5, 10..20, 30..40]);
        s.insert(5..10);
        assert_eq!(v(&s), vec![0..20, 30..40]);
        s.insert(15..35);
        assert_eq!(v(&s), vec![0..40]);
        assert!(s.contains(39) && !s.contains(40));
    }

    #[test]
    fn insert_one_and_remove() {
        let mut s = RangeSet::new();
        for x in [1, 2, 3, 7, 5, 6] {
            assert!(s.insert_one(x));
        }
        assert!(!s.insert_one(2));
        assert_eq!(v(&s), vec![1..4, 5..8]);
        s.remove(2..6);
        assert_eq!(v(&s), vec![1..2, 6..8]);
        s.remove_below(7);
        assert_eq!(v(&s), vec![7..8]);
        assert_eq!((s.min(), s.max()), (Some(7), Some(7)));
    }

    #[test]
    fn truncate_keeps_newest() {
        let mut s = RangeSet::new();
        for i in 0..10 {
            s.insert(i * 10..i * 10 + 1);
        }
        s.truncate_to_newest(3);
        assert_eq!(v(&s), vec![70..71, 80..81, 90..91]);
    }
}
