//! Finding one top-level field's text in a line that may not be valid JSON.
//!
//! A request the reader refuses (cut short, a stray comma, an `id` that is an object) must still
//! get an answer the harness can match to it, so the file session looks for the `id` field's
//! text without parsing the whole line. The scan is forgiving and bounded by the line: it
//! follows strings (with escapes) and nesting only far enough to find where each top-level value
//! ends, and gives up (`None`) at anything that is not `{ "key": value, … }`.
//!
//! Trusted with: finding a refused line's `id` so that its answer can be matched; nothing found
//! here is acted on. What it trusts: nothing of the line.

/// The text of the top-level field `key`'s value in `text` (trimmed; up to the end of the text
/// if the value is cut short), or `None` when no such field can be found.
pub fn top_level_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let this_key = &text[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = value_end(b, i);
        if this_key == key {
            let value = text[i..end].trim_end();
            return (!value.is_empty()).then_some(value);
        }
        if b.get(end) != Some(&b',') {
            return None;
        }
        i = end + 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The index just after the string that starts (with its quote) at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The index of the `,` or `}` that ends the top-level value starting at `start`, or the end of
/// the text.
fn value_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut j = start;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j).unwrap_or(b.len());
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return j,
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => return j,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::top_level_field as field;

    #[test]
    fn finds_the_field_in_valid_and_broken_lines() {
        assert_eq!(field(r#"{"op":"read","id":7}"#, "id"), Some("7"));
        assert_eq!(field(r#" { "id" : "a,}b" , "x":1}"#, "id"), Some(r#""a,}b""#));
        assert_eq!(field(r#"{"x":{"id":1},"id":{"n":[1,2]}}"#, "id"), Some(r#"{"n":[1,2]}"#));
        assert_eq!(field(r#"{"id":12,"op":"read","path":"#, "id"), Some("12"));
        assert_eq!(field(r#"{"op":"read" "id":3}"#, "id"), None);
        assert_eq!(field(r#"{"id":"cut sh"#, "id"), Some(r#""cut sh"#));
        assert_eq!(field(r#"{"s":"\"id\":5","id":true}"#, "id"), Some("true"));
        assert_eq!(field("[1,2]", "id"), None);
        assert_eq!(field("", "id"), None);
        assert_eq!(field(r#"{"id":}"#, "id"), None);
        assert_eq!(field(r#"{"\"#, "id"), None);
    }
}
