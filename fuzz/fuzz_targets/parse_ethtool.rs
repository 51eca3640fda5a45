//! libFuzzer target: `Tool::ETHTOOL` on arbitrary bytes, read as the CLI reads a capture.
#![no_main]

use fabricplan::parse::{Tool, check_invariants, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse(Tool::ETHTOOL, &text);
    let _ = parsed.to_json();
    let _ = parsed.summary();
    if let Err(e) = check_invariants(&parsed) {
        panic!("{e}");
    }
});
