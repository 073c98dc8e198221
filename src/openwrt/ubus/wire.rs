//! The ubus wire format (OpenWrt `ubusmsg.h`): message types, envelope attributes, status
//! codes, the 8-byte header and the framing of one message.

use crate::openwrt::blobmsg::{self, Value};

/// Largest message either side may send (the brokers' `UBUS_MAX_MSGLEN`), blob included.
pub const MAX_MESSAGE: usize = 1 << 20;
pub(super) const HEADER: usize = 8;

// Message types.
pub(super) const MSG_HELLO: u8 = 0;
pub(super) const MSG_STATUS: u8 = 1;
pub(super) const MSG_DATA: u8 = 2;
pub(super) const MSG_PING: u8 = 3;
pub(super) const MSG_LOOKUP: u8 = 4;
pub(super) const MSG_INVOKE: u8 = 5;
pub(super) const MSG_ADD_OBJECT: u8 = 6;

// Envelope attributes.
pub(super) const ATTR_STATUS: u8 = 1;
pub(super) const ATTR_OBJPATH: u8 = 2;
pub(super) const ATTR_OBJID: u8 = 3;
pub(super) const ATTR_METHOD: u8 = 4;
pub(super) const ATTR_SIGNATURE: u8 = 6;
pub(super) const ATTR_DATA: u8 = 7;
pub(super) const ATTR_NO_REPLY: u8 = 10;
pub(super) const ATTR_MAX: usize = 14;

/// The broker's event object: events are INVOKE "send" on it.
pub(super) const EVENT_OBJECT: u32 = 1;

/// ubus status codes (`enum ubus_msg_status`), all of them: the numbering is the protocol's.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    InvalidCommand = 1,
    InvalidArgument = 2,
    MethodNotFound = 3,
    NotFound = 4,
    NoData = 5,
    PermissionDenied = 6,
    Timeout = 7,
    NotSupported = 8,
    UnknownError = 9,
    ConnectionFailed = 10,
    NoMemory = 11,
    ParseError = 12,
    SystemError = 13,
}

/// What the `ubus` CLI prints for a status code, for logs; the number for one outside the
/// protocol's list.
pub fn status_text(status: u32) -> std::borrow::Cow<'static, str> {
    const TEXT: [&str; 14] = [
        "Success",
        "Invalid command",
        "Invalid argument",
        "Method not found",
        "Not found",
        "No response",
        "Permission denied",
        "Request timed out",
        "Operation not supported",
        "Unknown error",
        "Connection failed",
        "Out of memory",
        "Parsing message data failed",
        "System error",
    ];
    match TEXT.get(status as usize) {
        Some(t) => std::borrow::Cow::Borrowed(t),
        None => std::borrow::Cow::Owned(format!("status {status}")),
    }
}

/// Declared type of a method argument (what `ubus -v list` shows), each blobmsg type a
/// policy may name.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    Array,
    Table,
    String,
    Int64,
    Int32,
    Int16,
    Bool,
    Double,
}

impl ArgType {
    pub(super) fn blob_type(self) -> u8 {
        match self {
            ArgType::Array => blobmsg::TYPE_ARRAY,
            ArgType::Table => blobmsg::TYPE_TABLE,
            ArgType::String => blobmsg::TYPE_STRING,
            ArgType::Int64 => blobmsg::TYPE_INT64,
            ArgType::Int32 => blobmsg::TYPE_INT32,
            ArgType::Int16 => blobmsg::TYPE_INT16,
            ArgType::Bool => blobmsg::TYPE_BOOL,
            ArgType::Double => blobmsg::TYPE_DOUBLE,
        }
    }

    /// Whether a decoded argument has this declared type.
    pub fn accepts(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (ArgType::Array, Value::Array(_))
                | (ArgType::Table, Value::Table(_))
                | (ArgType::String, Value::Str(_))
                | (
                    ArgType::Int64 | ArgType::Int32 | ArgType::Int16,
                    Value::Int(_)
                )
                | (ArgType::Bool, Value::Bool(_))
                | (ArgType::Double, Value::Double(_))
        )
    }
}

/// One message header.
#[derive(Clone, Copy, Debug)]
pub(super) struct Header {
    pub(super) ty: u8,
    pub(super) seq: u16,
    pub(super) peer: u32,
}

/// Appends one message: header (version 0, type, sequence, peer) and the outer blob
/// attribute holding `body`. Also what tests and the fuzz target build their input with.
pub fn put_frame(out: &mut Vec<u8>, ty: u8, seq: u16, peer: u32, body: &[u8]) {
    out.extend_from_slice(&[0, ty]);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&peer.to_be_bytes());
    out.extend_from_slice(&((4 + body.len()) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

pub(super) fn u32_of(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(..4)?.try_into().ok()?))
}

pub(super) fn cstr_of(p: &[u8]) -> String {
    String::from_utf8_lossy(&p[..p.iter().position(|&c| c == 0).unwrap_or(p.len())]).into_owned()
}
