//! Keeping the start and the end of a stream, in bounded memory.
//!
//! A program says what it is doing at its start and how it ended at its end, so those are what
//! an agent needs; the middle of a ten-gigabyte log is not. [`OutputTail`] keeps at most
//! `limit` characters of a stream: the first half and the last half, with a marker saying how
//! many characters and lines were cut between them. It holds at most `6 × limit` bytes whatever
//! is written (a character is at most 4 bytes in UTF-8), so a program printing forever cannot
//! exhaust the helper's memory.
//!
//! Guarantees (unit- and property-tested, and a fuzz target):
//! - the text returned is valid UTF-8, never splitting a character (invalid input bytes become
//!   U+FFFD);
//! - kept + cut = total characters, as counted on the way in;
//! - a cut falls at a line end when one is within [`NEAR_LINE_END`] characters of it.
//!
//! Trusted with: what the agent sees of a program's output (its start and its end, with the cut
//! said exactly), and the helper's memory whatever the program prints. What it trusts: nothing of
//! the stream: any bytes.

use std::collections::VecDeque;

/// How far (in characters) a cut may move to land on a line end.
pub const NEAR_LINE_END: usize = 200;

/// The start and end of one stream.
#[derive(Debug)]
pub struct OutputTail {
    limit: usize,
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total_bytes: u64,
    total_chars: u64,
    total_lines: u64,
}

/// What was kept of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The kept text, with the marker where the middle was cut.
    pub text: String,
    pub total_bytes: u64,
    pub total_chars: u64,
    pub cut_chars: u64,
    pub cut_lines: u64,
    /// Bytes not kept. Nonzero whenever anything was cut, even when the cut bytes were not
    /// characters (invalid UTF-8 made of stray continuation bytes counts no characters).
    pub cut_bytes: u64,
}

impl Captured {
    /// Nothing was written.
    pub fn empty() -> Captured {
        Captured {
            text: String::new(),
            total_bytes: 0,
            total_chars: 0,
            cut_chars: 0,
            cut_lines: 0,
            cut_bytes: 0,
        }
    }
}

impl OutputTail {
    /// Keeps at most `limit` characters (at least 1).
    pub fn new(limit: usize) -> OutputTail {
        let limit = limit.max(1);
        // The head holds the whole stream while it fits in `limit` characters, so a short output
        // is never cut; the tail ring holds the last half's worth.
        let head_cap = 4 * limit;
        let tail_cap = 4 * (limit / 2 + 1);
        OutputTail {
            limit,
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap,
            total_bytes: 0,
            total_chars: 0,
            total_lines: 0,
        }
    }

    /// Takes the next bytes of the stream.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total_bytes += data.len() as u64;
        self.total_chars += data.iter().filter(|b| (**b & 0xc0) != 0x80).count() as u64;
        self.total_lines += memchr::memchr_iter(b'\n', data).count() as u64;
        if self.head.len() < self.head_cap {
            let n = data.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            data = &data[data.len() - self.tail_cap..];
        }
        let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(data);
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// The kept text.
    pub fn finish(self) -> Captured {
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let whole = tail.is_empty() && self.total_chars <= self.limit as u64;
        if whole {
            return Captured {
                text: String::from_utf8_lossy(&self.head).into_owned(),
                total_bytes: self.total_bytes,
                total_chars: self.total_chars,
                cut_chars: 0,
                cut_lines: 0,
                cut_bytes: 0,
            };
        }
        let head_chars = self.limit - self.limit / 2;
        let tail_chars = self.limit / 2;

        let head_end = cut_after_chars(&self.head, head_chars);
        let head_part = &self.head[..head_end];
        // The bytes after the head part that are still held: the rest of the head buffer, then
        // the ring, contiguous when nothing fell between them.
        let gap = self.total_bytes - self.head.len() as u64 > tail.len() as u64;
        let mut rest: Vec<u8> = if gap { Vec::new() } else { self.head[head_end..].to_vec() };
        rest.extend_from_slice(&tail);
        let tail_start = cut_before_last_chars(&rest, tail_chars);
        let tail_part = &rest[tail_start..];

        let kept_chars = count_chars(head_part) + count_chars(tail_part);
        let kept_lines = (memchr::memchr_iter(b'\n', head_part).count()
            + memchr::memchr_iter(b'\n', tail_part).count()) as u64;
        let cut_chars = self.total_chars.saturating_sub(kept_chars);
        let cut_lines = self.total_lines.saturating_sub(kept_lines);
        let cut_bytes = self.total_bytes - (head_part.len() + tail_part.len()) as u64;
        let mut text = String::from_utf8_lossy(head_part).into_owned();
        if cut_bytes > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[… lnk cut {cut_chars} characters ({cut_lines} lines) here …]\n"));
        }
        text.push_str(&String::from_utf8_lossy(tail_part));
        Captured {
            text,
            total_bytes: self.total_bytes,
            total_chars: self.total_chars,
            cut_chars,
            cut_lines,
            cut_bytes,
        }
    }
}

fn is_char_start(b: u8) -> bool {
    (b & 0xc0) != 0x80
}

fn count_chars(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| is_char_start(**b)).count() as u64
}

/// The byte offset after the first `n` characters of `bytes`, moved back to just after a line
/// end if one is near.
fn cut_after_chars(bytes: &[u8], n: usize) -> usize {
    let mut seen = 0;
    let mut end = bytes.len();
    for (i, b) in bytes.iter().enumerate() {
        if is_char_start(*b) {
            if seen == n {
                end = i;
                break;
            }
            seen += 1;
        }
    }
    let window_start = char_offset_back(bytes, end, NEAR_LINE_END.min(n / 2));
    match memchr::memrchr(b'\n', &bytes[window_start..end]) {
        Some(i) => window_start + i + 1,
        None => end,
    }
}

/// The byte offset where the last `n` characters of `bytes` start, moved forward to just after
/// a line end if one is near.
fn cut_before_last_chars(bytes: &[u8], n: usize) -> usize {
    let mut seen = 0;
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate().rev() {
        if is_char_start(*b) {
            seen += 1;
            if seen == n {
                start = i;
                break;
            }
        }
    }
    if n == 0 {
        return bytes.len();
    }
    // Never start on a continuation byte (the ring may have cut a character).
    while start < bytes.len() && !is_char_start(bytes[start]) {
        start += 1;
    }
    let window_end = char_offset_forward(bytes, start, NEAR_LINE_END.min(n / 2));
    match memchr::memchr(b'\n', &bytes[start..window_end]) {
        Some(i) if start + i + 1 < bytes.len() => start + i + 1,
        _ => start,
    }
}

fn char_offset_back(bytes: &[u8], from: usize, chars: usize) -> usize {
    let mut i = from;
    let mut seen = 0;
    while i > 0 && seen < chars {
        i -= 1;
        if is_char_start(bytes[i]) {
            seen += 1;
        }
    }
    i
}

fn char_offset_forward(bytes: &[u8], from: usize, chars: usize) -> usize {
    let mut i = from;
    let mut seen = 0;
    while i < bytes.len() && seen < chars {
        i += 1;
        while i < bytes.len() && !is_char_start(bytes[i]) {
            i += 1;
        }
        seen += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn capture(limit: usize, chunks: &[&[u8]]) -> Captured {
        let mut t = OutputTail::new(limit);
        for c in chunks {
            t.push(c);
        }
        t.finish()
    }

    #[test]
    fn short_output_is_kept_whole() {
        let c = capture(100, &[b"hello\n", b"world\n"]);
        assert_eq!(c.text, "hello\nworld\n");
        assert_eq!(c.cut_chars, 0);
    }

    #[test]
    fn invalid_utf8_that_is_cut_is_marked() {
        // Stray continuation bytes count no characters, but cutting them is still said.
        let c = capture(1, &[&[0x87; 43]]);
        assert!(c.cut_bytes > 0);
        assert!(c.text.contains("[… lnk cut "), "{}", c.text);
    }

    #[test]
    fn long_output_keeps_start_and_end_with_a_marker() {
        let lines: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
        let c = capture(200, &[lines.as_bytes()]);
        assert!(c.text.starts_with("line 0000\n"), "{}", c.text);
        assert!(c.text.ends_with("line 0999\n"), "{}", c.text);
        assert!(c.text.contains("[… lnk cut "), "{}", c.text);
        // Cut at line ends: every kept line is whole.
        for line in c.text.lines().filter(|l| !l.starts_with("[…")) {
            assert_eq!(line.len(), 9, "{line:?}");
        }
        assert_eq!(c.total_chars, 10_000);
    }

    #[test]
    fn never_splits_a_character() {
        let text = "é".repeat(1000);
        for limit in [1, 2, 3, 10, 101] {
            let c = capture(limit, &[text.as_bytes()]);
            assert!(!c.text.contains('\u{FFFD}'), "limit {limit}: {}", c.text);
            let kept = c.text.chars().filter(|ch| *ch == 'é').count() as u64;
            assert_eq!(kept + c.cut_chars, 1000, "limit {limit}");
            assert!(kept <= limit as u64);
        }
    }

    #[test]
    fn memory_stays_bounded() {
        let mut t = OutputTail::new(1000);
        let chunk = vec![b'x'; 1 << 16];
        for _ in 0..1000 {
            t.push(&chunk);
        }
        assert!(t.head.capacity() + t.tail.capacity() < 6 * 1000 * 4);
        let c = t.finish();
        assert_eq!(c.total_bytes, 1000 << 16);
        assert_eq!(c.cut_chars + 1000, 1000 << 16);
    }

    proptest! {
        #[test]
        fn kept_plus_cut_is_total(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..20),
            limit in 1usize..400,
        ) {
            let mut t = OutputTail::new(limit);
            let mut total = 0u64;
            for c in &chunks {
                t.push(c);
                total += c.len() as u64;
            }
            let c = t.finish();
            prop_assert_eq!(c.total_bytes, total);
            prop_assert!(c.cut_chars <= c.total_chars);
        }

        #[test]
        fn nothing_is_dropped_without_a_marker(
            data in proptest::collection::vec(any::<u8>(), 0..600),
            limit in 1usize..50,
        ) {
            let c = capture(limit, &[&data]);
            if c.cut_bytes == 0 {
                prop_assert_eq!(c.text, String::from_utf8_lossy(&data).into_owned());
            } else {
                prop_assert!(c.text.contains("[… lnk cut "));
            }
        }

        #[test]
        fn utf8_input_round_trips_when_it_fits(s in "\\PC{0,80}", limit in 80usize..200) {
            let c = capture(limit, &[s.as_bytes()]);
            prop_assert_eq!(c.text, s);
        }

        #[test]
        fn utf8_input_is_never_split(s in "(\\PC|\n){0,400}", limit in 1usize..100, split in 0usize..400) {
            prop_assume!(!s.contains(char::REPLACEMENT_CHARACTER));
            let bytes = s.as_bytes();
            let split = split.min(bytes.len());
            let c = capture(limit, &[&bytes[..split], &bytes[split..]]);
            prop_assert!(!c.text.contains(char::REPLACEMENT_CHARACTER));
            let marker_free: String = c.text.lines().filter(|l| !l.starts_with("[… lnk cut")).collect::<Vec<_>>().join("\n");
            prop_assert!(marker_free.chars().count() as u64 <= limit as u64 + 1);
        }
    }
}
