//! A fix: the one change to the sandbox file that would allow a refusal, as data.
//!
//! Every fix is a value appended to one list of the file (`commands`, `[files] read`,
//! `[files] write`, `[internet] hosts`, `[internet] tcp`), so a harness applies it without
//! reading prose: `table` (none for the top level), `key`, `value`. `words` says the same for a
//! person. What a fix must do, and the tests check by applying it (`tests/fix_loop.rs`): the file
//! with the value appended passes `lnk sandbox check`, and the same command then works, in the
//! mode the call ran in. Where no such change exists, there is no fix, and the denial's `why`
//! says what would be needed instead.
//!
//! Trusted with: that a fix the harness applies is one value appended to one of these five lists,
//! the same in data and in words, and that one read back from a record is such a fix or none. What
//! it trusts: its callers, for whether the value is right to grant (see [`super::explain`]).

use crate::json;

/// One value appended to one list of the sandbox file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// The table (`files`, `internet`), or `None` for the top level (`commands`).
    pub table: Option<&'static str>,
    /// The list in it.
    pub key: &'static str,
    /// What to append.
    pub value: String,
}

/// Every list a fix may name.
const LISTS: [(Option<&str>, &str); 5] = [
    (None, "commands"),
    (Some("files"), "read"),
    (Some("files"), "write"),
    (Some("internet"), "hosts"),
    (Some("internet"), "tcp"),
];

impl Fix {
    /// A program, to `commands`.
    pub fn program(name: &str) -> Fix {
        Fix { table: None, key: "commands", value: name.to_owned() }
    }
    /// A folder, to `[files] read`.
    pub fn read(folder: &std::path::Path) -> Fix {
        Fix { table: Some("files"), key: "read", value: folder.display().to_string() }
    }
    /// A folder, to `[files] write`.
    pub fn write(folder: &std::path::Path) -> Fix {
        Fix { table: Some("files"), key: "write", value: folder.display().to_string() }
    }
    /// A host (reached on ports 80 and 443), to `[internet] hosts`.
    pub fn host(host: &str) -> Fix {
        Fix { table: Some("internet"), key: "hosts", value: host.to_owned() }
    }
    /// An endpoint (`ADDRESS:PORT`, `[V6]:PORT` or `NAME:PORT`), to `[internet] tcp`.
    pub fn tcp(endpoint: String) -> Fix {
        Fix { table: Some("internet"), key: "tcp", value: endpoint }
    }

    /// The change in words: `add "gcc" to commands`, `add "/srv/x" to [files] read`.
    pub fn words(&self) -> String {
        let value = json::string(&self.value);
        match self.table {
            None => format!("add {value} to {}", self.key),
            Some(table) => format!("add {value} to [{table}] {}", self.key),
        }
    }

    pub fn to_json(&self) -> String {
        json::Object::new()
            .raw("table", &self.table.map_or("null".into(), json::string))
            .str("key", self.key)
            .str("value", &self.value)
            .str("words", &self.words())
            .finish()
    }

    /// The fix as a background record keeps it: `TABLE:KEY:VALUE` (`TABLE` empty at the top
    /// level; the value may hold `:` itself).
    pub fn to_field(&self) -> String {
        format!("{}:{}:{}", self.table.unwrap_or(""), self.key, self.value)
    }

    /// Reads [`Fix::to_field`] back; `None` for anything else (a record of an older lnk kept its
    /// fix as words, which are left out, not guessed at).
    pub fn from_field(field: &str) -> Option<Fix> {
        let mut parts = field.splitn(3, ':');
        let (table, key, value) = (parts.next()?, parts.next()?, parts.next()?);
        let (table, key) = LISTS.iter().find(|(t, k)| t.unwrap_or("") == table && *k == key)?;
        (!value.is_empty()).then(|| Fix { table: *table, key, value: value.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fix_survives_its_record_field_and_says_itself_in_words() {
        let fixes = [
            Fix::program("gcc"),
            Fix::read(std::path::Path::new("/srv/a b")),
            Fix::write(std::path::Path::new("/srv/x")),
            Fix::host("example.com"),
            Fix::tcp("127.0.0.1:8080".into()),
            Fix::tcp("[::1]:8080".into()),
        ];
        for fix in fixes {
            assert_eq!(Fix::from_field(&fix.to_field()), Some(fix.clone()), "{fix:?}");
        }
        assert_eq!(Fix::program("gcc").words(), "add \"gcc\" to commands");
        assert_eq!(Fix::tcp("127.0.0.1:80".into()).words(), "add \"127.0.0.1:80\" to [internet] tcp");
        for old in ["add \"/x\" to [files] read", "", "files:read:", "files:other:/x", "x:read:/y"] {
            assert_eq!(Fix::from_field(old), None, "{old}");
        }
    }
}
