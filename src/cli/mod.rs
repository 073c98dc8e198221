//! The command line: `solowg [-f] <ifname>` (the same as wireguard-go's, so `wg-quick` and
//! scripts can start it through WG_QUICK_USERSPACE_IMPLEMENTATION), `solowg --uci` (OpenWrt
//! mode, run by procd), and `wg`'s `show`, `genkey`, `genpsk` and `pubkey` for routers
//! without wireguard-tools. Exit status as `wg`'s: 0, 1 for a failure, and usage printed
//! with 1 for words it does not take.
#![forbid(unsafe_code)]

mod bench;
mod keys;
pub mod show;

use crate::daemon::event_loop::{Daemon, Exit};
use crate::daemon::iface;
use crate::log;
use crate::openwrt::control::{Managed, Options};
use crate::openwrt::handover;
use crate::sys::privileges;
use crate::sys::sched;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Set in the environment of the background child so it reports readiness on stdout.
const NOTIFY_ENV: &str = "SOLOWG_NOTIFY_PARENT";

const USAGE: &str = "\
Usage: solowg [-f|--foreground] <interface-name>
       solowg --uci [--config-dir DIR] [--state-file PATH] [--user NAME|UID:GID]
       solowg export [--config-dir DIR] [--uci-bin PATH] [--to DIR]
       solowg show [all | interfaces | <interface-name>] [<field> | dump]
       solowg genkey | genpsk | pubkey
       solowg bench [--seconds N] [--impls LIST] [--json] [--state-file PATH] [--detach]
       solowg help | --version

Creates the TUN interface and serves the WireGuard userspace API on
/var/run/wireguard/<interface-name>.sock; configure it with wg(8) or wg-quick(8).
Without -f it detaches once the interface is ready.

--uci: OpenWrt mode, in the foreground (procd runs it). Serves the ubus object 'solowg'
(up, down, reload, status, genkey, pubkey, genpsk); netifd's handler brings each
'proto solowg' interface of DIR/network (default /etc/config) up and down through it.
With --user it runs as that user once its sockets are open, keeping only the
capabilities it uses (OpenWrt: --user solowg --config-dir /var/run/solowg).
export: run by root before `up` and `reload` when the daemon runs as its own user:
saves a key for 'proto solowg' interfaces without one (uci batch) and copies those
interfaces and their peers from DIR/network (default /etc/config) to TO/network
(default /var/run/solowg), readable by TO's owner only.
show: what `wg show` prints, read from the UAPI sockets (root's). Fields: public-key,
private-key, listen-port, fwmark, peers, preshared-keys, endpoints, allowed-ips,
latest-handshakes, persistent-keepalive, transfer; `dump` prints them all, tab-separated.
genkey, genpsk: a new private or preshared key on stdout; pubkey: the public key of the
private key read from stdin (as `wg`).
bench: races solowg against the kernel's WireGuard module on this device, in network
namespaces of its own (`solowg bench --help`).

Environment:
  LOG_LEVEL=verbose|error|silent   how much to log to stderr (default: info)
  WG_PROCESS_FOREGROUND=1          same as -f
  UBUS_SOCKET=PATH                 ubus broker socket (default /var/run/ubus/ubus.sock)
  SOLOWG_SECCOMP=log|off           system-call filter: log calls off its list instead of
                                   killing the process, or no filter
";

struct Args {
    foreground: bool,
    ifname: String,
}

#[inline(never)]
fn parse_args(argv: Vec<String>) -> Result<Option<Args>, String> {
    let mut foreground = std::env::var("WG_PROCESS_FOREGROUND").is_ok_and(|v| v == "1");
    let mut ifname = None;
    for a in argv.into_iter().skip(1) {
        match a.as_str() {
            "-f" | "--foreground" => foreground = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(None);
            }
            "-v" | "--version" => {
                println!("solowg v{}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            s if s.starts_with('-') => return Err(format!("unknown option '{s}'")),
            s if ifname.is_none() => ifname = Some(s.to_string()),
            s => return Err(format!("unexpected argument '{s}'")),
        }
    }
    let ifname = ifname.ok_or("missing interface name")?;
    Ok(Some(Args { foreground, ifname }))
}

#[inline(never)] // its moves of a Device and the Daemon stay out of `run_foreground`'s frame
fn setup(ifname: &str) -> Result<(Box<Daemon>, u16, usize), String> {
    // First, before any thread exists, so every thread inherits the blocked mask.
    let signals =
        crate::sys::signals::block_and_open().map_err(|e| format!("cannot set up signals: {e}"))?;
    let mut daemon =
        Box::new(Daemon::new(signals).map_err(|e| format!("cannot start event loop: {e}"))?);
    let (tun, udp, uapi, dev) = iface::open(
        ifname,
        iface::DEFAULT_MTU,
        std::path::Path::new(iface::SOCKET_DIR),
    )?;
    let (port, mtu) = (dev.listen_port, dev.mtu);
    daemon
        .add(tun, udp, uapi, dev)
        .map_err(|e| format!("cannot start event loop: {e}"))?;
    Ok((daemon, port, mtu))
}

/// Background mode: run ourselves in the foreground as a detached child and return once it
/// says the interface is ready (or relay its error).
#[inline(never)]
fn spawn_background(ifname: &str) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            log::error(format_args!("cannot find own executable: {e}"));
            return 1;
        }
    };
    let keep_stderr = std::env::var_os("LOG_LEVEL").is_some();
    let child = Command::new(exe)
        .arg("-f")
        .arg(ifname)
        .env(NOTIFY_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if keep_stderr {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .process_group(0) // not killed by the terminal's Ctrl-C aimed at our caller
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            log::error(format_args!("cannot start background process: {e}"));
            return 1;
        }
    };
    let mut line = String::new();
    let stdout = child.stdout.take().map(BufReader::new);
    if let Some(mut out) = stdout {
        let _ = out.read_line(&mut line);
    }
    match line.trim_end().split_once(' ') {
        _ if line.trim_end() == "ready" => 0,
        Some(("error", msg)) => {
            log::error(format_args!("{msg}"));
            let _ = child.wait();
            1
        }
        _ => {
            log::error(format_args!("background process exited during setup"));
            let _ = child.wait();
            1
        }
    }
}

/// `--uci`: every managed interface in one loop, with the ubus object.
#[inline(never)]
fn run_managed(args: &[String]) -> i32 {
    log::split_streams();
    let mut opts = Options {
        config_dir: "/etc/config".into(),
        ubus_socket: crate::openwrt::ubus::socket_path(),
        state_file: "/var/run/solowg/interfaces".into(),
        socket_dir: iface::SOCKET_DIR.into(),
    };
    let mut user = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.clone().next()) {
            ("--config-dir", Some(v)) => {
                opts.config_dir = v.into();
                it.next();
            }
            ("--state-file", Some(v)) => {
                opts.state_file = v.into();
                it.next();
            }
            ("--user", Some(v)) => {
                user = Some(v.clone());
                it.next();
            }
            _ => {
                eprintln!("solowg: unexpected argument '{a}'\n\n{USAGE}");
                return 2;
            }
        }
    }
    if user.is_some() {
        // The shared directory stays as it is: the account's sockets go in its own
        // directory, and root's `solowg export` links /var/run/wireguard/<if>.sock to them.
        opts.socket_dir = opts.config_dir.clone();
    }
    let account = match user.map(|u| own_account(&u, &opts)).transpose() {
        Ok(a) => a,
        Err(e) => {
            log::error(format_args!("{e}"));
            return 1;
        }
    };
    let Some((mut daemon, mut managed)) = start_managed(opts) else {
        return 1;
    };
    log::info(format_args!("managed mode, serving ubus object 'solowg'"));
    if let Err(e) = privileges::restrict(crate::sys::packet_tx::wanted(), account.as_ref()) {
        log::error(format_args!("{e}"));
        return 1;
    }
    sched::batch_scheduling();
    let exit = daemon.run(Some(&mut *managed));
    managed.shutdown(&mut daemon);
    if let Exit::InterfaceGone(e) = exit {
        log::error(format_args!("event loop failed: {e}"));
        return 1;
    }
    log::info(format_args!("shutting down"));
    0
}

/// `--user`: the account, and the directories it will write to made its own while the
/// daemon is still root.
fn own_account(spec: &str, opts: &Options) -> Result<privileges::Account, String> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let a = privileges::account(spec, &passwd)?;
    let mut dirs = vec![opts.config_dir.as_path(), opts.socket_dir.as_path()];
    if let Some(d) = opts.state_file.parent() {
        dirs.push(d);
    }
    // /etc/config is root's: the account only reads what root hands over (`export`). The
    // shared socket directory is never given away.
    dirs.retain(|d| !d.starts_with("/etc") && *d != std::path::Path::new(iface::SOCKET_DIR));
    privileges::give_dirs(&a, &dirs)?;
    privileges::give_tun_device(&a)?;
    Ok(a)
}

/// `export`: see `openwrt::handover`.
fn run_export(args: &[String]) -> i32 {
    let mut opts = handover::Options {
        config_dir: "/etc/config".into(),
        uci: "uci".into(),
        to_dir: "/var/run/solowg".into(),
        links_in: Some(iface::SOCKET_DIR.into()),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let Some(v) = it.next() else {
            eprintln!("solowg export: unexpected argument '{a}'\n\n{USAGE}");
            return 1;
        };
        match a.as_str() {
            "--config-dir" => opts.config_dir = v.into(),
            "--uci-bin" => opts.uci = v.clone(),
            "--to" => opts.to_dir = v.into(),
            _ => {
                eprintln!("solowg export: unexpected argument '{a}'\n\n{USAGE}");
                return 1;
            }
        }
    }
    match handover::run(&opts) {
        Ok(out) => {
            for n in &out.keys_saved {
                eprintln!("solowg export: {n}: generated a private key and saved it");
            }
            for e in &out.links_not_made {
                eprintln!("solowg export: {e}");
            }
            for e in &out.keys_not_saved {
                eprintln!("solowg export: {e}; the daemon keeps a key in memory until it restarts");
            }
            if out.keys_not_saved.is_empty() {
                0
            } else {
                3
            }
        }
        Err(e) => {
            eprintln!("solowg export: {e}");
            1
        }
    }
}

/// The loop and the ubus object of `--uci`, boxed: `run_managed`'s frame then stays small
/// (see `run_foreground`). None if either failed (logged).
#[inline(never)]
fn start_managed(opts: Options) -> Option<(Box<Daemon>, Box<Managed>)> {
    let signals = match crate::sys::signals::block_and_open() {
        Ok(s) => s,
        Err(e) => {
            log::error(format_args!("cannot set up signals: {e}"));
            return None;
        }
    };
    match (Daemon::new(signals), Managed::new(opts)) {
        (Ok(d), Ok(m)) => Some((Box::new(d), Box::new(m))),
        (Err(e), _) | (_, Err(e)) => {
            log::error(format_args!("cannot start: {e}"));
            None
        }
    }
}

/// Runs the command line `argv` (with the program name first); returns the exit status.
pub fn run(argv: Vec<String>) -> i32 {
    // Before the dispatch: managed mode (`--uci`) logs by the same setting.
    match std::env::var("LOG_LEVEL").as_deref() {
        Ok("verbose") | Ok("debug") => log::set_level(log::VERBOSE),
        Ok("error") => log::set_level(log::ERROR),
        Ok("silent") => log::set_level(log::SILENT),
        _ => {}
    }
    match argv.get(1).map(String::as_str) {
        Some("--uci") => return run_managed(&argv[2..]),
        Some("export") => return run_export(&argv[2..]),
        Some("bench") => return bench::run(&argv[2..]),
        Some("show") => {
            return match show::run(&argv[2..]) {
                Ok(shown) => {
                    print!("{}", shown.text.as_str());
                    for e in &shown.errors {
                        eprintln!("solowg show: {e}");
                    }
                    i32::from(!shown.errors.is_empty())
                }
                Err(f) if f.usage => {
                    eprintln!("solowg show: {}\n\n{USAGE}", f.message);
                    1
                }
                Err(f) => {
                    eprintln!("solowg show: {}", f.message);
                    1
                }
            };
        }
        Some(cmd @ ("genkey" | "genpsk" | "pubkey")) => {
            if let Some(extra) = argv.get(2) {
                eprintln!("solowg {cmd}: unexpected argument '{extra}'\n\n{USAGE}");
                return 1;
            }
            return keys::run(cmd);
        }
        Some("help") => {
            print!("{USAGE}");
            return 0;
        }
        _ => {}
    }
    let args = match parse_args(argv) {
        Ok(Some(a)) => a,
        Ok(None) => return 0,
        Err(e) => {
            eprintln!("solowg: {e}\n\n{USAGE}");
            return 1;
        }
    };
    if !args.foreground {
        return spawn_background(&args.ifname);
    }
    run_foreground(args)
}

/// The daemon in the foreground until it stops. Not inlined, like `run_managed` and
/// `spawn_background`: `run`'s frame then stays small and the event loop's frames start
/// near the top of the stack, so the data path's stack (about 5 KiB deep) spans one or two
/// pairs of pages, each an entry of a MIPS 24K's 16-entry TLB, instead of two or three
/// (bench/README.md).
#[inline(never)]
fn run_foreground(args: Args) -> i32 {
    let notify = std::env::var_os(NOTIFY_ENV).is_some();
    let (mut daemon, port, mtu) = match setup(&args.ifname) {
        Ok(x) => x,
        Err(e) => {
            if notify {
                println!("error {e}");
            } else {
                log::error(format_args!("{e}"));
            }
            return 1;
        }
    };
    log::info(format_args!(
        "{} up: UAPI on {}, UDP port {}, MTU {}",
        args.ifname,
        iface::socket_path(&args.ifname).display(),
        port,
        mtu
    ));
    if notify {
        println!("ready");
        let _ = io::stdout().flush();
    }
    if let Err(e) = privileges::restrict(crate::sys::packet_tx::wanted(), None) {
        log::error(format_args!("{e}"));
        return 1;
    }
    sched::batch_scheduling();
    let exit = daemon.run(None);
    let _ = std::fs::remove_file(iface::socket_path(&args.ifname));
    match exit {
        Exit::Signal => log::info(format_args!("{}: shutting down", args.ifname)),
        Exit::InterfaceGone(e) => log::info(format_args!(
            "{}: interface gone ({e}), exiting",
            args.ifname
        )),
    }
    0
}
