//! Connection storage with stable, generation-checked handles: a handle of
//! a removed connection never reaches the connection that reuses its slot.

/// Names one connection of an [`super::Endpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle {
    index: u32,
    generation: u32,
}

impl Handle {
    /// A number unique among live connections (for logs and foreign APIs).
    pub fn as_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// The handle [`Handle::as_u64`] gave.
    pub fn from_u64(v: u64) -> Handle {
        Handle { index: v as u32, generation: (v >> 32) as u32 }
    }
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

pub(super) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new(), len: 0 }
    }
}

impl<T> Slab<T> {
    pub(super) fn insert(&mut self, value: T) -> Handle {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Handle { index, generation: slot.generation };
        }
        let index = self.slots.len() as u32;
        self.slots.push(Slot { generation: 0, value: Some(value) });
        Handle { index, generation: 0 }
    }

    pub(super) fn get(&self, h: Handle) -> Option<&T> {
        let slot = self.slots.get(h.index as usize)?;
        (slot.generation == h.generation).then_some(slot.value.as_ref()).flatten()
    }

    pub(super) fn get_mut(&mut self, h: Handle) -> Option<&mut T> {
        let slot = self.slots.get_mut(h.index as usize)?;
        if slot.generation != h.generation {
            return None;
        }
        slot.value.as_mut()
    }

    pub(super) fn remove(&mut self, h: Handle) -> Option<T> {
        let slot = self.slots.get_mut(h.index as usize)?;
        if slot.generation != h.generation {
            return None;
        }
        let v = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(h.index);
        self.len -= 1;
        Some(v)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn handles(&self) -> Vec<Handle> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.value.is_some())
            .map(|(i, s)| Handle { index: i as u32, generation: s.generation })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_handles_miss_reused_slots() {
        let mut s = Slab::default();
        let a = s.insert("a");
        assert_eq!(s.remove(a), Some("a"));
        let b = s.insert("b");
        assert_eq!(s.get_mut(a), None, "slot reused under a new generation");
        assert_eq!(s.remove(a), None);
        assert_eq!(s.get_mut(b), Some(&mut "b"));
        assert_eq!((s.get(a), s.get(b)), (None, Some(&"b")));
        assert_eq!(Handle::from_u64(b.as_u64()), b);
        assert_eq!((s.len(), s.handles()), (1, vec![b]));
    }
}
