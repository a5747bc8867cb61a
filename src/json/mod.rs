//! Minimal JSON for the harness: a writer for the outputs (`--json`, `--report json`) and, in
//! [`parse`], a strict reader for the file session's requests.
//!
//! The writer handles only objects, arrays, strings, numbers and booleans, and the reader only
//! what a request holds, so a serializer crate would be audit cost without benefit. Strings are escaped per RFC 8259: quotes,
//! backslashes and every control character, so any text (a file name with a newline, a program's
//! output) stays one valid JSON value on one line.
//!
//! Trusted with: that each JSON object the harness parses is valid and says only what its fields
//! say, whatever text it carries (a string never adds a field or a line). What it trusts: the
//! callers of [`Object::raw`] and [`array`] to pass JSON made with this module; every string goes
//! through [`string`].

pub mod parse;
pub mod scan;

use std::fmt::Write as _;

/// `s` as a JSON string literal.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The version of the shapes of `lnk`'s JSON outputs. Every object `lnk` prints on standard
/// output (`--json`, `--report json`) starts with `"schema": SCHEMA`, so a harness can refuse a
/// shape it does not know instead of misreading it. Raised when a field changes meaning or goes
/// away; a new field does not raise it.
pub const SCHEMA: u32 = 1;

/// Builds one JSON object, field by field, in the order given.
#[derive(Default)]
pub struct Object {
    text: String,
}

impl Object {
    pub fn new() -> Object {
        Object::default()
    }

    /// A top-level output object: starts with `"schema"` (see [`SCHEMA`]).
    pub fn output() -> Object {
        Object::new().num("schema", SCHEMA)
    }

    fn key(&mut self, key: &str) {
        self.text.push(if self.text.is_empty() { '{' } else { ',' });
        self.text.push_str(&string(key));
        self.text.push(':');
    }

    pub fn str(mut self, key: &str, value: &str) -> Object {
        self.key(key);
        self.text.push_str(&string(value));
        self
    }

    pub fn num(mut self, key: &str, value: impl Into<i128>) -> Object {
        self.key(key);
        let _ = write!(self.text, "{}", value.into());
        self
    }

    pub fn bool(mut self, key: &str, value: bool) -> Object {
        self.key(key);
        self.text.push_str(if value { "true" } else { "false" });
        self
    }

    pub fn null(mut self, key: &str) -> Object {
        self.key(key);
        self.text.push_str("null");
        self
    }

    /// A value already rendered as JSON (an object or array built with this module).
    pub fn raw(mut self, key: &str, json: &str) -> Object {
        self.key(key);
        self.text.push_str(json);
        self
    }

    pub fn finish(mut self) -> String {
        if self.text.is_empty() {
            return "{}".into();
        }
        self.text.push('}');
        self.text
    }
}

/// A JSON array of already-rendered values.
pub fn array(items: impl IntoIterator<Item = String>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_control_character() {
        assert_eq!(string("a\"b\\c\nd\u{1}\u{7f}é"), "\"a\\\"b\\\\c\\nd\\u0001\\u007fé\"");
    }

    #[test]
    fn builds_objects_and_arrays() {
        let o =
            Object::new().str("a", "x").num("n", -3).bool("b", true).null("z").raw("l", &array(["1".into()]));
        assert_eq!(o.finish(), r#"{"a":"x","n":-3,"b":true,"z":null,"l":[1]}"#);
        assert_eq!(Object::new().finish(), "{}");
        assert_eq!(array(Vec::new()), "[]");
    }
}
