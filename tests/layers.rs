//! The layer order stated in `src/lib.rs` holds in the sources: no file names a layer listed
//! after its own. The order is read from lib.rs's numbered list (its one statement); every
//! `crate::` and `super::` path in `src/` is resolved to the top-level module it names.
//! Modules lib.rs declares outside the list (`log`, the tests' `testing`) may be used by every
//! layer and use none. And no two files name each other, directly or round a circle
//! (`layers/cycles.rs`).

// Its own file; a crate root looks for `mod` files beside it, hence the path.
#[path = "layers/cycles.rs"]
mod cycles;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers of lib.rs's numbered list (`//! 1. [`crypto`]: ...`), lowest first, and the
/// other top-level modules it declares.
fn read_order(lib_rs: &str) -> (Vec<String>, Vec<String>) {
    let mut layers = Vec::new();
    for line in lib_rs.lines() {
        let Some(item) = line.strip_prefix("//! ") else {
            continue;
        };
        let Some((num, rest)) = item.split_once(". [`") else {
            continue;
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Some((name, _)) = rest.split_once("`]") {
            layers.push(name.to_string());
        }
    }
    let mut declared = Vec::new();
    for line in lib_rs.lines() {
        let line = line.trim();
        let decl = ["pub mod ", "pub(crate) mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            if !declared.iter().any(|d| d == name) {
                declared.push(name.to_string());
            }
        }
    }
    let shared = declared
        .into_iter()
        .filter(|d| !layers.contains(d))
        .collect();
    (layers, shared)
}

/// The module path of a file below `src/` (`sys/tun.rs` is [sys, tun], `sys/mod.rs` [sys]).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" {
            parts.push(stem.to_string());
        }
    }
    parts
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The first segments of the names `text` reaches through `prefix`: `x` for `prefix x::...`,
/// each of `a` and `b` for `prefix {a::..., b}`.
fn names_after(text: &str, at: usize) -> Vec<String> {
    let rest = &text[at..];
    if let Some(group) = rest.strip_prefix('{') {
        let mut names = Vec::new();
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.extend(first_ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.extend(first_ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        return names;
    }
    first_ident(rest).into_iter().collect()
}

fn first_ident(s: &str) -> Option<String> {
    let s = s.trim_start();
    let end = s.bytes().position(|b| !is_ident(b)).unwrap_or(s.len());
    (end > 0).then(|| s[..end].to_string())
}

/// Top-level modules a file at module path `here` names through `crate::` or `super::` paths.
fn named_modules(here: &[String], text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_path = i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b':');
        if starts_path && bytes[i..].starts_with(b"crate::") {
            found.extend(names_after(text, i + "crate::".len()));
            i += "crate::".len();
            continue;
        }
        if starts_path && bytes[i..].starts_with(b"super::") {
            let mut ups = 0;
            let mut j = i;
            while bytes[j..].starts_with(b"super::") {
                ups += 1;
                j += "super::".len();
            }
            // Resolved from the file's module; a `super` inside an inline module (tests)
            // counts one level short, which only ever names the file's own layer.
            if ups == here.len() {
                found.extend(names_after(text, j));
            } else if ups < here.len() {
                found.insert(here[0].clone());
            }
            i = j;
            continue;
        }
        i += 1;
    }
    found
}

/// `file names module`: what breaks the order, for each file of `files` (path below `src/`,
/// text).
fn violations(layers: &[String], shared: &[String], files: &[(PathBuf, String)]) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| l == m);
    let mut out = Vec::new();
    for (rel, text) in files {
        let here = module_path(rel);
        let Some(own) = here.first() else { continue };
        for m in named_modules(&here, text) {
            if &m == own || (shared.contains(&m) && rank(own).is_some()) {
                continue;
            }
            let bad = match (rank(own), rank(&m)) {
                (Some(a), Some(b)) => b > a,
                // A shared module uses no layer and no other shared module.
                (None, _) => rank(&m).is_some() || shared.contains(&m),
                (Some(_), None) => false, // not a module of the crate's top level
            };
            if bad {
                out.push(format!("src/{} names {m}", rel.display()));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn no_file_names_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let (layers, shared) = read_order(&lib);
    assert_eq!(
        layers,
        ["crypto", "proto", "sys", "daemon", "openwrt", "cli"],
        "lib.rs's numbered list of layers"
    );
    assert_eq!(
        shared,
        ["log", "testing"],
        "lib.rs's modules outside the list"
    );
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    // lib.rs declares the layers; main.rs is the binary, on top of them all.
    files.retain(|(rel, _)| rel != Path::new("lib.rs") && rel != Path::new("main.rs"));
    assert!(files.len() > 50, "{} files under src/", files.len());
    for (rel, _) in &files {
        let top = module_path(rel).remove(0);
        assert!(
            layers.contains(&top) || shared.contains(&top),
            "src/{} is in no layer lib.rs lists",
            rel.display()
        );
    }
    let bad = violations(&layers, &shared, &files);
    assert!(
        bad.is_empty(),
        "imports against the layer order:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_circle_between_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    files.retain(|(rel, _)| rel != Path::new("lib.rs") && rel != Path::new("main.rs"));
    let found = cycles::cycles(&files, module_path);
    let known = |c: &String| KNOWN_CYCLES.iter().any(|k| c.lines().next() == Some(*k));
    let new: Vec<&String> = found.iter().filter(|c| !known(c)).collect();
    assert!(
        new.is_empty(),
        "files that name each other (a module file and its own folder count as one):\n{}",
        new.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for k in KNOWN_CYCLES {
        assert!(
            found.iter().any(|c| c.lines().next() == Some(*k)),
            "{k} is gone: take it off KNOWN_CYCLES"
        );
    }
}

/// Cycles between files that are known and not yet undone, as the check's first line names
/// them. Any other cycle fails the check, and so does one of these once it is gone.
const KNOWN_CYCLES: &[&str] = &[];

#[test]
fn the_check_catches_a_path_up_the_order() {
    let lib = "//! The layers:\n//! 1. [`crypto`]: a\n//! 2. [`proto`]: b\n//!    more\n\
               //! 3. [`sys`]: c\n//! 4. [`daemon`]: d\n//!\n//! [`log`] is shared.\n\
               pub mod daemon;\n#[cfg(x)]\npub mod log;\npub(crate) mod log;\npub mod proto;\n";
    let (layers, shared) = read_order(lib);
    assert_eq!(layers, ["crypto", "proto", "sys", "daemon"]);
    assert_eq!(shared, ["log"]);
    let file = |p: &str, t: &str| (PathBuf::from(p), t.to_string());
    let files = [
        // Allowed: down the order, the own layer, the shared module, a non-module name.
        file(
            "daemon/x.rs",
            "use crate::sys::tun::Tun;\nuse crate::{proto::wire, log};\nuse super::*;",
        ),
        file("sys/mod.rs", "pub mod tun;\nfn f() { crate::log::info(); }"),
        file("sys/a/b.rs", "use super::super::tun; // a sibling\n"),
        file("proto/mod.rs", "use super::crypto::Rng;"),
        // Up the order, in every spelling the check follows.
        file("sys/tun.rs", "use crate::daemon::event_loop::Daemon;"),
        file("proto/wire.rs", "let x = crate::sys::recv(fd);"),
        file(
            "crypto/mod.rs",
            "use crate::{proto::wire, sys::{udp, tun}};",
        ),
        file(
            "sys/batch/inner.rs",
            "use super::super::super::daemon::stats;",
        ),
        file("log.rs", "use crate::proto::wire;"),
    ];
    let bad = violations(&layers, &shared, &files);
    assert_eq!(
        bad,
        [
            "src/sys/tun.rs names daemon",
            "src/proto/wire.rs names sys",
            "src/crypto/mod.rs names proto",
            "src/crypto/mod.rs names sys",
            "src/sys/batch/inner.rs names daemon",
            "src/log.rs names proto",
        ]
    );
}
