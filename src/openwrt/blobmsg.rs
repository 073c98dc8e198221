//! libubox `blob`/`blobmsg` encoding, the payload format of ubus, with a small value type.
//!
//! A blob attribute is a big-endian u32 header (bit 31: extended, bits 24..30: id, bits
//! 0..23: length including the header) followed by the payload, padded to 4 bytes. A
//! blobmsg attribute is an extended blob attribute whose id is the value type and whose
//! payload starts with a name: u16 name length, the name, a NUL, padding to 4 bytes.
//!
//! Decoding takes bytes from other processes, so it never panics: every length is checked
//! against what is there, and nesting is limited to [`MAX_DEPTH`].

#[cfg(any(test, feature = "internals"))]
use std::fmt::Write as _;

/// blobmsg value types (the blob id of an extended attribute).
pub const TYPE_UNSPEC: u8 = 0;
pub const TYPE_ARRAY: u8 = 1;
pub const TYPE_TABLE: u8 = 2;
pub const TYPE_STRING: u8 = 3;
pub const TYPE_INT64: u8 = 4;
pub const TYPE_INT32: u8 = 5;
pub const TYPE_INT16: u8 = 6;
/// INT8 and BOOL are the same type on the wire.
pub const TYPE_BOOL: u8 = 7;
pub const TYPE_DOUBLE: u8 = 8;

/// Deepest nesting of tables/arrays a decoder accepts (the outermost table is depth 1).
pub const MAX_DEPTH: usize = 16;

const EXTENDED: u32 = 0x8000_0000;
const LEN_MASK: u32 = 0x00ff_ffff;
const HDR: usize = 4;

/// A decoded or to-be-encoded blobmsg value.
///
/// Integers of every width decode to `Int`; `Int` encodes as INT32 when it fits and as
/// INT64 otherwise, which is what libubox's JSON converter (and so the `ubus` CLI) does.
/// INT8 decodes to `Bool` (libubox uses one type id for both). Unknown types decode to `Null`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(String),
    Array(Vec<Value>),
    Table(Vec<(String, Value)>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "malformed blobmsg: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

impl Value {
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// The first entry called `key` of a table.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Table(t) => t.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The blobmsg type this value is encoded as.
    pub fn blob_type(&self) -> u8 {
        match self {
            Value::Null => TYPE_UNSPEC,
            Value::Bool(_) => TYPE_BOOL,
            Value::Int(i) if i32::try_from(*i).is_ok() => TYPE_INT32,
            Value::Int(_) => TYPE_INT64,
            Value::Double(_) => TYPE_DOUBLE,
            Value::Str(_) => TYPE_STRING,
            Value::Array(_) => TYPE_ARRAY,
            Value::Table(_) => TYPE_TABLE,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    /// Compact JSON, for logs and tests. Non-finite doubles become `null`.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }

    #[cfg(any(test, feature = "internals"))]
    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Double(d) if d.is_finite() => {
                let _ = write!(out, "{d:?}");
            }
            Value::Double(_) => out.push_str("null"),
            Value::Str(s) => json_string(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Table(t) => {
                out.push('{');
                for (i, (k, v)) in t.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_string(k, out);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

#[cfg(any(test, feature = "internals"))]
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn pad_to_4(out: &mut Vec<u8>) {
    out.resize(pad4(out.len()), 0);
}

/// Starts an attribute: reserves its header and returns where it is.
pub(crate) fn begin(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; HDR]);
    at
}

/// Finishes the attribute started at `at`: writes the header with the unpadded length, then
/// pads the buffer. Lengths beyond 24 bits are the caller's to prevent (ubus frames are
/// limited to 1 MiB, far below).
pub(crate) fn end(out: &mut Vec<u8>, at: usize, extended: bool, id: u8) {
    let len = (out.len() - at) as u32;
    let word =
        if extended { EXTENDED } else { 0 } | (u32::from(id & 0x7f) << 24) | (len & LEN_MASK);
    out[at..at + HDR].copy_from_slice(&word.to_be_bytes());
    pad_to_4(out);
}

/// A plain (non-extended) blob attribute with a raw payload.
pub(crate) fn put_blob(out: &mut Vec<u8>, id: u8, payload: &[u8]) {
    let at = begin(out);
    out.extend_from_slice(payload);
    end(out, at, false, id);
}

pub(crate) fn put_blob_u32(out: &mut Vec<u8>, id: u8, v: u32) {
    put_blob(out, id, &v.to_be_bytes());
}

/// A NUL-terminated string payload; the string ends at an embedded NUL, as C readers see it.
pub(crate) fn put_blob_str(out: &mut Vec<u8>, id: u8, s: &str) {
    let at = begin(out);
    out.extend_from_slice(c_part(s));
    out.push(0);
    end(out, at, false, id);
}

fn c_part(s: &str) -> &[u8] {
    let b = s.as_bytes();
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// Starts a blobmsg attribute called `name`; finish it with `end(.., true, type)`.
pub(crate) fn begin_named(out: &mut Vec<u8>, name: &str) -> usize {
    let at = begin(out);
    let name = c_part(name);
    let name = &name[..name.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name);
    out.push(0);
    pad_to_4(out);
    at
}

/// Appends `value` as a blobmsg attribute called `name` (empty inside arrays).
pub fn encode_attr(out: &mut Vec<u8>, name: &str, value: &Value) {
    let ty = value.blob_type();
    let at = begin_named(out, name);
    match value {
        Value::Null => {}
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Int(i) => match i32::try_from(*i) {
            Ok(small) => out.extend_from_slice(&small.to_be_bytes()),
            Err(_) => out.extend_from_slice(&i.to_be_bytes()),
        },
        Value::Double(d) => out.extend_from_slice(&d.to_bits().to_be_bytes()),
        Value::Str(s) => {
            out.extend_from_slice(c_part(s));
            out.push(0);
        }
        Value::Array(a) => {
            for v in a {
                encode_attr(out, "", v);
            }
        }
        Value::Table(t) => encode_table(out, t),
    }
    end(out, at, true, ty);
}

/// Appends the entries of a table as consecutive blobmsg attributes, without a container
/// header: the form of a ubus DATA attribute's payload.
pub fn encode_table(out: &mut Vec<u8>, entries: &[(String, Value)]) {
    for (k, v) in entries {
        encode_attr(out, k, v);
    }
}

/// One blob attribute as found in a buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attr<'a> {
    pub id: u8,
    pub extended: bool,
    pub payload: &'a [u8],
}

/// Iterates the blob attributes of a buffer. A malformed header yields one error and ends
/// the iteration; fewer than 4 trailing bytes are taken as padding.
pub(crate) struct Attrs<'a> {
    rest: &'a [u8],
}

pub(crate) fn attrs(buf: &[u8]) -> Attrs<'_> {
    Attrs { rest: buf }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Attr<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let head: [u8; HDR] = self.rest.get(..HDR)?.try_into().ok()?;
        let word = u32::from_be_bytes(head);
        let len = (word & LEN_MASK) as usize;
        if len < HDR || len > self.rest.len() {
            self.rest = &[];
            return Some(Err(DecodeError("attribute length out of bounds")));
        }
        let attr = Attr {
            id: ((word >> 24) & 0x7f) as u8,
            extended: word & EXTENDED != 0,
            payload: &self.rest[HDR..len],
        };
        self.rest = self.rest.get(pad4(len)..).unwrap_or(&[]);
        Some(Ok(attr))
    }
}

/// Splits a blobmsg payload into its name and value bytes.
fn split_named(payload: &[u8]) -> Result<(String, &[u8]), DecodeError> {
    let n: [u8; 2] = payload
        .get(..2)
        .and_then(|b| b.try_into().ok())
        .ok_or(DecodeError("short name header"))?;
    let name_len = usize::from(u16::from_be_bytes(n));
    let hdr = pad4(2 + name_len + 1);
    let name = payload
        .get(2..2 + name_len)
        .ok_or(DecodeError("name overruns attribute"))?;
    let value = payload
        .get(hdr..)
        .ok_or(DecodeError("name overruns attribute"))?;
    Ok((String::from_utf8_lossy(name).into_owned(), value))
}

fn fixed<const N: usize>(b: &[u8]) -> Result<[u8; N], DecodeError> {
    b.get(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or(DecodeError("short integer"))
}

fn decode_value(ty: u8, b: &[u8], depth: usize) -> Result<Value, DecodeError> {
    Ok(match ty {
        TYPE_ARRAY | TYPE_TABLE if depth >= MAX_DEPTH => {
            return Err(DecodeError("nested too deeply"))
        }
        TYPE_ARRAY => {
            let mut items = Vec::new();
            for a in attrs(b) {
                let (_, v) = decode_attr(a?, depth + 1)?;
                items.push(v);
            }
            Value::Array(items)
        }
        TYPE_TABLE => Value::Table(decode_entries(b, depth + 1)?),
        TYPE_STRING => {
            let s = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
            Value::Str(String::from_utf8_lossy(s).into_owned())
        }
        TYPE_INT64 => Value::Int(i64::from_be_bytes(fixed(b)?)),
        TYPE_INT32 => Value::Int(i32::from_be_bytes(fixed(b)?).into()),
        TYPE_INT16 => Value::Int(i16::from_be_bytes(fixed(b)?).into()),
        TYPE_BOOL => Value::Bool(fixed::<1>(b)?[0] != 0),
        TYPE_DOUBLE => Value::Double(f64::from_bits(u64::from_be_bytes(fixed(b)?))),
        _ => Value::Null,
    })
}

fn decode_attr(a: Attr, depth: usize) -> Result<(String, Value), DecodeError> {
    if !a.extended {
        return Err(DecodeError("blobmsg attribute without extended header"));
    }
    let (name, value) = split_named(a.payload)?;
    Ok((name, decode_value(a.id, value, depth)?))
}

fn decode_entries(b: &[u8], depth: usize) -> Result<Vec<(String, Value)>, DecodeError> {
    let mut entries = Vec::new();
    for a in attrs(b) {
        entries.push(decode_attr(a?, depth)?);
    }
    Ok(entries)
}

/// Decodes consecutive blobmsg attributes (a table's body, like a ubus DATA payload).
pub fn decode_table(b: &[u8]) -> Result<Vec<(String, Value)>, DecodeError> {
    decode_entries(b, 1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn t(entries: &[(&str, Value)]) -> Value {
        Value::Table(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn body(v: &[(String, Value)]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_table(&mut out, v);
        out
    }

    #[test]
    fn string_attr_bytes_match_libubox() {
        // blobmsg_add_string(&b, "msg", "hi"): ext|type 3, len 4+8+3=15, name "msg\0" padded
        // to 8 with the u16 length, value "hi\0", padded to 16.
        let out = body(&[("msg".into(), Value::str("hi"))]);
        assert_eq!(
            out,
            [0x83, 0, 0, 15, 0, 3, b'm', b's', b'g', 0, 0, 0, b'h', b'i', 0, 0]
        );
    }

    #[test]
    fn int_widths() {
        let out = body(&[
            ("a".into(), Value::Int(-2)),
            ("b".into(), Value::Int(1 << 40)),
        ]);
        // INT32: 4 + 4 (name "a") + 4 = 12; INT64: 4 + 4 + 8 = 16.
        assert_eq!(&out[..4], &[0x85, 0, 0, 12]);
        assert_eq!(&out[8..12], &(-2i32).to_be_bytes());
        assert_eq!(&out[12..16], &[0x84, 0, 0, 16]);
        let back = decode_table(&out).unwrap();
        assert_eq!(back[0].1, Value::Int(-2));
        assert_eq!(back[1].1, Value::Int(1 << 40));
    }

    #[test]
    fn int16_int8_decode() {
        let mut out = Vec::new();
        let at = begin_named(&mut out, "x");
        out.extend_from_slice(&(-5i16).to_be_bytes());
        end(&mut out, at, true, TYPE_INT16);
        let at = begin_named(&mut out, "y");
        out.push(2);
        end(&mut out, at, true, TYPE_BOOL);
        let v = decode_table(&out).unwrap();
        assert_eq!(v[0], ("x".into(), Value::Int(-5)));
        assert_eq!(v[1], ("y".into(), Value::Bool(true)));
    }

    #[test]
    fn roundtrip_nested() {
        let v = t(&[
            ("s", Value::str("a'b\"c")),
            ("n", Value::Null),
            ("d", Value::Double(-1.5)),
            (
                "arr",
                Value::Array(vec![
                    Value::Int(1),
                    t(&[("k", Value::Bool(false))]),
                    Value::Array(vec![]),
                ]),
            ),
            ("empty", Value::Table(vec![])),
        ]);
        let Value::Table(entries) = &v else {
            unreachable!()
        };
        let back = decode_table(&body(entries)).unwrap();
        assert_eq!(Value::Table(back), v);
        assert_eq!(
            v.to_json(),
            r#"{"s":"a'b\"c","n":null,"d":-1.5,"arr":[1,{"k":false},[]],"empty":{}}"#
        );
    }

    #[test]
    fn json_escapes_and_non_finite() {
        let v = Value::Array(vec![
            Value::str("\u{1}\n\\"),
            Value::Double(f64::NAN),
            Value::Double(2.0),
        ]);
        assert_eq!(v.to_json(), r#"["\u0001\n\\",null,2.0]"#);
    }

    #[test]
    fn embedded_nul_ends_strings() {
        let out = body(&[("a\0b".into(), Value::str("x\0y"))]);
        assert_eq!(decode_table(&out).unwrap(), [("a".into(), Value::str("x"))]);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        // length below the header size
        assert!(decode_table(&[0x83, 0, 0, 3]).is_err());
        // length beyond the buffer
        assert!(decode_table(&[0x83, 0, 0, 64, 0, 0, 0, 0]).is_err());
        // not extended
        assert!(decode_table(&[0x03, 0, 0, 8, 0, 0, 0, 0]).is_err());
        // name longer than the attribute
        assert!(decode_table(&[0x83, 0, 0, 8, 0, 9, b'a', 0]).is_err());
        // INT32 with two bytes
        assert!(decode_table(&[0x85, 0, 0, 10, 0, 1, b'a', 0, 0, 1, 0, 0]).is_err());
        // trailing short padding is fine
        assert_eq!(decode_table(&[0, 0]).unwrap(), []);
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = Value::Int(1);
        for _ in 0..MAX_DEPTH - 1 {
            v = Value::Array(vec![v]);
        }
        let ok = body(&[("x".into(), v.clone())]);
        assert!(decode_table(&ok).is_ok());
        let deep = body(&[("x".into(), Value::Array(vec![v]))]);
        assert_eq!(decode_table(&deep), Err(DecodeError("nested too deeply")));
    }

    /// xorshift64*: deterministic randomness for the property tests.
    pub(crate) struct Prng(pub u64);

    impl Prng {
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        pub fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn random_value(r: &mut Prng, depth: usize) -> Value {
        let kinds = if depth >= 5 { 5 } else { 7 };
        match r.below(kinds) {
            0 => Value::Null,
            1 => Value::Bool(r.below(2) == 1),
            2 => Value::Int(match r.below(3) {
                0 => r.below(100) as i64 - 50,
                1 => r.next() as i32 as i64,
                _ => r.next() as i64,
            }),
            3 => Value::Double((r.next() as i64 as f64) / 1024.0),
            4 => Value::Str(
                (0..r.below(12))
                    .map(|_| (b'a' + r.below(26) as u8) as char)
                    .collect(),
            ),
            5 => Value::Array(
                (0..r.below(4))
                    .map(|_| random_value(r, depth + 1))
                    .collect(),
            ),
            _ => Value::Table(
                (0..r.below(4))
                    .map(|i| (format!("k{i}"), random_value(r, depth + 1)))
                    .collect(),
            ),
        }
    }

    pub(crate) fn mutate(r: &mut Prng, b: &mut Vec<u8>) {
        for _ in 0..1 + r.below(4) {
            match r.below(5) {
                0 if !b.is_empty() => {
                    let i = r.below(b.len());
                    b[i] ^= 1 << r.below(8);
                }
                1 if !b.is_empty() => {
                    let i = r.below(b.len());
                    b[i] = r.next() as u8;
                }
                2 if !b.is_empty() => b.truncate(r.below(b.len())),
                3 => {
                    let i = r.below(b.len() + 1);
                    b.insert(i, r.next() as u8);
                }
                _ if !b.is_empty() => {
                    // a plausible-looking length word somewhere
                    let i = r.below(b.len()) & !3;
                    let word = (r.next() as u32 & 0xff00_0000) | r.below(b.len() + 8) as u32;
                    for (k, x) in word.to_be_bytes().iter().enumerate() {
                        if let Some(slot) = b.get_mut(i + k) {
                            *slot = *x;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn property_roundtrip_random_values() {
        let mut r = Prng(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            let entries: Vec<(String, Value)> = (0..r.below(5))
                .map(|i| (format!("n{i}"), random_value(&mut r, 1)))
                .collect();
            let b = body(&entries);
            assert_eq!(b.len() % 4, 0);
            assert_eq!(decode_table(&b).unwrap(), entries);
        }
    }

    #[test]
    fn property_decode_never_panics() {
        let mut r = Prng(0x0bad_cafe_dead_beef);
        for i in 0..20000 {
            let mut b = if i % 4 == 0 {
                (0..r.below(64)).map(|_| r.next() as u8).collect()
            } else {
                let entries: Vec<(String, Value)> = (0..1 + r.below(3))
                    .map(|i| (format!("n{i}"), random_value(&mut r, 1)))
                    .collect();
                body(&entries)
            };
            mutate(&mut r, &mut b);
            if let Ok(v) = decode_table(&b) {
                let _ = Value::Table(v).to_json();
            }
        }
    }
}
