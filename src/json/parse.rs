//! A strict JSON reader for one request line.
//!
//! RFC 8259 values, with limits a request never comes near: nesting at most [`MAX_DEPTH`], and
//! the input itself is bounded by the caller (one line of at most a few MiB). Numbers are kept
//! as integers when they are integers (offsets, limits), else as floats. Errors say where, in
//! bytes, and what was expected; nothing panics on any input (a fuzz target checks).
//!
//! Trusted with: reading a request line exactly as written, with one meaning (a key given twice is
//! refused), without panicking or recursing without bound on any input. What it trusts: nothing of
//! the text; its callers bound the line's length.

use std::collections::BTreeMap;

/// The deepest nesting accepted; a request is two or three levels deep.
pub const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(BTreeMap<String, Value>),
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        if let Value::String(s) = self { Some(s) } else { None }
    }
    pub fn as_i64(&self) -> Option<i64> {
        if let Value::Int(n) = self { Some(*n) } else { None }
    }
    pub fn as_bool(&self) -> Option<bool> {
        if let Value::Bool(b) = self { Some(*b) } else { None }
    }
    pub fn get(&self, key: &str) -> Option<&Value> {
        if let Value::Object(m) = self { m.get(key) } else { None }
    }
}

/// Parses one JSON text (surrounding whitespace allowed, nothing after it).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser { bytes: text.as_bytes(), pos: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(p.err("nothing after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: expected {what}", self.pos)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, String> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.err(word))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err(&format!("at most {MAX_DEPTH} levels of nesting")));
        }
        self.ws();
        match self.bytes.get(self.pos) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err("a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut map = BTreeMap::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.err("a key in quotes"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.err("`:`"));
            }
            let v = self.value(depth + 1)?;
            if map.insert(key, v).is_some() {
                return Err(self.err("each key once"));
            }
            self.ws();
            if self.eat(b'}') {
                return Ok(Value::Object(map));
            }
            if !self.eat(b',') {
                return Err(self.err("`,` or `}`"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.err("`,` or `]`"));
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or_else(|| self.err("four hex digits"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.err("four hex digits"))?;
        let n = u32::from_str_radix(text, 16).map_err(|_| self.err("four hex digits"))?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.err("four hex digits"));
        }
        self.pos += 4;
        Ok(n)
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain characters at once: the common case for file contents.
            let start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is a &str and the run stops only at ASCII bytes, so it is whole UTF-8.
            out.push_str(std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| self.err("UTF-8"))?);
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = *self.bytes.get(self.pos).ok_or_else(|| self.err("an escape"))?;
                    self.pos += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                if !(self.eat(b'\\') && self.eat(b'u')) {
                                    return Err(self.err("the low half of a surrogate pair"));
                                }
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(self.err("the low half of a surrogate pair"));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            out.push(
                                char::from_u32(code)
                                    .ok_or_else(|| self.err("a character, not a lone surrogate"))?,
                            );
                        }
                        _ => return Err(self.err("a valid escape")),
                    }
                }
                Some(_) => return Err(self.err("no raw control characters in a string")),
                None => return Err(self.err("the string's closing `\"`")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let s = p.pos;
            while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - s
        };
        if self.eat(b'0') {
        } else if digits(self) == 0 {
            return Err(self.err("digits"));
        }
        let mut float = false;
        if self.eat(b'.') {
            float = true;
            if digits(self) == 0 {
                return Err(self.err("digits after `.`"));
            }
        }
        if self.eat(b'e') || self.eat(b'E') {
            float = true;
            let _ = self.eat(b'+') || self.eat(b'-');
            if digits(self) == 0 {
                return Err(self.err("exponent digits"));
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| self.err("a number"))?;
        if !float {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::Int(n));
            }
        }
        text.parse::<f64>().map(Value::Float).map_err(|_| self.err("a number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_a_request_holds() {
        let v = parse(
            r#" {"id": 7, "op": "read", "path": "a\nb\u00e9\ud83d\ude00", "x": [true, null, -1.5e2]} "#,
        )
        .unwrap();
        assert_eq!(v.get("id"), Some(&Value::Int(7)));
        assert_eq!(v.get("path").and_then(Value::as_str), Some("a\nbé😀"));
        assert_eq!(
            v.get("x"),
            Some(&Value::Array(vec![Value::Bool(true), Value::Null, Value::Float(-150.0)]))
        );
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "{'a':1}",
            "{\"a\" 1}",
            "01",
            "1.",
            "-",
            "\"\\x\"",
            "\"\u{1}\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "{\"a\":1,\"a\":2}",
            "[1] 2",
            "tru",
            "nul",
            "\"abc",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("nesting"));
    }
}
