//! Parse every coalesced packet of a datagram, as the receive path does, and
//! answer it with a Stateless Reset as a server that lost its state would.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::packet::{invariant_header, parse_header, stateless_reset_token, PacketType};

fuzz_target!(|data: &[u8]| {
    let Some((&cid_len, datagram)) = data.split_first() else {
        return;
    };
    let short_dcid_len = (cid_len % 21) as usize;
    let _ = stateless_reset_token(datagram);
    let mut reset = [0u8; 128];
    let key = mpquic::server::StatelessResetKey::from_bytes([3; 32]);
    if let Some(n) = mpquic::server::stateless_reset(&key, datagram, short_dcid_len, &mut reset) {
        // Never larger than the trigger (no loops), never below the minimum.
        assert!(n < datagram.len() && n >= mpquic::server::MIN_STATELESS_RESET);
        assert_eq!(reset[0] & 0xc0, 0x40);
    }
    let _ = invariant_header(datagram);
    let mut rest = datagram;
    while !rest.is_empty() {
        let Ok(h) = parse_header(rest, short_dcid_len) else {
            break;
        };
        assert!(h.packet_len > 0 && h.packet_len <= rest.len());
        assert!(h.pn_offset <= h.packet_len);
        if matches!(
            h.ty,
            PacketType::Initial | PacketType::Handshake | PacketType::ZeroRtt | PacketType::Short
        ) {
            // Room for the header-protection sample was checked.
            assert!(h.pn_offset + 20 <= h.packet_len);
        }
        let _ = h.supported_versions().count();
        rest = &rest[h.packet_len..];
    }
});
