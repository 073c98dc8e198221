//! The system-call filter on the running daemon, its modes, an abort under it, memory after
//! oversized requests, and the libc calls the binary may make.

use super::*;

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
