//! Writing sections back in `uci export`'s syntax, which [`parse`](super::parse) reads
//! back unchanged.

use super::{Section, Value};

/// Appends `sections` in the syntax `uci export` writes, every word single-quoted, so that
/// [`parse`] gives them back as they are (for the handed-over copy of the network file).
/// Empty option values are left out: the reader ignores them too. The caller wipes `out`
/// when it holds secrets, and sizes it: growing it would leave unwiped copies.
pub fn render(sections: &[&Section], out: &mut String) {
    for s in sections {
        out.push_str("\nconfig ");
        quote(&s.section_type, out);
        if let Some(n) = &s.name {
            out.push(' ');
            quote(n, out);
        }
        out.push('\n');
        for (name, value) in &s.options {
            match value {
                Value::Single(v) if v.is_empty() => {}
                Value::Single(v) => word_line("option", name, v, out),
                Value::List(items) => items.iter().for_each(|v| word_line("list", name, v, out)),
            }
        }
    }
}

/// The bytes [`render`] writes for `sections`, to size its buffer up front.
pub fn rendered_len(sections: &[&Section]) -> usize {
    let q = |w: &str| w.len() + 2 + 3 * w.bytes().filter(|&c| c == b'\'').count();
    sections
        .iter()
        .map(|s| {
            9 + q(&s.section_type)
                + s.name.as_deref().map_or(0, |n| 1 + q(n))
                + s.options
                    .iter()
                    .map(|(n, v)| v.items().iter().map(|i| 10 + q(n) + q(i)).sum::<usize>())
                    .sum::<usize>()
        })
        .sum()
}

fn word_line(cmd: &str, name: &str, value: &str, out: &mut String) {
    out.push('\t');
    out.push_str(cmd);
    out.push(' ');
    quote(name, out);
    out.push(' ');
    quote(value, out);
    out.push('\n');
}

/// Single quotes keep everything literal, newlines included; a quote itself is closed,
/// escaped and reopened.
fn quote(word: &str, out: &mut String) {
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}
