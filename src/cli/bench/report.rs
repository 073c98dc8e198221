//! The result: as JSON (the state file LuCI polls, and `--json`), as a table, and as one
//! line to paste into a forum thread.
//!
//! The JSON's keys are a contract with luci-app-solowg: `state`, `progress`, `error`,
//! `seconds`, `tool`, `system` {board, cpu, kernel, release, solowg, wireguard}, `runs`
//! [{impl, dir, mbps, cpu}], `ratio` {up, down}, `line`. Others may be added, none renamed.

use super::json::Value;
use super::system::System;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    Kernel,
    Solowg,
}

impl Impl {
    pub fn name(self) -> &'static str {
        match self {
            Impl::Kernel => "kernel",
            Impl::Solowg => "solowg",
        }
    }
}

/// Up: from the first namespace to the second; down: back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    Done,
    Failed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub imp: Impl,
    pub dir: Dir,
    pub mbps: f64,
    /// Busy fraction of all CPUs, 0..1.
    pub cpu: f64,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub state: State,
    pub progress: String,
    pub error: Option<String>,
    pub seconds: u32,
    /// "iperf3" or "builtin".
    pub tool: &'static str,
    pub system: System,
    pub runs: Vec<Run>,
    /// What the reader should know (the module missing, ...).
    pub notes: Vec<String>,
    pub pid: u32,
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

impl Report {
    /// The mean Mbit/s of `imp`'s runs in `dir`, None without any.
    fn mean(&self, imp: Impl, dir: Dir) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.imp == imp && r.dir == dir)
            .map(|r| r.mbps)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn mean_cpu(&self, imp: Impl, dir: Dir) -> Option<f64> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.imp == imp && r.dir == dir)
            .map(|r| r.cpu)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// solowg's Mbit/s over the kernel module's in `dir`; None unless both ran (and the
    /// module moved something).
    pub fn ratio(&self, dir: Dir) -> Option<f64> {
        let k = self.mean(Impl::Kernel, dir).filter(|&k| k > 0.0)?;
        Some(self.mean(Impl::Solowg, dir)? / k)
    }

    /// One line for a forum: the device, the versions, and per direction each
    /// implementation's Mbit/s and CPU, with the ratio.
    pub fn line(&self) -> String {
        let s = &self.system;
        let mut parts = vec![
            format!("solowg bench: {}", s.board),
            s.cpu.clone(),
            format!("Linux {}", s.kernel),
            s.release.clone(),
            format!(
                "solowg {}, wireguard {}",
                s.solowg,
                s.wireguard.as_deref().unwrap_or("-")
            ),
            format!("{} {} s", self.tool, self.seconds),
        ];
        for dir in [Dir::Up, Dir::Down] {
            let mut d = Vec::new();
            for imp in [Impl::Kernel, Impl::Solowg] {
                if let (Some(m), Some(c)) = (self.mean(imp, dir), self.mean_cpu(imp, dir)) {
                    d.push(format!(
                        "{} {:.1} Mbit/s cpu {:.0}%",
                        imp.name(),
                        m,
                        c * 100.0
                    ));
                }
            }
            if d.is_empty() {
                continue;
            }
            if let Some(r) = self.ratio(dir) {
                d.push(format!("solowg/kernel {r:.2}"));
            }
            parts.push(format!("{}: {}", dir.name(), d.join(", ")));
        }
        parts.join(" | ")
    }

    pub fn to_json(&self) -> Value {
        let state = match self.state {
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
        };
        let runs = self
            .runs
            .iter()
            .map(|r| {
                Value::Obj(vec![
                    ("impl".into(), Value::Str(r.imp.name().into())),
                    ("dir".into(), Value::Str(r.dir.name().into())),
                    ("mbps".into(), Value::Num(round(r.mbps, 1))),
                    ("cpu".into(), Value::Num(round(r.cpu, 3))),
                ])
            })
            .collect();
        let ratio = |d| {
            self.ratio(d)
                .map_or(Value::Null, |r| Value::Num(round(r, 3)))
        };
        Value::Obj(vec![
            ("state".into(), Value::Str(state.into())),
            ("progress".into(), Value::Str(self.progress.clone())),
            ("error".into(), Value::opt_str(self.error.as_deref())),
            ("seconds".into(), Value::Num(self.seconds.into())),
            ("tool".into(), Value::Str(self.tool.into())),
            ("system".into(), self.system.to_json()),
            ("runs".into(), Value::Arr(runs)),
            (
                "ratio".into(),
                Value::Obj(vec![
                    ("up".into(), ratio(Dir::Up)),
                    ("down".into(), ratio(Dir::Down)),
                ]),
            ),
            ("line".into(), Value::Str(self.line())),
            (
                "notes".into(),
                Value::Arr(self.notes.iter().map(|n| Value::Str(n.clone())).collect()),
            ),
            ("pid".into(), Value::Num(self.pid.into())),
        ])
    }

    /// The table a person reads.
    pub fn to_text(&self) -> String {
        let s = &self.system;
        let mut t = String::new();
        t += &format!("board     {}\ncpu       {}\n", s.board, s.cpu);
        t += &format!("kernel    {}\nrelease   {}\n", s.kernel, s.release);
        t += &format!(
            "versions  solowg {}, wireguard module {}\n",
            s.solowg,
            s.wireguard.as_deref().unwrap_or("not loaded")
        );
        t += &format!(
            "traffic   {}, one TCP stream, {} s per run; both tunnel ends on this device\n\n",
            self.tool, self.seconds
        );
        t += "impl     dir    Mbit/s   CPU busy\n";
        for r in &self.runs {
            t += &format!(
                "{:<8} {:<5} {:>7.1}   {:>5.1}%\n",
                r.imp.name(),
                r.dir.name(),
                r.mbps,
                r.cpu * 100.0
            );
        }
        match (self.ratio(Dir::Up), self.ratio(Dir::Down)) {
            (None, None) => t += "\nsolowg/kernel: - (needs a run of each)\n",
            (u, d) => {
                let f = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
                t += &format!("\nsolowg/kernel: up {}, down {}\n", f(u), f(d));
            }
        }
        for n in &self.notes {
            t += &format!("note: {n}\n");
        }
        t += &format!("\nTo share:\n{}\n", self.line());
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::json;

    fn report(runs: Vec<Run>) -> Report {
        Report {
            state: State::Done,
            progress: "done".into(),
            error: None,
            seconds: 5,
            tool: "builtin",
            system: System {
                board: "TP-Link Archer C7 v2".into(),
                cpu: "QCA9558 (MIPS 74Kc V5.0), 1 core".into(),
                kernel: "6.6.73".into(),
                release: "OpenWrt 24.10.0".into(),
                solowg: "0.1.0".into(),
                wireguard: Some("1.0.0".into()),
            },
            runs,
            notes: vec![],
            pid: 7,
        }
    }

    fn run(imp: Impl, dir: Dir, mbps: f64, cpu: f64) -> Run {
        Run {
            imp,
            dir,
            mbps,
            cpu,
        }
    }

    #[test]
    fn ratio_needs_both_and_averages_repeats() {
        let r = report(vec![
            run(Impl::Kernel, Dir::Up, 40.0, 1.0),
            run(Impl::Solowg, Dir::Up, 50.0, 1.0),
            run(Impl::Solowg, Dir::Up, 70.0, 1.0),
            run(Impl::Solowg, Dir::Down, 70.0, 1.0),
        ]);
        assert_eq!(r.ratio(Dir::Up), Some(1.5));
        assert_eq!(r.ratio(Dir::Down), None);
        let only = report(vec![run(Impl::Solowg, Dir::Up, 50.0, 1.0)]);
        assert_eq!(only.ratio(Dir::Up), None);
        let zero = report(vec![
            run(Impl::Kernel, Dir::Up, 0.0, 1.0),
            run(Impl::Solowg, Dir::Up, 50.0, 1.0),
        ]);
        assert_eq!(zero.ratio(Dir::Up), None);
    }

    #[test]
    fn json_has_the_contract_keys_in_order() {
        let r = report(vec![
            run(Impl::Kernel, Dir::Up, 40.04, 0.98765),
            run(Impl::Solowg, Dir::Up, 52.06, 0.5),
        ]);
        let v = json::parse(&r.to_json().to_text()).unwrap();
        let Value::Obj(members) = &v else {
            panic!("not an object")
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys[..9],
            ["state", "progress", "error", "seconds", "tool", "system", "runs", "ratio", "line"]
        );
        assert_eq!(v.get("state").and_then(Value::as_str), Some("done"));
        assert_eq!(v.get("error"), Some(&Value::Null));
        assert_eq!(v.get("seconds").and_then(Value::as_f64), Some(5.0));
        let Some(Value::Arr(runs)) = v.get("runs") else {
            panic!("no runs")
        };
        assert_eq!(runs[0].get("mbps").and_then(Value::as_f64), Some(40.0));
        assert_eq!(runs[0].get("cpu").and_then(Value::as_f64), Some(0.988));
        assert_eq!(runs[1].get("impl").and_then(Value::as_str), Some("solowg"));
        let ratio = v.get("ratio").unwrap();
        assert_eq!(ratio.get("up").and_then(Value::as_f64), Some(1.3));
        assert_eq!(ratio.get("down"), Some(&Value::Null));
        assert_eq!(
            v.get("system")
                .and_then(|s| s.get("wireguard"))
                .and_then(Value::as_str),
            Some("1.0.0")
        );
    }

    #[test]
    fn the_line_says_device_versions_and_each_direction() {
        let r = report(vec![
            run(Impl::Kernel, Dir::Up, 40.0, 1.0),
            run(Impl::Solowg, Dir::Up, 52.0, 0.995),
            run(Impl::Kernel, Dir::Down, 30.0, 1.0),
            run(Impl::Solowg, Dir::Down, 33.0, 1.0),
        ]);
        assert_eq!(
            r.line(),
            "solowg bench: TP-Link Archer C7 v2 | QCA9558 (MIPS 74Kc V5.0), 1 core | \
             Linux 6.6.73 | OpenWrt 24.10.0 | solowg 0.1.0, wireguard 1.0.0 | builtin 5 s | \
             up: kernel 40.0 Mbit/s cpu 100%, solowg 52.0 Mbit/s cpu 100%, solowg/kernel 1.30 | \
             down: kernel 30.0 Mbit/s cpu 100%, solowg 33.0 Mbit/s cpu 100%, solowg/kernel 1.10"
        );
        assert!(!r.line().contains('\n'));
        let text = r.to_text();
        assert!(text.contains("solowg/kernel: up 1.30, down 1.10"), "{text}");
    }
}
