//! The reader against libuci's results, and random input against its invariants.

use super::parser::{valid_name, valid_type};
use super::*;
use crate::testing::TestRng;

fn single(v: &str) -> Value {
    Value::Single(v.into())
}

fn list(v: &[&str]) -> Value {
    Value::List(v.iter().map(|s| s.to_string()).collect())
}

/// Parses and returns (sections as (display name, type, options), error strings).
#[allow(clippy::type_complexity)]
fn p(text: &str) -> (Vec<(String, String, Vec<(String, Value)>)>, Vec<String>) {
    let (pkg, errs) = parse(text);
    (
        pkg.sections
            .into_iter()
            .map(|s| (s.display_name, s.section_type, s.options))
            .collect(),
        errs.iter().map(|e| e.to_string()).collect(),
    )
}

fn opts(text: &str) -> Vec<(String, Value)> {
    let (secs, errs) = p(text);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(secs.len(), 1, "{secs:?}");
    secs.into_iter().next().unwrap().2
}

fn o(name: &str, v: Value) -> (String, Value) {
    (name.into(), v)
}

// Expected results below were checked against libuci 1.0.5 (`uci -S show`).

#[test]
fn uci_export_format() {
    let text = "\nconfig interface 'wg0'\n\toption proto 'solowg'\n\tlist addresses '10.0.0.1/24'\n\tlist addresses 'fd00::1/64'\n\nconfig solowg_wg0\n\toption description 'Bob'\\''s laptop'\n\nconfig solowg_wg0\n\toption x 'y'\n";
    let (pkg, errs) = parse(text);
    assert!(errs.is_empty());
    let names: Vec<_> = pkg
        .sections
        .iter()
        .map(|s| s.display_name.as_str())
        .collect();
    assert_eq!(names, ["wg0", "@solowg_wg0[0]", "@solowg_wg0[1]"]);
    let wg0 = pkg.section("wg0").unwrap();
    assert_eq!(wg0.get("proto"), Some(&single("solowg")));
    assert_eq!(
        wg0.get("addresses"),
        Some(&list(&["10.0.0.1/24", "fd00::1/64"]))
    );
    assert_eq!(
        pkg.sections[1].get("description"),
        Some(&single("Bob's laptop"))
    );
    assert!(pkg.sections[1].name.is_none());
    assert_eq!(pkg.sections[2].line, 10);
    assert_eq!(pkg.sections_of_type("solowg_wg0").count(), 2);
}

#[test]
fn anonymous_index_counts_named_sections_of_the_type() {
    let (secs, _) = p("config t 'a'\nconfig t\nconfig u\nconfig t ''\n");
    let names: Vec<_> = secs.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["a", "@t[1]", "@u[0]", "@t[2]"]);
}

#[test]
fn quoting() {
    let got = opts(concat!(
        "config interface q\n",
        "\toption a 'it'\\''s'\n",
        "\toption b \"say \\\"hi\\\" \\\\ \\$x \\n it's\"\n",
        "\toption c 'a'\"b\"c\\ d\n",
        "\toption d 'x\\'\n",
        "\toption e 'a#b # c;d'\n",
        "\toption f '  lead  '\n",
        "\toption g 'Grüße ✓'\n",
    ));
    assert_eq!(
        got,
        [
            o("a", single("it's")),
            o("b", single("say \"hi\" \\ $x n it's")),
            o("c", single("abc d")),
            o("d", single("x\\")),
            o("e", single("a#b # c;d")),
            o("f", single("  lead  ")),
            o("g", single("Grüße ✓")),
        ]
    );
}

#[test]
fn multi_line_values_and_continuations() {
    let got = opts(concat!(
        "config interface m\n",
        "\toption a 'line1\nline2\n  line3'\n",
        "\toption b ab\\\ncd\n",
        "\toption c \"q\\\nr\"\n",
        "\toption d \"two\nlines\"\n",
        "\toption e after\n",
    ));
    assert_eq!(
        got,
        [
            o("a", single("line1\nline2\n  line3")),
            o("b", single("abcd")),
            o("c", single("qr")),
            o("d", single("two\nlines")),
            o("e", single("after")),
        ]
    );
    // A continuation line starting with whitespace starts a new (extra, ignored) argument.
    assert_eq!(
        opts("config i x\n\toption a abc\\\n  def\n\toption b 1\n"),
        [o("a", single("abc")), o("b", single("1"))]
    );
}

#[test]
fn comments_and_whitespace() {
    let got = opts(concat!(
        "# top\n\n",
        "config interface 'wg0'   # trailing\n",
        "\t# indented\n",
        "\toption proto 'solowg' # after\n",
        "\toption mtu 1420#glued\n",
        "\toption y #only a comment\n",
        "  option\ttab\t'1'\r\n",
        "\toption vt 1\x0b2\n",
    ));
    assert_eq!(
        got,
        [
            o("proto", single("solowg")),
            o("mtu", single("1420")),
            o("tab", single("1")),
            o("vt", single("1")),
        ]
    );
}

#[test]
fn abbreviations_package_and_missing_final_newline() {
    assert_eq!(
        opts("package network\n\nc interface 'wg0'\n\to mtu 1\n\tl addresses 10.0.0.1/24"),
        [
            o("mtu", single("1")),
            o("addresses", list(&["10.0.0.1/24"]))
        ]
    );
}

#[test]
fn option_and_list_semantics() {
    let got = opts(concat!(
        "config interface a\n",
        "\toption x 1\n",
        "\toption y 2\n",
        "\toption x ''\n", // ignored by the loader
        "\toption z 3\n",
        "\toption z 3\n", // same value: stays in place
        "\toption y 2\n",
        "\toption w 1\n",
        "\tlist w 2\n", // option + list: list [1, 2] moved to the end
        "\tlist e ''\n",
        "\tlist v a\n",
        "\toption v b\n", // option after list replaces it
    ));
    assert_eq!(
        got,
        [
            o("x", single("1")),
            o("y", single("2")),
            o("z", single("3")),
            o("w", list(&["1", "2"])),
            o("e", list(&[""])),
            o("v", single("b")),
        ]
    );
    let moved = opts("config i a\n\toption x 1\n\toption y 2\n\toption x 3\n");
    assert_eq!(moved, [o("y", single("2")), o("x", single("3"))]);
}

#[test]
fn repeated_named_section_merges_and_takes_the_new_type() {
    let (secs, errs) =
        p("config interface a\n\toption x 1\nconfig foo b\nconfig bar a\n\toption y 2\n");
    assert!(errs.is_empty());
    assert_eq!(secs.len(), 2);
    assert_eq!(secs[0].0, "a");
    assert_eq!(secs[0].1, "bar");
    assert_eq!(secs[0].2, [o("x", single("1")), o("y", single("2"))]);
}

#[test]
fn semicolons_follow_libuci() {
    let (secs, errs) = p("config interface 'wg0'; option mtu '1'; option proto solowg\n");
    assert!(errs.is_empty());
    assert_eq!(
        secs[0].2,
        [o("mtu", single("1")), o("proto", single("solowg"))]
    );
    // After an unquoted, unescaped argument the `;` ends the line.
    let (secs, errs) = p("config interface wg0; option mtu 1\n");
    assert!(errs.is_empty());
    assert!(secs[0].2.is_empty());
    // A `;` ending the line leaves an invalid empty command.
    let (secs, errs) = p("config interface 'wg0';\n\toption mtu 1\n");
    assert_eq!(errs, ["Parse error (invalid command) at line 1, byte 23"]);
    assert_eq!(secs[0].2, [o("mtu", single("1"))]);
}

#[test]
fn errors_skip_the_line_and_name_it() {
    let cases: &[(&str, &[&str])] = &[
            (
                "config interface 'wg0'\n\toptions mtu 1\n\toption mtu 2\n",
                &["Parse error (invalid command) at line 2, byte 1"],
            ),
            (
                "config interface 'wg0'\n\toption my-opt 1\n\toption mtu 2\n",
                &["Parse error (invalid character in name field) at line 2, byte 15"],
            ),
            (
                "config interface 'wg-0'\n\toption mtu 1\n",
                &[
                    "Parse error (invalid character in name field) at line 1, byte 24",
                    "Parse error (option/list command found before the first section) at line 2, byte 1",
                ],
            ),
            (
                "option mtu 1\nconfig interface 'wg0'\n",
                &["Parse error (option/list command found before the first section) at line 1, byte 0"],
            ),
            (
                "config interface 'wg0'\n\toption description 'abc\n",
                &["Parse error (EOF with unterminated ') at line 2, byte 25"],
            ),
            (
                "config interface wg0\n\toption d \"abc\n",
                &["Parse error (EOF with unterminated \") at line 2, byte 15"],
            ),
            (
                "config interface a\n\toption x 1 2 3\n\toption y 2\n",
                &["Parse error (invalid command) at line 2, byte 14"],
            ),
            (
                "config interface a\nconfig\n\toption y 2\n",
                &["Parse error (invalid command) at line 2, byte 0"],
            ),
            ("config\n", &["Parse error (invalid command) at line 1, byte 0"]),
            // libuci says line 0 here: it counts only lines that end in a newline.
            ("config", &["Parse error (config without name) at line 1, byte 0"]),
            ("config \n", &["Parse error (insufficient arguments) at line 1, byte 8"]),
            ("config a\x01b\n", &["Parse error (invalid character in type field) at line 1, byte 11"]),
            ("config a\n\toption ''\n", &["Parse error (insufficient arguments) at line 2, byte 11"]),
            ("package a.b\n", &["Parse error (invalid character in name field) at line 1, byte 12"]),
            ("config a\n\tlist\n", &["Parse error (invalid command) at line 2, byte 1"]),
            ("config a b\0c\n", &["Parse error (NUL byte in line) at line 1, byte 0"]),
        ];
    for (text, want) in cases {
        let (_, errs) = p(text);
        assert_eq!(&errs, want, "{text:?}");
    }
    // Extra arguments are ignored (libuci complains only in strict mode).
    assert_eq!(
        opts("config interface wg0\n\toption mtu 1 2\n"),
        [o("mtu", single("1"))]
    );
}

#[test]
fn options_after_a_bad_config_line_go_to_the_section_before() {
    let (secs, errs) = p("config interface a\n\toption x 1\nconfig interface b-c\n\toption y 2\n");
    assert_eq!(errs.len(), 1);
    assert_eq!(secs.len(), 1);
    assert_eq!(secs[0].2, [o("x", single("1")), o("y", single("2"))]);
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let (pkg, errs) = parse_bytes(b"config a b\n\toption d 'x\xffy'\n");
    assert!(errs.is_empty());
    assert_eq!(pkg.sections[0].get("d"), Some(&single("x\u{fffd}y")));
}

fn check_invariants(input: &[u8]) {
    let (pkg, errs) = parse_bytes(input);
    let lines = input.iter().filter(|&&c| c == b'\n').count() + 1;
    for e in &errs {
        assert!(e.line >= 1 && e.line <= lines, "{e} in {input:?}");
    }
    for s in &pkg.sections {
        assert!(valid_type(s.section_type.as_bytes()), "{input:?}");
        match &s.name {
            Some(n) => {
                assert!(valid_name(n.as_bytes()));
                assert_eq!(&s.display_name, n);
            }
            None => assert!(s.display_name.starts_with('@')),
        }
        for (i, (n, v)) in s.options.iter().enumerate() {
            assert!(valid_name(n.as_bytes()), "{input:?}");
            assert!(
                s.options[..i].iter().all(|(m, _)| m != n),
                "duplicate option"
            );
            if let Value::Single(v) = v {
                assert!(!v.is_empty());
            }
        }
    }
    // What was read, written back and read again, is the same (the handed-over copy).
    let all: Vec<&Section> = pkg.sections.iter().collect();
    let mut text = String::with_capacity(rendered_len(&all));
    let cap = text.capacity();
    render(&all, &mut text);
    assert_eq!(text.capacity(), cap, "rendered_len too small for {input:?}");
    let (again, errs) = parse(&text);
    assert!(errs.is_empty(), "{errs:?} reading back {text:?}");
    let strip = |p: &Package| -> Vec<Section> {
        p.sections
            .iter()
            .map(|s| Section {
                line: 0,
                ..s.clone()
            })
            .collect()
    };
    assert_eq!(strip(&again), strip(&pkg), "{input:?} -> {text:?}");
}

/// Random and mutated inputs: no panic, no hang, sane output. Bounded: a fixed number of
/// inputs of bounded size.
#[test]
fn never_panics_on_random_or_mutated_input() {
    const PIECES: &[&[u8]] = &[
        b"config",
        b"c",
        b"option",
        b"o",
        b"list",
        b"l",
        b"package",
        b"p",
        b" ",
        b"\t",
        b"\n",
        b"\r\n",
        b"'",
        b"\"",
        b"\\",
        b"\\\n",
        b"#",
        b";",
        b"'\\''",
        b"wg0",
        b"interface",
        b"solowg_wg0",
        b"x-y",
        b"",
        b"\x0b",
        b"\0",
        b"\xff",
        b"\xc3\xa4",
        b"10.0.0.1/24",
    ];
    let seed_text = concat!(
        "package network\nconfig interface 'wg0'\n\toption proto 'solowg'\n",
        "\tlist addresses '10.0.0.1/24'\n\toption d \"a\\\"b\" # c\nconfig solowg_wg0\n",
        "\toption description 'it'\\''s\nmulti'; option x y\n",
    );
    let mut rng = TestRng(0x5eed_1234_abcd_0001);
    for round in 0..3000 {
        let mut input: Vec<u8> = if round % 2 == 0 {
            seed_text.as_bytes().to_vec()
        } else {
            Vec::new()
        };
        for _ in 0..rng.index(24) {
            let piece = PIECES[rng.index(PIECES.len())];
            let at = if input.is_empty() {
                0
            } else {
                rng.index(input.len() + 1)
            };
            match rng.index(4) {
                0 if !input.is_empty() => {
                    let end = (at + rng.index(4)).min(input.len());
                    input.drain(at.min(end)..end);
                }
                1 if !input.is_empty() => {
                    let i = rng.index(input.len());
                    input[i] = rng.next() as u8;
                }
                _ => {
                    input.splice(at..at, piece.iter().copied());
                }
            }
        }
        check_invariants(&input);
    }
    for len in 0..200 {
        let input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        check_invariants(&input);
    }
}
