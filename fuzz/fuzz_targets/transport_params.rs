//! Decode transport parameters as client and as server; whatever decodes
//! must re-encode and decode to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic::frame::timestamp::{TimestampParam, TIMESTAMP_TRANSPORT_PARAM_ID};
use mpquic::transport_params::TransportParams;

fuzz_target!(|data: &[u8]| {
    for from_server in [false, true] {
        if let Ok(p) = TransportParams::decode(data, from_server) {
            // The rec extension's parameter (kept as an unknown one) must be empty.
            if let Some(v) = p.extra_param(mpquic::sched::rec_wire::REC_TRANSPORT_PARAM_ID) {
                assert_eq!(mpquic::sched::rec_wire::decode_transport_param(v).is_ok(), v.is_empty());
            }
            // enable_time_stamp: what decodes re-encodes to the same bytes.
            if let Some(v) = p.extra_param(TIMESTAMP_TRANSPORT_PARAM_ID) {
                if let Ok(t) = TimestampParam::decode(v) {
                    assert_eq!(t.encode(), v);
                }
            }
            let mut out = Vec::new();
            p.encode(&mut out);
            let q = TransportParams::decode(&out, from_server).expect("re-encoded params decode");
            assert_eq!(p, q);
        }
    }
});
