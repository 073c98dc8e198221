//! What libuci's loader does with the parsed commands: opening and continuing sections,
//! replacing options and growing lists, numbering anonymous sections.

use std::collections::HashMap;

use super::{Package, Section, Value};

/// Applies parsed commands the way libuci's loader does.
#[derive(Default)]
pub(super) struct Builder {
    sections: Vec<Section>,
    named: HashMap<String, usize>,
    pub(super) current: Option<usize>,
}

impl Builder {
    pub(super) fn open_section(&mut self, ty: String, name: Option<String>, line: usize) {
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

    pub(super) fn set_option(&mut self, name: String, value: String) {
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

    pub(super) fn add_list(&mut self, name: String, value: String) {
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

    pub(super) fn finish(mut self) -> Package {
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
