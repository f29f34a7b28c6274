//! Decode transport parameters as client and as server; whatever decodes
//! must re-encode and decode to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::transport_params::TransportParams;

fuzz_target!(|data: &[u8]| {
    for from_server in [false, true] {
        if let Ok(p) = TransportParams::decode(data, from_server) {
            let mut out = Vec::new();
            p.encode(&mut out);
            let q = TransportParams::decode(&out, from_server).expect("re-encoded params decode");
            assert_eq!(p, q);
        }
    }
});
