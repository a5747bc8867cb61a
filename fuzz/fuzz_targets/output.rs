//! The output capture on arbitrary chunks and limits: never panics, returns valid UTF-8, never
//! keeps more than the limit (plus the marker), and counts what it cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::output::OutputTail;

fuzz_target!(|data: &[u8]| {
    let Some((&limit_byte, rest)) = data.split_first() else { return };
    let limit = usize::from(limit_byte) * 7 + 1;
    let mut tail = OutputTail::new(limit);
    // Feed in uneven chunks so characters and lines are split across pushes.
    for chunk in rest.chunks(usize::from(limit_byte % 13) + 1) {
        tail.push(chunk);
    }
    let captured = tail.finish();
    assert_eq!(captured.total_bytes, rest.len() as u64);
    assert!(captured.cut_chars <= captured.total_chars);
    if captured.cut_bytes == 0 {
        assert_eq!(captured.text, String::from_utf8_lossy(rest));
    } else {
        assert!(captured.text.contains("[… lnk cut "), "bytes were dropped without a marker");
    }
    if captured.cut_bytes > 0 && std::str::from_utf8(rest).is_ok() {
        // The limit counts characters as they arrive; a stray byte of invalid UTF-8 is not a
        // character there but shows as U+FFFD, so the bound is exact for text only.
        let kept: usize =
            captured.text.lines().filter(|l| !l.starts_with("[… lnk cut ")).map(|l| l.chars().count()).sum();
        assert!(kept <= limit, "kept {kept} > {limit}");
    }
});
