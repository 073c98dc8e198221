//! System tests of the `solowg` binary itself: command line, the UAPI socket, transactional
//! `set`, control-plane robustness and shutdown.
//!
//! Every daemon runs inside a network namespace created by the test (`ip netns exec`), so
//! nothing touches the host's network. /var/run/wireguard is shared by all namespaces, hence
//! interface names are unique per test (pid + counter). These tests need root; without it
//! each one prints "skipped: needs root" and passes.

// The tests by topic, each file below `daemon/` (a test crate's root looks for its modules
// beside it, where cargo would take them for test crates of their own).
#[path = "daemon/command_line.rs"]
mod command_line;
#[path = "support/find_tool.rs"]
mod find_tool;
#[path = "daemon/running_daemon.rs"]
mod running_daemon;
#[path = "daemon/system_call_filter.rs"]
mod system_call_filter;
#[path = "daemon/user_daemon.rs"]
mod user_daemon;

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

/// Taken by a test that keeps its daemon busy for seconds and by one that runs `solowg show
/// all`, which asks every daemon on the machine (their sockets share SOCK_DIR, whatever the
/// namespace): together, the second waits out the first's time limit.
static BUSY_OR_SHOW_ALL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`BUSY_OR_SHOW_ALL`], also after a test that held it failed.
fn busy_or_show_all() -> std::sync::MutexGuard<'static, ()> {
    BUSY_OR_SHOW_ALL.lock().unwrap_or_else(|e| e.into_inner())
}

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
