//! Walks a parsed TOML document and checks it against the sandbox file's schema.
//!
//! The walk never stops at the first problem: each key is checked and every diagnostic is kept,
//! so `lnk sandbox check` shows them all. A value is only used when it is valid; an invalid file
//! is never turned into a [`SandboxFile`].
//!
//! Trusted with: that a [`SandboxFile`] says what the file says and nothing else: a key misread or
//! a bad value let through would grant what the person did not write. What it trusts: `toml_edit`'s
//! parse of the text; nothing in the document, each key and value of which is checked.

use std::ops::Range;

use toml_edit::{Document, Item, TableLike};

use super::values::{self, HostPattern, TcpEndpoint};
use super::{
    Bounds, Commands, HOPS, INOTIFY_INSTANCES, INOTIFY_WATCHES, Internet, OUTPUT_CHARS, PER_MINUTE,
    PROCESSES, SandboxFile, TIMEOUT_SECS,
};
use crate::diagnostic::{Diagnostic, nearest};
use crate::paths::GrantPath;

const ROOT_KEYS: &[&str] = &["commands", "files", "internet", "localhost", "browser", "tool"];
const FILES_KEYS: &[&str] = &["read", "write", "deny"];
const INTERNET_KEYS: &[&str] = &["hosts", "tcp", "per_minute", "tools"];
const RUN_KEYS: &[&str] = &["timeout", "output", "processes", "inotify_instances", "inotify_watches"];
const SCHEDULER_KEYS: &[&str] = &["hops"];

pub(super) fn parse(source: &str) -> Result<SandboxFile, Vec<Diagnostic>> {
    let doc = match Document::parse(source) {
        Ok(doc) => doc,
        Err(e) => {
            // The TOML grammar cannot recover from a syntax error, so this is the one case with a
            // single diagnostic: the first place the text stops being TOML.
            let message = e.message().trim_end().replace('\n', "; ");
            return Err(vec![Diagnostic::new(format!("invalid TOML: {message}"), e.span().or(Some(0..0)))]);
        }
    };
    let mut walk = Walk { diagnostics: Vec::new() };
    let file = walk.root(doc.as_table());
    if walk.diagnostics.is_empty() { Ok(file) } else { Err(walk.diagnostics) }
}

struct Walk {
    diagnostics: Vec<Diagnostic>,
}

impl Walk {
    fn error(&mut self, message: impl Into<String>, span: Option<Range<usize>>) {
        self.diagnostics.push(Diagnostic::new(message, span));
    }

    fn root(&mut self, root: &dyn TableLike) -> SandboxFile {
        let mut file = SandboxFile::nothing();
        self.unknown_keys(root, ROOT_KEYS, "");
        if let Some((key, item)) = root.get_key_value("commands") {
            file.commands = self.commands(item, key.span());
        }
        if let Some(files) = self.table(root, "files") {
            self.unknown_keys(files, FILES_KEYS, "files.");
            file.read = self.grants(files, "read");
            file.write = self.grants(files, "write");
            file.deny = self.grants(files, "deny");
        }
        if let Some(internet) = self.table(root, "internet") {
            file.internet = Some(self.internet(internet));
        }
        // `[localhost]` and `[browser]` belong to the harness; lnk never gives them to a sandbox,
        // so their contents are not lnk's to check beyond being tables.
        let _ = self.table(root, "localhost");
        let _ = self.table(root, "browser");
        if let Some(tool) = self.table(root, "tool") {
            // Tables for other tools are the harness's and are accepted as they are.
            if let Some(run) = self.table(tool, "run") {
                self.unknown_keys(run, RUN_KEYS, "tool.run.");
                file.timeout_secs = self.bounded(run, "timeout", TIMEOUT_SECS);
                file.output_chars = self.bounded(run, "output", OUTPUT_CHARS);
                file.appetite.processes = self.bounded(run, "processes", PROCESSES);
                file.appetite.inotify_instances = self.bounded(run, "inotify_instances", INOTIFY_INSTANCES);
                file.appetite.inotify_watches = self.bounded(run, "inotify_watches", INOTIFY_WATCHES);
            }
            if let Some(scheduler) = self.table(tool, "scheduler") {
                self.unknown_keys(scheduler, SCHEDULER_KEYS, "tool.scheduler.");
                file.hops = self.bounded(scheduler, "hops", HOPS);
            }
            for (name, item) in tool.iter() {
                if item.as_table_like().is_none() {
                    let span = span_of(tool, name, item);
                    self.error(format!("`tool.{name}` must be a table, such as `[tool.{name}]`"), span);
                }
            }
        }
        file
    }

    fn unknown_keys(&mut self, table: &dyn TableLike, known: &[&str], prefix: &str) {
        for (name, _) in table.iter() {
            if known.contains(&name) {
                continue;
            }
            let span = table.key(name).and_then(|k| k.span());
            let shown: String = name.chars().take(64).collect::<String>().escape_debug().to_string();
            let mut d = Diagnostic::new(format!("unknown key `{prefix}{shown}`"), span);
            d = match nearest(name, known) {
                Some(near) => d.with_help(format!("did you mean `{prefix}{near}`?")),
                None => d.with_help(format!("known keys here: {}", known.join(", "))),
            };
            self.diagnostics.push(d);
        }
    }

    /// The sub-table `name` of `parent`, if present; an error if present but not a table.
    fn table<'a>(&mut self, parent: &'a dyn TableLike, name: &str) -> Option<&'a dyn TableLike> {
        let item = parent.get(name)?;
        match item.as_table_like() {
            Some(t) => Some(t),
            None => {
                let span = span_of(parent, name, item);
                self.error(
                    format!("`{name}` must be a table, such as `[{name}]`, not {}", describe(item)),
                    span,
                );
                None
            }
        }
    }

    fn commands(&mut self, item: &Item, key_span: Option<Range<usize>>) -> Commands {
        let Some(names) = self.strings(item, "commands", key_span) else {
            return Commands::Listed(Vec::new());
        };
        let star_span = names.iter().find(|(n, _)| n == "*").map(|(_, s)| s.clone());
        let mut listed = Vec::new();
        for (name, span) in &names {
            if name == "*" {
                continue;
            }
            match values::program_name(name) {
                Ok(()) if !listed.contains(name) => listed.push(name.clone()),
                Ok(()) => {}
                Err(why) => self.error(why, span.clone()),
            }
        }
        match star_span {
            None => Commands::Listed(listed),
            Some(_) if names.len() == 1 => Commands::Any,
            Some(span) => {
                self.diagnostics.push(
                    Diagnostic::new("`\"*\"` allows any program and must stand alone in `commands`", span)
                        .with_help("write `commands = [\"*\"]`, or list the programs without `\"*\"`"),
                );
                Commands::Listed(Vec::new())
            }
        }
    }

    fn grants(&mut self, table: &dyn TableLike, key: &str) -> Vec<GrantPath> {
        let Some((k, item)) = table.get_key_value(key) else { return Vec::new() };
        let Some(paths) = self.strings(item, &format!("files.{key}"), k.span()) else {
            return Vec::new();
        };
        let mut grants = Vec::new();
        for (text, span) in paths {
            match GrantPath::parse(&text) {
                Ok(g) => grants.push(g),
                Err(why) => self.error(format!("`{}`: {why}", text.escape_debug()), span),
            }
        }
        grants
    }

    fn internet(&mut self, table: &dyn TableLike) -> Internet {
        self.unknown_keys(table, INTERNET_KEYS, "internet.");
        let mut internet = Internet {
            hosts: Vec::new(),
            tcp: Vec::new(),
            per_minute: self.bounded(table, "per_minute", PER_MINUTE),
            tools: vec!["run".to_owned()],
        };
        for (text, span) in self.listed_strings(table, "hosts", "internet.hosts") {
            match HostPattern::parse(&text) {
                Ok(h) => internet.hosts.push(h),
                Err(why) => self.error(why, span),
            }
        }
        if internet.hosts.contains(&HostPattern::Any) && internet.hosts.len() > 1 {
            let span = table.get("hosts").and_then(Item::span);
            self.error("`\"*\"` allows any host and must stand alone in `hosts`", span);
        }
        for (text, span) in self.listed_strings(table, "tcp", "internet.tcp") {
            match TcpEndpoint::parse(&text) {
                Ok(e) => internet.tcp.push(e),
                Err(why) => self.error(why, span),
            }
        }
        if let Some((k, item)) = table.get_key_value("tools") {
            if let Some(tools) = self.strings(item, "internet.tools", k.span()) {
                internet.tools.clear();
                for (name, span) in tools {
                    let plain = !name.is_empty()
                        && name.len() <= 64
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    if plain {
                        internet.tools.push(name);
                    } else {
                        self.error(
                            format!("`{}` is not a tool name, such as `run`", name.escape_debug()),
                            span,
                        );
                    }
                }
            }
        }
        internet
    }

    fn listed_strings(
        &mut self,
        table: &dyn TableLike,
        key: &str,
        full: &str,
    ) -> Vec<(String, Option<Range<usize>>)> {
        match table.get_key_value(key) {
            Some((k, item)) => self.strings(item, full, k.span()).unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// An array of strings, each with its span; `None` (with a diagnostic) if it is not one.
    fn strings(
        &mut self,
        item: &Item,
        full: &str,
        key_span: Option<Range<usize>>,
    ) -> Option<Vec<(String, Option<Range<usize>>)>> {
        let Some(array) = item.as_array() else {
            let span = item.span().or(key_span);
            self.error(format!("`{full}` must be an array of strings, not {}", describe(item)), span);
            return None;
        };
        // A value that is not a string is reported, and the strings are still checked, so every
        // problem in the array shows at once.
        let mut out = Vec::new();
        for value in array.iter() {
            match value.as_str() {
                Some(s) => out.push((s.to_owned(), value.span())),
                None => self.error(
                    format!("`{full}` holds strings only, not {}", with_article(value.type_name())),
                    value.span(),
                ),
            }
        }
        Some(out)
    }

    fn bounded(&mut self, table: &dyn TableLike, key: &str, bounds: Bounds) -> u32 {
        let Some(item) = table.get(key) else { return bounds.default };
        let span = span_of(table, key, item);
        let range = format!("{} to {}", bounds.min, bounds.max);
        match item.as_integer() {
            Some(n) if (i64::from(bounds.min)..=i64::from(bounds.max)).contains(&n) => n as u32,
            Some(n) => {
                self.error(format!("`{key}` is {n}, outside {range}"), span);
                bounds.default
            }
            None => {
                self.error(
                    format!("`{key}` must be a whole number from {range}, not {}", describe(item)),
                    span,
                );
                bounds.default
            }
        }
    }
}

/// The strings of `[files] read`, `write` and `deny`, each with its span.
pub(super) fn grant_strings(source: &str) -> Vec<super::GrantString> {
    let Ok(doc) = Document::parse(source) else { return Vec::new() };
    let Some(files) = doc.as_table().get("files").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &key in FILES_KEYS {
        let Some(array) = files.get(key).and_then(Item::as_array) else { continue };
        for value in array.iter() {
            if let Some(text) = value.as_str() {
                out.push(super::GrantString { key, text: text.to_owned(), span: value.span() });
            }
        }
    }
    out
}

/// The strings of `[internet] tcp`, each with its span (key `tcp`).
pub(super) fn tcp_strings(source: &str) -> Vec<super::GrantString> {
    let Ok(doc) = Document::parse(source) else { return Vec::new() };
    let tcp = doc.as_table().get("internet").and_then(Item::as_table_like).and_then(|t| t.get("tcp"));
    let Some(array) = tcp.and_then(Item::as_array) else { return Vec::new() };
    let strings = array.iter().filter_map(|v| Some((v.as_str()?.to_owned(), v.span())));
    strings.map(|(text, span)| super::GrantString { key: "tcp", text, span }).collect()
}

/// The span of `item`, or of its key when the item has none (an implicit or dotted table).
fn span_of(table: &dyn TableLike, name: &str, item: &Item) -> Option<Range<usize>> {
    item.span().or_else(|| table.key(name).and_then(|k| k.span()))
}

fn describe(item: &Item) -> String {
    with_article(item.type_name())
}

fn with_article(type_name: &str) -> String {
    let article = if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {type_name}")
}
