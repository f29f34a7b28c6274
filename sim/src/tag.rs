//! A packet's tag: which flow, flow path, hop of the path's route and direction it
//! belongs to, packed in the `u64` that `emu::Packet` carries through the links.

/// Longest route, in links (the hop index lives in 8 bits of a packet's tag).
pub const MAX_HOPS: usize = 255;
/// Most paths per flow (the path index lives in 23 bits of a packet's tag).
pub(crate) const MAX_FLOW_PATHS: usize = 1 << 23;

/// What a packet's tag says: flow, flow path, hop along the route, direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    pub(crate) flow: usize,
    pub(crate) path: usize,
    pub(crate) hop: usize,
    pub(crate) to_server: bool,
}

impl Tag {
    pub(crate) fn encode(self) -> u64 {
        ((self.flow as u64) << 32)
            | ((self.path as u64) << 9)
            | ((self.hop as u64) << 1)
            | u64::from(!self.to_server)
    }

    pub(crate) fn decode(tag: u64) -> Tag {
        Tag {
            flow: (tag >> 32) as usize,
            path: ((tag >> 9) & 0x7f_ffff) as usize,
            hop: ((tag >> 1) & 0xff) as usize,
            to_server: tag & 1 == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for tag in [
            Tag { flow: 0, path: 0, hop: 0, to_server: true },
            Tag { flow: 7, path: 3, hop: 1, to_server: false },
            Tag { flow: u32::MAX as usize, path: MAX_FLOW_PATHS - 1, hop: MAX_HOPS, to_server: false },
        ] {
            assert_eq!(Tag::decode(tag.encode()), tag);
        }
        // Without routes (hop 0) the layout keeps flow, path and direction where
        // they were: flow in the high 32 bits, direction in bit 0.
        assert_eq!(Tag { flow: 2, path: 1, hop: 0, to_server: false }.encode(), (2 << 32) | (1 << 9) | 1);
    }
}
