//! `solowg::openwrt::ubus` against real brokers: the pure-Rust `ubusd` of the ubus-zero project
//! (`cargo install ubusd ubus-client`, found on PATH or through SOLOWG_UBUSD and
//! SOLOWG_UBUS_CLIENT) and, when SOLOWG_UBUSD_C names one, OpenWrt's C ubusd. A small
//! epoll loop provides object `solowgtest`; `ubus-client` calls it, lists it, listens to
//! our events; then the broker is killed and restarted and the object must come back.
//! Without the binaries the tests say so on stderr and pass.

use solowg::openwrt::blobmsg::Value;
use solowg::openwrt::ubus::{ArgType, Event, Method, ObjectSpec, Status, UbusClient};
use solowg::sys::poller::{Interest, Poller};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/find_tool.rs"]
mod find_tool;
use find_tool::find_tool;

#[derive(Clone, Copy)]
enum Flavor {
    /// ubus-zero's ubusd: `--socket=PATH`.
    Rust,
    /// OpenWrt's ubusd: `-s PATH`.
    C,
}

/// A broker process we started; killed (by its PID, through `Child`) when dropped.
struct Broker {
    bin: PathBuf,
    flavor: Flavor,
    sock: PathBuf,
    child: Option<Child>,
}

impl Broker {
    fn start(bin: &Path, flavor: Flavor, sock: &Path) -> Broker {
        let mut b = Broker {
            bin: bin.into(),
            flavor,
            sock: sock.into(),
            child: None,
        };
        b.spawn();
        b
    }

    fn spawn(&mut self) {
        let _ = std::fs::remove_file(&self.sock);
        let mut cmd = Command::new(&self.bin);
        match self.flavor {
            Flavor::Rust => cmd.arg(format!("--socket={}", self.sock.display())),
            Flavor::C => cmd.arg("-s").arg(&self.sock),
        };
        let child = cmd.stderr(Stdio::null()).spawn().expect("start ubusd");
        self.child = Some(child);
        let t0 = Instant::now();
        while !self.sock.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "ubusd made no socket"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Our side: the client in a minimal edge-triggered loop, answering two methods.
struct Provider {
    poller: Poller,
    client: UbusClient,
    registrations: u32,
    calls: u32,
    /// Outcomes of our own calls: method and status.
    done: Vec<(String, u32)>,
}

const TOKEN: u64 = 1;

impl Provider {
    fn new(sock: &Path) -> Provider {
        let spec = ObjectSpec {
            path: "solowgtest".into(),
            methods: vec![
                Method::new("status", &[]),
                Method::new("echo", &[("msg", ArgType::String)]),
            ],
        };
        Provider {
            poller: Poller::new().unwrap(),
            client: UbusClient::new(sock, spec),
            registrations: 0,
            calls: 0,
            done: Vec::new(),
        }
    }

    /// One loop turn, sleeping at most `max`.
    fn turn(&mut self, max: Duration) {
        let now = Instant::now();
        let mut ready = false;
        if self.client.on_timer(now) {
            let fd = self.client.fd().expect("new socket");
            self.poller.add(fd, TOKEN, Interest::ReadWrite).unwrap();
            ready = true;
        }
        let wait = match self.client.next_deadline() {
            _ if ready => Duration::ZERO,
            Some(d) => d.saturating_duration_since(now).min(max),
            None => max,
        };
        self.poller.wait(Some(wait), |_| ready = true).unwrap();
        if ready {
            // Bounded: each pass reads at most a batch; a test broker never floods us.
            for _ in 0..100 {
                if !self.client.on_readable() {
                    break;
                }
            }
            self.client.on_writable();
        }
        while let Some(ev) = self.client.poll_event() {
            match ev {
                Event::Registered { .. } => self.registrations += 1,
                Event::Invoke {
                    method,
                    args,
                    token,
                } => {
                    self.calls += 1;
                    let r = match (method.as_str(), args.get("msg").and_then(Value::as_str)) {
                        ("status", _) => {
                            let data = [
                                ("name".to_string(), Value::str("solowgtest")),
                                (
                                    "registrations".into(),
                                    Value::Int(self.registrations.into()),
                                ),
                                ("up".into(), Value::Bool(true)),
                            ];
                            self.client.reply(token, Status::Ok, Some(&data))
                        }
                        ("echo", Some(msg)) => {
                            let data = [("msg".to_string(), Value::str(msg))];
                            self.client.reply(token, Status::Ok, Some(&data))
                        }
                        _ => self.client.reply(token, Status::InvalidArgument, None),
                    };
                    r.unwrap();
                }
                Event::CallDone { method, status, .. } => self.done.push((method, status)),
            }
        }
    }

    /// Turns until `done` says so, at most `limit`.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Provider) -> bool) {
        let t0 = Instant::now();
        while !done(self) {
            assert!(t0.elapsed() < limit, "not done within {limit:?}");
            self.turn(Duration::from_millis(20));
        }
    }
}

/// Runs `ubus-client` while our loop serves; returns (exit code, stdout).
fn ubus_client(
    p: &mut Provider,
    tool: &Path,
    sock: &Path,
    args: &[&str],
    mut each_turn: impl FnMut(&mut Provider),
) -> (i32, String) {
    let mut child = Command::new(tool)
        .arg("-s")
        .arg(sock)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run ubus-client");
    let mut status = None;
    p.run_until(Duration::from_secs(10), |p| {
        status = child.try_wait().unwrap();
        if status.is_none() {
            each_turn(p);
        }
        status.is_some()
    });
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (status.unwrap().code().unwrap_or(-1), out)
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn scenario(ubusd: &Path, flavor: Flavor, tool: &Path, tag: &str) {
    let dir = std::env::temp_dir().join(format!("solowg-ubus-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ubus.sock");
    let mut broker = Broker::start(ubusd, flavor, &sock);
    let mut p = Provider::new(&sock);
    p.run_until(Duration::from_secs(5), |p| p.registrations == 1);
    assert!(p.client.object_id().is_some());

    // A call with a quote in the argument and uhttpd's extra session argument.
    let echo = r#"{"msg":"a'b","ubus_rpc_session":"x"}"#;
    let (rc, out) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "call", "solowgtest", "echo", echo],
        |_| {},
    );
    assert_eq!(rc, 0, "echo failed: {out}");
    assert_eq!(squash(&out), r#"{"msg":"a'b"}"#);

    let (rc, out) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "call", "solowgtest", "status"],
        |_| {},
    );
    assert_eq!(rc, 0);
    assert_eq!(
        squash(&out),
        r#"{"name":"solowgtest","registrations":1,"up":true}"#
    );

    // Our own calls through the broker (as the daemon's notify_proto to netifd): here of
    // our own object, which the broker hands back to us to answer; and of a missing one.
    let arg = [("msg".to_string(), Value::str("x"))];
    p.client.call("solowgtest", "echo", &arg).unwrap();
    p.run_until(Duration::from_secs(5), |p| !p.done.is_empty());
    assert_eq!(p.done.pop(), Some(("echo".into(), Status::Ok as u32)));
    p.client.call("solowgtest", "echo", &[]).unwrap();
    p.run_until(Duration::from_secs(5), |p| !p.done.is_empty());
    assert_eq!(
        p.done.pop(),
        Some(("echo".into(), Status::InvalidArgument as u32))
    );
    p.client
        .call("network.interface", "notify_proto", &arg)
        .unwrap();
    p.run_until(Duration::from_secs(5), |p| !p.done.is_empty());
    assert_eq!(
        p.done.pop(),
        Some(("notify_proto".into(), Status::NotFound as u32))
    );

    // Missing argument: our INVALID_ARGUMENT (2) is the exit status; unknown method: 3.
    let (rc, _) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "call", "solowgtest", "echo"],
        |_| {},
    );
    assert_eq!(rc, 2);
    let (rc, _) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "call", "solowgtest", "nope"],
        |_| {},
    );
    assert_eq!(rc, 3);

    // The signature as the broker hands it out.
    let (rc, out) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "list", "solowgtest"],
        |_| {},
    );
    assert_eq!(rc, 0);
    let out = squash(&out);
    // ubus-client prints blobmsg type numbers: 3 is STRING.
    assert!(out.contains(r#""path":"solowgtest""#), "{out}");
    assert!(out.contains(r#""echo":{"msg":3}"#), "{out}");
    assert!(out.contains(r#""status":{}"#), "{out}");

    // Events: keep sending until the listener (which may subscribe late) has one.
    let mut last = Instant::now() - Duration::from_secs(1);
    let (rc, out) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "5", "-n", "1", "listen", "solowg.test"],
        |p| {
            if last.elapsed() >= Duration::from_millis(100) {
                last = Instant::now();
                let data = [
                    ("peer".to_string(), Value::str("k=")),
                    ("n".into(), Value::Int(1)),
                ];
                p.client.send_event("solowg.test", &data).unwrap();
            }
        },
    );
    assert_eq!(rc, 0);
    let out = squash(&out);
    assert!(out.contains(r#""event":"solowg.test""#), "{out}");
    // ubus-client sorts keys.
    assert!(out.contains(r#""data":{"n":1,"peer":"k="}"#), "{out}");

    // The broker goes away and comes back: the object is registered again.
    let calls = p.calls;
    broker.kill();
    p.run_until(Duration::from_secs(5), |p| !p.client.is_connected());
    broker.spawn();
    let t0 = Instant::now();
    p.run_until(Duration::from_secs(10), |p| p.registrations == 2);
    eprintln!(
        "{tag}: re-registered {:?} after the broker restarted",
        t0.elapsed()
    );
    let (rc, out) = ubus_client(
        &mut p,
        tool,
        &sock,
        &["-t", "3", "call", "solowgtest", "status"],
        |_| {},
    );
    assert_eq!(rc, 0);
    assert_eq!(
        squash(&out),
        r#"{"name":"solowgtest","registrations":2,"up":true}"#
    );
    assert_eq!(p.calls, calls + 1);

    drop(broker);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tools() -> Option<(PathBuf, PathBuf)> {
    let ubusd = find_tool("SOLOWG_UBUSD", "ubusd");
    let client = find_tool("SOLOWG_UBUS_CLIENT", "ubus-client");
    match (ubusd, client) {
        (Some(d), Some(c)) => Some((d, c)),
        _ => {
            eprintln!(
                "SKIPPED: ubusd/ubus-client not found (cargo install ubusd ubus-client, or set \
                 SOLOWG_UBUSD and SOLOWG_UBUS_CLIENT)"
            );
            None
        }
    }
}

#[test]
fn rust_ubusd() {
    let Some((ubusd, client)) = tools() else {
        return;
    };
    scenario(&ubusd, Flavor::Rust, &client, "rust");
}

#[test]
fn c_ubusd() {
    let Some(ubusd) = std::env::var_os("SOLOWG_UBUSD_C").filter(|p| !p.is_empty()) else {
        eprintln!("SKIPPED: SOLOWG_UBUSD_C (path of OpenWrt's C ubusd) is not set");
        return;
    };
    let client = find_tool("SOLOWG_UBUS_CLIENT", "ubus-client");
    let Some(client) = client else {
        eprintln!("SKIPPED: ubus-client not found");
        return;
    };
    scenario(Path::new(&ubusd), Flavor::C, &client, "c");
}
