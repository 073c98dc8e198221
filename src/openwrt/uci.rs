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

mod builder;
mod error;
mod parser;
mod render;
#[cfg(test)]
mod tests;

pub use error::{ErrorKind, ParseError};
pub use parser::parse;
#[cfg(any(test, feature = "internals"))]
pub use parser::parse_bytes;
pub use render::{render, rendered_len};

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
