//! Tests of the DNS module, one file per submodule, and the message builders they share.

use super::codec::{be16, encode_name, CLASS_IN, TYPE_A};
use super::Resolver;
use crate::crypto::Rng;
use std::net::{IpAddr, SocketAddr};

mod codec;
mod endpoint;
mod resolver;

const S1: &str = "192.0.2.53:53";
const S2: &str = "[2001:db8::53]:53";

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn wire(name: &str) -> Vec<u8> {
    encode_name(name).unwrap()
}

/// A reply header plus the question `qname`/`qtype`; records are appended by `rr`.
fn reply(id: u16, flags: u16, ancount: u16, qname: &[u8], qtype: u16) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&[0, 1]);
    m.extend_from_slice(&ancount.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(qname);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&CLASS_IN.to_be_bytes());
    m
}

const OK: u16 = 0x8180; // QR RD RA, NOERROR

fn rr(m: &mut Vec<u8>, owner: &[u8], rtype: u16, data: &[u8]) {
    m.extend_from_slice(owner);
    m.extend_from_slice(&rtype.to_be_bytes());
    m.extend_from_slice(&CLASS_IN.to_be_bytes());
    m.extend_from_slice(&300u32.to_be_bytes());
    m.extend_from_slice(&(data.len() as u16).to_be_bytes());
    m.extend_from_slice(data);
}

/// Pointer to the question name.
const QPTR: [u8; 2] = [0xc0, 12];

fn resolver(servers: &[&str]) -> Resolver {
    Resolver::new(
        servers.iter().map(|s| sa(s)).collect(),
        Rng::from_seed([7; 32]),
    )
}

/// The (server, id, qtype) of every queued transmission.
fn sent(r: &mut Resolver) -> Vec<(SocketAddr, u16, u16)> {
    let mut out = Vec::new();
    while let Some((to, m)) = r.poll_transmit() {
        let qtype = be16(&m, m.len() - 4).unwrap();
        out.push((to, be16(&m, 0).unwrap(), qtype));
    }
    out
}

fn id_for(tx: &[(SocketAddr, u16, u16)], qtype: u16) -> u16 {
    tx.iter().rev().find(|t| t.2 == qtype).unwrap().1
}

fn a_reply(id: u16, name: &str, addr: [u8; 4]) -> Vec<u8> {
    let mut m = reply(id, OK, 1, &wire(name), TYPE_A);
    rr(&mut m, &QPTR, TYPE_A, &addr);
    m
}
