//! The OpenWrt surface, held to its two tables: the UCI options
//! (`solowg::openwrt::config::options::OPTIONS`) and the ubus methods
//! (`solowg::openwrt::control::METHODS`). Each place that repeats them is read from the
//! repository and compared: netifd's handler (files/solowg.sh), LuCI's forms and option lists
//! (luci-app/htdocs), the daemon user's ubusd ACL (files/solowg.acl.json), LuCI's rpcd ACL and
//! docs/openwrt.md. A difference fails with the file and the option or method it is about.
//! ACL entries for anything but the `solowg` object's methods are not the tables' business and
//! are left alone.

use solowg::openwrt::config::options::{Kind, SectionKind, UciOption, OPTIONS};
use solowg::openwrt::control::{Access, CALLS, EVENTS, METHODS, OBJECT};
use std::collections::{BTreeMap, BTreeSet};

const HANDLER: &str = "files/solowg.sh";
const INIT: &str = "files/solowg.init";
const DAEMON_ACL: &str = "files/solowg.acl.json";
const RPCD_ACL: &str = "luci-app/root/usr/share/rpcd/acl.d/luci-app-solowg.json";
const LUCI_PROTO: &str = "luci-app/htdocs/luci-static/resources/protocol/solowg.js";
const LUCI_CONF: &str = "luci-app/htdocs/luci-static/resources/solowg/conf.js";
const LUCI_STATUS: &str = "luci-app/htdocs/luci-static/resources/view/solowg/status.js";
const DOCS: &str = "docs/openwrt.md";

/// netifd's own interface options that LuCI's import writes (not solowg's; netifd reads them).
const NETIFD_OWN: &[&str] = &["dns"];

fn read(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn options(section: SectionKind) -> impl Iterator<Item = &'static UciOption> {
    OPTIONS.iter().filter(move |o| o.section == section)
}

fn option(section: SectionKind, name: &str) -> Option<&'static UciOption> {
    options(section).find(|o| o.name == name)
}

fn section_name(section: SectionKind) -> &'static str {
    match section {
        SectionKind::Interface => "interface",
        SectionKind::Peer => "peer",
    }
}

/// Fails with every problem found, one per line.
fn assert_none(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "the OpenWrt surface differs from its tables \
         (src/openwrt/config/options.rs, src/openwrt/control/methods.rs):\n  {}",
        problems.join("\n  ")
    );
}

/// Compares what a place names (name -> the type it states, if any) with what the table says
/// it should name (name -> expected type).
fn compare(
    place: &str,
    what: &str,
    found: &[(String, Option<String>)],
    expected: &BTreeMap<&str, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, ty) in found {
        if !seen.insert(name.as_str()) {
            out.push(format!("{place}: {what} '{name}' is named twice"));
        }
        match expected.get(name.as_str()) {
            None => out.push(format!("{place}: {what} '{name}' is not in the table")),
            Some(want) if ty.as_ref().is_some_and(|t| t != want) => out.push(format!(
                "{place}: {what} '{name}' has type '{}', the table's is '{want}'",
                ty.as_deref().unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
    for (name, want) in expected {
        if !seen.contains(name) {
            out.push(format!("{place}: {what} '{name}' is missing ({want})"));
        }
    }
    out
}

// ---- a JSON reader for the ACL files (objects, arrays, strings; numbers and words kept raw)

#[derive(Debug)]
enum Json {
    Obj(Vec<(String, Json)>),
    Arr(Vec<Json>),
    Str(String),
    Other,
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn entries(&self) -> &[(String, Json)] {
        match self {
            Json::Obj(m) => m,
            _ => &[],
        }
    }

    fn strings(&self) -> Vec<String> {
        match self {
            Json::Arr(a) => a
                .iter()
                .filter_map(|v| match v {
                    Json::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn parse_json(path: &str) -> Json {
    let text = read(path);
    let mut it = text.chars().peekable();
    let v = json_value(&mut it).unwrap_or_else(|e| panic!("{path}: not JSON: {e}"));
    skip_ws(&mut it);
    assert!(it.peek().is_none(), "{path}: text after the JSON value");
    v
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_ws(it: &mut Chars) {
    while it.peek().is_some_and(|c| c.is_whitespace()) {
        it.next();
    }
}

fn json_value(it: &mut Chars) -> Result<Json, String> {
    skip_ws(it);
    match it.peek().copied() {
        Some('{') => {
            it.next();
            let mut m = Vec::new();
            loop {
                skip_ws(it);
                match it.next() {
                    Some('}') if m.is_empty() => return Ok(Json::Obj(m)),
                    Some('"') => {}
                    c => return Err(format!("expected a key, got {c:?}")),
                }
                let k = json_string(it)?;
                skip_ws(it);
                if it.next() != Some(':') {
                    return Err(format!("no ':' after \"{k}\""));
                }
                m.push((k, json_value(it)?));
                skip_ws(it);
                match it.next() {
                    Some(',') => {}
                    Some('}') => return Ok(Json::Obj(m)),
                    c => return Err(format!("expected ',' or '}}', got {c:?}")),
                }
            }
        }
        Some('[') => {
            it.next();
            let mut a = Vec::new();
            skip_ws(it);
            if it.peek() == Some(&']') {
                it.next();
                return Ok(Json::Arr(a));
            }
            loop {
                a.push(json_value(it)?);
                skip_ws(it);
                match it.next() {
                    Some(',') => {}
                    Some(']') => return Ok(Json::Arr(a)),
                    c => return Err(format!("expected ',' or ']', got {c:?}")),
                }
            }
        }
        Some('"') => {
            it.next();
            json_string(it).map(Json::Str)
        }
        Some(c) if c.is_ascii_alphanumeric() || c == '-' => {
            while it
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || "+-.".contains(*c))
            {
                it.next();
            }
            Ok(Json::Other)
        }
        c => Err(format!("unexpected {c:?}")),
    }
}

/// The rest of a string whose opening quote was read. The ACL files need no `\u` escapes.
fn json_string(it: &mut Chars) -> Result<String, String> {
    let mut s = String::new();
    loop {
        match it.next() {
            Some('"') => return Ok(s),
            Some('\\') => s.push(it.next().ok_or("unterminated escape")?),
            Some(c) => s.push(c),
            None => return Err("unterminated string".into()),
        }
    }
}

// ---- small readers of shell and JavaScript source

/// The body of `function NAME(...) { ... }` (or `NAME: function(...) { ... }`), braces
/// matched; strings holding braces are not expected in the functions read.
fn js_function<'a>(path: &str, text: &'a str, name: &str) -> &'a str {
    let start = text
        .find(&format!("function {name}("))
        .or_else(|| text.find(&format!("{name}: function(")))
        .unwrap_or_else(|| panic!("{path}: no function {name}"));
    let open = start + text[start..].find('{').expect("function body");
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open..open + i + 1];
                }
            }
            _ => {}
        }
    }
    panic!("{path}: function {name} is not closed")
}

/// The single-quoted string literals among a call's arguments, in order, for every call that
/// begins with `call` (e.g. `ss.option(`); arguments end at the line's end.
fn call_args(text: &str, call: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(call) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let rest = &text[i + call.len()..];
        let line = rest.split('\n').next().unwrap_or_default();
        out.push(line.split(',').map(|a| a.trim().to_string()).collect());
    }
    out
}

fn unquote(s: &str) -> Option<&str> {
    s.strip_prefix('\'')?.split('\'').next()
}

/// Property names read or written as `recv.name` where the name is a UCI-style word (lower
/// case, digits, `_`): the UCI options a LuCI function handles through an object.
fn uci_props(body: &str, recv: &str) -> BTreeSet<String> {
    let pat = format!("{recv}.");
    let mut out = BTreeSet::new();
    for (i, _) in body.match_indices(&pat) {
        let before = body[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let name: String = body[i + pat.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            out.insert(name);
        }
    }
    out
}

/// The type LuCI's form widget for an option of this kind is.
fn luci_class(kind: Kind) -> String {
    match kind {
        Kind::Bool => "form.Flag",
        k if k.is_list() => "form.DynamicList",
        _ => "form.Value",
    }
    .to_string()
}

#[test]
fn netifd_handler_declares_the_interface_options() {
    let text = read(HANDLER);
    let found: Vec<(String, Option<String>)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("proto_config_add_"))
        .filter_map(|rest| {
            let (ty, name) = rest.split_once(' ')?;
            Some((
                name.trim().trim_matches('"').to_string(),
                Some(ty.to_string()),
            ))
        })
        .collect();
    let expected = options(SectionKind::Interface)
        .filter(|o| o.netifd_declared())
        .map(|o| (o.name, o.kind.netifd_type().to_string()))
        .collect();
    let mut problems = compare(HANDLER, "option", &found, &expected);
    for o in OPTIONS.iter().filter(|o| o.secret) {
        if found.iter().any(|(n, _)| n == o.name) && o.section == SectionKind::Interface {
            problems.push(format!("{HANDLER}: secret option '{}' is declared", o.name));
        }
    }
    assert_none(problems);
}

#[test]
fn luci_form_edits_every_option() {
    let text = read(LUCI_PROTO);
    let mut problems = Vec::new();
    let forms = [
        (
            SectionKind::Interface,
            "renderFormOptions",
            "s.taboption(",
            1,
        ),
        (SectionKind::Peer, "addPeerOptions", "ss.option(", 0),
    ];
    for (section, func, call, class_at) in forms {
        let body = js_function(LUCI_PROTO, &text, func);
        let found: Vec<(String, Option<String>)> = call_args(body, call)
            .into_iter()
            .filter_map(|a| {
                let name = unquote(a.get(class_at + 1)?)?.to_string();
                Some((name, a.get(class_at).cloned()))
            })
            // Fields of the form's own (buttons, derived values) are not UCI options.
            .filter(|(n, _)| !n.starts_with('_'))
            .collect();
        let expected = options(section)
            .filter(|o| o.luci_form())
            .map(|o| (o.name, luci_class(o.kind)))
            .collect();
        let place = format!("{LUCI_PROTO} ({func})");
        problems.extend(compare(
            &place,
            &format!("{} option", section_name(section)),
            &found,
            &expected,
        ));
    }
    assert_none(problems);
}

/// Names LuCI's code uses as UCI options, each checked to be an option of the section it is
/// used for (or, for interfaces, one of netifd's own).
#[test]
fn luci_option_lists_name_known_options() {
    let mut problems = Vec::new();
    let mut check = |place: &str, section: SectionKind, names: BTreeSet<String>| {
        // Nothing found means the reader no longer understands the file.
        assert!(
            !names.is_empty(),
            "{place}: no {} options found",
            section_name(section)
        );
        for n in names {
            let own = section == SectionKind::Interface && NETIFD_OWN.contains(&n.as_str());
            if option(section, &n).is_none() && !own {
                problems.push(format!(
                    "{place}: '{n}' is not a{} {} option in the table",
                    if section == SectionKind::Interface {
                        "n"
                    } else {
                        ""
                    },
                    section_name(section)
                ));
            }
        }
    };
    let proto = read(LUCI_PROTO);
    let import = js_function(LUCI_PROTO, &proto, "applyImport");
    // The interface options taken from an imported file: `[ 'a', 'b' ].forEach(...)`.
    let listed: BTreeSet<String> = import
        .split('[')
        .filter_map(|p| p.split_once("].forEach").map(|(l, _)| l))
        .flat_map(|l| {
            l.split(',')
                .filter_map(|a| unquote(a.trim()).map(String::from))
        })
        .collect();
    assert!(
        !listed.is_empty(),
        "{LUCI_PROTO}: applyImport's option list not found"
    );
    check(
        &format!("{LUCI_PROTO} (applyImport)"),
        SectionKind::Interface,
        listed,
    );
    let conf = read(LUCI_CONF);
    let to_uci = js_function(LUCI_CONF, &conf, "confToUci");
    check(
        &format!("{LUCI_CONF} (confToUci)"),
        SectionKind::Interface,
        uci_props(to_uci, "iface"),
    );
    check(
        &format!("{LUCI_CONF} (confToUci)"),
        SectionKind::Peer,
        uci_props(to_uci, "s"),
    );
    let to_conf = js_function(LUCI_CONF, &conf, "uciToConf");
    check(
        &format!("{LUCI_CONF} (uciToConf)"),
        SectionKind::Interface,
        uci_props(to_conf, "s"),
    );
    check(
        &format!("{LUCI_CONF} (uciToConf)"),
        SectionKind::Peer,
        uci_props(to_conf, "p"),
    );
    // uci.get/set('network', section, 'option'): any section's option.
    for path in [LUCI_PROTO, LUCI_STATUS] {
        let text = read(path);
        for call in ["uci.get(", "uci.set("] {
            for a in call_args(&text, call) {
                let Some(n) = a.get(2).and_then(|n| unquote(n)) else {
                    continue;
                };
                if a.first().map(String::as_str) == Some("'network'")
                    && OPTIONS.iter().all(|o| o.name != n)
                    && !NETIFD_OWN.contains(&n)
                {
                    problems.push(format!(
                        "{path}: {call}...'{n}') is not an option in the table"
                    ));
                }
            }
        }
    }
    assert_none(problems);
}

/// LuCI's rpcd ACL: read methods under `read`, write methods under `write`, root's nowhere.
#[test]
fn rpcd_acl_grants_methods_by_access() {
    let acl = parse_json(RPCD_ACL);
    let mut granted: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for (group, g) in acl.entries() {
        for mode in ["read", "write"] {
            let Some(list) = g
                .get(mode)
                .and_then(|m| m.get("ubus"))
                .and_then(|u| u.get(OBJECT))
            else {
                continue;
            };
            if !matches!(list, Json::Arr(_)) {
                panic!("{RPCD_ACL}: {group}.{mode}.ubus.{OBJECT} is not a list");
            }
            for m in list.strings() {
                granted.entry(m).or_default().insert(mode);
            }
        }
    }
    let mut problems = Vec::new();
    for m in METHODS {
        let want = match m.access {
            Access::Read => Some("read"),
            Access::Write => Some("write"),
            Access::Root => None,
        };
        let modes = granted.remove(m.name).unwrap_or_default();
        match want {
            Some(w) if !modes.contains(w) => problems.push(format!(
                "{RPCD_ACL}: {w} method '{}' is missing from {w}.ubus.{OBJECT}",
                m.name
            )),
            _ => {}
        }
        for mode in modes.iter().filter(|&&mode| Some(mode) != want) {
            problems.push(format!(
                "{RPCD_ACL}: method '{}' ({:?} in the table) is granted under {mode}",
                m.name, m.access
            ));
        }
    }
    for (name, modes) in granted {
        for mode in modes {
            problems.push(format!(
                "{RPCD_ACL}: '{name}' under {mode}.ubus.{OBJECT} is not a method of the daemon"
            ));
        }
    }
    assert_none(problems);
}

/// The daemon user's ubusd ACL: it publishes the object, calls netifd's method and sends its
/// events, and no more.
#[test]
fn daemon_acl_matches_what_the_daemon_does() {
    let acl = parse_json(DAEMON_ACL);
    let mut problems = Vec::new();
    let publish: Vec<(String, Option<String>)> = acl
        .get("publish")
        .map(Json::strings)
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p, None))
        .collect();
    let object = [(OBJECT, "the object".to_string())].into_iter().collect();
    problems.extend(compare(DAEMON_ACL, "published object", &publish, &object));
    let mut calls = Vec::new();
    for (obj, v) in acl.get("access").map(Json::entries).unwrap_or_default() {
        for m in v.get("methods").map(Json::strings).unwrap_or_default() {
            calls.push((format!("{obj} {m}"), None));
        }
    }
    let expected = CALLS
        .iter()
        .map(|(o, m)| (format!("{o} {m}"), "a call the daemon makes".to_string()))
        .collect::<Vec<_>>();
    let expected = expected
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    problems.extend(compare(DAEMON_ACL, "access to", &calls, &expected));
    let send = acl.get("send").map(Json::strings).unwrap_or_default();
    let matches = |pat: &str, ev: &str| match pat.strip_suffix('*') {
        Some(prefix) => ev.starts_with(prefix),
        None => ev == pat,
    };
    for ev in EVENTS {
        if !send.iter().any(|p| matches(p, ev)) {
            problems.push(format!(
                "{DAEMON_ACL}: event '{ev}' is not allowed by \"send\""
            ));
        }
    }
    for p in &send {
        if !EVENTS.iter().any(|ev| matches(p, ev)) {
            problems.push(format!(
                "{DAEMON_ACL}: \"send\" pattern '{p}' matches no event the daemon sends"
            ));
        }
    }
    assert_none(problems);
}

/// Every `ubus call solowg METHOD` of the shell glue and `rpc.declare` of LuCI's pages names a
/// method of the table; LuCI's only methods its ACL may grant.
#[test]
fn callers_name_known_methods() {
    let mut problems = Vec::new();
    let find = |name: &str| METHODS.iter().find(|m| m.name == name);
    for path in [HANDLER, INIT] {
        let text = read(path);
        let pat = format!("call {OBJECT} ");
        assert!(text.contains(&pat), "{path}: no `ubus call {OBJECT}` found");
        for (i, _) in text.match_indices(&pat) {
            let m: String = text[i + pat.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if find(&m).is_none() {
                problems.push(format!("{path}: calls '{m}', not a method of the daemon"));
            }
        }
    }
    for path in [LUCI_PROTO, LUCI_STATUS] {
        let text = read(path);
        let ours = format!("object: '{OBJECT}'");
        assert!(
            text.contains(&ours),
            "{path}: no rpc.declare of {OBJECT} found"
        );
        for decl in text.split("rpc.declare({").skip(1) {
            let decl = decl.split("})").next().unwrap_or_default();
            let field = |k: &str| {
                decl.split(&format!("{k}:"))
                    .nth(1)
                    .and_then(|v| unquote(v.trim()))
                    .map(String::from)
            };
            if field("object").as_deref() != Some(OBJECT) {
                continue;
            }
            let m = field("method").unwrap_or_default();
            match find(&m) {
                None => problems.push(format!(
                    "{path}: declares '{m}', not a method of the daemon"
                )),
                Some(def) if def.access == Access::Root => problems.push(format!(
                    "{path}: declares '{m}', which no ACL grants (only root may call it)"
                )),
                Some(_) => {}
            }
        }
    }
    assert_none(problems);
}

/// The rows of the first Markdown table after the heading that starts with `heading`, as
/// cells (the header and its rule left out).
fn docs_table(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = text
        .lines()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("{DOCS}: no heading '{heading}'"));
    text.lines()
        .skip(start + 1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn code_name(cell: &str) -> String {
    cell.trim_matches('`').to_string()
}

#[test]
fn docs_option_tables() {
    let text = read(DOCS);
    let mut problems = Vec::new();
    let sections = [
        (SectionKind::Interface, "### Interface:"),
        (SectionKind::Peer, "### Peers:"),
    ];
    for (section, heading) in sections {
        let place = format!("{DOCS} ({heading})");
        let rows = docs_table(&text, heading);
        let found: Vec<(String, Option<String>)> =
            rows.iter().map(|r| (code_name(&r[0]), None)).collect();
        let expected = options(section)
            .map(|o| (o.name, o.kind.doc_type()))
            .collect();
        problems.extend(compare(&place, "option", &found, &expected));
        for r in &rows {
            let Some(o) = option(section, &code_name(&r[0])) else {
                continue;
            };
            let (ty, default) = (
                r.get(1).cloned().unwrap_or_default(),
                r.get(2).cloned().unwrap_or_default(),
            );
            if !ty.starts_with(&o.kind.doc_type()) {
                problems.push(format!(
                    "{place}: option '{}' has type '{ty}', the table's is '{}'",
                    o.name,
                    o.kind.doc_type()
                ));
            }
            if default != o.default {
                problems.push(format!(
                    "{place}: option '{}' has default '{default}', the table's is '{}'",
                    o.name, o.default
                ));
            }
        }
    }
    assert_none(problems);
}

#[test]
fn docs_method_table() {
    let text = read(DOCS);
    let heading = "## 4. The ubus object";
    let place = format!("{DOCS} ({heading})");
    let rows = docs_table(&text, heading);
    let found: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|r| (code_name(&r[0]), r.get(1).cloned()))
        .collect();
    let expected = METHODS
        .iter()
        .map(|m| {
            let args: Vec<String> = m
                .args
                .iter()
                .map(|(n, t)| format!("`{n}` ({})", format!("{t:?}").to_lowercase()))
                .collect();
            (
                m.name,
                if args.is_empty() {
                    "–".into()
                } else {
                    args.join(", ")
                },
            )
        })
        .collect();
    assert_none(compare(&place, "method", &found, &expected));
}
