//! Reader for UCI configuration files (`/etc/config/*`), giving the same result as OpenWrt's
//! libuci loading a file in non-strict mode, which is how netifd and the shell's
//! `config_load` read it.
//!
//! The file is line based. A line holds commands (`package`/`p`, `config`/`c`, `option`/`o`,
//! `list`/`l`), each followed by shell-like arguments:
//!
//! * adjacent quoted and unquoted pieces form one argument (`'it'\''s'` is `it's`);
//! * single quotes are literal and may span lines (the newline is kept);
//! * inside double quotes a backslash takes the next character literally, and a backslash at the
//!   end of a line joins the next line;
//! * unquoted, a backslash escapes the next character, a backslash at the end of a line joins
//!   the next line, whitespace ends the argument and `#` ends the line, even inside a word;
//! * `;` ends a command (with libuci's quirks, see [`parse`]).
//!
//! What libuci does with the parsed commands, and therefore this reader too:
//!
//! * `config TYPE [NAME]`: a type is printable ASCII without spaces, a name `[A-Za-z0-9_]+`.
//!   Without a name (or with an empty one) the section is anonymous and shown as `@TYPE[N]`.
//!   A name seen again continues the earlier section (and takes the new type).
//! * `option NAME VALUE`: a different value replaces the old one and moves the option to the
//!   end of the section; the same value changes nothing. An empty value is ignored (libuci's
//!   loader does not delete options; only the `uci set` command does).
//! * `list NAME VALUE` appends an item (an empty one too). Given after an `option` of the same
//!   name it turns it into a list `[old, new]`, moved to the end of the section; an `option`
//!   after a `list` replaces the list.
//! * A bad line is reported and skipped; parsing goes on with the next line. Options that follow
//!   a bad `config` line land in the section before it (or are errors "before the first
//!   section"), exactly as libuci and so `uci show` and netifd see them.
//!
//! Deviations, all for inputs `uci` never writes: a NUL byte makes its line an error (libuci's
//! result then depends on its buffer sizes); bytes that are not UTF-8 become U+FFFD in values;
//! a named section is never matched against the generated `cfgXXXXXX` name of an anonymous
//! one; an error on a last line without a newline names that line (libuci names the one before).
//!
//! Nothing here panics, whatever the input; the work is linear in the input size apart from the
//! option look-up inside one section.

use std::collections::HashMap;
use std::fmt;

/// The value of an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `option name 'value'`
    Single(String),
    /// `list name 'a'` lines, in order.
    List(Vec<String>),
}

impl Value {
    /// The items: one for a single value, every item of a list.
    pub fn items(&self) -> &[String] {
        match self {
            Value::Single(s) => std::slice::from_ref(s),
            Value::List(l) => l,
        }
    }
}

/// One `config` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub section_type: String,
    /// `None` for an anonymous section.
    pub name: Option<String>,
    /// How `uci show` names it: the name, or `@type[N]` for an anonymous section, `N` counting
    /// the sections of that type from 0 in file order.
    pub display_name: String,
    /// Line of the `config` command that opened the section.
    pub line: usize,
    /// In libuci's order.
    pub options: Vec<(String, Value)>,
}

impl Section {
    pub fn get(&self, option: &str) -> Option<&Value> {
        self.options
            .iter()
            .find(|(n, _)| n == option)
            .map(|(_, v)| v)
    }
}

/// A parsed file: its sections in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Package {
    pub sections: Vec<Section>,
}

impl Package {
    /// The named section `name`.
    #[cfg(any(test, feature = "internals"))]
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.name.as_deref() == Some(name))
    }

    /// Sections of one type, in file order.
    #[cfg(any(test, feature = "internals"))]
    pub fn sections_of_type<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Section> + 'a {
        self.sections.iter().filter(move |s| s.section_type == ty)
    }
}

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

/// Why a line was rejected. The texts are libuci's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidCommand,
    InsufficientArguments,
    InvalidName,
    InvalidType,
    OptionBeforeSection,
    PackageWithoutName,
    ConfigWithoutName,
    OptionWithoutName,
    UnterminatedSingleQuote,
    UnterminatedDoubleQuote,
    /// Not a libuci error: see the module notes.
    NulByte,
}

impl ErrorKind {
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::InvalidCommand => "invalid command",
            ErrorKind::InsufficientArguments => "insufficient arguments",
            ErrorKind::InvalidName => "invalid character in name field",
            ErrorKind::InvalidType => "invalid character in type field",
            ErrorKind::OptionBeforeSection => "option/list command found before the first section",
            ErrorKind::PackageWithoutName => "package without name",
            ErrorKind::ConfigWithoutName => "config without name",
            ErrorKind::OptionWithoutName => "option without name",
            ErrorKind::UnterminatedSingleQuote => "EOF with unterminated '",
            ErrorKind::UnterminatedDoubleQuote => "EOF with unterminated \"",
            ErrorKind::NulByte => "NUL byte in line",
        }
    }
}

/// A rejected line. Displays as libuci prints it:
/// `Parse error (invalid command) at line 2, byte 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ErrorKind,
    /// 1-based line where the error was found (the last line of a multi-line command).
    pub line: usize,
    /// Offset into the (possibly joined) command line where the parser stood.
    pub byte: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Parse error ({}) at line {}, byte {}",
            self.kind.reason(),
            self.line,
            self.byte
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses a UCI file like libuci in non-strict mode: every section that could be read, and the
/// lines that could not.
///
/// `;` follows libuci to the letter: it separates commands on one line, except that right after
/// an unquoted argument without escapes it ends the line (`option a 1; option b 2` sets only
/// `a`), and a `;` that ends a line leaves an empty command that libuci calls invalid.
pub fn parse(text: &str) -> (Package, Vec<ParseError>) {
    parse_bytes(text.as_bytes())
}

/// [`parse`] for raw file contents.
pub fn parse_bytes(input: &[u8]) -> (Package, Vec<ParseError>) {
    let mut p = Parser {
        input,
        next: 0,
        line: 0,
        buf: Vec::new(),
        filled: 0,
        pos: 0,
        builder: Builder::default(),
    };
    let mut errors = Vec::new();
    while p.next < input.len() {
        p.pos = 0;
        p.getln(0);
        let r = if p.buf.contains(&0) {
            Err(p.error(ErrorKind::NulByte))
        } else {
            p.parse_line()
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    (std::mem::take(&mut p.builder).finish(), errors)
}

/// `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn valid_name(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

fn valid_package(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

fn valid_type(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&c| (33..=126).contains(&c))
}

fn text(v: Vec<u8>) -> String {
    match String::from_utf8(v) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Works like libuci's parser on a line buffer: a command line is read into `buf`, arguments
/// are decoded from `pos` on, and a quote or backslash that needs more input appends the next
/// line. A 0 byte in `buf` is an end mark written by the parser (input NULs are rejected first).
struct Parser<'a> {
    input: &'a [u8],
    /// Where the next line starts in `input`.
    next: usize,
    /// Lines read so far.
    line: usize,
    buf: Vec<u8>,
    /// End of the text read into `buf` (an end mark may stand before it).
    filled: usize,
    pos: usize,
    builder: Builder,
}

// The line buffer may hold a private key: wipe it (best effort; earlier reallocations of the
// buffer are not tracked).
impl Drop for Parser<'_> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.buf);
    }
}

/// How an argument ended.
#[derive(PartialEq, Eq)]
enum ArgEnd {
    /// Whitespace, end of line or comment.
    Plain,
    /// An unquoted `;`, still at `pos`.
    Semicolon,
}

impl Parser<'_> {
    fn error(&self, kind: ErrorKind) -> ParseError {
        ParseError {
            kind,
            line: self.line,
            byte: self.pos,
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.buf.get(i).copied().unwrap_or(0)
    }

    fn cur(&self) -> u8 {
        self.at(self.pos)
    }

    fn set(&mut self, i: usize, c: u8) {
        if let Some(b) = self.buf.get_mut(i) {
            *b = c;
        }
    }

    /// Replaces `buf` from `offset` on with the next input line (newline included). At the end
    /// of the input only an end mark is written at `offset`.
    fn getln(&mut self, offset: usize) {
        if self.next >= self.input.len() {
            self.set(offset, 0);
            return;
        }
        let rest = self.input.get(self.next..).unwrap_or_default();
        let len = rest
            .iter()
            .position(|&c| c == b'\n')
            .map_or(rest.len(), |i| i + 1);
        self.buf.truncate(offset);
        self.buf
            .extend_from_slice(rest.get(..len).unwrap_or_default());
        self.filled = self.buf.len();
        self.next += len;
        self.line += 1;
    }

    fn skip_whitespace(&mut self) {
        while self.cur() != 0 && is_space(self.cur()) {
            self.pos += 1;
        }
    }

    /// Steps over a backslash. True if the character after it is to be taken literally; false
    /// if it ended the line, in which case the next line has been joined in its place.
    fn backslash(&mut self) -> bool {
        self.pos += 1;
        let c = self.cur();
        let crlf_end = c == b'\r' && self.at(self.pos + 1) == b'\n' && self.at(self.pos + 2) == 0;
        if c == 0 || c == b'\n' || crlf_end {
            self.getln(self.pos);
            return false;
        }
        true
    }

    fn take(&mut self, out: &mut Vec<u8>) {
        out.push(self.cur());
        self.pos += 1;
    }

    fn single_quoted(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        self.pos += 1;
        loop {
            match self.cur() {
                b'\'' => {
                    self.pos += 1;
                    return Ok(());
                }
                0 => {
                    self.getln(self.pos);
                    if self.cur() == 0 {
                        return Err(self.error(ErrorKind::UnterminatedSingleQuote));
                    }
                }
                _ => self.take(out),
            }
        }
    }

    fn double_quoted(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        self.pos += 1;
        loop {
            match self.cur() {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                0 => {
                    self.getln(self.pos);
                    if self.cur() == 0 {
                        return Err(self.error(ErrorKind::UnterminatedDoubleQuote));
                    }
                }
                b'\\' => {
                    if self.backslash() {
                        self.take(out);
                    }
                }
                _ => self.take(out),
            }
        }
    }

    /// Decodes one argument starting at `pos` (libuci's `parse_str`).
    fn word(&mut self, out: &mut Vec<u8>) -> Result<ArgEnd, ParseError> {
        let start = self.pos;
        let mut end = ArgEnd::Plain;
        loop {
            match self.cur() {
                b'\'' => self.single_quoted(out)?,
                b'"' => self.double_quoted(out)?,
                b'#' => {
                    self.set(self.pos, 0);
                    break;
                }
                0 => break,
                b';' => {
                    end = ArgEnd::Semicolon;
                    break;
                }
                b'\\' => {
                    if self.backslash() {
                        self.take(out);
                    }
                }
                _ => self.take(out),
            }
            if self.cur() == 0 || is_space(self.cur()) {
                break;
            }
        }
        if self.cur() != 0 && end == ArgEnd::Plain {
            self.pos += 1;
        }
        // libuci decodes in place and then terminates the decoded text. When nothing was
        // dropped (no quotes, no escapes) that end mark lands on the `;` itself, which then no
        // longer separates commands: the rest of the line is lost.
        if end == ArgEnd::Semicolon && start + out.len() == self.pos {
            self.set(self.pos, 0);
        }
        Ok(end)
    }

    /// The next argument, possibly empty (libuci's `next_arg`).
    fn arg(&mut self) -> Result<Vec<u8>, ParseError> {
        self.skip_whitespace();
        let mut out = Vec::new();
        if self.cur() == b';' {
            self.set(self.pos, 0);
            self.pos += 1;
        } else {
            self.word(&mut out)?;
        }
        Ok(out)
    }

    fn required_arg(&mut self) -> Result<Vec<u8>, ParseError> {
        let a = self.arg()?;
        if a.is_empty() {
            return Err(self.error(ErrorKind::InsufficientArguments));
        }
        Ok(a)
    }

    fn name_arg(
        &mut self,
        required: bool,
        valid: fn(&[u8]) -> bool,
    ) -> Result<Vec<u8>, ParseError> {
        let a = if required {
            self.required_arg()?
        } else {
            self.arg()?
        };
        if !a.is_empty() && !valid(&a) {
            return Err(self.error(ErrorKind::InvalidName));
        }
        Ok(a)
    }

    /// Consumes one more argument; libuci complains about it only in strict mode.
    fn end_of_command(&mut self) -> Result<(), ParseError> {
        self.skip_whitespace();
        self.arg().map(drop)
    }

    fn strlen_at(&self, i: usize) -> usize {
        self.buf
            .get(i..)
            .unwrap_or_default()
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.buf.len().saturating_sub(i))
    }

    /// Steps over the command word (and what `command_word` skipped before it).
    fn skip_command(&mut self, kind: ErrorKind) -> Result<(), ParseError> {
        let add = self.strlen_at(self.pos) + 1;
        if self.pos + add > self.filled {
            return Err(self.error(kind));
        }
        self.pos += add;
        Ok(())
    }

    /// libuci finds the command word with `strtok(.., " \t")`: it skips spaces and tabs (but
    /// leaves `pos` alone) and ends the word with an end mark at the next space or tab.
    fn command_word(&mut self) -> Option<Vec<u8>> {
        let mut i = self.pos;
        while matches!(self.at(i), b' ' | b'\t') {
            i += 1;
        }
        if self.at(i) == 0 {
            return None;
        }
        let start = i;
        while !matches!(self.at(i), 0 | b' ' | b'\t') {
            i += 1;
        }
        let word = self.buf.get(start..i).unwrap_or_default().to_vec();
        if self.at(i) != 0 {
            self.set(i, 0);
        }
        Some(word)
    }

    fn parse_line(&mut self) -> Result<(), ParseError> {
        self.skip_whitespace();
        // Every command moves `pos` forward by at least one byte or fails, so this ends; the
        // bound only guards that reasoning.
        for _ in 0..=self.buf.len() {
            let Some(word) = self.command_word() else {
                return Ok(());
            };
            match word.as_slice() {
                [] | [b'#', ..] => return Ok(()),
                b"p" | b"package" => self.package()?,
                b"c" | b"config" => self.config()?,
                b"o" | b"option" => self.option(false)?,
                b"l" | b"list" => self.option(true)?,
                _ => return Err(self.error(ErrorKind::InvalidCommand)),
            }
        }
        Ok(())
    }

    /// `package NAME`: checked, otherwise ignored (the file's name is the package).
    fn package(&mut self) -> Result<(), ParseError> {
        self.skip_command(ErrorKind::PackageWithoutName)?;
        self.name_arg(true, valid_package)?;
        self.end_of_command()
    }

    fn config(&mut self) -> Result<(), ParseError> {
        self.skip_command(ErrorKind::ConfigWithoutName)?;
        let ty = self.required_arg()?;
        if !valid_type(&ty) {
            return Err(self.error(ErrorKind::InvalidType));
        }
        let name = self.name_arg(false, valid_name)?;
        self.end_of_command()?;
        let line = self.line;
        let name = (!name.is_empty()).then(|| text(name));
        self.builder.open_section(text(ty), name, line);
        Ok(())
    }

    fn option(&mut self, list: bool) -> Result<(), ParseError> {
        if self.builder.current.is_none() {
            return Err(self.error(ErrorKind::OptionBeforeSection));
        }
        self.skip_command(ErrorKind::OptionWithoutName)?;
        let name = text(self.name_arg(true, valid_name)?);
        let value = text(self.arg()?);
        self.end_of_command()?;
        if list {
            self.builder.add_list(name, value);
        } else {
            self.builder.set_option(name, value);
        }
        Ok(())
    }
}

/// Applies parsed commands the way libuci's loader does.
#[derive(Default)]
struct Builder {
    sections: Vec<Section>,
    named: HashMap<String, usize>,
    current: Option<usize>,
}

impl Builder {
    fn open_section(&mut self, ty: String, name: Option<String>, line: usize) {
        if let Some(n) = &name {
            if let Some(&i) = self.named.get(n) {
                if let Some(s) = self.sections.get_mut(i) {
                    s.section_type = ty;
                }
                self.current = Some(i);
                return;
            }
            self.named.insert(n.clone(), self.sections.len());
        }
        self.current = Some(self.sections.len());
        self.sections.push(Section {
            section_type: ty,
            display_name: name.clone().unwrap_or_default(),
            name,
            line,
            options: Vec::new(),
        });
    }

    fn options(&mut self) -> Option<&mut Vec<(String, Value)>> {
        let i = self.current?;
        self.sections.get_mut(i).map(|s| &mut s.options)
    }

    fn set_option(&mut self, name: String, value: String) {
        let Some(opts) = self.options() else { return };
        if value.is_empty() {
            return;
        }
        match opts.iter().position(|(n, _)| *n == name) {
            Some(i) if matches!(&opts[i].1, Value::Single(v) if *v == value) => {}
            Some(i) => {
                opts.remove(i);
                opts.push((name, Value::Single(value)));
            }
            None => opts.push((name, Value::Single(value))),
        }
    }

    fn add_list(&mut self, name: String, value: String) {
        let Some(opts) = self.options() else { return };
        match opts.iter().position(|(n, _)| *n == name) {
            Some(i) => match &mut opts[i].1 {
                Value::List(items) => items.push(value),
                Value::Single(_) => {
                    let (name, old) = opts.remove(i);
                    let first = match old {
                        Value::Single(s) => s,
                        Value::List(_) => String::new(),
                    };
                    opts.push((name, Value::List(vec![first, value])));
                }
            },
            None => opts.push((name, Value::List(vec![value]))),
        }
    }

    fn finish(mut self) -> Package {
        // `@type[N]` counts named sections of the type too.
        let mut count: HashMap<&str, usize> = HashMap::new();
        let mut names = Vec::with_capacity(self.sections.len());
        for s in &self.sections {
            let n = count.entry(s.section_type.as_str()).or_insert(0);
            names.push(
                s.name
                    .is_none()
                    .then(|| format!("@{}[{}]", s.section_type, n)),
            );
            *n += 1;
        }
        for (s, n) in self.sections.iter_mut().zip(names) {
            if let Some(n) = n {
                s.display_name = n;
            }
        }
        Package {
            sections: self.sections,
        }
    }
}

#[cfg(test)]
mod tests {
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
        let (secs, errs) =
            p("config interface a\n\toption x 1\nconfig interface b-c\n\toption y 2\n");
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
}
