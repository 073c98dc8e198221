//! What the result says about the device: board, SoC or CPU, kernel, OpenWrt release, and
//! the versions of solowg and the WireGuard module. From `ubus call system board` where
//! ubus answers (OpenWrt), else from /proc/cpuinfo, the device tree, DMI and os-release.

use super::json::{self, Value};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct System {
    pub board: String,
    pub cpu: String,
    pub kernel: String,
    pub release: String,
    pub solowg: String,
    /// The module's version, None when it is not loaded.
    pub wireguard: Option<String>,
}

impl System {
    pub fn to_json(&self) -> Value {
        let s = |v: &str| Value::Str(v.to_string());
        Value::Obj(vec![
            ("board".into(), s(&self.board)),
            ("cpu".into(), s(&self.cpu)),
            ("kernel".into(), s(&self.kernel)),
            ("release".into(), s(&self.release)),
            ("solowg".into(), s(&self.solowg)),
            (
                "wireguard".into(),
                Value::opt_str(self.wireguard.as_deref()),
            ),
        ])
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!s.is_empty()).then(|| s.to_string())
}

/// The WireGuard module's version (/sys/module/wireguard/version), None if not loaded.
pub fn wireguard_version() -> Option<String> {
    read_trimmed("/sys/module/wireguard/version")
}

/// What `ubus call system board` answers, if ubus is there and answers within a few seconds.
fn ubus_board() -> Option<Value> {
    let mut cmd = Command::new("ubus");
    cmd.args(["-t", "3", "call", "system", "board"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = crate::sys::netns::spawn_tied(&mut cmd, libc::SIGKILL).ok()?;
    let until = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok()?.is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(64 << 10)
        .read_to_string(&mut out)
        .ok()?;
    json::parse(&out).ok()
}

/// The value of `key` in /proc/cpuinfo's text (first occurrence).
fn cpuinfo_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim().eq_ignore_ascii_case(key) && !v.trim().is_empty()).then(|| v.trim())
    })
}

/// The board and the CPU from /proc/cpuinfo: MIPS names the board (`machine`), the SoC
/// (`system type`) and the core (`cpu model`); x86 and ARM the core (`model name`) and
/// older ARM the SoC (`Hardware`). The number of CPUs is added.
pub fn from_cpuinfo(text: &str) -> (Option<String>, String) {
    let board = cpuinfo_field(text, "machine").map(str::to_string);
    let soc = cpuinfo_field(text, "system type").or_else(|| cpuinfo_field(text, "Hardware"));
    let core = cpuinfo_field(text, "cpu model").or_else(|| cpuinfo_field(text, "model name"));
    let mut cpu = match (soc, core) {
        (Some(s), Some(c)) => format!("{s} ({c})"),
        (Some(x), None) | (None, Some(x)) => x.to_string(),
        (None, None) => "unknown CPU".to_string(),
    };
    let n = text
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count()
        .max(1);
    cpu.push_str(&format!(", {n} {}", if n == 1 { "core" } else { "cores" }));
    (board, cpu)
}

/// The value of `key` in a shell-style file (/etc/openwrt_release, /etc/os-release), its
/// quotes taken off.
pub fn shell_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix(key)?.strip_prefix('=')?;
        let v = v.trim();
        let v = v
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(v);
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The board's name where no ubus says it: the device tree's model (ARM, MIPS), else DMI.
fn board_fallback() -> Option<String> {
    if let Some(m) = read_trimmed("/sys/firmware/devicetree/base/model") {
        return Some(m);
    }
    let vendor = read_trimmed("/sys/class/dmi/id/sys_vendor");
    let product = read_trimmed("/sys/class/dmi/id/product_name")?;
    Some(match vendor {
        Some(v) if !product.starts_with(&v) => format!("{v} {product}"),
        _ => product,
    })
}

fn release() -> String {
    if let Some(d) = std::fs::read_to_string("/etc/openwrt_release")
        .ok()
        .and_then(|t| shell_value(&t, "DISTRIB_DESCRIPTION"))
    {
        return d;
    }
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| shell_value(&t, "PRETTY_NAME"))
        .unwrap_or_else(|| "unknown".to_string())
}

/// `s` with control characters (a newline in a device tree's model) as spaces, and at
/// most 120 characters: the result is one line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect::<String>()
        .trim()
        .to_string()
}

/// Reads it all (ubus is asked once).
pub fn gather() -> System {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (cpu_board, mut cpu) = from_cpuinfo(&cpuinfo);
    let ubus = ubus_board();
    let ubus_str = |k: &str| {
        ubus.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    // ubus's `system` is the SoC as the kernel names it: the same text as `system type`.
    if let Some(soc) = ubus_str("system").filter(|s| !cpu.contains(s.as_str())) {
        cpu = format!("{soc}; {cpu}");
    }
    let board = ubus_str("model")
        .or(cpu_board)
        .or_else(board_fallback)
        .unwrap_or_else(|| "unknown board".to_string());
    System {
        board: one_line(&board),
        cpu: one_line(&cpu),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        release: one_line(&release()),
        solowg: env!("CARGO_PKG_VERSION").to_string(),
        wireguard: wireguard_version(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mips_cpuinfo_names_board_soc_and_core() {
        let text = "system type\t\t: Qualcomm Atheros QCA9558 ver 1 rev 0\n\
                    machine\t\t\t: TP-Link Archer C7 v2\n\
                    processor\t\t: 0\n\
                    cpu model\t\t: MIPS 74Kc V5.0\n\
                    BogoMIPS\t\t: 358.80\n";
        let (board, cpu) = from_cpuinfo(text);
        assert_eq!(board.as_deref(), Some("TP-Link Archer C7 v2"));
        assert_eq!(
            cpu,
            "Qualcomm Atheros QCA9558 ver 1 rev 0 (MIPS 74Kc V5.0), 1 core"
        );
    }

    #[test]
    fn x86_cpuinfo_names_the_core_and_counts() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(
            from_cpuinfo(text),
            (None, "AMD EPYC 7B13, 2 cores".to_string())
        );
        assert_eq!(from_cpuinfo(""), (None, "unknown CPU, 1 core".to_string()));
        assert_eq!(
            from_cpuinfo("garbage\n:\n::"),
            (None, "unknown CPU, 1 core".to_string())
        );
    }

    #[test]
    fn release_files_are_read_as_the_shell_would() {
        let owrt = "DISTRIB_ID='OpenWrt'\nDISTRIB_RELEASE='24.10.0'\nDISTRIB_DESCRIPTION='OpenWrt 24.10.0 r28427-6df0e3d02a'\n";
        assert_eq!(
            shell_value(owrt, "DISTRIB_DESCRIPTION").as_deref(),
            Some("OpenWrt 24.10.0 r28427-6df0e3d02a")
        );
        let os = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(
            shell_value(os, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(shell_value(os, "ID").as_deref(), Some("debian"));
        assert_eq!(shell_value(os, "NAME").as_deref(), Some("Debian GNU/Linux"));
        assert_eq!(shell_value("X=''\n", "X"), None);
        assert_eq!(shell_value("'\n", "X"), None);
    }

    #[test]
    fn descriptions_are_one_line() {
        assert_eq!(one_line(" a\nb\t\u{0}c "), "a b  c");
        assert_eq!(one_line(&"x".repeat(500)).len(), 120);
    }

    #[test]
    fn system_as_json_keeps_the_contract_keys() {
        let s = System {
            board: "b".into(),
            wireguard: None,
            ..Default::default()
        };
        assert_eq!(
            s.to_json().to_text(),
            r#"{"board":"b","cpu":"","kernel":"","release":"","solowg":"","wireguard":null}"#
        );
    }
}
