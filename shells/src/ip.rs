//! The IP header fields the packet loop touches: the ECN bits (RFC 3168 §5) of IPv4
//! and IPv6 packets read from the TUN devices.
//!
//! The link model (`emu`) decides; this module only carries its decision to the wire:
//! a packet's ECN codepoint goes into [`Packet::ecn`] on the way in, and when an AQM
//! queue marked it CE (`emu::aqm`, the same code the simulator runs), the CE codepoint
//! is written back into the IP header on the way out. Everything else is left as it
//! came, including a header that an impairment corrupted.

use emu::Packet;

/// The CE codepoint (congestion experienced).
pub const CE: u8 = 3;

/// Shortest header of each version: the ECN bits lie within it.
const IPV4_MIN_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;

/// IP version of a packet (the high nibble of its first byte), if it is 4 or 6 and
/// long enough to hold the header.
fn version(pkt: &[u8]) -> Option<u8> {
    let v = pkt.first()? >> 4;
    match v {
        4 if pkt.len() >= IPV4_MIN_HEADER => Some(4),
        6 if pkt.len() >= IPV6_HEADER => Some(6),
        _ => None,
    }
}

/// The ECN codepoint of an IPv4 or IPv6 packet (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE);
/// `None` for anything else.
pub fn ecn(pkt: &[u8]) -> Option<u8> {
    match version(pkt)? {
        // IPv4: the low two bits of the TOS byte.
        4 => pkt.get(1).map(|b| b & 3),
        // IPv6: the low two bits of the traffic class, which spans bytes 0 and 1;
        // they are bits 4-5 of byte 1.
        _ => pkt.get(1).map(|b| (b >> 4) & 3),
    }
}

/// Writes ECN codepoint `ecn` (0..=3) into an IPv4 or IPv6 header, keeping the rest of
/// the TOS / traffic class. IPv4's header checksum is updated incrementally (RFC 1624
/// eqn. 3), so a checksum that was wrong stays wrong and the receiver still drops the
/// packet. Returns whether the packet was IP and was changed.
pub fn set_ecn(pkt: &mut [u8], ecn: u8) -> bool {
    let ecn = ecn & 3;
    let Some(v) = version(pkt) else {
        return false;
    };
    let Some(old) = pkt.get(1).copied() else {
        return false;
    };
    let new = if v == 4 { (old & !3) | ecn } else { (old & !0x30) | (ecn << 4) };
    if new == old {
        return false;
    }
    if let Some(b) = pkt.get_mut(1) {
        *b = new;
    }
    if v == 4 {
        // The checksum covers 16-bit words; byte 1 is the low half of word 0.
        let first = pkt.first().copied().unwrap_or(0);
        let old_word = u16::from_be_bytes([first, old]);
        let new_word = u16::from_be_bytes([first, new]);
        update_checksum(pkt, old_word, new_word);
    }
    true
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), in one's complement arithmetic.
fn update_checksum(pkt: &mut [u8], old_word: u16, new_word: u16) {
    let (Some(&hi), Some(&lo)) = (pkt.get(10), pkt.get(11)) else {
        return;
    };
    let hc = u16::from_be_bytes([hi, lo]);
    let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let [a, b] = (!(sum as u16)).to_be_bytes();
    if let Some(x) = pkt.get_mut(10) {
        *x = a;
    }
    if let Some(x) = pkt.get_mut(11) {
        *x = b;
    }
}

/// A packet read from a TUN device, with its header's ECN bits in [`Packet::ecn`] so
/// the link's AQM can tell ECN-capable packets from others.
pub fn packet_in(data: Vec<u8>) -> Packet {
    let ecn = ecn(&data).unwrap_or(0);
    Packet { ecn, ..Packet::new(data) }
}

/// Carries a CE mark the link made ([`Packet::ecn`] set to CE by the AQM) into the IP
/// header before the packet is written out. Returns whether the header changed.
pub fn write_ce_mark(pkt: &mut Packet) -> bool {
    pkt.ecn == CE && ecn(&pkt.data) != Some(CE) && set_ecn(&mut pkt.data, CE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 28-byte IPv4/UDP packet with TOS `tos` and a correct header checksum.
    fn ipv4(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0, 28, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 100, 64, 0, 2, 100, 64, 0, 1, // IP
            0x30, 0x39, 0x11, 0x51, 0, 8, 0, 0, // UDP
        ];
        let c = full_checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    /// The header checksum computed from scratch (RFC 791), checksum field as zero.
    fn full_checksum(hdr: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, w) in hdr.chunks(2).enumerate() {
            if i != 5 {
                sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An IPv6/UDP packet with traffic class `tc` and flow label 0xabcde.
    fn ipv6(tc: u8) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60 | (tc >> 4);
        p[1] = ((tc & 0x0f) << 4) | 0x0a;
        p[2] = 0xbc;
        p[3] = 0xde;
        p[5] = 8; // payload length
        p[6] = 17;
        p[7] = 64;
        p
    }

    fn traffic_class(p: &[u8]) -> u8 {
        ((p[0] & 0x0f) << 4) | (p[1] >> 4)
    }

    #[test]
    fn ipv4_ce_keeps_dscp_and_a_correct_checksum() {
        // DSCP AF41 (0x88) with ECT(0), and every other TOS value with each codepoint.
        for tos in [0x88 | 2, 0x01, 0xfe, 0x00] {
            let mut p = ipv4(tos);
            assert_eq!(ecn(&p), Some(tos & 3));
            let changed = set_ecn(&mut p, CE);
            assert_eq!(changed, tos & 3 != CE);
            assert_eq!(p[1], (tos & !3) | CE, "DSCP kept");
            let stored = u16::from_be_bytes([p[10], p[11]]);
            assert_eq!(stored, full_checksum(&p[..20]), "tos {tos:#x}: checksum after the rewrite");
            assert_eq!(&p[20..], &ipv4(tos)[20..], "payload untouched");
        }
    }

    #[test]
    fn ipv4_wrong_checksum_stays_wrong() {
        let mut p = ipv4(2);
        p[11] ^= 0x40; // corrupted on the way
        set_ecn(&mut p, CE);
        assert_ne!(u16::from_be_bytes([p[10], p[11]]), full_checksum(&p[..20]));
    }

    #[test]
    fn ipv6_ce_goes_into_the_traffic_class() {
        for tc in [0x02u8, 0x01, 0xb8 | 2, 0x00] {
            let mut p = ipv6(tc);
            assert_eq!(ecn(&p), Some(tc & 3));
            let before = p.clone();
            assert_eq!(set_ecn(&mut p, CE), tc & 3 != CE);
            assert_eq!(traffic_class(&p), (tc & !3) | CE, "tc {tc:#x}");
            assert_eq!(p[1] & 0x0f, 0x0a, "flow label kept");
            assert_eq!(&p[2..], &before[2..], "rest of the packet kept");
        }
    }

    #[test]
    fn non_ip_and_short_packets_are_left_alone() {
        for mut p in [vec![], vec![0x45; 19], vec![0x60; 39], vec![0x20; 60]] {
            let before = p.clone();
            assert_eq!(ecn(&p), None);
            assert!(!set_ecn(&mut p, CE));
            assert_eq!(p, before);
        }
    }

    #[test]
    fn only_a_link_mark_is_written() {
        let mut p = packet_in(ipv4(2));
        assert_eq!(p.ecn, 2, "ECT(0) read from the header");
        assert!(!write_ce_mark(&mut p), "not marked by the link: unchanged");
        p.ecn = CE; // what emu::aqm does instead of dropping
        assert!(write_ce_mark(&mut p));
        assert_eq!(ecn(&p.data), Some(CE));
        assert!(!write_ce_mark(&mut p), "already CE");
        let mut v6 = packet_in(ipv6(1));
        assert_eq!(v6.ecn, 1, "ECT(1) read from the traffic class");
        v6.ecn = CE;
        assert!(write_ce_mark(&mut v6));
        assert_eq!(traffic_class(&v6.data), CE);
    }
}
