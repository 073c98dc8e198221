//! System tests of the `solowg` binary itself: command line, the UAPI socket, transactional
//! `set`, control-plane robustness and shutdown.
//!
//! Every daemon runs inside a network namespace created by the test (`ip netns exec`), so
//! nothing touches the host's network. /var/run/wireguard is shared by all namespaces, hence
//! interface names are unique per test (pid + counter). These tests need root; without it
//! each one prints "skipped: needs root" and passes.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_solowg");
const SOCK_DIR: &str = "/var/run/wireguard";
/// Generous bound for start-up, helper commands and single requests on a loaded CI machine.
const STEP: Duration = Duration::from_secs(5);
/// The latency the daemon promises for interactive requests and for shutting down.
const FAST: Duration = Duration::from_secs(1);
/// Already clamped like `wg genkey` output, so the daemon reports it back byte for byte.
const PRIVATE: &str = "0811111111111111111111111111111111111111111111111111111111111141";
const PEER: &str = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";
/// Below the kernel's ephemeral range, so it cannot collide with a daemon's random port.
const FIXED_PORT: u16 = 21820;
/// Mirrors `uapi::MAX_REQUEST_BYTES`.
const MAX_REQUEST_BYTES: usize = 4 << 20;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// `prefix` + pid + counter: unique across parallel tests and concurrent test processes.
fn unique(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{}x{n}", std::process::id())
}

/// Effective uid from /proc: `libc::geteuid` would need `unsafe`, which the crate denies.
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(str::to_owned));
    euid.as_deref() == Some("0")
}

/// True (after saying so) when the test cannot run here.
fn skip() -> bool {
    if is_root() {
        return false;
    }
    println!("skipped: needs root (network namespaces and TUN devices)");
    true
}

/// Polls `child` until it exits or `limit` passes.
fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        sleep(Duration::from_millis(5));
    }
}

/// Runs a short-lived command with a time limit. Its output is read only after it exits,
/// which is fine for the few lines `ip`, `kill` and `solowg --help` print (well under the
/// pipe's capacity).
fn run(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let Some(status) = wait_within(&mut child, STEP) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{shown} did not finish within {STEP:?}");
    };
    // Already exited: this only collects what is left in the pipes.
    let mut out = child.wait_with_output().expect("collect output");
    out.status = status;
    out
}

fn ip(args: &[&str]) -> Output {
    run(Command::new("ip").args(args))
}

/// A network namespace that is deleted on drop (taking any leftover interfaces with it).
struct Netns {
    name: String,
}

impl Netns {
    /// Shared so that every daemon inside keeps it alive until that daemon is stopped.
    fn new() -> Rc<Netns> {
        let name = unique("solowg-t");
        let out = ip(&["netns", "add", &name]);
        assert!(out.status.success(), "ip netns add {name}: {out:?}");
        Rc::new(Netns { name })
    }

    /// `ip -n <ns> link show dev <ifname>`, or None if there is no such link.
    fn link(&self, ifname: &str) -> Option<String> {
        let out = ip(&["-d", "-n", &self.name, "-o", "link", "show", "dev", ifname]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A `solowg -f` process in a namespace; killed (if still running) on drop.
struct Daemon {
    /// `ip netns exec` execs the daemon, so this is the daemon process itself.
    child: Child,
    ifname: String,
    log: PathBuf,
    ns: Rc<Netns>,
}

impl Daemon {
    /// Starts a daemon and waits until its UAPI socket accepts connections.
    fn start(ns: &Rc<Netns>) -> Daemon {
        Daemon::start_with(ns, &[])
    }

    /// `start` with these variables added to the daemon's environment.
    fn start_with(ns: &Rc<Netns>, env: &[(&str, &str)]) -> Daemon {
        let ifname = unique("swg");
        let log = std::env::temp_dir().join(format!("solowg-test-{ifname}.log"));
        let log_file = File::create(&log).expect("create daemon log");
        let child = Command::new("ip")
            .args(["netns", "exec", &ns.name, BIN, "-f", &ifname])
            .env_remove("WG_PROCESS_FOREGROUND")
            .env("LOG_LEVEL", "verbose")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn solowg");
        let mut d = Daemon {
            child,
            ifname,
            log,
            ns: Rc::clone(ns),
        };
        let deadline = Instant::now() + STEP;
        while UnixStream::connect(d.sock()).is_err() {
            if let Some(status) = d.child.try_wait().expect("try_wait") {
                panic!("daemon exited during start-up ({status}): {}", d.log_text());
            }
            assert!(Instant::now() < deadline, "UAPI socket not ready in time");
            sleep(Duration::from_millis(10));
        }
        // The socket is bound before the daemon gives up its privileges; the filter comes
        // last, and every outcome of it is logged ("system-call filter on", "no
        // system-call filter", "cannot install the system-call filter").
        let filter_done = |log: &str| {
            [
                "system-call filter on",
                "no system-call filter",
                "cannot install the system-call",
            ]
            .iter()
            .any(|m| log.contains(m))
        };
        while !filter_done(&d.log_text()) {
            assert!(
                Instant::now() < deadline,
                "setup not finished: {}",
                d.log_text()
            );
            sleep(Duration::from_millis(10));
        }
        d
    }

    fn sock(&self) -> PathBuf {
        PathBuf::from(SOCK_DIR).join(format!("{}.sock", self.ifname))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn assert_running(&mut self) {
        let status = self.child.try_wait().expect("try_wait");
        assert!(status.is_none(), "daemon died: {status:?}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // A SIGKILLed daemon leaves its socket behind in the shared directory; it is ours.
        let _ = std::fs::remove_file(self.sock());
        if std::thread::panicking() {
            eprintln!("--- daemon {} log ---\n{}", self.ifname, self.log_text());
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// One fresh namespace with one daemon in it.
fn daemon() -> Daemon {
    Daemon::start(&Netns::new())
}

// ---- UAPI client -----------------------------------------------------------------------

fn connect(d: &Daemon) -> UnixStream {
    let s = UnixStream::connect(d.sock()).expect("connect to UAPI socket");
    s.set_read_timeout(Some(STEP)).unwrap();
    s.set_write_timeout(Some(STEP)).unwrap();
    s
}

/// Reads until `n` complete replies have arrived (each ends with the only blank line).
fn read_replies(s: &mut UnixStream, n: usize, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.windows(2).filter(|w| w == b"\n\n").count() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no complete reply in time: {buf:?}");
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut chunk) {
            Ok(0) => panic!(
                "connection closed after {:?}",
                String::from_utf8_lossy(&buf)
            ),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) => panic!(
                "read failed ({e}) after {:?}",
                String::from_utf8_lossy(&buf)
            ),
        }
    }
    String::from_utf8(buf).expect("reply is UTF-8")
}

fn request(d: &Daemon, req: &str) -> String {
    let mut s = connect(d);
    s.write_all(req.as_bytes()).expect("send request");
    read_replies(&mut s, 1, STEP)
}

fn get(d: &Daemon) -> String {
    let reply = request(d, "get=1\n\n");
    assert!(reply.ends_with("\nerrno=0\n\n"), "bad get reply {reply:?}");
    reply
}

/// Sends `set=1` with `body` (complete lines) and returns the errno of the reply.
fn set(d: &Daemon, body: &str) -> i32 {
    errno(&request(d, &format!("set=1\n{body}\n")))
}

fn errno(reply: &str) -> i32 {
    reply
        .strip_suffix("\n\n")
        .and_then(|r| r.lines().last())
        .and_then(|l| l.strip_prefix("errno="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no errno in {reply:?}"))
}

/// `wg` from wireguard-tools, if installed (CI installs it); else None, after saying so.
fn wg_tool() -> Option<String> {
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
        let p = format!("{dir}/wg");
        if std::path::Path::new(&p).exists() {
            return Some(p);
        }
    }
    println!("skipped: the `wg` part needs wireguard-tools");
    None
}

fn value<'a>(reply: &'a str, key: &str) -> Option<&'a str> {
    reply
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

/// A get reply without the lines that change by themselves over time.
fn without_counters(reply: &str) -> String {
    reply
        .lines()
        .filter(|l| {
            !["tx_bytes=", "rx_bytes=", "last_handshake_time_"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A full configuration: key, fixed port and one peer.
fn full_config() -> String {
    format!(
        "private_key={PRIVATE}\nlisten_port={FIXED_PORT}\npublic_key={PEER}\n\
         allowed_ip=10.9.0.0/24\nendpoint=192.0.2.7:51820\n"
    )
}

fn timed_get(d: &Daemon) -> Duration {
    let t = Instant::now();
    let mut s = connect(d);
    s.write_all(b"get=1\n\n").unwrap();
    let reply = read_replies(&mut s, 1, FAST);
    assert!(reply.ends_with("errno=0\n\n"), "{reply:?}");
    t.elapsed()
}

// ---- tests -----------------------------------------------------------------------------

#[test]
fn command_line_errors_and_info_options() {
    if skip() {
        return;
    }
    // Inside a namespace all the same: a parsing bug must not create a TUN on the host.
    let ns = Netns::new();
    let name = unique("swg");
    let other = unique("swg");
    let solowg = |args: &[&str]| {
        run(Command::new("ip")
            .args(["netns", "exec", &ns.name, BIN])
            .args(args)
            .env_remove("WG_PROCESS_FOREGROUND"))
    };
    let bad: [(&[&str], String); 4] = [
        (&["--bogus", &name], "unknown option '--bogus'".into()),
        (&[], "missing interface name".into()),
        (&["-f"], "missing interface name".into()),
        (
            &["-f", &name, &other],
            format!("unexpected argument '{other}'"),
        ),
    ];
    for (args, message) in bad {
        let out = solowg(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        // wg's and wireguard-go's status for words they do not take.
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(&message), "{args:?}: stderr {stderr:?}");
        assert!(
            stderr.contains("Usage:"),
            "{args:?}: no usage in {stderr:?}"
        );
    }
    for (arg, expect) in [
        ("--version", "solowg v"),
        ("--help", "Usage: solowg"),
        // Not a daemon on an interface named "help".
        ("help", "Usage: solowg"),
    ] {
        let out = solowg(&[arg]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{arg}: {out:?}");
        assert!(stdout.contains(expect), "{arg}: stdout {stdout:?}");
    }
    assert!(ns.link(&name).is_none() && ns.link(&other).is_none());
    assert!(ns.link("help").is_none());

    // A name taken by another kind of interface: said in words, not as an errno.
    let taken = unique("swg");
    let taken_peer = format!("{taken}p");
    let out = ip(&[
        "-n",
        &ns.name,
        "link",
        "add",
        &taken,
        "type",
        "veth",
        "peer",
        "name",
        &taken_peer,
    ]);
    assert!(out.status.success(), "ip link add veth: {out:?}");
    let out = solowg(&["-f", &taken]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot create TUN {taken}: an interface of that name exists"
        )),
        "{stderr}"
    );
    // A TUN another daemon holds.
    let first = Daemon::start(&ns);
    let out = solowg(&["-f", &first.ifname]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is in use by another process"), "{stderr}");
}

/// `solowg genkey | solowg pubkey` and `genpsk`, as wg's: base64 keys, the private key on
/// standard input; bad input is refused with wg's message and status 1.
#[test]
fn key_commands_follow_wg() {
    let cmd = |args: &[&str], input: &str| {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn solowg");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let Some(status) = wait_within(&mut child, STEP) else {
            let _ = child.kill();
            panic!("solowg {args:?} did not finish");
        };
        let mut out = child.wait_with_output().unwrap();
        out.status = status;
        out
    };
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).trim_end().to_string();
    let is_key = |k: &str| k.len() == 44 && k.ends_with('=');
    let a = cmd(&["genkey"], "");
    let b = cmd(&["genkey"], "");
    assert!(a.status.success() && is_key(&text(&a)), "{a:?}");
    assert_ne!(text(&a), text(&b), "two genkeys gave one key");
    let psk = cmd(&["genpsk"], "");
    assert!(psk.status.success() && is_key(&text(&psk)), "{psk:?}");
    // RFC 7748 section 6.1's Alice, in base64.
    let public = cmd(
        &["pubkey"],
        "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n",
    );
    assert_eq!(
        text(&public),
        "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
    );
    let from_genkey = cmd(&["pubkey"], &text(&a));
    assert!(from_genkey.status.success() && is_key(&text(&from_genkey)));
    let bad = cmd(&["pubkey"], "not a key\n");
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Key is not the correct length or format")
    );
    let extra = cmd(&["genkey", "wg0"], "");
    assert_eq!(extra.status.code(), Some(1));
}

/// `solowg show` in `wg show`'s forms against a running daemon.
#[test]
fn show_takes_wg_show_forms() {
    if skip() {
        return;
    }
    let d = daemon();
    assert_eq!(set(&d, &full_config()), 0);
    let show = |args: &[&str]| {
        run(Command::new("ip")
            .args(["netns", "exec", &d.ns.name, BIN, "show"])
            .args(args))
    };
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let port = show(&[&d.ifname, "listen-port"]);
    assert!(port.status.success(), "{port:?}");
    assert_eq!(text(&port), format!("{FIXED_PORT}\n"));
    let dump = show(&[&d.ifname, "dump"]);
    let lines: Vec<String> = text(&dump).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0].split('\t').count(), 4, "{}", lines[0]);
    assert!(
        lines[0].ends_with(&format!("\t{FIXED_PORT}\toff")),
        "{}",
        lines[0]
    );
    let peer: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(peer.len(), 8, "{peer:?}");
    assert_eq!(peer[2], "192.0.2.7:51820");
    assert_eq!(peer[3], "10.9.0.0/24");
    // `all` puts the interface's name first (only ours lives in this namespace's view of
    // the socket directory, which is shared: filter on it).
    let all = show(&["all", "endpoints"]);
    assert!(
        text(&all)
            .lines()
            .any(|l| l.starts_with(&format!("{}\t", d.ifname)) && l.ends_with("\t192.0.2.7:51820")),
        "{}",
        text(&all)
    );
    // A dangling link (a --user daemon's interface that is down) is not an interface, as
    // for wg; neither is a file.
    let dangling = PathBuf::from(SOCK_DIR).join(format!("{}.sock", unique("swgdl")));
    std::os::unix::fs::symlink("/nonexistent/x.sock", &dangling).unwrap();
    let listed = show(&["interfaces"]);
    let _ = std::fs::remove_file(&dangling);
    let listed = text(&listed);
    let name = dangling.file_stem().unwrap().to_string_lossy().into_owned();
    assert!(listed.contains(&d.ifname), "{listed}");
    assert!(!listed.contains(&name), "{listed}");
    let summary = show(&[&d.ifname]);
    assert!(text(&summary).contains("private key: (hidden)"));
    assert!(text(&summary).contains("allowed ips: 10.9.0.0/24\n"));
    let bad = show(&[&d.ifname, "bogus"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid parameter 'bogus'"));
    let gone = show(&["swg-none-such", "dump"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("Unable to access interface swg-none-such")
    );
}

#[test]
fn fresh_daemon_state_socket_and_tun() {
    if skip() {
        return;
    }
    let d = daemon();
    let reply = get(&d);
    let port: u16 = value(&reply, "listen_port")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no listen_port in {reply:?}"));
    assert_ne!(port, 0);
    // Nothing else: no key, no fwmark, no peers.
    assert_eq!(reply, format!("listen_port={port}\nerrno=0\n\n"));

    let meta = std::fs::metadata(d.sock()).expect("socket file");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);

    let link = d.ns.link(&d.ifname).expect("TUN link in the namespace");
    assert!(link.contains(" mtu 1420 "), "{link}");
    assert!(link.contains("tun type tun"), "not a TUN: {link}");
}

/// Once up, the daemon holds CAP_NET_ADMIN and CAP_NET_BIND_SERVICE only (and CAP_NET_RAW
/// with the packet path on), in its bounding set too, with no_new_privs; and still works: a
/// fwmark (CAP_NET_ADMIN) and a new port are applied.
#[test]
fn capabilities_are_dropped_after_setup() {
    if skip() {
        return;
    }
    let field = |status: &str, name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let d = daemon();
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    let kept = format!("{:016x}", (1u64 << 12) | (1 << 10));
    for name in ["CapEff:", "CapPrm:", "CapBnd:"] {
        assert_eq!(field(&status, name), kept, "{name} in {status}");
    }
    assert_eq!(field(&status, "CapInh:"), "0000000000000000");
    assert_eq!(field(&status, "NoNewPrivs:"), "1");
    assert_eq!(set(&d, &format!("fwmark=51\n{}", full_config())), 0);
    assert_eq!(value(&get(&d), "fwmark"), Some("51"));
    assert!(
        d.log_text().contains("capabilities kept"),
        "{}",
        d.log_text()
    );
}

#[test]
fn set_is_all_or_nothing() {
    if skip() {
        return;
    }
    let d = daemon();
    let before = get(&d);
    let bad = format!("{}allowed_ip=10.0.0.0/33\n", full_config());
    assert_eq!(set(&d, &bad), -22);
    assert_eq!(get(&d), before, "a refused set changed the device");

    assert_eq!(set(&d, &full_config()), 0);
    let after = get(&d);
    assert_eq!(value(&after, "private_key"), Some(PRIVATE));
    assert_eq!(value(&after, "listen_port"), Some("21820"));
    assert_eq!(value(&after, "public_key"), Some(PEER));
    assert_eq!(value(&after, "allowed_ip"), Some("10.9.0.0/24"));
    assert_eq!(value(&after, "endpoint"), Some("192.0.2.7:51820"));
}

#[test]
fn port_in_use_is_refused_unapplied() {
    if skip() {
        return;
    }
    let ns = Netns::new();
    let d = Daemon::start(&ns);
    // A second daemon in the same namespace holds a port we know to be taken there.
    let holder = Daemon::start(&ns);
    let taken = value(&get(&holder), "listen_port").unwrap().to_owned();
    let before = get(&d);
    assert_ne!(value(&before, "listen_port"), Some(taken.as_str()));

    let req = format!("private_key={PRIVATE}\nlisten_port={taken}\n");
    assert_eq!(
        set(&d, &req),
        -98,
        "expected EADDRINUSE, negated as wireguard-go sends it"
    );
    assert_eq!(get(&d), before, "a refused set changed the device");
    assert_eq!(value(&get(&holder), "listen_port"), Some(taken.as_str()));

    // What an operator sees: wg negates the value back and prints strerror's words.
    if let Some(wg) = wg_tool() {
        let out = run(Command::new("ip").args([
            "netns",
            "exec",
            &ns.name,
            &wg,
            "set",
            &d.ifname,
            "listen-port",
            &taken,
        ]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{out:?}");
        assert!(stderr.contains("Address already in use"), "{stderr}");
        assert_eq!(get(&d), before, "a refused set changed the device");
    }
}

/// One reply per request: a `set` and a `get` sent together get `errno=0` and then the
/// `get`'s reply.
#[test]
fn a_set_gets_one_reply() {
    if skip() {
        return;
    }
    let d = daemon();
    let mut s = connect(&d);
    s.write_all(b"set=1\nfwmark=3\n\nget=1\n\n").unwrap();
    let replies = read_replies(&mut s, 2, STEP);
    let (first, second) = replies.split_once("\n\n").unwrap();
    assert_eq!(first, "errno=0");
    // Not a second errno=0 for the set: the get's own reply.
    assert!(second.starts_with("listen_port="), "{replies:?}");
    assert!(second.contains("fwmark=3\n"), "{replies:?}");
}

#[test]
fn repeating_a_set_changes_nothing() {
    if skip() {
        return;
    }
    let d = daemon();
    assert_eq!(set(&d, &full_config()), 0);
    let before = without_counters(&get(&d));
    let same_key_and_port = format!("private_key={PRIVATE}\nlisten_port={FIXED_PORT}\n");
    assert_eq!(set(&d, &same_key_and_port), 0);
    assert_eq!(without_counters(&get(&d)), before);
    assert_eq!(set(&d, &full_config()), 0);
    assert_eq!(without_counters(&get(&d)), before);
}

#[test]
fn pipelined_requests_and_empty_connections() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let single = get(&d);
    let mut s = connect(&d);
    s.write_all(b"get=1\n\nget=1\n\n").unwrap();
    let both = read_replies(&mut s, 2, STEP);
    assert_eq!(both, format!("{single}{single}"));
    // The connection stays usable after pipelined requests.
    s.write_all(b"get=1\n\n").unwrap();
    assert_eq!(read_replies(&mut s, 1, STEP), single);
    drop(s);

    for _ in 0..20 {
        drop(connect(&d));
    }
    // A client that half-closes without a request just gets EOF back.
    let mut s = connect(&d);
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).expect("EOF, not a timeout");
    assert!(rest.is_empty(), "unexpected reply {rest:?}");
    d.assert_running();
    assert_eq!(get(&d), single);
}

#[test]
fn stalled_client_does_not_block_others() {
    if skip() {
        return;
    }
    let d = daemon();
    let mut slow = connect(&d);
    slow.write_all(format!("set=1\nprivate_key={}", &PRIVATE[..20]).as_bytes())
        .unwrap();
    sleep(Duration::from_millis(50)); // let the daemon read the partial request first
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} behind a stalled client");
    // The stalled request was kept intact and completes normally.
    slow.write_all(format!("{}\n\n", &PRIVATE[20..]).as_bytes())
        .unwrap();
    assert_eq!(errno(&read_replies(&mut slow, 1, STEP)), 0);
    assert_eq!(value(&get(&d), "private_key"), Some(PRIVATE));
}

#[test]
fn oversized_request_is_refused() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let mut s = connect(&d);
    let mut data = b"set=1\n".to_vec();
    data.resize(MAX_REQUEST_BYTES + 1024, b'a'); // no blank line anywhere
    let mut sent = 0;
    while sent < data.len() {
        let end = (sent + 65536).min(data.len());
        match s.write(&data[sent..end]) {
            Ok(n) => sent += n,
            Err(_) => break, // the daemon may give up and close before we are done
        }
    }
    assert!(
        sent > MAX_REQUEST_BYTES,
        "daemon stopped reading after {sent} bytes"
    );
    // Either errno=-22 then close, or just close; never silence (a read timeout).
    let got = read_until_closed(&mut s);
    assert!(got.is_empty() || got == b"errno=-22\n\n", "{got:?}");
    d.assert_running();
    get(&d);
}

#[test]
fn many_idle_connections_do_not_lock_out_clients() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let idle: Vec<UnixStream> = (0..64).map(|_| connect(&d)).collect();
    sleep(Duration::from_millis(100)); // let the daemon accept them all
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} with 64 idle connections");
    d.assert_running();
    drop(idle);
    get(&d);
}

#[test]
fn garbage_first_line_is_refused() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let reply = request(&d, "GET / HTTP/1.1\r\n\r\n");
    assert_eq!(reply, "errno=-22\n\n");
    d.assert_running();
    get(&d);
}

#[test]
fn sigterm_stops_and_cleans_up() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let t = Instant::now();
    let out = run(Command::new("kill").args(["-TERM", &d.pid()]));
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST)
        .unwrap_or_else(|| panic!("still running {:?} after SIGTERM", t.elapsed()));
    assert!(status.success(), "{status}");
    assert!(!d.sock().exists(), "socket file left behind");
    assert_eq!(d.ns.link(&d.ifname), None, "TUN link left behind");
}

#[test]
fn deleting_the_link_stops_the_daemon() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let t = Instant::now();
    let out = ip(&["-n", &d.ns.name, "link", "del", &d.ifname]);
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST)
        .unwrap_or_else(|| panic!("still running {:?} after link deletion", t.elapsed()));
    assert!(status.success(), "{status}");
    assert!(!d.sock().exists(), "socket file left behind");
}

#[test]
fn pipelined_burst_does_not_stall_other_clients() {
    if skip() {
        return;
    }
    let d = daemon();
    // ~150k tiny requests; the flooding client never reads its replies.
    let mut flood = connect(&d);
    let writer = std::thread::spawn(move || {
        let _ = flood.write_all(&b"get=1\n\n".repeat((1 << 20) / 7));
        flood // keep it open until joined
    });
    sleep(Duration::from_millis(200));
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} behind a pipelined burst");
    drop(writer.join());
}

// ---- system-call filter ----------------------------------------------------------------

/// A field of the daemon's /proc/<pid>/status, or None where this kernel has none.
fn status_field(d: &Daemon, name: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// `Daemon::start` with SOLOWG_SECCOMP set to `value`.
fn daemon_with_seccomp(value: &str) -> Daemon {
    Daemon::start_with(&Netns::new(), &[("SOLOWG_SECCOMP", value)])
}

/// After setup the daemon runs under its filter (mode 2, one filter) and keeps working
/// through calls made after it: new UDP sockets for a fixed port, a fwmark, new UAPI
/// connections, a peer, and a clean exit on SIGTERM.
#[test]
fn system_call_filter_is_on_after_setup() {
    if skip() {
        return;
    }
    let mut d = daemon();
    assert_eq!(status_field(&d, "Seccomp").as_deref(), Some("2"));
    if let Some(n) = status_field(&d, "Seccomp_filters") {
        assert_eq!(n, "1");
    }
    assert_eq!(set(&d, &format!("fwmark=51\n{}", full_config())), 0);
    let reply = get(&d);
    assert_eq!(value(&reply, "listen_port"), Some("21820"), "{reply}");
    assert_eq!(value(&reply, "fwmark"), Some("51"), "{reply}");
    assert_eq!(
        value(&reply, "endpoint"),
        Some("192.0.2.7:51820"),
        "{reply}"
    );
    assert_eq!(set(&d, "listen_port=0\n"), 0);
    assert_ne!(value(&get(&d), "listen_port"), Some("21820"));
    d.assert_running();
    assert!(
        d.log_text().contains("system-call filter on"),
        "{}",
        d.log_text()
    );
    let out = run(Command::new("kill").args(["-TERM", &d.pid()]));
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST).expect("still running after SIGTERM");
    assert!(status.success(), "{status}: {}", d.log_text());
    assert!(!d.sock().exists(), "socket file left behind");
}

/// SOLOWG_SECCOMP: `off` installs no filter, `log` one that lets the daemon work, and any
/// other value is an error that leaves the default (a filter that kills).
#[test]
fn seccomp_variable_chooses_the_mode() {
    if skip() {
        return;
    }
    let d = daemon_with_seccomp("off");
    assert_eq!(status_field(&d, "Seccomp").as_deref(), Some("0"));
    assert_eq!(status_field(&d, "NoNewPrivs").as_deref(), Some("1"));
    assert!(d.log_text().contains("no system-call filter"));
    drop(d);

    let mut d = daemon_with_seccomp("log");
    assert_eq!(status_field(&d, "Seccomp").as_deref(), Some("2"));
    assert_eq!(set(&d, &full_config()), 0);
    get(&d);
    d.assert_running();
    assert!(d.log_text().contains("log mode"), "{}", d.log_text());
    drop(d);

    let mut d = daemon_with_seccomp("bogus");
    assert_eq!(status_field(&d, "Seccomp").as_deref(), Some("2"));
    let log = d.log_text();
    assert!(log.contains("error: SOLOWG_SECCOMP=\"bogus\""), "{log}");
    assert!(log.contains("system-call filter on"), "{log}");
    get(&d);
    d.assert_running();
}

/// A failed allocation under the filter ends as abort() does, by SIGABRT (status 134 in a
/// shell), not by the filter's SIGSYS (159): the address space is capped just above what
/// the running daemon uses, then a large request makes its buffer grow past the cap.
#[test]
fn allocation_failure_under_the_filter_ends_in_sigabrt() {
    use std::os::unix::process::ExitStatusExt;
    if skip() {
        return;
    }
    // A backtrace asked for is refused, not attempted (it would need calls off the list).
    let mut d = Daemon::start_with(&Netns::new(), &[("RUST_BACKTRACE", "1")]);
    assert_eq!(status_field(&d, "Seccomp").as_deref(), Some("2"));
    let vm_kib: u64 = status_field(&d, "VmSize")
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmSize");
    let cap = (vm_kib + 1024) * 1024;
    let out = run(Command::new("prlimit").args(["--pid", &d.pid(), &format!("--as={cap}:{cap}")]));
    assert!(out.status.success(), "{out:?}");
    let mut s = connect(&d);
    let mut data = b"set=1\n".to_vec();
    data.resize(MAX_REQUEST_BYTES - 1024, b'a');
    for chunk in data.chunks(65536) {
        if s.write_all(chunk).is_err() {
            break; // gone already
        }
    }
    let status = wait_within(&mut d.child, STEP).expect("the daemon survived past its cap");
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {}", d.log_text());
    assert!(
        d.log_text().contains("memory allocation of"),
        "{}",
        d.log_text()
    );
}

/// SIGABRT's number on every architecture the daemon supports.
const SIGABRT: i32 = 6;

/// The daemon's resident memory in KiB.
fn rss_kib(d: &Daemon) -> u64 {
    status_field(d, "VmRSS")
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// What the daemon writes on a refused request's connection until it closes it (a reset
/// counts as closed); a read timeout, silence, fails the test.
fn read_until_closed(s: &mut impl Read) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("no answer to an oversized request: {e} (got {got:?})"),
        }
    }
    got
}

/// Sends `set=1` and `len` bytes without a blank line, then reads until the daemon closes.
fn send_oversized(d: &Daemon, len: usize) -> Vec<u8> {
    let mut s = connect(d);
    let mut data = b"set=1\n".to_vec();
    data.resize(len, b'a');
    for chunk in data.chunks(65536) {
        if s.write_all(chunk).is_err() {
            break; // refused and closed before the end
        }
    }
    read_until_closed(&mut s)
}

/// An oversized request is refused before its buffer grows past the limit, and the memory
/// it took is given back: resident memory after three of them is within 1 MiB of before
/// (the buffer grew to 8 MiB and glibc's heap kept about 15 MB).
#[test]
fn oversized_requests_leave_memory_flat() {
    if skip() {
        return;
    }
    let mut d = daemon();
    get(&d);
    let before = rss_kib(&d);
    for _ in 0..3 {
        let got = send_oversized(&d, 2 * MAX_REQUEST_BYTES);
        assert!(got.is_empty() || got == b"errno=-22\n\n", "{got:?}");
        get(&d);
    }
    d.assert_running();
    let after = rss_kib(&d);
    println!("VmRSS before {before} KiB, after three oversized requests {after} KiB");
    assert!(
        after <= before + 1024,
        "VmRSS grew from {before} KiB to {after} KiB"
    );
}

// ---- a daemon of its own user beside a root one ------------------------------------------

#[path = "support/find_tool.rs"]
mod find_tool;
use find_tool::find_tool;

/// Owner, group and mode of a path (following links).
fn owner_mode(p: &str) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

/// The owner and mode of the places every userspace WireGuard shares, as found.
struct SharedPlaces {
    dir: (u32, u32, u32),
    tun: (u32, u32, u32),
}

impl SharedPlaces {
    fn now() -> Self {
        SharedPlaces {
            dir: owner_mode(SOCK_DIR),
            tun: owner_mode("/dev/net/tun"),
        }
    }

    /// /dev/net/tun counts only where its mode already lets anyone in: elsewhere the daemon
    /// may give its group access (OpenWrt's 0644).
    fn assert_unchanged(&self) {
        assert_eq!(
            owner_mode(SOCK_DIR),
            self.dir,
            "the shared directory changed"
        );
        if self.tun.2 & 0o006 == 0o006 {
            assert_eq!(owner_mode("/dev/net/tun"), self.tun, "/dev/net/tun changed");
        }
    }
}

/// `solowg --uci --user 65534:65534` as the package runs it, with ubus-zero's broker
/// enforcing the package's ACL, one interface set up the handler's way (root's `solowg
/// export`, then ubus `up`). Its broker and itself are killed on drop.
struct UserDaemon {
    child: Child,
    broker: Child,
    ifname: String,
    dir: PathBuf,
    ubus_client: PathBuf,
    _ns: Rc<Netns>,
}

impl UserDaemon {
    fn start(ns: &Rc<Netns>, ubusd: &std::path::Path, client: &std::path::Path) -> UserDaemon {
        let ifname = unique("swgu");
        let dir = std::env::temp_dir().join(format!("solowg-user-{ifname}"));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["config", "acl"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = run(Command::new(BIN).arg("genkey"));
        let key = String::from_utf8_lossy(&key.stdout).trim().to_string();
        std::fs::write(
            dir.join("config/network"),
            format!(
                "config interface '{ifname}'\n\toption proto 'solowg'\n\
                 \toption private_key '{key}'\n"
            ),
        )
        .unwrap();
        let acl = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/files/solowg.acl.json"
        ))
        .unwrap()
        .replacen("\"user\": \"solowg\"", "\"user\": \"nobody\"", 1);
        std::fs::write(dir.join("acl/solowg.json"), acl).unwrap();
        std::fs::set_permissions(
            dir.join("acl/solowg.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let sock = dir.join("ubus.sock");
        let broker = Command::new("ip")
            .args(["netns", "exec", &ns.name])
            .arg(ubusd)
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--acl-dir={}", dir.join("acl").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ubusd");
        let deadline = Instant::now() + STEP;
        while !sock.exists() {
            assert!(Instant::now() < deadline, "ubusd made no socket");
            sleep(Duration::from_millis(10));
        }
        let log = File::create(dir.join("daemon.log")).unwrap();
        let run_dir = dir.join("run");
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.name,
                BIN,
                "--uci",
                "--user",
                "65534:65534",
            ])
            .arg("--config-dir")
            .arg(&run_dir)
            .arg("--state-file")
            .arg(run_dir.join("state"))
            .env("UBUS_SOCKET", &sock)
            .env("LOG_LEVEL", "verbose")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn solowg --uci");
        let mut d = UserDaemon {
            child,
            broker,
            ifname,
            dir,
            ubus_client: client.into(),
            _ns: Rc::clone(ns),
        };
        let deadline = Instant::now() + STEP;
        while !String::from_utf8_lossy(&d.ubus(&["list", "solowg"]).stdout).contains("solowg") {
            if let Some(status) = d.child.try_wait().unwrap() {
                panic!("solowg --uci exited ({status}): {}", d.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "no solowg object: {}",
                d.log_text()
            );
            sleep(Duration::from_millis(20));
        }
        // What the handler does: root's export (which links wg's name), then `up`.
        let out = run(Command::new(BIN)
            .arg("export")
            .arg("--config-dir")
            .arg(d.dir.join("config"))
            .arg("--to")
            .arg(&run_dir));
        assert!(out.status.success(), "export: {out:?}");
        let up = format!("{{\"interface\":\"{}\"}}", d.ifname);
        let out = d.ubus(&["call", "solowg", "up", &up]);
        assert!(out.status.success(), "up: {out:?} {}", d.log_text());
        d
    }

    fn ubus(&self, args: &[&str]) -> Output {
        run(Command::new(&self.ubus_client)
            .arg("-s")
            .arg(self.dir.join("ubus.sock"))
            .args(["-t", "5"])
            .args(args))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    fn shared_sock(&self) -> PathBuf {
        PathBuf::from(SOCK_DIR).join(format!("{}.sock", self.ifname))
    }

    fn own_sock(&self) -> PathBuf {
        self.dir.join("run").join(format!("{}.sock", self.ifname))
    }

    /// `get=1` through wg's name for the interface.
    fn get(&self) -> String {
        let mut s = UnixStream::connect(self.shared_sock()).expect("connect through the link");
        s.set_read_timeout(Some(STEP)).unwrap();
        s.write_all(b"get=1\n\n").unwrap();
        read_replies(&mut s, 1, STEP)
    }

    /// SIGTERM; it must exit cleanly and remove its socket.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let out = run(Command::new("kill").args(["-TERM", &pid]));
        assert!(out.status.success(), "{out:?}");
        let status = wait_within(&mut self.child, STEP).expect("solowg --uci did not stop");
        assert!(status.success(), "{status}: {}", self.log_text());
        assert!(!self.own_sock().exists(), "its socket was left behind");
    }
}

impl Drop for UserDaemon {
    fn drop(&mut self) {
        for c in [&mut self.child, &mut self.broker] {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if std::thread::panicking() {
            eprintln!("--- solowg --uci log ---\n{}", self.log_text());
        }
        // The link root's export made; the init script's stop removes it on a router.
        let _ = std::fs::remove_file(self.shared_sock());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A root daemon serves, ignores SIGHUP and SIGUSR2, and stops cleanly on SIGTERM, its socket
/// removed.
fn root_daemon_round(d: &mut Daemon) {
    get(d);
    for sig in ["-HUP", "-USR2"] {
        let out = run(Command::new("kill").args([sig, &d.pid()]));
        assert!(out.status.success(), "{out:?}");
    }
    sleep(Duration::from_millis(100));
    d.assert_running();
    get(d);
    assert!(d.log_text().contains("ignored"), "{}", d.log_text());
    let out = run(Command::new("kill").args(["-TERM", &d.pid()]));
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST).expect("still running after SIGTERM");
    assert!(status.success(), "{status}: {}", d.log_text());
    assert!(
        !d.sock().exists(),
        "socket file left behind: {}",
        d.log_text()
    );
}

/// `--uci --user` leaves the shared places as it found them: /var/run/wireguard keeps its
/// owner and mode (the daemon binds in its own directory, and root's export links wg's name
/// to it), /dev/net/tun is not touched where its mode lets the user in (0666 here). So a root
/// daemon started after it, or before it, still removes its socket when it stops; and both
/// answer on wg's names.
#[test]
fn user_daemon_and_root_daemon_share_the_machine_in_both_orders() {
    if skip() {
        return;
    }
    let (Some(ubusd), Some(client)) = (
        find_tool("SOLOWG_UBUSD", "ubusd"),
        find_tool("SOLOWG_UBUS_CLIENT", "ubus-client"),
    ) else {
        println!("skipped: needs ubus-zero's ubusd and ubus-client (cargo install)");
        return;
    };
    // Made as wireguard-go and a root solowg make it, if no one has yet.
    let _ = std::fs::DirBuilder::new().mode(0o700).create(SOCK_DIR);
    let shared = SharedPlaces::now();

    // The user's daemon first, then a root one.
    let ns = Netns::new();
    let mut user = UserDaemon::start(&ns, &ubusd, &client);
    shared.assert_unchanged();
    let reply = user.get();
    assert!(reply.ends_with("errno=0\n\n"), "{reply:?}");
    if let Some(wg) = wg_tool() {
        let out = run(Command::new(&wg).args(["show", &user.ifname, "listen-port"]));
        assert!(out.status.success(), "wg show through the link: {out:?}");
    }
    let mut root = Daemon::start(&ns);
    root_daemon_round(&mut root);
    for sig in ["-HUP", "-USR2"] {
        let out = run(Command::new("kill").args([sig, &user.child.id().to_string()]));
        assert!(out.status.success(), "{out:?}");
    }
    sleep(Duration::from_millis(100));
    assert!(
        user.child.try_wait().unwrap().is_none(),
        "{}",
        user.log_text()
    );
    user.get();
    user.stop();
    drop(user);

    // A root daemon first, then the user's, then the root one stops.
    let mut root = Daemon::start(&ns);
    let mut user = UserDaemon::start(&ns, &ubusd, &client);
    user.get();
    root_daemon_round(&mut root);
    user.stop();
    drop(user);
    shared.assert_unchanged();
}

/// The daemon makes its socket reads and writes with recvfrom and sendto, whatever the libc:
/// glibc's recv() and send() are the `recv` and `send` system calls on 32-bit ARM and MIPS
/// o32 (and recvfrom/sendto elsewhere), which the filter's list does not hold. std's
/// `UnixStream` and `UdpSocket` call them, so nothing in the binary may call them but code
/// that never runs under the filter: starting a program (the daemon starts none; `export`
/// and the background start run before or outside it). Checked in this host build's
/// machine code, which is the same Rust on every target.
#[test]
fn no_libc_call_whose_system_call_depends_on_the_abi() {
    let out = match Command::new("objdump")
        .args(["-d", "-C", "--no-show-raw-insn", BIN])
        .stderr(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => {
            println!("skipped: no objdump");
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut function = "";
    let mut callers = std::collections::BTreeSet::new();
    for line in text.lines() {
        if line.ends_with(">:") {
            function = line;
        } else if ["<recv@", "<send@", "<recv>", "<send>"]
            .iter()
            .any(|c| line.contains(c))
        {
            callers.insert(function.to_string());
        }
    }
    let unexpected: Vec<&String> = callers
        .iter()
        .filter(|f| !f.contains("Command>::spawn"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "callers of recv()/send(): {unexpected:#?}"
    );
}

/// A `set` of many peers is applied over many loop turns (after each turn's packets), and
/// is still all at once to clients: a `get` sent meanwhile is answered after it, with every
/// peer; the `set` itself gets one errno=0.
#[test]
fn a_long_set_is_applied_in_slices_and_seen_whole() {
    if skip() {
        return;
    }
    let mut d = daemon();
    assert_eq!(set(&d, &format!("private_key={PRIVATE}\n")), 0);
    let n = 3000;
    let mut body = String::from("set=1\n");
    for i in 0..n {
        body.push_str(&format!(
            "public_key={:064x}\nallowed_ip=10.{}.{}.{}/32\nendpoint=192.0.2.{}:{}\n",
            0x5e00_0000_u64 + i,
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255,
            i % 250 + 1,
            20000 + i
        ));
    }
    body.push('\n');
    // The replies are large: read them by the tail only (read_replies rescans). The get
    // waits for the set's 3,000 key agreements in a debug build, minutes on a loaded host.
    let whole_reply = |s: &mut UnixStream| {
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        while !(buf.ends_with(b"\n\n") && buf.len() > 1) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no complete reply in 300 s ({} bytes)",
                buf.len()
            );
            s.set_read_timeout(Some(left)).unwrap();
            match s.read(&mut chunk) {
                Ok(0) => panic!("reply cut short after {} bytes", buf.len()),
                Err(e) => panic!("reply not read after {} bytes: {e}", buf.len()),
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        String::from_utf8(buf).expect("UTF-8")
    };
    let peers_in = |reply: &str| {
        reply
            .lines()
            .filter(|l| l.starts_with("public_key="))
            .count()
    };
    let mut long = connect(&d);
    long.write_all(body.as_bytes()).unwrap();
    sleep(Duration::from_millis(20));
    let t = Instant::now();
    let mut other = connect(&d);
    other.write_all(b"get=1\n\n").unwrap();
    let reply = whole_reply(&mut other);
    let waited = t.elapsed();
    assert!(reply.ends_with("errno=0\n\n"), "get failed");
    let peers = peers_in(&reply);
    assert!(
        peers == n as usize || peers == 0,
        "a get saw {peers} of {n} peers"
    );
    assert_eq!(whole_reply(&mut long), "errno=0\n\n");
    other.write_all(b"get=1\n\n").unwrap();
    assert_eq!(peers_in(&whole_reply(&mut other)), n as usize);
    d.assert_running();
    let log = d.log_text();
    assert!(
        log.contains(&format!("UAPI set of {n} peer changes applied over")),
        "not sliced ({waited:?} for the get): {log}"
    );
}
