//! A small, strict command-line reader shared by `lnk` and `lnk-link-run`.
//!
//! Strict because the callers are programs: an unknown flag or a missing value is a usage error
//! (exit 2) naming the flag, never silently ignored, so a harness's typo cannot drop a limit.
//!
//! Trusted with: reading every word the harness wrote as it meant it: a flag dropped or misread
//! could drop a limit. What it trusts: its caller's lists of the flags and switches that exist;
//! nothing of the words.

use crate::diagnostic::nearest;

/// A usage error: what was wrong, in one line, exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The parsed words of one command: flags with values, switches, and positional arguments.
#[derive(Debug, Default)]
pub struct ParsedArgs {
    values: Vec<(&'static str, String)>,
    switches: Vec<&'static str>,
    pub positional: Vec<String>,
    pub help: bool,
}

impl ParsedArgs {
    /// The last value given for `flag`.
    pub fn value(&self, flag: &str) -> Option<&str> {
        self.values.iter().rev().find(|(f, _)| *f == flag).map(|(_, v)| v.as_str())
    }

    /// Every value given for `flag`, in order (a repeated flag).
    pub fn values(&self, flag: &str) -> Vec<&str> {
        self.values.iter().filter(|(f, _)| *f == flag).map(|(_, v)| v.as_str()).collect()
    }

    pub fn switch(&self, flag: &str) -> bool {
        self.switches.contains(&flag)
    }
}

/// The usage error for `flag` given twice, unless it may be repeated (see
/// [`crate::flags::given_twice`]).
fn once(flag: &str, seen: &mut Vec<String>) -> Result<(), UsageError> {
    crate::flags::given_twice(flag, seen).map_or(Ok(()), |why| Err(UsageError(why)))
}

/// Reads `args` given the flags that take a value and the switches that do not. `--flag=value`
/// and `--flag value` are both accepted; `--` ends the flags. A flag not
/// [`crate::flags::REPEATABLE`] given twice is a usage error.
pub fn parse(
    args: &[String],
    value_flags: &[&'static str],
    switches: &[&'static str],
) -> Result<ParsedArgs, UsageError> {
    let mut parsed = ParsedArgs::default();
    let mut seen = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            parsed.positional.extend(it.by_ref().cloned());
            break;
        }
        if arg == "--help" || arg == "-h" {
            parsed.help = true;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            parsed.positional.push(arg.clone());
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        if let Some(flag) = value_flags.iter().chain(switches).find(|f| **f == name) {
            once(flag, &mut seen)?;
        }
        if let Some(flag) = value_flags.iter().find(|f| **f == name) {
            let value = match inline {
                Some(v) => v,
                None => it.next().cloned().ok_or_else(|| UsageError(format!("`{flag}` needs a value")))?,
            };
            parsed.values.push((flag, value));
        } else if let Some(switch) = switches.iter().find(|f| **f == name) {
            if inline.is_some() {
                return Err(UsageError(format!("`{switch}` takes no value")));
            }
            parsed.switches.push(switch);
        } else {
            let known: Vec<&str> = value_flags.iter().chain(switches).copied().collect();
            let shown = name.escape_debug();
            return Err(UsageError(match nearest(name, &known) {
                Some(near) => format!("unknown flag `{shown}`; did you mean `{near}`?"),
                None => format!("unknown flag `{shown}`"),
            }));
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn flags_values_switches_and_positionals() {
        let p =
            parse(&v(&["f.toml", "--tool=file", "--json", "--", "--x"]), &["--tool"], &["--json"]).unwrap();
        assert_eq!(p.value("--tool"), Some("file"));
        assert!(p.switch("--json"));
        assert_eq!(p.positional, v(&["f.toml", "--x"]));
    }

    #[test]
    fn unknown_and_missing_are_errors() {
        assert!(
            parse(&v(&["--tol", "run"]), &["--tool"], &[]).unwrap_err().0.contains("did you mean `--tool`")
        );
        assert!(parse(&v(&["--tool"]), &["--tool"], &[]).unwrap_err().0.contains("needs a value"));
        assert!(parse(&v(&["--json=1"]), &[], &["--json"]).is_err());
        let twice = parse(&v(&["--tool", "run", "--tool=file"]), &["--tool"], &[]).unwrap_err();
        assert!(twice.0.contains("`--tool` is given twice"), "{twice}");
        assert!(parse(&v(&["--json", "--json"]), &[], &["--json"]).is_err());
        let p = parse(&v(&["--read", "/a", "--read=/b"]), &["--read"], &[]).unwrap();
        assert_eq!(p.values("--read"), ["/a", "/b"]);
    }
}
