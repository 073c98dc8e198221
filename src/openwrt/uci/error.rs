//! The errors of a rejected line, worded as libuci words them.

use std::fmt;

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
