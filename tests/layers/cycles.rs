//! No circle between files: the import graph of `src/` (which file's `crate::` and `super::`
//! paths name which module file) has no cycle between modules that are not parent and child.
//!
//! A module file and the files below its own folder (`foo.rs` and `foo/**`) are one unit to
//! their siblings: the check runs once per folder, on the units directly in it, so a cycle
//! anywhere is caught at the folder where its ends part. A path from a file to its own
//! ancestors or descendants (`foo/bar.rs` naming `super::Thing` of `foo.rs`, `foo.rs` naming
//! `bar::Thing`) is the unit's inside and no edge. Only code counts: paths in comments and
//! string literals are left out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// A module path below the crate (`[proto, device, apply]`).
type Module = Vec<String>;

/// `text` with comments and string and character literals blanked to spaces (newlines
/// kept), so that what is left is code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !ident_before && raw_string_at(b, i).is_some() {
            let end = raw_string_at(b, i).unwrap_or(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('a', '\n', '\u{..}'); otherwise a lifetime.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|n| i + 2 + n + 1)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`.
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + usize::from(b.get(i) == Some(&b'b'));
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let end = b[j + 1..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map_or(b.len(), |n| j + 1 + n + close.len());
    Some(end)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths of a use tree starting at `at` (just after `prefix`): `a::b` gives
/// [prefix.., a, b], `{a, b::{c, self}}` each of them; `self` names the prefix itself.
fn use_tree(
    code: &[u8],
    mut at: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        while at < code.len() && code[at].is_ascii_whitespace() {
            at += 1;
        }
        if code.get(at) == Some(&b'{') {
            at += 1;
            loop {
                at = use_tree(code, at, prefix.clone(), out);
                while at < code.len() && code[at].is_ascii_whitespace() {
                    at += 1;
                }
                match code.get(at) {
                    Some(b',') => at += 1,
                    Some(b'}') => return at + 1,
                    _ => return at,
                }
                // `{a, b,}`: a trailing comma before the brace.
                while at < code.len() && code[at].is_ascii_whitespace() {
                    at += 1;
                }
                if code.get(at) == Some(&b'}') {
                    return at + 1;
                }
            }
        }
        let start = at;
        while at < code.len() && (is_ident(code[at]) || code[at] == b'*') {
            at += 1;
        }
        let seg = String::from_utf8_lossy(&code[start..at]).into_owned();
        if !seg.is_empty() && seg != "self" {
            prefix.push(seg);
        }
        if code[at..].starts_with(b"::") {
            at += 2;
            continue;
        }
        out.push(prefix);
        return at;
    }
}

/// The inline modules (`mod name { … }`) open at each byte of `code`, outermost first.
fn inline_modules(code: &[u8]) -> Vec<Vec<String>> {
    let mut at_byte = Vec::with_capacity(code.len());
    let mut open: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut pending): (usize, Option<String>) = (0, None);
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0 || !is_ident(code[i - 1]);
        if starts_word && code[i..].starts_with(b"mod ") {
            let rest = &code[i + 4..];
            let skip = rest.iter().take_while(|c| c.is_ascii_whitespace()).count();
            let len = rest[skip..].iter().take_while(|&&c| is_ident(c)).count();
            let after = rest[skip + len..].iter().find(|c| !c.is_ascii_whitespace());
            if len > 0 && after == Some(&b'{') {
                pending = Some(String::from_utf8_lossy(&rest[skip..skip + len]).into_owned());
            }
        }
        match code[i] {
            b'{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    open.push((name, depth));
                }
            }
            b'}' => {
                if open.last().is_some_and(|&(_, d)| d == depth) {
                    open.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        at_byte.push(open.iter().map(|(n, _)| n.clone()).collect());
        i += 1;
    }
    at_byte
}

/// Each `crate::` and `super::` path of the code of a file at module path `here`, made
/// absolute (segments below the crate).
fn absolute_paths(here: &[String], text: &str) -> Vec<Vec<String>> {
    let code = code_only(text);
    let code = code.as_bytes();
    let inline = inline_modules(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let starts_path = i == 0 || !(is_ident(code[i - 1]) || code[i - 1] == b':');
        let crate_path = code[i..].starts_with(b"crate::");
        if !(starts_path && (crate_path || code[i..].starts_with(b"super::"))) {
            i += 1;
            continue;
        }
        let mut module: Vec<String> = here.iter().chain(&inline[i]).cloned().collect();
        let mut j = i;
        if crate_path {
            module.clear();
            j += "crate::".len();
        } else {
            while code[j..].starts_with(b"super::") {
                module.pop();
                j += "super::".len();
            }
        }
        let mut paths = Vec::new();
        i = use_tree(code, j, module, &mut paths);
        out.extend(paths);
    }
    out
}

/// The module file a path names: its longest prefix that is a module of `modules`.
fn target(path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| modules.contains(m))
}

/// An edge between two units of one folder, with the first file path that makes it.
struct Edge {
    from: Module,
    to: Module,
    evidence: String,
}

/// The cycles between units of one folder, for `files` (path below `src/`, text), each as
/// `a -> b -> a` followed by the file and path behind each step. Sorted, one per strongly
/// connected set.
pub fn cycles(files: &[(PathBuf, String)], module_path: fn(&Path) -> Module) -> Vec<String> {
    let modules: BTreeSet<Module> = files.iter().map(|(rel, _)| module_path(rel)).collect();
    // Per folder (the common parent), the edges between its units.
    let mut by_folder: BTreeMap<Module, Vec<Edge>> = BTreeMap::new();
    for (rel, text) in files {
        let here = module_path(rel);
        for path in absolute_paths(&here, text) {
            let Some(to) = target(&path, &modules) else {
                continue;
            };
            let common = here.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == here.len() || common == to.len() {
                continue; // the file itself, an ancestor or a descendant
            }
            let edges = by_folder.entry(here[..common].to_vec()).or_default();
            let (from, to_unit) = (here[..=common].to_vec(), to[..=common].to_vec());
            if !edges.iter().any(|e| e.from == from && e.to == to_unit) {
                edges.push(Edge {
                    from,
                    to: to_unit,
                    evidence: format!("src/{} names {}", rel.display(), path.join("::")),
                });
            }
        }
    }
    let mut found = Vec::new();
    for edges in by_folder.values() {
        found.extend(folder_cycles(edges));
    }
    found.sort();
    found
}

/// One cycle per strongly connected set of two or more units.
fn folder_cycles(edges: &[Edge]) -> Vec<String> {
    let next = |u: &Module| -> Vec<&Edge> { edges.iter().filter(|e| &e.from == u).collect() };
    let reach = |u: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([u.clone()]);
        while let Some(v) = queue.pop_front() {
            for e in next(&v) {
                if seen.insert(e.to.clone()) {
                    queue.push_back(e.to.clone());
                }
            }
        }
        seen
    };
    let units: BTreeSet<&Module> = edges.iter().map(|e| &e.from).collect();
    let mut reported: BTreeSet<Module> = BTreeSet::new();
    let mut out = Vec::new();
    for u in units {
        if reported.contains(u) || !reach(u).contains(u) {
            continue;
        }
        // The shortest way round from u back to u.
        let mut back: BTreeMap<Module, &Edge> = BTreeMap::new();
        let mut queue = VecDeque::from([u.clone()]);
        'search: while let Some(v) = queue.pop_front() {
            for e in next(&v) {
                if !back.contains_key(&e.to) {
                    back.insert(e.to.clone(), e);
                    if &e.to == u {
                        break 'search;
                    }
                    queue.push_back(e.to.clone());
                }
            }
        }
        let mut steps = Vec::new();
        let mut at = u.clone();
        loop {
            let e = back[&at];
            steps.push(e);
            at = e.from.clone();
            if &at == u {
                break;
            }
        }
        steps.reverse();
        let name = |m: &Module| m.join("::");
        let mut line = name(u);
        for e in &steps {
            line += &format!(" -> {}", name(&e.to));
        }
        for e in &steps {
            line += &format!("\n    {}", e.evidence);
        }
        out.push(line);
        let round = reach(u);
        reported.extend(round.into_iter().filter(|v| reach(v).contains(u)));
    }
    out
}

#[cfg(test)]
mod checks {
    use super::*;

    fn module_path(rel: &Path) -> Module {
        crate::module_path(rel)
    }

    fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        list.iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn a_cycle_between_siblings_is_found_and_named() {
        let f = files(&[
            ("proto/mod.rs", "pub mod a;\npub mod b;\n"),
            ("proto/a.rs", "use super::b::Thing;\n"),
            (
                "proto/b.rs",
                "pub struct Thing;\nfn f() { crate::proto::a::g(); }\n",
            ),
        ]);
        assert_eq!(
            cycles(&f, module_path),
            ["proto::a -> proto::b -> proto::a\n    \
              src/proto/a.rs names proto::b::Thing\n    \
              src/proto/b.rs names proto::a::g"]
        );
    }

    #[test]
    fn a_cycle_through_a_submodule_file_is_found_at_its_units_folder() {
        // dev.rs and dev/inner.rs are one unit to a.rs.
        let f = files(&[
            ("proto/a.rs", "use crate::proto::{dev::Device, wire};\n"),
            ("proto/wire.rs", ""),
            ("proto/dev.rs", "mod inner;\npub struct Device;\n"),
            ("proto/dev/inner.rs", "use super::super::a::helper;\n"),
            // A longer way round, three units, in another layer.
            ("sys/x.rs", "use crate::sys::y::Y;"),
            ("sys/y.rs", "use crate::sys::{z::{self, Z}};"),
            ("sys/z.rs", "fn f() { let _ = super::x::X; }"),
        ]);
        let found = cycles(&f, module_path);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].starts_with("proto::a -> proto::dev -> proto::a\n"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("src/proto/dev/inner.rs names proto::a::helper"));
        assert!(
            found[1].starts_with("sys::x -> sys::y -> sys::z -> sys::x\n"),
            "{}",
            found[1]
        );
    }

    #[test]
    fn parents_children_comments_strings_and_inline_tests_raise_no_alarm() {
        let f = files(&[
            // A module file and its own submodules, both ways.
            (
                "proto/dev.rs",
                "mod inner;\nuse inner::Q;\nfn f() { crate::proto::dev::inner::q(); }\n",
            ),
            (
                "proto/dev/inner.rs",
                "use super::Device;\nuse crate::proto::dev::X;\n",
            ),
            // One way between siblings.
            ("proto/a.rs", "use crate::proto::b::B;\n"),
            (
                "proto/b.rs",
                // The way back only in a comment, a doc comment, strings and a char.
                "// see crate::proto::a::A\n/// [`crate::proto::a`]\n/* super::a:: */\n\
                 const S: &str = \"crate::proto::a::A\";\nconst R: &str = r#\"super::a\"#;\n\
                 const C: char = '\"'; fn g<'a>(x: &'a str) {}\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::b::B;\n}\n",
            ),
        ]);
        assert_eq!(cycles(&f, module_path), Vec::<String>::new());
    }

    #[test]
    fn use_trees_and_relative_paths_resolve() {
        let here: Module = vec!["daemon".into(), "event_loop".into(), "rx".into()];
        let got = absolute_paths(
            &here,
            "use crate::proto::{device::{Device, Verdict}, wire,};\nuse super::super::iface;\n\
             mod t { fn f() { super::tx::send(); } }\n",
        );
        let s: Vec<String> = got.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            s,
            [
                "proto::device::Device",
                "proto::device::Verdict",
                "proto::wire",
                "daemon::iface",
                "daemon::event_loop::rx::tx::send",
            ]
        );
    }
}
