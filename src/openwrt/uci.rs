//! Reader for UCI configuration files (`/etc/config/*`), giving the same result as OpenWrt's
//! libuci loading a file in non-strict mode (as netifd and the shell's `config_load` read it),
//! and the writer of the copy `solowg export` hands the daemon. The syntax, what libuci does
//! with it and where this reader deviates: docs/architecture.md, "UCI reader".
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
