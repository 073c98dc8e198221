//! ubus method arguments and framing: `blobmsg::decode_table` and `UbusConn` on arbitrary
//! bytes.
//!
//! Input: a split seed byte, then a byte stream. The stream is decoded as a blobmsg table
//! (which must re-encode stably when it decodes), and fed, cut at seed-chosen points, to a
//! `UbusConn` carrying the daemon's object, registered first with a valid HELLO / DATA /
//! STATUS exchange. Every Invoke is answered with a reply echoing its arguments; outgoing
//! bytes are drained as a writable socket would. A protocol error resets the connection and
//! registers again, after which a token from before must be refused. Checked: no panic;
//! Invoke events name a declared method and carry only declared arguments of their declared
//! types; the outgoing queue stays proportional to what came in. When the seed's bit 6 is
//! set, the connection also has one call of its own outstanding (netifd's notify_proto, whose
//! LOOKUP is sequence 2, its INVOKE 3 when the lookup answers): a CallDone names that call.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::openwrt::blobmsg::{self, Value};
use solowg::openwrt::ubus::{
    self, ArgType, Event, Method, ObjectSpec, Status, UbusConn, UbusError,
};

const OBJ: u32 = 0x0102_0304;
const MSG_HELLO: u8 = 0;
const MSG_STATUS: u8 = 1;
const MSG_DATA: u8 = 2;
const ATTR_STATUS: u8 = 1;
const ATTR_OBJID: u8 = 3;

fn spec() -> ObjectSpec {
    // The daemon's own object, plus a method taking every argument type.
    let mut spec = solowg::openwrt::control::object_spec();
    spec.methods.push(Method::new(
        "all",
        &[
            ("a", ArgType::Array),
            ("t", ArgType::Table),
            ("i", ArgType::Int32),
            ("l", ArgType::Int64),
            ("h", ArgType::Int16),
            ("b", ArgType::Bool),
            ("d", ArgType::Double),
        ],
    ));
    spec
}

fn blob_u32(out: &mut Vec<u8>, id: u8, v: u32) {
    out.extend_from_slice(&((u32::from(id) << 24) | 8).to_be_bytes());
    out.extend_from_slice(&v.to_be_bytes());
}

fn frame(ty: u8, seq: u16, peer: u32, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    ubus::put_frame(&mut f, ty, seq, peer, body);
    f
}

/// HELLO, then the broker's answer to our ADD_OBJECT (its sequence number read back from the
/// outgoing bytes).
fn register(c: &mut UbusConn) {
    c.on_bytes(&frame(MSG_HELLO, 0, 0x42, &[])).expect("HELLO");
    let out = c.outgoing();
    assert!(out.len() >= 12 && out[1] == 6, "ADD_OBJECT queued");
    let seq = u16::from_be_bytes([out[2], out[3]]);
    let n = out.len();
    c.consume(n);
    let mut d = Vec::new();
    blob_u32(&mut d, ATTR_OBJID, OBJ);
    let mut s = Vec::new();
    blob_u32(&mut s, ATTR_STATUS, 0);
    c.on_bytes(&frame(MSG_DATA, seq, 0, &d)).expect("DATA");
    c.on_bytes(&frame(MSG_STATUS, seq, 0, &s)).expect("STATUS");
    assert_eq!(c.poll_event(), Some(Event::Registered { object_id: OBJ }));
    assert_eq!(c.object_id(), Some(OBJ));
}

fn check_table_roundtrip(data: &[u8]) {
    if let Ok(t) = blobmsg::decode_table(data) {
        let _ = Value::Table(t.clone()).to_json();
        let mut once = Vec::new();
        blobmsg::encode_table(&mut once, &t);
        let again = blobmsg::decode_table(&once).expect("our own encoding decodes");
        let mut twice = Vec::new();
        blobmsg::encode_table(&mut twice, &again);
        assert_eq!(once, twice, "blobmsg encoding not stable");
    }
}

fuzz_target!(|data: &[u8]| {
    solowg::log::set_level(solowg::log::SILENT);
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    check_table_roundtrip(stream);

    let spec = spec();
    let mut c = UbusConn::new(spec.clone());
    register(&mut c);
    let own_call = seed & 0x40 != 0;
    if own_call {
        let args = [("action".to_string(), Value::Int(6))];
        c.call("network.interface", "notify_proto", &args)
            .expect("registered");
    }
    let mut stale = None;
    let mut resets = 0;
    let mut fed = 0usize;
    let mut rng = u32::from(seed) | 0x100;
    let mut at = 0;
    while at < stream.len() {
        // xorshift: chunk sizes 1..=64, or the rest of the input when the seed's top bit is set.
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        let n = if seed & 0x80 != 0 {
            stream.len() - at
        } else {
            1 + (rng % 64) as usize
        };
        let chunk = &stream[at..(at + n).min(stream.len())];
        at += chunk.len();
        fed += chunk.len();
        match c.on_bytes(chunk) {
            Ok(()) => {}
            Err(UbusError::Protocol(_) | UbusError::Rejected(_)) => {
                // The client reconnects: everything pending is dropped, tokens go stale.
                c.reset();
                assert!(c.outgoing().is_empty() && c.poll_event().is_none());
                if let Some(t) = stale.take() {
                    assert_eq!(c.reply(t, Status::Ok, None), Err(UbusError::NotConnected));
                }
                register(&mut c);
                fed = 0;
                resets += 1;
                if resets > 16 {
                    return;
                }
                continue;
            }
            Err(e) => panic!("on_bytes: unexpected {e:?}"),
        }
        while let Some(ev) = c.poll_event() {
            match ev {
                Event::Registered { .. } => panic!("registered twice on one connection"),
                Event::CallDone { path, method, .. } => {
                    assert!(own_call, "an outcome of a call never made");
                    assert_eq!(
                        (path.as_str(), method.as_str()),
                        ("network.interface", "notify_proto")
                    );
                }
                Event::Invoke {
                    method,
                    args,
                    token,
                } => {
                    let m = spec
                        .methods
                        .iter()
                        .find(|m| m.name == method)
                        .expect("Invoke of a declared method");
                    let Value::Table(entries) = &args else {
                        panic!("args not a table");
                    };
                    for (k, v) in entries {
                        let (_, t) = m
                            .args
                            .iter()
                            .find(|(n, _)| n == k)
                            .expect("only declared arguments");
                        assert!(t.accepts(v), "{method}.{k} of the wrong type");
                        assert_eq!(entries.iter().filter(|(n, _)| n == k).count(), 1);
                    }
                    let r = c.reply(token, Status::Ok, Some(entries));
                    assert!(r.is_ok() || r == Err(UbusError::TooLarge), "{r:?}");
                    stale = Some(token);
                }
            }
        }
        // Replies to what came in: a STATUS (and DATA echoing the arguments) per message,
        // plus our own call's LOOKUP and INVOKE.
        let out = c.outgoing().len();
        assert!(
            out <= 4 * fed + 512,
            "{out} bytes queued for {fed} bytes in"
        );
        if rng & 0x300 != 0 {
            c.consume(out);
            fed = 0;
        }
    }
});
