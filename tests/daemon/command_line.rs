//! The command line: errors and information options, the key commands, `show`.

use super::*;

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
    let _turn = busy_or_show_all();
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
