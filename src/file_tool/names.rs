//! Names that are not UTF-8: how an answer gives them and a request names them again.
//!
//! A file name is any bytes but `/` and NUL; a JSON string is UTF-8. A name (or a path) that is
//! valid UTF-8 is always given and taken as itself. One that is not is given in the *escaped
//! form*, with `"escaped": true` beside it: every `\` written `\\`, every byte that is not part of
//! valid UTF-8 written `\xNN` (two lowercase hex digits), everything else as it is. A request with
//! `"escaped": true` has every path field (`path`, `from`, `to`) in that form, so an answer's name
//! can be sent back as it came.
//!
//! Guaranteed (tested below): the escaped form of any bytes decodes to those very bytes; without
//! `escaped` a path is taken literally, so no UTF-8 name changes meaning (a file literally named
//! `a\xff` is `"a\\xff"`, or `"a\\\\xff"` escaped, and never the byte 0xff); a decoded path never
//! gains a `/`, a NUL or a `.` the text did not have (`\xNN` is refused below 0x80), so the escapes
//! cannot climb out of a root or split a name.

use std::fmt::Write as _;

use super::FileError;

/// The escaped form of `bytes` (the text itself when it is UTF-8 without a `\`).
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// A name or path for an answer: the text itself when it is UTF-8 (`false`), else its escaped
/// form (`true`, which the answer says with `"escaped": true`).
pub fn for_answer(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (escape(bytes), true),
    }
}

/// The bytes a request's path names: `text` itself, or with `escaped`, its escapes decoded.
pub fn request_bytes(text: &str, escaped: bool) -> Result<Vec<u8>, FileError> {
    if !escaped {
        return Ok(text.as_bytes().to_vec());
    }
    let bad = |what: &str| {
        FileError::new(
            "bad_path",
            format!(
                "`{}`: {what}; with \"escaped\": true a path writes `\\` as `\\\\` and a byte that is not UTF-8 as `\\xNN` (80 to ff)",
                text.escape_debug()
            ),
        )
    };
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match rest {
            [b'\\', tail @ ..] => {
                out.push(b'\\');
                rest = tail;
            }
            [b'x', hi, lo, tail @ ..] => {
                let digit = |d: u8| (d as char).to_digit(16).filter(|_| !d.is_ascii_uppercase());
                let (Some(hi), Some(lo)) = (digit(*hi), digit(*lo)) else {
                    return Err(bad("`\\x` is followed by two lowercase hex digits"));
                };
                let byte = (hi * 16 + lo) as u8;
                if byte < 0x80 {
                    return Err(bad("`\\xNN` is only for bytes from 80 to ff"));
                }
                out.push(byte);
                rest = tail;
            }
            _ => return Err(bad("a `\\` starts `\\\\` or `\\xNN`")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escaped_form_of_any_bytes_decodes_to_them() {
        let samples: [&[u8]; 7] =
            [b"plain.txt", b"caf\xc3\xa9", b"bad\xff", b"a\\xff", b"a\\\\b\\", b"\xc3", b"\xe2\x82\\x"];
        for bytes in samples {
            assert_eq!(request_bytes(&escape(bytes), true).unwrap(), bytes, "{bytes:?}");
        }
        assert_eq!(escape(b"bad\xff"), "bad\\xff");
        assert_eq!(escape("café".as_bytes()), "café", "valid UTF-8 is not escaped");
    }

    #[test]
    fn a_utf8_name_never_changes_meaning() {
        // Literal unless the request says escaped: a real file named `a\xff` stays reachable.
        assert_eq!(request_bytes("a\\xff", false).unwrap(), b"a\\xff");
        assert_eq!(request_bytes("a\\\\xff", true).unwrap(), b"a\\xff");
        assert_eq!(request_bytes("a\\xff", true).unwrap(), b"a\xff");
        assert_eq!(for_answer(b"a\\xff"), ("a\\xff".to_owned(), false));
        assert_eq!(for_answer(b"a\xff"), ("a\\xff".to_owned(), true));
    }

    #[test]
    fn escapes_never_make_a_separator_a_dot_or_a_nul() {
        for bad in ["\\x2f", "\\x2e\\x2e", "\\x00", "\\x7f", "\\xFF", "\\x", "\\xf", "a\\", "\\n", "\\xzz"] {
            assert_eq!(request_bytes(bad, true).unwrap_err().kind, "bad_path", "{bad}");
        }
    }
}
