//! The record parser on arbitrary text: it never panics, and whatever it accepts it writes back
//! to text that parses to the same record (so nothing a record holds can change its meaning on
//! the next write).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::records::Record;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(record) = Record::parse(text) {
        assert!(record.group.as_ref().is_none_or(|g| g.keeper_pid >= 2));
        assert_eq!(Record::parse(&record.to_toml()), Ok(record));
    }
});
