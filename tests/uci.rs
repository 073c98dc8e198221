//! solowg's UCI reader against the real `uci` CLI (libuci), built from the sources in the
//! libuci-sys crate by tests/uci/build-uci.sh. Set SOLOWG_UCI_BIN to the built binary; without
//! it these tests say loudly that they skipped and pass.
//!
//! Every `uci` call gets its own config dir (-c) and save dir (-t), so nothing outside the
//! test's temp dir is read or written (apart from libuci's built-in /tmp/.uci delta dir, which
//! is checked to hold nothing for the package used).

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use solowg::openwrt::config::{self, ErrorScope, KeySpec, NetworkConfig};
use solowg::openwrt::uci::{self, Package, Value};
use solowg::proto::allowedips::parse_prefix_or_host;
use solowg::proto::peer::base64;

const PKG: &str = "network";

fn uci_bin(test: &str) -> Option<PathBuf> {
    match std::env::var_os("SOLOWG_UCI_BIN") {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "SOLOWG_UCI_BIN={} does not exist; build it with tests/uci/build-uci.sh",
                p.display()
            );
            assert!(
                std::fs::metadata(Path::new("/tmp/.uci").join(PKG)).map_or(true, |m| m.len() == 0),
                "/tmp/.uci/{PKG} holds changes: libuci would apply them to every test config"
            );
            Some(p)
        }
        None => {
            // Written to the real stderr: the test harness would swallow eprintln! output.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED {test}: SOLOWG_UCI_BIN is not set. Build the real uci CLI with \
                 `tests/uci/build-uci.sh DIR` and run with SOLOWG_UCI_BIN=DIR/uci. ***"
            );
            None
        }
    }
}

/// A config dir and save dir of our own, removed on drop.
struct Uci {
    bin: PathBuf,
    root: PathBuf,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Uci {
    fn new(bin: PathBuf) -> Self {
        let root = std::env::temp_dir().join(format!(
            "solowg-uci-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("config")).unwrap();
        std::fs::create_dir_all(root.join("save")).unwrap();
        let u = Uci { bin, root };
        u.write(b"");
        u
    }

    fn path(&self) -> PathBuf {
        self.root.join("config").join(PKG)
    }

    fn write(&self, text: &[u8]) {
        std::fs::write(self.path(), text).unwrap();
    }

    fn read(&self) -> String {
        std::fs::read_to_string(self.path()).unwrap()
    }

    /// Runs `uci -S -c CONFIG -t SAVE ARGS`; returns (success, stdout, stderr).
    fn try_run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(&self.bin)
            .arg("-S")
            .arg("-c")
            .arg(self.root.join("config"))
            .arg("-t")
            .arg(self.root.join("save"))
            .args(args)
            .output()
            .expect("run uci");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn run(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.try_run(args);
        assert!(ok, "uci {args:?} failed: {err}");
        out
    }

    fn set(&self, key: &str, value: &str) {
        self.run(&["set", &format!("{PKG}.{key}={value}")]);
    }

    fn add_list(&self, key: &str, value: &str) {
        self.run(&["add_list", &format!("{PKG}.{key}={value}")]);
    }

    /// `uci add`: a new anonymous section; returns its generated name.
    fn add(&self, ty: &str) -> String {
        self.run(&["add", PKG, ty]).trim().to_owned()
    }

    fn commit(&self) {
        self.run(&["commit", PKG]);
    }

    fn get(&self, key: &str) -> Option<String> {
        let (ok, out, _) = self.try_run(&["-q", "get", &format!("{PKG}.{key}")]);
        ok.then(|| out.strip_suffix('\n').unwrap_or(&out).to_owned())
    }
}

impl Drop for Uci {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `uci show`'s value quoting.
fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "'\\''"))
}

/// Our parse printed the way `uci show` prints a package.
fn render_show(pkg: &Package) -> String {
    let mut out = String::new();
    for s in &pkg.sections {
        out += &format!("{PKG}.{}={}\n", s.display_name, s.section_type);
        for (name, v) in &s.options {
            let items: Vec<String> = v.items().iter().map(|i| quote(i)).collect();
            out += &format!("{PKG}.{}.{name}={}\n", s.display_name, items.join(" "));
        }
    }
    out
}

/// Our parse printed the way `uci export` prints it (tells lists from options).
fn render_export(pkg: &Package) -> String {
    let mut out = format!("package {PKG}\n");
    for s in &pkg.sections {
        out += &format!("\nconfig {}", quote(&s.section_type).trim_matches('\''));
        if let Some(n) = &s.name {
            out += &format!(" {}", quote(n));
        }
        out += "\n";
        for (name, v) in &s.options {
            match v {
                Value::Single(x) => out += &format!("\toption {name} {}\n", quote(x)),
                Value::List(l) => {
                    for x in l {
                        out += &format!("\tlist {name} {}\n", quote(x));
                    }
                }
            }
        }
    }
    out + "\n"
}

/// The file as `uci` reads it equals the file as we read it: sections, options, lists, order,
/// anonymous section names and parse errors.
fn assert_same_as_uci(u: &Uci) -> Package {
    let text = std::fs::read(u.path()).unwrap();
    let (pkg, errors) = uci::parse_bytes(&text);
    let (ok, show, stderr) = u.try_run(&["show", PKG]);
    assert!(ok || pkg.sections.is_empty(), "uci show failed: {stderr}");
    let ours = render_show(&pkg);
    let file = String::from_utf8_lossy(&text);
    assert_eq!(ours, show, "uci show differs for file:\n{file}");
    let errs: String = errors.iter().map(|e| format!("{e}\n")).collect();
    assert_eq!(errs, stderr, "parse errors differ for file:\n{file}");
    if !pkg.sections.is_empty() {
        assert_eq!(
            render_export(&pkg),
            u.run(&["export", PKG]),
            "uci export differs for file:\n{file}"
        );
    }
    pkg
}

/// Every field solowg read matches what `uci get` returns for that section and option.
fn assert_config_matches_uci_get(u: &Uci, cfg: &NetworkConfig) {
    fn prefixes(v: &str) -> Vec<(IpAddr, u8)> {
        v.split_whitespace()
            .map(|w| parse_prefix_or_host(w).unwrap())
            .collect()
    }
    for i in &cfg.interfaces {
        let g = |o: &str| u.get(&format!("{}.{o}", i.name));
        assert_eq!(g("proto").as_deref(), Some("solowg"));
        match (&i.private_key, g("private_key")) {
            (KeySpec::Key(k), Some(v)) => assert_eq!(base64(&k[..]), v),
            (KeySpec::Generate, v) => assert!(v.is_none() || v.as_deref() == Some("generate")),
            (KeySpec::Key(_), None) => panic!("key without private_key option"),
        }
        assert_eq!(i.listen_port.map(|p| p.to_string()), g("listen_port"));
        assert_eq!(i.addresses, prefixes(&g("addresses").unwrap_or_default()));
        assert_eq!(i.mtu.map(|m| m.to_string()), g("mtu"));
        let fw = g("fwmark").and_then(|v| config::parse_fwmark(&v).unwrap());
        assert_eq!(i.fwmark, fw);
        let p6: Vec<(IpAddr, u8)> = i
            .ip6prefix
            .iter()
            .map(|(a, l)| (IpAddr::V6(*a), *l))
            .collect();
        assert_eq!(p6, prefixes(&g("ip6prefix").unwrap_or_default()));
        assert_eq!(
            i.nohostroute,
            g("nohostroute").is_some_and(|v| config::parse_bool(&v).unwrap())
        );
        assert_eq!(i.tunlink, g("tunlink"));
        for p in &i.peers {
            let g = |o: &str| u.get(&format!("{}.{o}", p.section));
            let ty = u.get(&p.section).unwrap();
            assert!(ty == format!("solowg_{}", i.name) || ty == format!("wireguard_{}", i.name));
            assert_eq!(Some(base64(&p.public_key)), g("public_key"));
            assert_eq!(
                p.preshared_key.as_ref().map(|k| base64(&k[..])),
                g("preshared_key")
            );
            assert_eq!(
                p.allowed_ips,
                prefixes(&g("allowed_ips").unwrap_or_default())
            );
            let b = |o: &str| g(o).is_some_and(|v| config::parse_bool(&v).unwrap());
            assert_eq!(p.route_allowed_ips, b("route_allowed_ips"));
            assert_eq!(
                p.endpoint_host,
                g("endpoint_host").map(|h| h.trim_matches(['[', ']']).to_owned())
            );
            assert_eq!(
                p.endpoint_port.to_string(),
                g("endpoint_port").unwrap_or("51820".into())
            );
            assert_eq!(
                p.persistent_keepalive.to_string(),
                g("persistent_keepalive").unwrap_or("0".into())
            );
            assert_eq!(p.description, g("description"));
            assert_eq!(p.disabled, b("disabled"));
        }
    }
}

fn key(n: u8) -> String {
    base64(&[n; 32])
}

fn load(u: &Uci) -> NetworkConfig {
    config::parse_network(&u.read())
}

#[test]
fn every_option_written_by_the_uci_cli() {
    let Some(bin) = uci_bin("every_option_written_by_the_uci_cli") else {
        return;
    };
    let u = Uci::new(bin);
    u.set("lan", "interface");
    u.set("lan.proto", "static");
    u.set("wg0", "interface");
    u.set("wg0.proto", "solowg");
    u.set("wg0.private_key", &key(1));
    u.set("wg0.listen_port", "51820");
    u.add_list("wg0.addresses", "10.9.0.1/24");
    u.add_list("wg0.addresses", "fd00:9::1");
    u.set("wg0.mtu", "1420");
    u.set("wg0.fwmark", "0x51");
    u.add_list("wg0.ip6prefix", "fd00:10::/48");
    u.add_list("wg0.ip6prefix", "fd00:11::/48");
    u.set("wg0.nohostroute", "1");
    u.set("wg0.tunlink", "wan");
    u.set("wg0.metric", "10"); // netifd's, ignored by solowg
    for n in 0..3u8 {
        let s = u.add("solowg_wg0");
        assert!(s.starts_with("cfg"), "{s}");
        let at = format!("@solowg_wg0[{n}]");
        u.set(&format!("{at}.public_key"), &key(10 + n));
        u.add_list(
            &format!("{at}.allowed_ips"),
            &format!("10.9.0.{}/32", n + 2),
        );
        u.add_list(&format!("{at}.allowed_ips"), &format!("fd00:9::{}", n + 2));
        u.set(
            &format!("{at}.endpoint_host"),
            &format!("vpn{n}.example.org"),
        );
    }
    let p0 = "@solowg_wg0[0]";
    u.set(&format!("{p0}.preshared_key"), &key(99));
    u.set(&format!("{p0}.route_allowed_ips"), "1");
    u.set(&format!("{p0}.endpoint_port"), "4500");
    u.set(&format!("{p0}.persistent_keepalive"), "25");
    u.set(
        &format!("{p0}.description"),
        "Bob's \"laptop\" #1; $HOME \\ `x`",
    );
    u.set("@solowg_wg0[1].description", "line one\nline two\n\ttabbed");
    u.set("@solowg_wg0[1].endpoint_host", "2001:db8::1");
    u.set("@solowg_wg0[2].disabled", "1");
    u.set("@solowg_wg0[2].route_allowed_ips", "yes");
    u.set("@solowg_wg0[2].allowed_ips", "10.9.9.0/24 10.9.8.0/24"); // list replaced by option
    u.set("named_peer", "solowg_wg0");
    u.set("named_peer.public_key", &key(20));
    u.set("named_peer.description", "it's named");
    u.commit();

    let pkg = assert_same_as_uci(&u);
    assert_eq!(pkg.sections.len(), 6);
    let cfg = load(&u);
    assert!(cfg.errors.is_empty(), "{:?}", cfg.errors);
    assert_eq!(cfg.interfaces.len(), 1);
    let i = &cfg.interfaces[0];
    assert_eq!(i.peers.len(), 4);
    assert_eq!(
        i.peers[0].description.as_deref(),
        Some("Bob's \"laptop\" #1; $HOME \\ `x`")
    );
    assert_eq!(i.peers[0].preshared_key.as_deref(), Some(&[99; 32]));
    assert_eq!(
        i.peers[1].description.as_deref(),
        Some("line one\nline two\n\ttabbed")
    );
    assert_eq!(i.peers[2].allowed_ips.len(), 2);
    assert!(i.peers[2].disabled);
    assert_eq!(i.peers[3].section, "named_peer");
    assert_eq!(i.ip6prefix.len(), 2);
    assert_config_matches_uci_get(&u, &cfg);

    // Editing through the CLI keeps us in step: delete a peer, change one, clear an option.
    u.run(&["delete", &format!("{PKG}.@solowg_wg0[1]")]);
    u.set("@solowg_wg0[0].persistent_keepalive", "");
    u.set("@solowg_wg0[0].endpoint_port", "51821");
    u.run(&["del_list", &format!("{PKG}.wg0.addresses=fd00:9::1")]);
    u.commit();
    assert_same_as_uci(&u);
    let cfg = load(&u);
    assert!(cfg.errors.is_empty(), "{:?}", cfg.errors);
    let i = &cfg.interfaces[0];
    assert_eq!(i.peers.len(), 3);
    assert_eq!(i.peers[0].persistent_keepalive, 0);
    assert_eq!(i.peers[0].endpoint_port, 51821);
    assert_eq!(i.addresses.len(), 1);
    assert_config_matches_uci_get(&u, &cfg);
}

#[test]
fn kernel_wireguard_config_migrates_by_changing_proto() {
    let Some(bin) = uci_bin("kernel_wireguard_config_migrates_by_changing_proto") else {
        return;
    };
    let u = Uci::new(bin);
    u.set("wg0", "interface");
    u.set("wg0.proto", "wireguard");
    u.set("wg0.private_key", &key(1));
    u.add_list("wg0.addresses", "10.9.0.1/24");
    for n in 0..2u8 {
        u.add("wireguard_wg0");
        let at = format!("@wireguard_wg0[{n}]");
        u.set(&format!("{at}.public_key"), &key(30 + n));
        u.set(&format!("{at}.description"), &format!("kernel peer {n}"));
        u.add_list(&format!("{at}.allowed_ips"), "0.0.0.0/0");
        u.add_list(&format!("{at}.allowed_ips"), "::/0");
        u.set(&format!("{at}.route_allowed_ips"), "0");
    }
    u.commit();
    assert!(
        load(&u).interfaces.is_empty(),
        "proto wireguard is not ours"
    );

    u.set("wg0.proto", "solowg");
    // A solowg_ section of the same interface is read alongside the kernel ones.
    u.add("solowg_wg0");
    u.set("@solowg_wg0[0].public_key", &key(40));
    u.commit();
    assert_same_as_uci(&u);
    let cfg = load(&u);
    assert!(cfg.errors.is_empty(), "{:?}", cfg.errors);
    let peers: Vec<_> = cfg.interfaces[0]
        .peers
        .iter()
        .map(|p| p.section.as_str())
        .collect();
    assert_eq!(
        peers,
        ["@wireguard_wg0[0]", "@wireguard_wg0[1]", "@solowg_wg0[0]"]
    );
    assert_eq!(
        cfg.interfaces[0].peers[1].allowed_ips[1],
        ("::".parse().unwrap(), 0)
    );
    assert_config_matches_uci_get(&u, &cfg);
}

#[test]
fn bad_values_give_clear_errors() {
    let Some(bin) = uci_bin("bad_values_give_clear_errors") else {
        return;
    };
    let u = Uci::new(bin);
    u.set("wg0", "interface");
    u.set("wg0.proto", "solowg");
    u.set("wg1", "interface");
    u.set("wg1.proto", "solowg");
    u.set("wg1.listen_port", "70000");
    let bad: &[(&str, &str)] = &[
        ("public_key", "not-a-key"),
        ("allowed_ips", "10.0.0.1/40"),
        ("endpoint_port", "http"),
        ("persistent_keepalive", "-1"),
        ("route_allowed_ips", "sometimes"),
        ("endpoint_host", "bad host"),
    ];
    for (n, (opt, val)) in bad.iter().enumerate() {
        u.add("solowg_wg0");
        let at = format!("@solowg_wg0[{n}]");
        u.set(&format!("{at}.description"), &format!("peer {n}"));
        if *opt != "public_key" {
            u.set(&format!("{at}.public_key"), &key(50 + n as u8));
        }
        u.set(&format!("{at}.{opt}"), val);
    }
    u.add("solowg_wg0");
    u.set("@solowg_wg0[-1].public_key", &key(1));
    u.set("@solowg_wg0[-1].preshared_key", "top-secret-psk");
    u.commit();
    assert_same_as_uci(&u);
    let cfg = load(&u);
    let msgs: Vec<String> = cfg.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "network.@solowg_wg0[0] (peer 'peer 0'): public_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
            "network.@solowg_wg0[1] (peer 'peer 1'): allowed_ips: '10.0.0.1/40' is not an IPv4 or IPv6 address with an optional /prefix length",
            "network.@solowg_wg0[2] (peer 'peer 2'): endpoint_port: 'http' is not a number from 1 to 65535",
            "network.@solowg_wg0[3] (peer 'peer 3'): persistent_keepalive: '-1' is not a number from 0 to 65535",
            "network.@solowg_wg0[4] (peer 'peer 4'): route_allowed_ips: 'sometimes' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)",
            "network.@solowg_wg0[5] (peer 'peer 5'): endpoint_host: 'bad host' is not a host name or IP address",
            "network.@solowg_wg0[6]: preshared_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
            "network.wg1: listen_port: '70000' is not a number from 0 to 65535",
        ]
    );
    assert!(!msgs.iter().any(|m| m.contains("top-secret")));
    assert_eq!(cfg.errors[7].scope, ErrorScope::Interface);
    assert_eq!(cfg.failed_interfaces, ["wg1"]);
    assert_eq!(cfg.interfaces.len(), 1);
    assert!(cfg.interfaces[0].peers.is_empty());
    // The locations name sections the way the CLI addresses them.
    for e in &cfg.errors[..7] {
        let sec = e.location.strip_prefix("network.").unwrap();
        assert_eq!(u.get(sec).as_deref(), Some("solowg_wg0"), "{sec}");
        assert!(u
            .get(&format!("{sec}.{}", e.option.as_deref().unwrap()))
            .is_some());
    }
}

/// Files people write by hand: comments, other quoting styles, syntax errors. Compared against
/// `uci -S` (non-strict, like netifd).
#[test]
fn hand_written_files_read_like_uci() {
    let Some(bin) = uci_bin("hand_written_files_read_like_uci") else {
        return;
    };
    let u = Uci::new(bin);
    let k = key(7);
    let files: Vec<String> = vec![
        format!("# comment\n\nconfig interface 'wg0'   # trailing\n\t# indented\n\toption proto 'solowg' # after\n\toption mtu 1420#glued\nconfig solowg_wg0\n\toption public_key {k}\n"),
        format!("config interface wg0\n\toption proto solowg\n\tlist addresses 10.0.0.1/24\n\toption addresses 10.0.0.2/24\nconfig wireguard_wg0 peer1\n\toption public_key \"{k}\"\n"),
        "config interface \"wg0\"\n\toption description \"say \\\"hi\\\" \\\\ \\$x it's\"\n".into(),
        "config interface 'wg0'\r\n\toption mtu '1420'\r\n".into(),
        "config interface 'wg0'\n\toption mtu 1\nconfig interface 'lan'\n\toption proto static\nconfig interface 'wg0'\n\toption fwmark 0x1\n".into(),
        "config interface 'wg0'; option mtu 1; option proto solowg\nconfig interface 'wg1'; option mtu '1'; option proto solowg\n".into(),
        "c interface 'wg0'\n\to mtu 1\n\tl addresses 10.0.0.1/24\n\tl addresses ''\n".into(),
        "package network\n\nconfig interface 'wg0'\n\toption description 'a'\"b\"c\\ d\n\toption x abc\\\ndef\n".into(),
        "config interface 'wg-0'\n\toption mtu 1\nconfig interface ok\n\toptions mtu 1\n\toption my-opt 2\n\toption mtu 1 2 3\n".into(),
        "config interface 'wg0'\n\toption description 'multi\nline'\n\toption d2 \"also\nmulti\"\n\toption unterminated 'abc\n".into(),
        "option mtu 1\nconfig interface 'wg0'\nconfig foo 'wg0'\nconfig\nconfig \nconfig a\x01b\n\toption '' 1\n".into(),
    ];
    for f in &files {
        u.write(f.as_bytes());
        assert_same_as_uci(&u);
    }
}

/// xorshift64*, fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// Random files assembled from UCI's tricky pieces, read by libuci and by us: the results
/// (sections, options, errors with line and byte) must be identical. Bounded: 400 files.
#[test]
fn random_files_read_like_uci() {
    let Some(bin) = uci_bin("random_files_read_like_uci") else {
        return;
    };
    let u = Uci::new(bin);
    let commands = [
        "config", "c", "option", "o", "list", "l", "package", "configx", "#", "",
    ];
    let words = [
        "wg0",
        "interface",
        "solowg_wg0",
        "a",
        "'b c'",
        "\"d e\"",
        "x-y",
        "''",
        "\"\"",
        "'it'\\''s'",
        "a\\ b",
        "\\\n",
        "'multi\nline'",
        "\"q\\\"\"",
        "#c",
        "a#b",
        ";",
        "x;",
        "'x';",
        "\"\\\\\"",
        "\t",
        "  ",
        "'",
        "\"",
        "\\",
        "ä",
        "1\x0b2",
        "\r",
        "a\\\n  b",
    ];
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for _ in 0..400 {
        let mut text = String::new();
        for _ in 0..(rng.next() % 8) {
            text += rng.pick(&["", "\t", "  "]);
            text += rng.pick(&commands);
            for _ in 0..(rng.next() % 5) {
                text += rng.pick(&[" ", "\t", ""]);
                text += rng.pick(&words);
            }
            text += "\n";
        }
        u.write(text.as_bytes());
        assert_same_as_uci(&u);
    }
}

/// netifd sets interfaces up in parallel, each handler running `solowg export`: exports at
/// the same time make one key for a keyless interface, not one each.
#[test]
fn concurrent_exports_make_one_key() {
    use solowg::openwrt::handover;
    let Some(bin) = uci_bin("concurrent_exports_make_one_key") else {
        return;
    };
    let u = Uci::new(bin);
    for i in ["wg0", "wg1", "wg2"] {
        u.set(i, "interface");
        u.set(&format!("{i}.proto"), "solowg");
    }
    u.run(&["commit", PKG]);
    let runs: Vec<_> = (0..6)
        .map(|n| {
            let opts = handover::Options {
                config_dir: u.root.join("config"),
                uci: u.bin.display().to_string(),
                to_dir: u.root.join(format!("run{n}")),
                links_in: None,
            };
            std::thread::spawn(move || handover::run(&opts).expect("export"))
        })
        .collect();
    let outs: Vec<_> = runs.into_iter().map(|t| t.join().unwrap()).collect();
    let mut saved: Vec<String> = outs.iter().flat_map(|o| o.keys_saved.clone()).collect();
    saved.sort();
    assert_eq!(saved, ["wg0", "wg1", "wg2"], "{outs:?}");
    let file = load(&u);
    for n in 0..6 {
        let text = std::fs::read_to_string(u.root.join(format!("run{n}/network"))).unwrap();
        let copy = config::parse_network(&text);
        for i in ["wg0", "wg1", "wg2"] {
            match (
                &file.interface(i).unwrap().private_key,
                &copy.interface(i).unwrap().private_key,
            ) {
                (KeySpec::Key(a), KeySpec::Key(b)) => assert_eq!(a[..], b[..], "run{n} {i}"),
                _ => panic!("run{n} {i}: no key"),
            }
        }
    }
}

/// `solowg export` (root, before `up` and `reload`): a `proto solowg` interface without a
/// key gets one, saved by the real `uci batch` from its standard input; the copy handed to
/// the daemon holds that interface, its peers (both section types) and nothing else of the
/// file, mode 0600, and reads the same as the original; the rest of the file is untouched.
#[test]
fn export_saves_keys_and_hands_over_only_solowg_sections() {
    use solowg::openwrt::handover::{self, key_commands};
    use std::os::unix::fs::PermissionsExt;
    let Some(bin) = uci_bin("export_saves_keys_and_hands_over_only_solowg_sections") else {
        return;
    };
    let u = Uci::new(bin);
    u.set("wan", "interface");
    u.set("wan.proto", "pppoe");
    u.set("wan.password", "pppoe-secret");
    u.set("kwg", "interface");
    u.set("kwg.proto", "wireguard");
    u.set("kwg.private_key", &key(9));
    u.set("wg0", "interface");
    u.set("wg0.proto", "solowg");
    u.set("wg0.listen_port", "51820");
    u.add_list("wg0.addresses", "10.9.0.1/24");
    u.set("peer1", "solowg_wg0");
    u.set("peer1.public_key", &key(3));
    u.set("peer1.description", "it's \"quoted\"\nacross lines");
    u.add_list("peer1.allowed_ips", "10.9.0.2/32");
    let anon = u.add("wireguard_wg0");
    u.set(&format!("{anon}.public_key"), &key(4));
    u.set("wg1", "interface");
    u.set("wg1.proto", "solowg");
    u.set("wg1.private_key", &key(5));
    u.run(&["commit", PKG]);
    let before_other = u.run(&["show", "network.wan"]);
    let to = u.root.join("run");
    let opts = handover::Options {
        config_dir: u.root.join("config"),
        uci: u.bin.display().to_string(),
        to_dir: to.clone(),
        links_in: None,
    };
    let out = handover::run(&opts).expect("export");
    assert_eq!(out.keys_saved, ["wg0"]);
    assert!(out.keys_not_saved.is_empty(), "{:?}", out.keys_not_saved);
    assert_eq!(out.sections, 4);
    let saved = u.run(&["get", "network.wg0.private_key"]);
    assert_eq!(saved.trim().len(), 44);
    assert_eq!(u.run(&["show", "network.wan"]), before_other);
    let handed = std::fs::read_to_string(to.join("network")).unwrap();
    let mode = std::fs::metadata(to.join("network"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        !handed.contains("pppoe-secret") && !handed.contains(&key(9)),
        "{handed}"
    );
    let orig = load(&u);
    let copy = config::parse_network(&handed);
    assert!(copy.errors.is_empty(), "{:?}", copy.errors);
    for name in ["wg0", "wg1"] {
        let (a, b) = (orig.interface(name).unwrap(), copy.interface(name).unwrap());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        match (&a.private_key, &b.private_key) {
            (KeySpec::Key(x), KeySpec::Key(y)) => assert_eq!(x[..], y[..]),
            _ => panic!("{name}: no key handed over"),
        }
    }
    assert_eq!(copy.interface("wg0").unwrap().peers.len(), 2);
    // Run again: nothing to generate, the same copy.
    let again = handover::run(&opts).expect("export");
    assert!(again.keys_saved.is_empty());
    assert_eq!(std::fs::read_to_string(to.join("network")).unwrap(), handed);

    // A key `uci` cannot save is reported, and not handed over: the daemon keeps one in
    // memory instead of taking a new identity at every export.
    u.run(&["set", "network.wg1.private_key=generate"]);
    u.run(&["commit", PKG]);
    let failing = handover::Options {
        uci: "false".into(),
        ..opts
    };
    let out = handover::run(&failing).expect("export");
    assert!(out.keys_saved.is_empty());
    assert!(
        out.keys_not_saved[0].starts_with("wg1: "),
        "{:?}",
        out.keys_not_saved
    );
    let handed = config::parse_network(&std::fs::read_to_string(to.join("network")).unwrap());
    assert!(matches!(
        handed.interface("wg1").unwrap().private_key,
        KeySpec::Generate
    ));

    // Syntax errors: nothing handed over (the daemon keeps what it has).
    let keep = std::fs::read_to_string(to.join("network")).unwrap();
    std::fs::write(u.path(), format!("{}\nconfig 'broken\n", u.read())).unwrap();
    assert!(handover::run(&failing).is_err());
    assert_eq!(std::fs::read_to_string(to.join("network")).unwrap(), keep);

    // Anything but a UCI name would change the batch's meaning: refused.
    let secret = zeroize::Zeroizing::new([0xa7u8; 32]);
    assert!(key_commands("wg0", &secret).is_some());
    for bad in ["", "wg0'\ncommit", "wg 0", "wg0.x", "wg0;"] {
        assert!(key_commands(bad, &secret).is_none(), "{bad:?}");
    }
}
