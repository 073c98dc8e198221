//! A daemon of its own user beside a root one, started in both orders.

use super::find_tool::find_tool;
use super::*;

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
