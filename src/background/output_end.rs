//! The end of a background command's output, as its record keeps it and its message tells it.
//!
//! The message carries the last half of `[tool.run] output` characters (the README's promise):
//! the end of a long command is how it ended, and the whole output is in its file for `read`.
//! Unlike a run call's capture (`output::OutputTail`, the start and the end with a marker), this
//! is only the end, exactly: the last `chars` characters, not moved to a line end.
//!
//! It is also bounded in bytes, by [`OUTPUT_END_MAX_BYTES`], because it is written into the
//! record, and a record the reader refuses as too large would lose how the command ended (the
//! exit status, the told mark). The bound is derived from the reader's own limit, so the two
//! cannot drift (see `records::format`). A cut never splits a character.
//!
//! Memory is bounded too: a ring of at most `min(4 × chars, OUTPUT_END_MAX_BYTES)` bytes, whatever
//! the command prints.
//!
//! Trusted with: keeping how a command ended readable whatever it printed (a record over the
//! reader's limit would lose its exit status and told mark), and the supervisor's memory bounded.
//! What it trusts: nothing of the output, which may be any bytes; only the byte limit it takes from
//! `records::format`.

use std::collections::VecDeque;

pub use crate::records::format::OUTPUT_END_MAX_BYTES;

/// The last characters of a stream, bounded in characters and in bytes.
#[derive(Debug)]
pub struct OutputEnd {
    chars: usize,
    ring: VecDeque<u8>,
    ring_cap: usize,
    /// Whether bytes fell off the ring's front (so its first character may be partial).
    dropped: bool,
}

impl OutputEnd {
    /// Keeps at most the last `chars` characters, and at most [`OUTPUT_END_MAX_BYTES`] bytes.
    pub fn new(chars: usize) -> OutputEnd {
        // A character is at most 4 bytes, so the last `chars` characters lie in the last
        // `4 × chars` bytes; and the byte bound never needs more than its own size (decoding
        // never shrinks text: an invalid byte becomes the 3-byte U+FFFD).
        let ring_cap = chars.saturating_mul(4).min(OUTPUT_END_MAX_BYTES);
        OutputEnd { chars, ring: VecDeque::new(), ring_cap, dropped: false }
    }

    /// Takes the next bytes of the stream.
    pub fn push(&mut self, mut data: &[u8]) {
        if data.len() > self.ring_cap {
            self.dropped = true;
            self.ring.clear();
            data = &data[data.len() - self.ring_cap..];
        }
        let overflow = (self.ring.len() + data.len()).saturating_sub(self.ring_cap);
        if overflow > 0 {
            self.dropped = true;
            self.ring.drain(..overflow);
        }
        self.ring.extend(data);
    }

    /// The kept end: valid UTF-8 (an invalid byte becomes U+FFFD), at most `chars` characters
    /// and at most [`OUTPUT_END_MAX_BYTES`] bytes.
    pub fn finish(self) -> String {
        let mut bytes: Vec<u8> = self.ring.into_iter().collect();
        if self.dropped {
            // The ring's front may be the tail of a character whose start fell off.
            let partial = bytes.iter().take(3).take_while(|b| (**b & 0xc0) == 0x80).count();
            bytes.drain(..partial);
        }
        let text = String::from_utf8_lossy(&bytes);
        last_chars(&text, self.chars, OUTPUT_END_MAX_BYTES).to_owned()
    }
}

/// The longest end of `text` with at most `chars` characters and at most `max_bytes` bytes.
pub fn last_chars(text: &str, chars: usize, max_bytes: usize) -> &str {
    let mut start = text.len();
    for (taken, (i, _)) in text.char_indices().rev().enumerate() {
        if taken >= chars || text.len() - i > max_bytes {
            break;
        }
        start = i;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn end(chars: usize, chunks: &[&[u8]]) -> String {
        let mut e = OutputEnd::new(chars);
        for c in chunks {
            e.push(c);
        }
        e.finish()
    }

    #[test]
    fn keeps_exactly_the_last_characters() {
        assert_eq!(end(3, &[b"hello\n", b"world"]), "rld");
        assert_eq!(end(100, &[b"short"]), "short");
        assert_eq!(end(2, &["aé漢😀".as_bytes()]), "漢😀");
    }

    #[test]
    fn is_bounded_in_bytes_at_a_character_boundary() {
        let text = "漢".repeat(1_000_000);
        let kept = end(500_000, &[text.as_bytes()]);
        assert!(kept.len() <= OUTPUT_END_MAX_BYTES, "{}", kept.len());
        assert!(kept.len() > OUTPUT_END_MAX_BYTES - 4, "as much as fits: {}", kept.len());
        assert!(kept.chars().all(|c| c == '漢'));
    }

    proptest! {
        #[test]
        fn is_the_end_of_the_text(s in "(\\PC|\n){0,300}", chars in 1usize..120, split in 0usize..1200) {
            let bytes = s.as_bytes();
            let split = split.min(bytes.len());
            let kept = end(chars, &[&bytes[..split], &bytes[split..]]);
            let expected: String = {
                let all: Vec<char> = s.chars().collect();
                all[all.len().saturating_sub(chars)..].iter().collect()
            };
            prop_assert_eq!(kept, expected);
        }

        #[test]
        fn any_bytes_stay_within_both_bounds(data in proptest::collection::vec(any::<u8>(), 0..2000), chars in 1usize..300) {
            let kept = end(chars, &[&data]);
            prop_assert!(kept.chars().count() <= chars);
            prop_assert!(kept.len() <= OUTPUT_END_MAX_BYTES);
        }
    }
}
