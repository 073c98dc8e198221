//! The line-buffer parser: shell-like arguments decoded the way libuci decodes them, each
//! command handed to the [`Builder`].

use super::builder::Builder;
use super::{ErrorKind, Package, ParseError};

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

pub(super) fn valid_name(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

fn valid_package(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

pub(super) fn valid_type(s: &[u8]) -> bool {
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
