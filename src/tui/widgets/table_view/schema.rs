//! What a table declares of its rows ([`Schema`]: columns, filter fields,
//! the key a selection follows) and how the view reads rows with it: a
//! filter parsed into checks and kept rows, and the sort keys' order.

use std::borrow::Cow;
use std::cmp::Ordering;

use earshot_core::query::{self, FieldName, Since, Term};

/// Reads a text from a row.
pub(crate) type Text<R> = fn(&R) -> Cow<'_, str>;

/// A column as the view filters and sorts it.
pub(crate) struct Column<R: 'static> {
    pub(crate) header: &'static str,
    /// Its text, which free words match (`None`: a column that moves with
    /// the clock, such as an age).
    pub(crate) text: Option<Text<R>>,
    /// What it sorts by.
    pub(crate) sort: fn(&R) -> SortKey<'_>,
}

/// What a column sorts by: numbers by value, text in any case; rows
/// without a value come last whichever the direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SortKey<'a> {
    Number(i64),
    Text(Cow<'a, str>),
    Missing,
}

impl<'a> SortKey<'a> {
    pub(crate) fn text(text: &'a str) -> SortKey<'a> {
        SortKey::Text(Cow::Borrowed(text))
    }

    /// A time or a count when there is one.
    pub(crate) fn number(value: Option<i64>) -> SortKey<'a> {
        value.map_or(SortKey::Missing, SortKey::Number)
    }
}

/// How a field reads a row and what its value keeps.
pub(crate) enum FieldKind<R: 'static> {
    /// Rows whose text contains the value (any case).
    Text(Text<R>),
    /// Rows whose word is the value, one of `values` (any case).
    Choice {
        values: &'static [&'static str],
        read: Text<R>,
    },
    /// Rows whose time (Unix milliseconds) is at or after the `since:`
    /// value (a duration back from now, or an RFC 3339 time).
    Since(fn(&R) -> Option<i64>),
}

/// A field of the filter: `name:value`.
pub(crate) struct Field<R: 'static> {
    pub(crate) name: FieldName,
    pub(crate) kind: FieldKind<R>,
}

/// What a table's rows look like to the view.
pub(crate) struct Schema<R: 'static> {
    /// In the order the table shows them.
    pub(crate) columns: &'static [Column<R>],
    pub(crate) fields: &'static [Field<R>],
    /// What identifies a row: the selection follows it.
    pub(crate) key: Text<R>,
    /// `/`'s help line, naming the fields (`filter: status:S sub:ID …`).
    pub(crate) filter_help: &'static str,
}

impl<R> Schema<R> {
    fn names(&self) -> Vec<FieldName> {
        self.fields.iter().map(|field| field.name).collect()
    }

    /// The headers, in order.
    pub(crate) fn headers(&self) -> Vec<&'static str> {
        self.columns.iter().map(|column| column.header).collect()
    }

    /// `text` as a filter of these rows; an error says what to write.
    pub(super) fn parse(&self, text: &str) -> Result<Filter, String> {
        let names = self.names();
        let mut checks = Vec::new();
        for term in query::terms(text, &names)? {
            let (name, value, term) = match term {
                Term::Word(word) => {
                    checks.push(Check::Word(word));
                    continue;
                }
                Term::Field { name, value, term } => (name, value, term),
            };
            let Some(at) = self.fields.iter().position(|f| f.name.name == name) else {
                return Err(query::unknown_field(name, &names));
            };
            checks.push(match &self.fields[at].kind {
                FieldKind::Text(_) => Check::Text {
                    field: at,
                    needle: query::fold(value).into_owned(),
                },
                FieldKind::Choice { values, .. } => {
                    let value = query::fold(value).into_owned();
                    if !values.contains(&value.as_str()) {
                        return Err(query::not_one_of(term, name, values));
                    }
                    Check::Choice { field: at, value }
                }
                FieldKind::Since(_) => Check::Since {
                    field: at,
                    since: Since::parse(value).map_err(|why| format!("{name}: {why}"))?,
                },
            });
        }
        Ok(Filter {
            text: text.trim().to_owned(),
            checks,
        })
    }

    /// Whether `row` passes every check of `filter` at `now_ms`.
    pub(super) fn keeps(&self, filter: &Filter, row: &R, now_ms: i64) -> bool {
        filter.checks.iter().all(|check| match check {
            Check::Word(word) => self
                .columns
                .iter()
                .filter_map(|column| column.text)
                .any(|text| contains_any_case(&text(row), word)),
            Check::Text { field, needle } => match &self.fields[*field].kind {
                FieldKind::Text(read) => contains_any_case(&read(row), needle),
                _ => false,
            },
            Check::Choice { field, value } => match &self.fields[*field].kind {
                FieldKind::Choice { read, .. } => read(row).eq_ignore_ascii_case(value),
                _ => false,
            },
            Check::Since { field, since } => match &self.fields[*field].kind {
                FieldKind::Since(read) => read(row).is_some_and(|at| at >= since.at(now_ms)),
                _ => false,
            },
        })
    }
}

/// Whether `haystack` contains `needle` (lower-case), in any case; no
/// copy of an ASCII haystack is made.
pub(crate) fn contains_any_case(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if haystack.is_ascii() && needle.is_ascii() {
        return haystack
            .as_bytes()
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()));
    }
    query::fold(haystack).contains(needle)
}

/// A filter in force: the text typed and its checks.
#[derive(Clone, Debug, Default)]
pub(super) struct Filter {
    pub(super) text: String,
    pub(super) checks: Vec<Check>,
}

#[derive(Clone, Debug)]
pub(super) enum Check {
    /// A free word (lower-case): some column's text contains it.
    Word(String),
    Text {
        field: usize,
        needle: String,
    },
    Choice {
        field: usize,
        value: String,
    },
    Since {
        field: usize,
        since: Since,
    },
}

/// Orders two sort keys: `Missing` last both ways, numbers before text.
pub(super) fn compare(a: &SortKey<'_>, b: &SortKey<'_>, descending: bool) -> Ordering {
    let way = |ordering: Ordering| {
        if descending {
            ordering.reverse()
        } else {
            ordering
        }
    };
    match (a, b) {
        (SortKey::Missing, SortKey::Missing) => Ordering::Equal,
        (SortKey::Missing, _) => Ordering::Greater,
        (_, SortKey::Missing) => Ordering::Less,
        (SortKey::Number(a), SortKey::Number(b)) => way(a.cmp(b)),
        (SortKey::Text(a), SortKey::Text(b)) => way(a
            .bytes()
            .map(|c| c.to_ascii_lowercase())
            .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))),
        (SortKey::Number(_), SortKey::Text(_)) => way(Ordering::Less),
        (SortKey::Text(_), SortKey::Number(_)) => way(Ordering::Greater),
    }
}
