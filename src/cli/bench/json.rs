//! The little JSON `solowg bench` needs: writing its result, and reading the answers of
//! `iperf3 -J` and `ubus call system board`. Bounded nesting; never panics on bad input.

/// A JSON value. Objects keep their members in order (the result is read by people too).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

/// Deepest nesting `parse` follows (iperf3's answer is 5 deep).
const MAX_DEPTH: usize = 32;

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// A string, or null for None.
    pub fn opt_str(s: Option<&str>) -> Value {
        s.map_or(Value::Null, |s| Value::Str(s.to_string()))
    }

    /// Compact text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        write(self, &mut out);
        out
    }
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // JSON has no NaN or infinity.
        Value::Num(n) if !n.is_finite() => out.push_str("null"),
        Value::Num(n) => out.push_str(&format!("{n}")),
        Value::Str(s) => quote(s, out),
        Value::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Obj(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote(k, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parses one JSON text (surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        b: text.as_bytes(),
        at: 0,
    };
    let v = p.value(0)?;
    p.space();
    if p.at != p.b.len() {
        return Err(format!("unexpected text at byte {}", p.at));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while matches!(self.b.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        if self.b.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.at))
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deep");
        }
        self.space();
        match self.b.get(self.at) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::Str),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.fail("expected a value"),
        }
    }

    fn word(&mut self, w: &str, v: Value) -> Result<Value, String> {
        if self.b[self.at..].starts_with(w.as_bytes()) {
            self.at += w.len();
            Ok(v)
        } else {
            self.fail("expected a value")
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        while matches!(
            self.b.get(self.at),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let s = std::str::from_utf8(&self.b[start..self.at]).unwrap_or("");
        match s.parse::<f64>() {
            Ok(n) => Ok(Value::Num(n)),
            Err(_) => self.fail("bad number"),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.at += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.at) else {
                return self.fail("unterminated string");
            };
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.at) else {
                        return self.fail("unterminated string");
                    };
                    self.at += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return self.fail("bad escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).or_else(|_| self.fail("string is not UTF-8"))
    }

    /// `\uXXXX` after the `u`; a lone surrogate becomes U+FFFD.
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hex = self
            .b
            .get(self.at..self.at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok());
        let Some(code) = hex else {
            return self.fail("bad \\u escape");
        };
        self.at += 4;
        Ok(char::from_u32(code).unwrap_or('\u{fffd}'))
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Ok(Value::Arr(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.eat(b']') {
                return Ok(Value::Arr(items));
            }
            if !self.eat(b',') {
                return self.fail("expected , or ]");
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut members = Vec::new();
        if self.eat(b'}') {
            return Ok(Value::Obj(members));
        }
        loop {
            self.space();
            if self.b.get(self.at) != Some(&b'"') {
                return self.fail("expected a member name");
            }
            let k = self.string()?;
            if !self.eat(b':') {
                return self.fail("expected :");
            }
            members.push((k, self.value(depth + 1)?));
            if self.eat(b'}') {
                return Ok(Value::Obj(members));
            }
            if !self.eat(b',') {
                return self.fail("expected , or }");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_escapes() {
        let v = Value::Obj(vec![
            ("s".into(), Value::Str("a\"b\\c\n\u{1}é".into())),
            ("n".into(), Value::Num(5.0)),
            ("f".into(), Value::Num(0.25)),
            ("x".into(), Value::Num(f64::NAN)),
            (
                "a".into(),
                Value::Arr(vec![Value::Null, Value::Bool(true), Value::Bool(false)]),
            ),
        ]);
        let text = v.to_text();
        assert_eq!(
            text,
            r#"{"s":"a\"b\\c\n\u0001é","n":5,"f":0.25,"x":null,"a":[null,true,false]}"#
        );
        let back = parse(&text).unwrap();
        assert_eq!(
            back.get("s").and_then(Value::as_str),
            Some("a\"b\\c\n\u{1}é")
        );
        assert_eq!(back.get("n").and_then(Value::as_f64), Some(5.0));
        assert_eq!(back.get("x"), Some(&Value::Null));
    }

    #[test]
    fn reads_nested_answers_with_whitespace() {
        let v = parse(" {\n\t\"end\": {\"sum_received\": {\"bits_per_second\": 9.4e8}},\n \"u\": \"\\u00e9\\/\" } ").unwrap();
        let bps = v
            .get("end")
            .and_then(|e| e.get("sum_received"))
            .and_then(|s| s.get("bits_per_second"))
            .and_then(Value::as_f64);
        assert_eq!(bps, Some(9.4e8));
        assert_eq!(v.get("u").and_then(Value::as_str), Some("é/"));
    }

    #[test]
    fn refuses_bad_input_without_panicking() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\" 1}",
            "\"abc",
            "\"\\u12\"",
            "\"\\x\"",
            "tru",
            "1 2",
            "-",
            "{1:2}",
            "[1}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).is_err());
        let ok = "[".repeat(20) + &"]".repeat(20);
        assert!(parse(&ok).is_ok());
        // Every prefix of a valid text is handled.
        let text = r#"{"a":[1,2.5e3,"x\"y",{"b":null}],"c":true}"#;
        for n in 0..text.len() {
            let _ = parse(&text[..n]);
        }
    }
}
