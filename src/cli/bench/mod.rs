//! `solowg bench`: races solowg against the kernel's WireGuard module on the device it runs
//! on. Two network namespaces of its own, a veth pair between them, a tunnel of each
//! implementation in turn, one TCP stream each way for the same time; Mbit/s and the
//! busy fraction of all CPUs for each, the ratio, and a line to share.
//!
//! Nothing outside the two namespaces changes, and they are held only by this process and
//! its children (each with a parent-death signal), so a Ctrl-C, a SIGKILL or a failure
//! leaves no namespace, interface, process or socket behind.

mod cpu;
mod json;
mod lab;
mod progress;
mod report;
mod system;
mod traffic;

use crate::sys::{netns, signals};
use progress::Sink;
use report::{Dir, Impl, Report, Run, State};
use std::io::Write;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use traffic::Tool;

pub const HELP: &str = "\
Usage: solowg bench [--seconds N] [--impls LIST] [--json] [--state-file PATH] [--detach]
                    [--tool iperf3|builtin]

Races solowg against the kernel's WireGuard module on this device: two network namespaces
of its own joined by a veth pair, a tunnel between them, one TCP stream each way (iperf3
if installed, else a built-in one). Prints Mbit/s and CPU use of each, the ratio
solowg/kernel and a line to share. Both tunnel ends run here: the CPU encrypts and
decrypts every byte, so compare the ratio, not the Mbit/s, with a router that forwards.
Needs root, network namespaces and veth (kmod-veth); the kernel half needs kmod-wireguard
and wireguard-tools. Nothing outside its namespaces is changed.

  --seconds N        seconds per run (1-300, default 5)
  --impls LIST       comma-separated runs, in order: kernel, solowg (default kernel,solowg;
                     without the module solowg alone)
  --json             print the result as JSON
  --state-file PATH  keep PATH up to date with the progress and the result (JSON)
  --detach           run in the background (needs --state-file) and return at once
  --tool T           iperf3 or builtin (default iperf3 when installed)
";

const DEFAULT_SECONDS: u32 = 5;
const MAX_SECONDS: u32 = 300;
const MAX_RUNS: usize = 4;
/// Held while a bench runs (an abstract socket: the kernel drops it with the process).
const LOCK_NAME: &[u8] = b"solowg-bench";

#[derive(Debug, PartialEq)]
struct Options {
    seconds: u32,
    impls: Vec<Impl>,
    impls_given: bool,
    json: bool,
    state_file: Option<PathBuf>,
    detach: bool,
    tool: Tool,
}

fn parse_impls(list: &str) -> Result<Vec<Impl>, String> {
    let impls = list
        .split(',')
        .map(|w| match w.trim() {
            "kernel" => Ok(Impl::Kernel),
            "solowg" => Ok(Impl::Solowg),
            w => Err(format!(
                "--impls: unknown implementation '{w}' (kernel, solowg)"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if impls.len() > MAX_RUNS {
        return Err(format!("--impls: at most {MAX_RUNS} runs"));
    }
    Ok(impls)
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        seconds: DEFAULT_SECONDS,
        impls: vec![Impl::Kernel, Impl::Solowg],
        impls_given: false,
        json: false,
        state_file: None,
        detach: false,
        tool: Tool::find(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--json" => o.json = true,
            "--detach" => o.detach = true,
            "--seconds" => {
                let v = value()?;
                o.seconds = v
                    .parse()
                    .ok()
                    .filter(|s| (1..=MAX_SECONDS).contains(s))
                    .ok_or(format!(
                        "--seconds takes a whole number from 1 to {MAX_SECONDS}, not '{v}'"
                    ))?;
            }
            "--impls" => {
                o.impls = parse_impls(value()?)?;
                o.impls_given = true;
            }
            "--tool" => {
                o.tool = match value()?.as_str() {
                    "iperf3" => Tool::Iperf3,
                    "builtin" => Tool::Builtin,
                    t => return Err(format!("--tool: iperf3 or builtin, not '{t}'")),
                };
            }
            "--state-file" => {
                let v = value()?;
                if v.is_empty() {
                    return Err("--state-file needs a path".into());
                }
                o.state_file = Some(PathBuf::from(v));
            }
            _ => return Err(format!("unexpected argument '{a}'")),
        }
    }
    if o.detach && o.state_file.is_none() {
        return Err("--detach needs --state-file (where the result will be)".into());
    }
    Ok(Some(o))
}

/// Whether the WireGuard module is loaded, built in, or installed to be loaded on demand
/// (creating the link loads it).
fn module_available() -> bool {
    if Path::new("/sys/module/wireguard").exists() {
        return true;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let dir = Path::new("/lib/modules").join(release.trim());
    // OpenWrt keeps modules flat; other systems list them in modules.dep.
    dir.join("wireguard.ko").exists()
        || std::fs::read_to_string(dir.join("modules.dep"))
            .is_ok_and(|d| d.lines().any(|l| l.contains("/wireguard.ko")))
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// Drops the kernel runs when the module or `wg` is missing and they were not asked for
/// (with a note); refuses when they were.
fn resolve_impls(o: &mut Options, notes: &mut Vec<String>) -> Result<(), String> {
    if o.tool == Tool::Iperf3 && !on_path("iperf3") {
        return Err("iperf3 is not installed (--tool builtin needs nothing)".into());
    }
    if !o.impls.contains(&Impl::Kernel) {
        return Ok(());
    }
    let missing = if !module_available() {
        "the kernel's WireGuard module is not available: install kmod-wireguard to race the module"
    } else if !on_path("wg") {
        "wg is not installed: install wireguard-tools to race the module"
    } else {
        return Ok(());
    };
    if o.impls_given {
        return Err(missing.to_string());
    }
    o.impls.retain(|&i| i != Impl::Kernel);
    notes.push(format!("{missing}; solowg ran alone"));
    Ok(())
}

fn lock() -> Result<UnixListener, String> {
    let addr = SocketAddr::from_abstract_name(LOCK_NAME).map_err(|e| e.to_string())?;
    UnixListener::bind_addr(&addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => "another solowg bench is running".to_string(),
        _ => format!("cannot take the bench lock: {e}"),
    })
}

fn new_report(o: &Options, notes: Vec<String>) -> Report {
    Report {
        state: State::Running,
        progress: "starting".into(),
        error: None,
        seconds: o.seconds,
        tool: o.tool.name(),
        system: system::System {
            solowg: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        },
        runs: Vec::new(),
        notes,
        pid: std::process::id(),
    }
}

/// `--detach`: the same command without it, in its own process group with no terminal and
/// no pipes of the caller (rpcd waits for its pipes to close), and return.
fn detach(args: &[String], o: &Options, notes: Vec<String>) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find solowg: {e}")),
    };
    let rest: Vec<&String> = args.iter().filter(|a| *a != "--detach").collect();
    let child = Command::new(exe)
        .arg("bench")
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut r = new_report(o, notes);
    match child {
        Ok(c) => r.pid = c.id(),
        Err(e) => return fail(format!("cannot start in the background: {e}")),
    }
    if o.json {
        out(&format!("{}\n", r.to_json().to_text()));
    } else {
        out(&format!(
            "solowg bench runs in the background (pid {}); the result will be in {}\n",
            r.pid,
            o.state_file.as_deref().unwrap_or(Path::new("")).display()
        ));
    }
    0
}

/// Text to stdout; a closed pipe is not an error worth a panic (println! would panic).
fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// A line to stderr, as `out`.
fn say(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "solowg bench: {text}");
}

fn fail(msg: String) -> i32 {
    say(&msg);
    1
}

/// Runs `solowg bench ARGS`; returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let mut o = match parse_args(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            out(HELP);
            return 0;
        }
        Err(e) => {
            say(&format!("{e}\n\n{HELP}"));
            return 1;
        }
    };
    let mut notes = Vec::new();
    let refused = if !netns::is_root() {
        Err("must run as root (it creates network namespaces and tunnels)".to_string())
    } else {
        resolve_impls(&mut o, &mut notes)
    };
    if let (Err(e), Some(p)) = (&refused, &o.state_file) {
        // Whoever polls the file learns why nothing runs.
        let mut r = new_report(&o, notes.clone());
        r.state = State::Failed;
        r.error = Some(e.clone());
        r.progress = format!("failed: {e}");
        let _ = progress::write_atomic(p, &r.to_json().to_text());
    }
    let held = refused.and_then(|()| lock());
    let _lock = match held {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    for n in &notes {
        say(n);
    }
    if o.detach {
        // The child takes the lock once this returns. The first state is written here, so
        // whoever polls finds this run's file at once, not an old one.
        let r = new_report(&o, notes.clone());
        if let Some(p) = &o.state_file {
            if let Err(e) = progress::write_atomic(p, &r.to_json().to_text()) {
                return fail(format!("cannot write {}: {e}", p.display()));
            }
        }
        drop(_lock);
        return detach(args, &o, notes);
    }
    foreground(&o, notes)
}

fn foreground(o: &Options, notes: Vec<String>) -> i32 {
    // Before any thread starts, so all of them leave SIGINT and SIGTERM to the signalfd.
    let signals = signals::block_and_open().ok();
    let mut sink = Sink::new(new_report(o, notes), o.state_file.clone(), signals);
    sink.phase("reading the system's description");
    sink.report.system = system::gather();
    let result = race(o, &mut sink);
    let code = match result {
        Ok(()) => {
            sink.report.state = State::Done;
            sink.phase("done");
            0
        }
        Err(e) => {
            let interrupted = sink.interrupted();
            sink.report.state = State::Failed;
            let e = if interrupted { "interrupted".into() } else { e };
            sink.report.error = Some(e.clone());
            sink.phase(&format!("failed: {e}"));
            sink.finish_line();
            say(&e);
            if interrupted {
                130
            } else {
                1
            }
        }
    };
    sink.finish_line();
    // The module may have been loaded by the run.
    sink.report.system.wireguard = system::wireguard_version();
    sink.write_state();
    if o.json {
        out(&format!("{}\n", sink.report.to_json().to_text()));
    } else if code == 0 {
        out(&sink.report.to_text());
    }
    code
}

/// Every implementation in turn, up then down.
fn race(o: &Options, sink: &mut Sink) -> Result<(), String> {
    sink.phase("setting up two network namespaces and a veth pair");
    let lab = lab::Lab::new()?;
    // Unique per run: solowg's UAPI sockets share /var/run/wireguard with a running daemon.
    let tag = format!("swb{}", std::process::id());
    let total = o.impls.len() * 2;
    for (i, &imp) in o.impls.iter().enumerate() {
        if sink.interrupted() {
            return Err("interrupted".into());
        }
        sink.phase(&format!("{}: starting the tunnel", imp.name()));
        let tunnel = lab.tunnel(imp, &tag)?;
        for (j, dir) in [Dir::Up, Dir::Down].into_iter().enumerate() {
            let label = format!(
                "run {}/{total}: {} {}",
                i * 2 + j + 1,
                imp.name(),
                dir.name()
            );
            sink.phase(&label);
            let before = cpu::read();
            let mbps = traffic::measure(&lab, o.tool, dir, o.seconds, &mut |t| {
                sink.tick(&label, t, o.seconds);
                !sink.interrupted()
            })?;
            let cpu = cpu::busy_fraction(before, cpu::read());
            sink.report.runs.push(Run {
                imp,
                dir,
                mbps,
                cpu,
            });
            sink.write_state();
        }
        tunnel.close(&lab);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_and_every_option() {
        let o = parse_args(&[]).unwrap().unwrap();
        assert_eq!(o.seconds, 5);
        assert_eq!(o.impls, vec![Impl::Kernel, Impl::Solowg]);
        assert!(!o.impls_given && !o.json && !o.detach && o.state_file.is_none());
        let o = parse_args(&args(
            "--seconds 2 --impls solowg,solowg --json --state-file /tmp/x.json --detach",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(o.seconds, 2);
        assert_eq!(o.impls, vec![Impl::Solowg, Impl::Solowg]);
        assert!(o.impls_given && o.json && o.detach);
        assert_eq!(o.state_file.as_deref(), Some(Path::new("/tmp/x.json")));
        assert_eq!(parse_args(&args("--help")), Ok(None));
    }

    #[test]
    fn bad_arguments_are_refused_with_words() {
        for (a, says) in [
            ("--seconds 0", "--seconds takes"),
            ("--seconds 301", "--seconds takes"),
            ("--seconds abc", "--seconds takes"),
            ("--seconds -3", "--seconds takes"),
            ("--seconds", "needs a value"),
            ("--impls wireguard-go", "unknown implementation"),
            ("--impls kernel,,solowg", "unknown implementation"),
            ("--impls solowg,solowg,solowg,solowg,solowg", "at most 4"),
            ("--detach", "needs --state-file"),
            ("--fast", "unexpected argument"),
            ("wg0", "unexpected argument"),
        ] {
            let e = parse_args(&args(a)).unwrap_err();
            assert!(e.contains(says), "{a}: {e}");
        }
    }

    #[test]
    fn kernel_runs_are_dropped_only_when_not_asked_for() {
        if module_available() && on_path("wg") {
            eprintln!("skipped: the module and wg are here, nothing is missing");
            return;
        }
        let mut o = parse_args(&[]).unwrap().unwrap();
        let mut notes = Vec::new();
        resolve_impls(&mut o, &mut notes).unwrap();
        assert_eq!(o.impls, vec![Impl::Solowg]);
        assert!(notes[0].contains("install"), "{notes:?}");
        let mut o = parse_args(&args("--impls kernel")).unwrap().unwrap();
        let e = resolve_impls(&mut o, &mut Vec::new()).unwrap_err();
        assert!(
            e.contains("kmod-wireguard") || e.contains("wireguard-tools"),
            "{e}"
        );
        let mut o = parse_args(&args("--impls solowg,solowg")).unwrap().unwrap();
        resolve_impls(&mut o, &mut Vec::new()).unwrap();
        assert_eq!(o.impls.len(), 2);
    }
}
