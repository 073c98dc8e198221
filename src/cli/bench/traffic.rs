//! One TCP stream through the tunnel for a set time: iperf3 where it is installed (run in
//! the namespaces), else a small stream of our own (a sender and a receiver thread, each
//! with a socket made in its namespace), so the package needs no new dependency.

use super::json::{self, Value};
use super::lab::{self, Lab, INNER};
use super::report::Dir;
use crate::sys;
use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const STREAM_PORT: u16 = 5201;
/// How long past its set time a run may take before it is given up (start-up, a slow
/// router's last buffers).
const GRACE: Duration = Duration::from_secs(15);
const TICK: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Iperf3,
    Builtin,
}

impl Tool {
    /// iperf3 if it is on the PATH.
    pub fn find() -> Tool {
        if super::on_path("iperf3") {
            Tool::Iperf3
        } else {
            Tool::Builtin
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Iperf3 => "iperf3",
            Tool::Builtin => "builtin",
        }
    }
}

/// Called every 100 ms or so with the seconds gone; false stops the run (it then fails).
pub type Tick<'a> = &'a mut dyn FnMut(f64) -> bool;

/// Mbit/s of one stream in `dir` for `seconds`. The sockets are read and written through
/// `sys::recv` and `sys::send`, as the daemon's are: std's calls are the ABI-dependent
/// recv(2) and send(2), which `tests/daemon.rs` keeps out of the binary.
pub fn measure(
    lab: &Lab,
    tool: Tool,
    dir: Dir,
    seconds: u32,
    tick: Tick<'_>,
) -> Result<f64, String> {
    let (from, to) = match dir {
        Dir::Up => (0, 1),
        Dir::Down => (1, 0),
    };
    match tool {
        Tool::Iperf3 => iperf3(lab, from, to, seconds, tick),
        Tool::Builtin => builtin(lab, from, to, seconds, tick),
    }
}

/// iperf3's received rate (`end.sum_received.bits_per_second`) in Mbit/s, or its error.
pub fn iperf3_mbps(out: &str) -> Result<f64, String> {
    let v = json::parse(out).map_err(|e| format!("iperf3's answer is not JSON ({e})"))?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(format!("iperf3: {e}"));
    }
    v.get("end")
        .and_then(|e| e.get("sum_received"))
        .and_then(|s| s.get("bits_per_second"))
        .and_then(Value::as_f64)
        .map(|b| b / 1e6)
        .ok_or_else(|| "iperf3's answer has no received rate".to_string())
}

/// Reads all of `r` (up to 1 MiB) on a thread, so a child's full pipe never stalls it.
fn collect(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.take(1 << 20).read_to_string(&mut s);
        s
    })
}

fn iperf3(lab: &Lab, from: usize, to: usize, seconds: u32, tick: Tick<'_>) -> Result<f64, String> {
    let addr = INNER[to].to_string();
    let port = STREAM_PORT.to_string();
    let mut server = Command::new("iperf3");
    server
        .args(["-s", "-1", "-B", &addr, "-p", &port])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut server = lab.ns[to]
        .spawn(&mut server, libc::SIGKILL)
        .map_err(|e| format!("cannot start iperf3: {e}"))?;
    let r = iperf3_client(lab, from, &addr, &port, seconds, tick);
    lab::stop(&mut server);
    r
}

/// The client, retried while the server is not listening yet (a few hundred ms at most).
fn iperf3_client(
    lab: &Lab,
    from: usize,
    addr: &str,
    port: &str,
    seconds: u32,
    tick: Tick<'_>,
) -> Result<f64, String> {
    let secs = seconds.to_string();
    let mut last = String::new();
    for _ in 0..30 {
        let mut cmd = Command::new("iperf3");
        cmd.args(["-c", addr, "-p", port, "-t", &secs, "-i", "0", "-J"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut client = lab.ns[from]
            .spawn(&mut cmd, libc::SIGKILL)
            .map_err(|e| format!("cannot start iperf3: {e}"))?;
        let out = client.stdout.take().map(collect);
        let started = Instant::now();
        let finished = wait_ticking(&mut client, Duration::from_secs(seconds.into()), tick);
        let text = out.and_then(|h| h.join().ok()).unwrap_or_default();
        finished?;
        match iperf3_mbps(&text) {
            Ok(m) => return Ok(m),
            // Refused at once: the server is not listening yet.
            Err(e) if started.elapsed() < Duration::from_secs(2) => {
                last = e;
                std::thread::sleep(TICK);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Waits for `child` to end, ticking; stops it when the tick says so or it overruns.
fn wait_ticking(child: &mut Child, run: Duration, tick: Tick<'_>) -> Result<(), String> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => {}
            Err(e) => return Err(format!("iperf3: {e}")),
        }
        let gone = start.elapsed();
        if !tick(gone.as_secs_f64()) {
            lab::stop(child);
            return Err("interrupted".to_string());
        }
        if gone > run + GRACE {
            lab::stop(child);
            return Err("iperf3 did not finish in time".to_string());
        }
        std::thread::sleep(TICK);
    }
}

/// The stream's two sockets: the sender's in namespace `from`, the receiver's accepted in
/// `to`. The connection's first packet makes the tunnel's handshake.
fn connect(lab: &Lab, from: usize, to: usize) -> Result<(TcpStream, TcpStream), String> {
    let at = SocketAddr::from((INNER[to], STREAM_PORT));
    let enter = |e: std::io::Error| format!("cannot enter the namespace: {e}");
    let listener = lab.ns[to]
        .run(|| TcpListener::bind(at))
        .map_err(enter)?
        .map_err(|e| format!("cannot listen on {at}: {e}"))?;
    let tx = lab.ns[from]
        .run(|| TcpStream::connect_timeout(&at, Duration::from_secs(5)))
        .map_err(enter)?
        .map_err(|e| format!("no connection through the tunnel to {at}: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("accept: {e}"))?;
    // Connected means queued for accept; the loop only covers a slow wake-up.
    for _ in 0..50 {
        match listener.accept() {
            Ok((rx, _)) => {
                rx.set_nonblocking(false)
                    .map_err(|e| format!("accept: {e}"))?;
                return Ok((tx, rx));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(TICK),
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
    Err("the connection was not accepted".to_string())
}

fn send_until(s: TcpStream, until: Instant, stop: &AtomicBool) {
    let buf = vec![0x5au8; 64 << 10];
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        if sys::send(s.as_fd(), &buf, 0).is_err() {
            break;
        }
    }
    let _ = s.shutdown(Shutdown::Write);
}

/// Bytes read until the sender's end, or until `limit`.
fn receive_until(s: TcpStream, limit: Instant, stop: &AtomicBool) -> (u64, Instant) {
    let mut buf = vec![0u8; 64 << 10];
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut bytes = 0u64;
    while Instant::now() < limit && !stop.load(Ordering::Relaxed) {
        match sys::recv(s.as_fd(), &mut buf, 0) {
            Ok(0) => break,
            Ok(n) => bytes += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    (bytes, Instant::now())
}

fn builtin(lab: &Lab, from: usize, to: usize, seconds: u32, tick: Tick<'_>) -> Result<f64, String> {
    let (tx, rx) = connect(lab, from, to)?;
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let run = Duration::from_secs(seconds.into());
    let (s1, s2) = (stop.clone(), stop.clone());
    let sender = std::thread::spawn(move || send_until(tx, start + run, &s1));
    let receiver = std::thread::spawn(move || receive_until(rx, start + run + GRACE, &s2));
    let mut interrupted = false;
    while !receiver.is_finished() {
        if !interrupted && !tick(start.elapsed().as_secs_f64()) {
            interrupted = true;
            stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(TICK);
    }
    let _ = sender.join();
    let (bytes, end) = receiver
        .join()
        .map_err(|_| "the receiver failed".to_string())?;
    if interrupted {
        return Err("interrupted".to_string());
    }
    let secs = end.duration_since(start).as_secs_f64();
    if bytes == 0 || secs <= 0.0 {
        return Err("no data came through the tunnel".to_string());
    }
    Ok(bytes as f64 * 8.0 / secs / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_answers_give_the_received_rate_or_the_error() {
        let ok = r#"{"start":{},"intervals":[],"end":{"sum_sent":{"bits_per_second":9.9e8},
            "sum_received":{"seconds":5.0,"bytes":600000000,"bits_per_second":9.6e8}}}"#;
        assert_eq!(iperf3_mbps(ok), Ok(960.0));
        let err = r#"{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}"#;
        assert_eq!(
            iperf3_mbps(err),
            Err("iperf3: unable to connect to server: Connection refused".to_string())
        );
        assert!(iperf3_mbps("").is_err());
        assert!(iperf3_mbps("{\"end\":{}}").is_err());
    }
}
