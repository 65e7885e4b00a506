//! Top-level parser: any byte string in, a full decode (or a typed error) out, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lossless_core::wire;

fuzz_target!(|data: &[u8]| {
    if let Ok(decoded) = wire::decode(data) {
        // Whatever decodes must expose consistent offsets into the frame.
        assert!(decoded.l3_offset <= data.len());
        let _ = (decoded.dscp(), decoded.bth(), decoded.ethertype());
    }
});
