//! The per-machine tool policy (`mcp.policy`): which tools a machine offers at all. Tools
//! outside it are not listed and a call answers `E_PERM`. It is decided from a tool's name and
//! annotations alone, so it is fixed once the tools are registered.

use super::tool::Annotations;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Globs in one allow-list, and bytes in one glob: the value comes from the NVRAM environment,
/// whose variables are short anyway.
pub const MAX_GLOBS: usize = 32;
pub const MAX_GLOB_LEN: usize = 128;

/// What the policy allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every tool (the default: the behaviour without a policy).
    Full,
    /// Only tools annotated read-only.
    ReadOnly,
    /// Every tool except those annotated destructive.
    NoDestructive,
    /// Tools whose name matches one of these globs (`*` matches any run of characters).
    Allow(Vec<String>),
}

/// The policy in force, with the text it is shown as (`E_PERM` messages, `status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    rule: Rule,
    /// `mcp.policy`'s value as configured (trimmed), or the rule's name for built ones.
    text: String,
}

/// Why a `mcp.policy` value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError(String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::of(Rule::Full)
    }
}

impl Policy {
    /// A policy named by its rule (`full`, `read-only`, `no-destructive`, or the globs joined
    /// with commas).
    pub fn of(rule: Rule) -> Self {
        let text = match &rule {
            Rule::Full => String::from("full"),
            Rule::ReadOnly => String::from("read-only"),
            Rule::NoDestructive => String::from("no-destructive"),
            Rule::Allow(globs) => globs.join(","),
        };
        Policy { rule, text }
    }

    /// Parses a `mcp.policy` value: `full`, `read-only`, `no-destructive`, or a comma-separated
    /// list of tool-name globs (`fs.*,status`). Blank means unset, which is `full`. A keyword
    /// cannot be mixed with globs, and an empty item, a character no tool name has, or more
    /// than [`MAX_GLOBS`] items refuse the whole value: a typo must not widen what is allowed.
    pub fn parse(value: &str) -> Result<Self, PolicyError> {
        let value = value.trim();
        let rule = match value {
            "" | "full" => Rule::Full,
            "read-only" => Rule::ReadOnly,
            "no-destructive" => Rule::NoDestructive,
            _ => {
                let mut globs = Vec::new();
                for item in value.split(',') {
                    let glob = item.trim();
                    if glob.is_empty() {
                        return Err(PolicyError(String::from("an empty item in the list")));
                    }
                    if matches!(glob, "full" | "read-only" | "no-destructive") {
                        let msg = alloc::format!("{glob} cannot be combined with tool names");
                        return Err(PolicyError(msg));
                    }
                    if glob.len() > MAX_GLOB_LEN {
                        let msg = alloc::format!("an item longer than {MAX_GLOB_LEN} bytes");
                        return Err(PolicyError(msg));
                    }
                    if let Some(c) = glob.chars().find(|c| {
                        !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '*'))
                    }) {
                        let msg = alloc::format!(
                            "{c:?} in {glob:?}: tool names are [A-Za-z0-9_.-], globs add *"
                        );
                        return Err(PolicyError(msg));
                    }
                    if globs.len() == MAX_GLOBS {
                        let msg = alloc::format!("more than {MAX_GLOBS} items");
                        return Err(PolicyError(msg));
                    }
                    globs.push(String::from(glob));
                }
                Rule::Allow(globs)
            }
        };
        let text = if value.is_empty() {
            String::from("full")
        } else {
            String::from(value)
        };
        Ok(Policy { rule, text })
    }

    /// [`Self::parse`], failing closed: a value that does not parse gives `read-only` (the
    /// narrowest keyword that still lets an agent see what is wrong), named so that the
    /// refusal says why, and the parse error to report.
    pub fn parse_or_read_only(value: &str) -> (Self, Option<PolicyError>) {
        match Policy::parse(value) {
            Ok(p) => (p, None),
            Err(e) => {
                // Shown inside quotes: no control characters, no quotes of its own.
                let mut shown: String = value.trim().chars().take(MAX_GLOB_LEN).collect();
                shown.retain(|c| !c.is_control() && c != '"' && c != '\\');
                let text = alloc::format!("read-only (the configured \"{shown}\" is invalid)");
                let policy = Policy {
                    rule: Rule::ReadOnly,
                    text,
                };
                (policy, Some(e))
            }
        }
    }

    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// How the policy is named in messages: `mcp.policy=<this>`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the policy lets every tool through (nothing to filter).
    pub fn is_full(&self) -> bool {
        self.rule == Rule::Full
    }

    /// Whether the tool `name` with these annotations is offered.
    pub fn allows(&self, name: &str, annotations: Annotations) -> bool {
        match &self.rule {
            Rule::Full => true,
            Rule::ReadOnly => annotations.read_only,
            Rule::NoDestructive => !annotations.destructive,
            Rule::Allow(globs) => globs
                .iter()
                .any(|g| glob_matches(g.as_bytes(), name.as_bytes())),
        }
    }
}

/// Whether `name` matches `glob`, where `*` matches any run of bytes (empty included) and
/// every other byte itself. Iterative, with one backtrack point: linear in practice and never
/// worse than `glob.len() * name.len()`, whatever the input.
fn glob_matches(glob: &[u8], name: &[u8]) -> bool {
    let (mut g, mut n) = (0, 0);
    // Where the last `*` was, and the name position it currently stands for the end of.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some(b'*') => {
                star = Some((g, n));
                g += 1;
            }
            Some(&c) if c == name[n] => {
                g += 1;
                n += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    g = sg + 1;
                    n = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn globs_match_whole_names() {
        for (glob, name, ok) in [
            ("fs.*", "fs.read", true),
            ("fs.*", "fs.", true),
            ("fs.*", "fsx.read", false),
            ("fs.*", "fs", false),
            ("status", "status", true),
            ("status", "status2", false),
            ("*", "anything.at.all", true),
            ("*.read", "fs.read", true),
            ("*.read", "fs.readdir", false),
            ("*read*", "block.reader", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("**", "", true),
            ("", "", true),
            ("", "x", false),
        ] {
            assert_eq!(
                glob_matches(glob.as_bytes(), name.as_bytes()),
                ok,
                "{glob} {name}"
            );
        }
    }

    #[test]
    fn keywords_and_lists_parse() {
        let ro = Annotations::READ_ONLY;
        let w = Annotations::WRITE;
        let d = Annotations::DESTRUCTIVE;
        for blank in ["", "  ", "full"] {
            let p = Policy::parse(blank).unwrap();
            assert!(p.is_full());
            assert_eq!(p.text(), "full");
            assert!(p.allows("x", d));
        }
        let p = Policy::parse(" read-only ").unwrap();
        assert_eq!(
            (p.text(), p.allows("a", ro), p.allows("a", w)),
            ("read-only", true, false)
        );
        let p = Policy::parse("no-destructive").unwrap();
        assert_eq!((p.allows("a", w), p.allows("a", d)), (true, false));
        let p = Policy::parse("fs.*, status ,serial.read").unwrap();
        assert_eq!(p.text(), "fs.*, status ,serial.read");
        assert_eq!(
            p.rule(),
            &Rule::Allow(["fs.*", "status", "serial.read"].map(String::from).to_vec())
        );
        // Globs decide alone: annotations do not matter.
        assert!(p.allows("fs.remove", d));
        assert!(p.allows("serial.read", ro));
        assert!(!p.allows("serial.write", w));
        assert!(!p.allows("mem.read", ro));
        assert_eq!(Policy::of(Rule::NoDestructive).text(), "no-destructive");
    }

    #[test]
    fn bad_values_are_refused() {
        let long = "a".repeat(MAX_GLOB_LEN + 1);
        let many = ["x"; MAX_GLOBS + 1].join(",");
        for bad in [
            "readonly,",
            "fs.*,,status",
            ",",
            "read-only,fs.*",
            "fs.* status",
            "fs.[ab]",
            "fs.?",
            "FULL;",
            long.as_str(),
            many.as_str(),
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad}");
        }
        let (p, err) = Policy::parse_or_read_only("fs.*,,x");
        assert_eq!(p.rule(), &Rule::ReadOnly);
        assert_eq!(
            p.text(),
            "read-only (the configured \"fs.*,,x\" is invalid)"
        );
        assert_eq!(err.unwrap().to_string(), "an empty item in the list");
        assert_eq!(Policy::parse_or_read_only("no-destructive").1, None);
        // A single unknown word is a one-glob list: it allows that tool name only.
        let p = Policy::parse("readonly").unwrap();
        assert!(!p.allows("fs.read", Annotations::READ_ONLY));
        assert_eq!(
            Policy::parse(&["x"; MAX_GLOBS].join(",")).map(|_| ()),
            Ok(())
        );
    }
}
