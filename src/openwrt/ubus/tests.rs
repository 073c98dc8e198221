//! Tests of the ubus protocol (`UbusConn`) and its wire format.

use super::conn::*;
use super::wire::*;
use crate::openwrt::blobmsg::{self, attrs, Value};
use crate::openwrt::blobmsg::{put_blob, put_blob_str, put_blob_u32};

const ATTR_OBJTYPE: u8 = 5;

fn spec() -> ObjectSpec {
    ObjectSpec {
        path: "t".into(),
        methods: vec![
            Method::new("status", &[]),
            Method::new("echo", &[("msg", ArgType::String), ("n", ArgType::Int32)]),
        ],
    }
}

fn frame(ty: u8, seq: u16, peer: u32, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    put_frame(&mut f, ty, seq, peer, body);
    f
}

type Parsed = (u8, u16, u32, Vec<(u8, Vec<u8>)>);

/// Splits outgoing bytes into messages and their envelope attributes.
fn parse(mut b: &[u8]) -> Vec<Parsed> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let len = u32::from_be_bytes(b[8..12].try_into().unwrap()) as usize;
        let body = &b[12..8 + len];
        let a = attrs(body)
            .map(|a| a.unwrap())
            .map(|a| (a.id, a.payload.to_vec()))
            .collect();
        out.push((
            b[1],
            u16::from_be_bytes([b[2], b[3]]),
            u32::from_be_bytes(b[4..8].try_into().unwrap()),
            a,
        ));
        b = &b[8 + len..];
    }
    out
}

fn attr(m: &Parsed, id: u8) -> &[u8] {
    &m.3.iter().find(|(i, _)| *i == id).expect("attribute").1
}

fn take_out(c: &mut UbusConn) -> Vec<Parsed> {
    let p = parse(c.outgoing());
    let n = c.outgoing().len();
    c.consume(n);
    p
}

const OBJ: u32 = 0x8765_4321;

/// A connection with the object registered under OBJ, outgoing empty.
fn registered() -> UbusConn {
    let mut c = UbusConn::new(spec());
    c.on_bytes(&frame(MSG_HELLO, 0, 0x42, &[])).unwrap();
    let add = take_out(&mut c);
    let seq = add[0].1;
    let mut d = Vec::new();
    put_blob_u32(&mut d, ATTR_OBJID, OBJ);
    put_blob_u32(&mut d, ATTR_OBJTYPE, 0x99);
    let mut s = Vec::new();
    put_blob_u32(&mut s, ATTR_STATUS, 0);
    c.on_bytes(&frame(MSG_DATA, seq, 0, &d)).unwrap();
    c.on_bytes(&frame(MSG_STATUS, seq, 0, &s)).unwrap();
    assert_eq!(c.poll_event(), Some(Event::Registered { object_id: OBJ }));
    c
}

fn invoke(seq: u16, peer: u32, obj: u32, method: &str, args: &[(String, Value)]) -> Vec<u8> {
    let mut b = Vec::new();
    put_blob_u32(&mut b, ATTR_OBJID, obj);
    put_blob_str(&mut b, ATTR_METHOD, method);
    let mut data = Vec::new();
    blobmsg::encode_table(&mut data, args);
    put_blob(&mut b, ATTR_DATA, &data);
    frame(MSG_INVOKE, seq, peer, &b)
}

fn kv(k: &str, v: Value) -> (String, Value) {
    (k.to_string(), v)
}

fn status(seq: u16, st: u32) -> Vec<u8> {
    let mut s = Vec::new();
    put_blob_u32(&mut s, ATTR_STATUS, st);
    frame(MSG_STATUS, seq, 0, &s)
}

#[test]
fn status_texts() {
    assert_eq!(
        status_text(Status::PermissionDenied as u32),
        "Permission denied"
    );
    assert_eq!(status_text(Status::SystemError as u32), "System error");
    assert_eq!(status_text(99), "status 99");
}

/// Our own call (netifd's notify_proto): LOOKUP of the path, INVOKE of the id it gave,
/// and the STATUS of that as the outcome.
#[test]
fn call_looks_up_then_invokes() {
    let mut c = registered();
    let args = [
        kv("action", Value::Int(6)),
        kv("host", Value::str("192.0.2.7")),
    ];
    c.call("network.interface", "notify_proto", &args).unwrap();
    let out = take_out(&mut c);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].2), (MSG_LOOKUP, 0));
    assert_eq!(attr(&out[0], ATTR_OBJPATH), b"network.interface\0");
    let seq = out[0].1;
    let mut d = Vec::new();
    put_blob_str(&mut d, ATTR_OBJPATH, "network.interface");
    put_blob_u32(&mut d, ATTR_OBJID, 0x77);
    c.on_bytes(&frame(MSG_DATA, seq, 0, &d)).unwrap();
    c.on_bytes(&status(seq, 0)).unwrap();
    let out = take_out(&mut c);
    assert_eq!((out[0].0, out[0].2), (MSG_INVOKE, 0x77));
    assert_eq!(attr(&out[0], ATTR_OBJID), 0x77u32.to_be_bytes());
    assert_eq!(attr(&out[0], ATTR_METHOD), b"notify_proto\0");
    let sent = blobmsg::decode_table(attr(&out[0], ATTR_DATA)).unwrap();
    assert_eq!(sent, args.to_vec());
    assert_ne!(out[0].1, seq);
    assert_eq!(c.poll_event(), None);
    // The object's DATA is not ours to use; its STATUS ends the call.
    c.on_bytes(&frame(MSG_DATA, out[0].1, 0x77, &[])).unwrap();
    c.on_bytes(&status(out[0].1, 6)).unwrap();
    assert_eq!(
        c.poll_event(),
        Some(Event::CallDone {
            path: "network.interface".into(),
            method: "notify_proto".into(),
            status: 6
        })
    );
    assert!(take_out(&mut c).is_empty());
}

#[test]
fn call_of_a_missing_object_and_bounds() {
    let mut c = UbusConn::new(spec());
    assert_eq!(c.call("x", "m", &[]), Err(UbusError::NotConnected));
    let mut c = registered();
    c.call("nobody", "m", &[]).unwrap();
    let seq = take_out(&mut c)[0].1;
    // ubusd answers a lookup that found nothing with STATUS alone.
    c.on_bytes(&status(seq, 0)).unwrap();
    let done = c.poll_event();
    assert!(
        matches!(done, Some(Event::CallDone { status, .. }) if status == Status::NotFound as u32),
        "{done:?}"
    );
    // Unanswered calls: the oldest are given up, the list stays bounded.
    for _ in 0..MAX_CALLS + 5 {
        c.call("slow", "m", &[]).unwrap();
    }
    assert_eq!(c.calls.len(), MAX_CALLS);
    c.reset();
    assert!(c.calls.is_empty());
}

#[test]
fn hello_sends_add_object_bytes() {
    let mut c = UbusConn::new(ObjectSpec {
        path: "t".into(),
        methods: vec![Method::new("m", &[("a", ArgType::String)])],
    });
    // HELLO from the broker, peer id 5, empty blob.
    c.on_bytes(&[0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 4]).unwrap();
    #[rustfmt::skip]
    let want = [
        0, 6, 0, 1, 0, 0, 0, 0,             // v0 ADD_OBJECT seq 1 peer 0
        0, 0, 0, 36,                        // outer blob, id 0
        2, 0, 0, 6, b't', 0, 0, 0,          // OBJPATH "t"
        6, 0, 0, 24,                        // SIGNATURE
        0x82, 0, 0, 20, 0, 1, b'm', 0,      //   table "m"
        0x85, 0, 0, 12, 0, 1, b'a', 0, 0, 0, 0, 3, // INT32 a = STRING
    ];
    assert_eq!(c.outgoing(), want);
    assert_eq!(c.object_id(), None);
}

#[test]
fn registration_survives_byte_at_a_time_input() {
    let mut c = UbusConn::new(spec());
    let mut input = frame(MSG_HELLO, 0, 0x42, &[]);
    c.on_bytes(&input).unwrap();
    let seq = take_out(&mut c)[0].1;
    input.clear();
    let mut d = Vec::new();
    put_blob_u32(&mut d, ATTR_OBJID, OBJ);
    input.extend(frame(MSG_DATA, seq, 0, &d));
    let mut s = Vec::new();
    put_blob_u32(&mut s, ATTR_STATUS, 0);
    input.extend(frame(MSG_STATUS, seq, 0, &s));
    for b in &input {
        assert_eq!(c.object_id(), None);
        c.on_bytes(std::slice::from_ref(b)).unwrap();
    }
    assert_eq!(c.object_id(), Some(OBJ));
    assert_eq!(c.poll_event(), Some(Event::Registered { object_id: OBJ }));
    assert!(c.outgoing().is_empty());
}

#[test]
fn rejected_registration_is_an_error() {
    let mut c = UbusConn::new(spec());
    c.on_bytes(&frame(MSG_HELLO, 0, 1, &[])).unwrap();
    let seq = take_out(&mut c)[0].1;
    let mut s = Vec::new();
    put_blob_u32(&mut s, ATTR_STATUS, Status::InvalidArgument as u32);
    assert_eq!(
        c.on_bytes(&frame(MSG_STATUS, seq, 0, &s)),
        Err(UbusError::Rejected(2))
    );
}

#[test]
fn invoke_filters_arguments_and_reply_frames() {
    let mut c = registered();
    let args = [
        kv("ubus_rpc_session", Value::str("x")),
        kv("msg", Value::str("a'b")),
        kv("n", Value::Int(7)),
    ];
    c.on_bytes(&invoke(77, 0xabc, OBJ, "echo", &args)).unwrap();
    let Some(Event::Invoke {
        method,
        args,
        token,
    }) = c.poll_event()
    else {
        panic!("no invoke")
    };
    assert_eq!(method, "echo");
    assert_eq!(args.to_json(), r#"{"msg":"a'b","n":7}"#);
    assert!(c.outgoing().is_empty(), "nothing is sent before the reply");
    c.reply(token, Status::Ok, Some(&[kv("msg", Value::str("a'b"))]))
        .unwrap();
    let out = take_out(&mut c);
    assert_eq!(out.len(), 2);
    let (data, status) = (&out[0], &out[1]);
    assert_eq!((data.0, data.1, data.2), (MSG_DATA, 77, 0xabc));
    assert_eq!(u32_of(attr(data, ATTR_OBJID)), Some(OBJ));
    let table = blobmsg::decode_table(attr(data, ATTR_DATA)).unwrap();
    assert_eq!(table, [kv("msg", Value::str("a'b"))]);
    assert_eq!((status.0, status.1, status.2), (MSG_STATUS, 77, 0xabc));
    assert_eq!(u32_of(attr(status, ATTR_STATUS)), Some(0));
    assert_eq!(u32_of(attr(status, ATTR_OBJID)), Some(OBJ));
}

#[test]
fn invoke_without_data_has_empty_args() {
    let mut c = registered();
    let mut b = Vec::new();
    put_blob_u32(&mut b, ATTR_OBJID, OBJ);
    put_blob_str(&mut b, ATTR_METHOD, "status");
    c.on_bytes(&frame(MSG_INVOKE, 3, 9, &b)).unwrap();
    let Some(Event::Invoke { args, token, .. }) = c.poll_event() else {
        panic!("no invoke")
    };
    assert_eq!(args, Value::Table(vec![]));
    c.reply(token, Status::NoData, None).unwrap();
    let out = take_out(&mut c);
    assert_eq!(out.len(), 1, "no DATA without data");
    assert_eq!(
        u32_of(attr(&out[0], ATTR_STATUS)),
        Some(Status::NoData as u32)
    );
}

fn only_status(c: &mut UbusConn) -> u32 {
    assert_eq!(c.poll_event(), None);
    let out = take_out(c);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, MSG_STATUS);
    u32_of(attr(&out[0], ATTR_STATUS)).unwrap()
}

#[test]
fn unknown_method_wrong_type_wrong_object() {
    let mut c = registered();
    c.on_bytes(&invoke(1, 2, OBJ, "nope", &[])).unwrap();
    assert_eq!(only_status(&mut c), Status::MethodNotFound as u32);
    c.on_bytes(&invoke(1, 2, OBJ, "echo", &[kv("msg", Value::Int(1))]))
        .unwrap();
    assert_eq!(only_status(&mut c), Status::InvalidArgument as u32);
    c.on_bytes(&invoke(1, 2, OBJ + 1, "echo", &[])).unwrap();
    assert_eq!(only_status(&mut c), Status::NotFound as u32);
    // Broken argument blobs inside an intact frame: answered, stream continues.
    let mut b = Vec::new();
    put_blob_u32(&mut b, ATTR_OBJID, OBJ);
    put_blob_str(&mut b, ATTR_METHOD, "echo");
    put_blob(&mut b, ATTR_DATA, &[0x83, 0, 0, 99]);
    c.on_bytes(&frame(MSG_INVOKE, 4, 2, &b)).unwrap();
    assert_eq!(only_status(&mut c), Status::InvalidArgument as u32);
}

#[test]
fn stray_status_and_ping_are_ignored() {
    let mut c = registered();
    let mut s = Vec::new();
    put_blob_u32(&mut s, ATTR_STATUS, 0);
    c.on_bytes(&frame(MSG_STATUS, 999, 0, &s)).unwrap();
    c.on_bytes(&frame(MSG_PING, 5, 0, &[])).unwrap();
    c.on_bytes(&frame(MSG_HELLO, 0, 0, &[])).unwrap();
    assert_eq!(c.poll_event(), None);
    assert!(c.outgoing().is_empty());
    assert_eq!(c.object_id(), Some(OBJ));
}

#[test]
fn no_reply_invoke_gets_no_answer() {
    let mut c = registered();
    let mut b = Vec::new();
    put_blob_u32(&mut b, ATTR_OBJID, OBJ);
    put_blob_str(&mut b, ATTR_METHOD, "status");
    put_blob(&mut b, ATTR_NO_REPLY, &[1]);
    c.on_bytes(&frame(MSG_INVOKE, 3, 9, &b)).unwrap();
    let Some(Event::Invoke { token, .. }) = c.poll_event() else {
        panic!("no invoke")
    };
    c.reply(token, Status::Ok, Some(&[])).unwrap();
    assert!(c.outgoing().is_empty());
}

#[test]
fn framing_errors() {
    let mut c = UbusConn::new(spec());
    let mut big = frame(MSG_DATA, 1, 0, &[]);
    big[8..12].copy_from_slice(&((MAX_MESSAGE + 1) as u32).to_be_bytes());
    assert!(matches!(c.on_bytes(&big), Err(UbusError::Protocol(_))));
    let mut c = UbusConn::new(spec());
    let mut v1 = frame(MSG_HELLO, 0, 0, &[]);
    v1[0] = 1;
    assert!(c.on_bytes(&v1).is_err());
    let mut c = UbusConn::new(spec());
    assert!(c.on_bytes(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]).is_err());
    // A frame of exactly 1 MiB is fine (and waits for its bytes).
    let mut c = UbusConn::new(spec());
    let mut ok = frame(MSG_DATA, 1, 0, &[]);
    ok[8..12].copy_from_slice(&(MAX_MESSAGE as u32).to_be_bytes());
    assert!(c.on_bytes(&ok).is_ok());
}

#[test]
fn tokens_die_with_the_connection() {
    let mut c = registered();
    c.on_bytes(&invoke(1, 2, OBJ, "status", &[])).unwrap();
    let Some(Event::Invoke { token, .. }) = c.poll_event() else {
        panic!("no invoke")
    };
    c.reset();
    assert_eq!(
        c.reply(token, Status::Ok, None),
        Err(UbusError::NotConnected)
    );
    assert!(c.outgoing().is_empty());
    assert_eq!(c.object_id(), None);
    // and the next HELLO registers again
    c.on_bytes(&frame(MSG_HELLO, 0, 3, &[])).unwrap();
    assert_eq!(take_out(&mut c)[0].0, MSG_ADD_OBJECT);
}

#[test]
fn event_frame() {
    let mut c = UbusConn::new(spec());
    assert_eq!(c.send_event("x", &[]), Err(UbusError::NotConnected));
    let mut c = registered();
    c.send_event("solowg.peer", &[kv("up", Value::Bool(true))])
        .unwrap();
    let out = take_out(&mut c);
    assert_eq!((out[0].0, out[0].2), (MSG_INVOKE, EVENT_OBJECT));
    assert_eq!(u32_of(attr(&out[0], ATTR_OBJID)), Some(EVENT_OBJECT));
    assert_eq!(attr(&out[0], ATTR_METHOD), b"send\0");
    let d = Value::Table(blobmsg::decode_table(attr(&out[0], ATTR_DATA)).unwrap());
    assert_eq!(d.to_json(), r#"{"id":"solowg.peer","data":{"up":true}}"#);
}

#[test]
fn oversized_reply_becomes_an_error_status() {
    let mut c = registered();
    c.on_bytes(&invoke(1, 2, OBJ, "status", &[])).unwrap();
    let Some(Event::Invoke { token, .. }) = c.poll_event() else {
        panic!("no invoke")
    };
    let big = [kv("blob", Value::Str("x".repeat(MAX_MESSAGE)))];
    assert_eq!(
        c.reply(token, Status::Ok, Some(&big)),
        Err(UbusError::TooLarge)
    );
    assert_eq!(only_status(&mut c), Status::UnknownError as u32);
    assert_eq!(c.send_event("e", &big), Err(UbusError::TooLarge));
    assert!(c.outgoing().is_empty());
}

#[test]
fn property_random_streams_never_panic() {
    use crate::openwrt::blobmsg::tests::{mutate, Prng};
    let mut r = Prng(0x005e_ed0f_0b1e_55ed);
    for i in 0..5000 {
        let mut c = if i % 2 == 0 {
            registered()
        } else {
            UbusConn::new(spec())
        };
        let mut stream = Vec::new();
        for _ in 0..1 + r.below(4) {
            let mut f = match r.below(4) {
                0 => frame(MSG_HELLO, 0, 1, &[]),
                1 => invoke(
                    r.next() as u16,
                    2,
                    OBJ,
                    "echo",
                    &[kv("msg", Value::str("m")), kv("n", Value::Int(1))],
                ),
                2 => (0..r.below(40)).map(|_| r.next() as u8).collect(),
                _ => {
                    let mut s = Vec::new();
                    put_blob_u32(&mut s, ATTR_STATUS, r.next() as u32);
                    put_blob_u32(&mut s, ATTR_OBJID, r.next() as u32);
                    frame((r.below(12)) as u8, r.next() as u16, 0, &s)
                }
            };
            mutate(&mut r, &mut f);
            stream.extend(f);
        }
        let mut at = 0;
        while at < stream.len() {
            let n = 1 + r.below(stream.len() - at);
            if c.on_bytes(&stream[at..at + n]).is_err() {
                break;
            }
            at += n;
        }
        while let Some(ev) = c.poll_event() {
            if let Event::Invoke { token, .. } = ev {
                let _ = c.reply(token, Status::Ok, Some(&[kv("a", Value::Int(1))]));
            }
        }
        let _ = parse(c.outgoing());
    }
}
