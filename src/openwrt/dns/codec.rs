//! The DNS message format (RFC 1035): encoding queries and parsing replies to them. Pure:
//! bytes in, bytes or a `Reply` out.

use std::net::IpAddr;

/// CNAME records followed at most within one answer.
const MAX_CNAME_HOPS: usize = 16;
/// Compression pointers followed at most within one name.
const MAX_POINTER_JUMPS: usize = 32;
/// A name in wire form is at most 255 bytes (RFC 1035 3.1).
const MAX_NAME_WIRE: usize = 255;

pub(super) const TYPE_A: u16 = 1;
pub(super) const TYPE_CNAME: u16 = 5;
pub(super) const TYPE_AAAA: u16 = 28;
pub(super) const CLASS_IN: u16 = 1;

pub(super) const RCODE_NOERROR: u8 = 0;
pub(super) const RCODE_NXDOMAIN: u8 = 3;

/// `name` in wire form (length-prefixed labels, lower case, root label included). A trailing
/// dot is allowed.
pub(super) fn encode_name(name: &str) -> Option<Vec<u8>> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(name.len() + 2);
    for label in name.split('.') {
        let len = label.len();
        if len == 0 || len > 63 || !label.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        out.push(len as u8);
        out.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
    }
    out.push(0);
    (out.len() <= MAX_NAME_WIRE).then_some(out)
}

/// A standard query with recursion desired.
pub(super) fn encode_query(id: u16, name: &[u8], qtype: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(12 + name.len() + 4);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00]); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QDCOUNT 1
    q.extend_from_slice(name);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    q
}

pub(super) fn be16(msg: &[u8], pos: usize) -> Option<u16> {
    Some(u16::from_be_bytes(
        msg.get(pos..pos.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// Reads the possibly compressed name at `pos` into `out` (wire form, lower case). Returns
/// the position after the name where it starts, or None if it is malformed. Terminates on
/// any input: labels move forward, each pointer must point before the start of the labels
/// that led to it (so pointers cannot loop), at most MAX_POINTER_JUMPS pointers and
/// MAX_NAME_WIRE bytes.
pub(super) fn read_name(msg: &[u8], start: usize, out: &mut Vec<u8>) -> Option<usize> {
    out.clear();
    let mut pos = start;
    let mut segment_start = start;
    let mut end = None;
    let mut jumps = 0;
    loop {
        let len = *msg.get(pos)? as usize;
        match len & 0xc0 {
            0x00 if len == 0 => {
                out.push(0);
                if out.len() > MAX_NAME_WIRE {
                    return None;
                }
                return Some(end.unwrap_or(pos + 1));
            }
            0x00 => {
                let label = msg.get(pos + 1..pos + 1 + len)?;
                if out.len() + 1 + len + 1 > MAX_NAME_WIRE {
                    return None;
                }
                out.push(len as u8);
                out.extend(label.iter().map(u8::to_ascii_lowercase));
                pos += 1 + len;
            }
            0xc0 => {
                let target = ((len & 0x3f) << 8) | usize::from(*msg.get(pos + 1)?);
                jumps += 1;
                if target >= segment_start || jumps > MAX_POINTER_JUMPS {
                    return None;
                }
                end.get_or_insert(pos + 2);
                segment_start = target;
                pos = target;
            }
            _ => return None, // 0x40 and 0x80 label types are obsolete or unassigned
        }
    }
}

/// What one reply says about the question it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Reply {
    pub(super) id: u16,
    pub(super) rcode: u8,
    pub(super) truncated: bool,
    pub(super) qname: Vec<u8>,
    pub(super) qtype: u16,
    /// Addresses of type `qtype` owned by `qname` or by the end of its CNAME chain.
    pub(super) addrs: Vec<IpAddr>,
}

struct Record<'a> {
    owner: Vec<u8>,
    rtype: u16,
    data: &'a [u8],
    /// For CNAME, the target (decompressed against the whole message).
    cname: Option<Vec<u8>>,
}

/// Parses a reply. None for anything that is not a well-formed reply to a single question
/// (a truncated reply may end early: the records read so far count).
pub(super) fn parse_reply(msg: &[u8]) -> Option<Reply> {
    let id = be16(msg, 0)?;
    let flags = be16(msg, 2)?;
    let qdcount = be16(msg, 4)?;
    let ancount = be16(msg, 6)?;
    let is_response = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xf;
    if !is_response || opcode != 0 || qdcount != 1 {
        return None;
    }
    let truncated = flags & 0x0200 != 0;
    let rcode = (flags & 0xf) as u8;
    let mut qname = Vec::new();
    let mut pos = read_name(msg, 12, &mut qname)?;
    let qtype = be16(msg, pos)?;
    if be16(msg, pos + 2)? != CLASS_IN {
        return None;
    }
    pos += 4;

    // Each record takes at least 11 bytes, so a bogus count ends at the message's end.
    let mut records = Vec::new();
    for _ in 0..ancount {
        match read_record(msg, pos) {
            Some((rec, next)) => {
                records.push(rec);
                pos = next;
            }
            None if truncated => break,
            None => return None,
        }
    }

    let mut target = qname.clone();
    for _ in 0..MAX_CNAME_HOPS {
        let next = records
            .iter()
            .find(|r| r.rtype == TYPE_CNAME && r.owner == target)
            .and_then(|r| r.cname.clone());
        match next {
            Some(n) if n != target => target = n,
            _ => break,
        }
    }
    let addrs = records
        .iter()
        .filter(|r| r.rtype == qtype && r.owner == target)
        .filter_map(|r| match (r.rtype, r.data.len()) {
            (TYPE_A, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(r.data).ok()?)),
            (TYPE_AAAA, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(r.data).ok()?)),
            _ => None,
        })
        .collect();
    Some(Reply {
        id,
        rcode,
        truncated,
        qname,
        qtype,
        addrs,
    })
}

/// One resource record at `pos`; records of other classes come back with type 0.
fn read_record(msg: &[u8], pos: usize) -> Option<(Record<'_>, usize)> {
    let mut owner = Vec::new();
    let pos = read_name(msg, pos, &mut owner)?;
    let rtype = be16(msg, pos)?;
    let class = be16(msg, pos + 2)?;
    let rdlen = usize::from(be16(msg, pos + 8)?);
    let start = pos + 10;
    let data = msg.get(start..start + rdlen)?;
    let rtype = if class == CLASS_IN { rtype } else { 0 };
    let cname = if rtype == TYPE_CNAME {
        let mut n = Vec::new();
        let end = read_name(msg, start, &mut n)?;
        if end != start + rdlen {
            return None;
        }
        Some(n)
    } else {
        None
    };
    let rec = Record {
        owner,
        rtype,
        data,
        cname,
    };
    Some((rec, start + rdlen))
}
