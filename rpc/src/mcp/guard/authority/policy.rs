//! A policy: which capabilities a holder may use. The same grammar serves `mcp.policy` (what
//! the machine offers at all), a token's role (`mcp.tokens`) and the gateway's narrowing of
//! one request (`Irix7-Policy`): items separated by commas (by `+` inside `mcp.tokens`), each
//!
//! - a privilege, the ceiling: `observe`, `operate` or `administer` (older synonyms
//!   `read-only`, `no-destructive`, `full`);
//! - a glob over capability names (`fs.*`, `status`): only matching capabilities are allowed;
//! - a glob after `!` (`!system.poweroff`): matching capabilities are refused.
//!
//! A capability is allowed when it is within the ceiling (administer when none is given),
//! matches an allow glob (any, when none is given) and matches no deny glob.

use super::privilege::Privilege;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// What a door is judged as (the capability table's answer, see `table`): its capability's
/// name and privilege, what a policy allows or refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    pub name: &'static str,
    pub privilege: Privilege,
}

/// Globs in one policy, and bytes in one glob: the value comes from the NVRAM environment or
/// a header, which are short anyway.
pub const MAX_GLOBS: usize = 32;
pub const MAX_GLOB_LEN: usize = 128;

/// What a policy allows, with the text it is shown as (`E_PERM` messages, `status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    ceiling: Privilege,
    allow: Vec<String>,
    deny: Vec<String>,
    /// The value as configured (trimmed), or the ceiling's name for built ones.
    text: String,
}

/// Why a policy value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError(String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::up_to(Privilege::Administer)
    }
}

impl Policy {
    /// Everything within `ceiling`.
    pub fn up_to(ceiling: Privilege) -> Self {
        Policy {
            ceiling,
            allow: Vec::new(),
            deny: Vec::new(),
            text: String::from(match ceiling {
                Privilege::Administer => "full",
                p => p.as_str(),
            }),
        }
    }

    /// Parses a comma-separated value (see the module's doc). Blank means everything. An
    /// empty item, two ceilings, a character no capability name has, or more than
    /// [`MAX_GLOBS`] globs refuse the whole value: a typo must not widen what is allowed.
    pub fn parse(value: &str) -> Result<Self, PolicyError> {
        Policy::parse_items(value, ',')
    }

    /// [`Self::parse`] with another separator (`+` inside `mcp.tokens`, whose entries are
    /// separated by commas).
    pub fn parse_items(value: &str, separator: char) -> Result<Self, PolicyError> {
        let value = value.trim();
        let mut p = Policy::default();
        if value.is_empty() {
            return Ok(p);
        }
        let mut ceiling = None;
        for item in value.split(separator) {
            let item = item.trim();
            if item.is_empty() {
                return Err(PolicyError(String::from("an empty item in the list")));
            }
            if let Some(privilege) = Privilege::parse(item) {
                if ceiling.replace(privilege).is_some() {
                    let msg = alloc::format!("{item}: only one privilege may be given");
                    return Err(PolicyError(msg));
                }
                continue;
            }
            let (deny, glob) = match item.strip_prefix('!') {
                Some(rest) => (true, rest.trim_start()),
                None => (false, item),
            };
            check_glob(glob)?;
            if p.allow.len() + p.deny.len() == MAX_GLOBS {
                let msg = alloc::format!("more than {MAX_GLOBS} items");
                return Err(PolicyError(msg));
            }
            let list = if deny { &mut p.deny } else { &mut p.allow };
            list.push(String::from(glob));
        }
        p.ceiling = ceiling.unwrap_or(Privilege::Administer);
        p.text = String::from(value);
        Ok(p)
    }

    /// [`Self::parse`], failing closed: a value that does not parse gives `observe` (the
    /// narrowest that still lets an agent see what is wrong), named so that the refusal says
    /// why, and the parse error to report.
    pub fn parse_or_observe(value: &str) -> (Self, Option<PolicyError>) {
        match Policy::parse(value) {
            Ok(p) => (p, None),
            Err(e) => {
                // Shown inside quotes: no control characters, no quotes of its own.
                let mut shown: String = value.trim().chars().take(MAX_GLOB_LEN).collect();
                shown.retain(|c| !c.is_control() && c != '"' && c != '\\');
                let mut policy = Policy::up_to(Privilege::Observe);
                policy.text = alloc::format!("observe (the configured \"{shown}\" is invalid)");
                (policy, Some(e))
            }
        }
    }

    /// How the policy is named in messages: `mcp.policy=<this>`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the policy lets every capability through (nothing to filter).
    pub fn is_full(&self) -> bool {
        self.ceiling == Privilege::Administer && self.allow.is_empty() && self.deny.is_empty()
    }

    /// The highest privilege it allows.
    pub fn ceiling(&self) -> Privilege {
        self.ceiling
    }

    /// Whether capability `cap` is allowed.
    pub fn allows(&self, cap: Cap) -> bool {
        self.judge(cap.name, cap.privilege).is_ok()
    }

    /// Whether a capability of this `name` and `privilege` is allowed, and if not, which rule
    /// refused it (a gateway judges the names of the tools it forwards with it).
    pub fn judge(&self, name: &str, privilege: Privilege) -> Result<(), Refused<'_>> {
        let name = name.as_bytes();
        if privilege > self.ceiling {
            return Err(Refused::Ceiling(self.ceiling));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|g| glob_matches(g.as_bytes(), name)) {
            return Err(Refused::NotAllowed);
        }
        match self.deny.iter().find(|g| glob_matches(g.as_bytes(), name)) {
            Some(glob) => Err(Refused::Denied(glob)),
            None => Ok(()),
        }
    }
}

/// Which rule of a policy refused a capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused<'a> {
    /// It needs more than the policy's ceiling.
    Ceiling(Privilege),
    /// The policy has allow globs and none matches it.
    NotAllowed,
    /// This deny glob matches it.
    Denied(&'a str),
}

/// A glob must be short and made of the characters capability names have, plus `*`.
fn check_glob(glob: &str) -> Result<(), PolicyError> {
    if glob.is_empty() {
        return Err(PolicyError(String::from("`!` without a name")));
    }
    if glob.len() > MAX_GLOB_LEN {
        let msg = alloc::format!("an item longer than {MAX_GLOB_LEN} bytes");
        return Err(PolicyError(msg));
    }
    if let Some(c) = glob
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '*' | ':' | '/')))
    {
        let msg =
            alloc::format!("{c:?} in {glob:?}: capability names are [A-Za-z0-9_.:/-], globs add *");
        return Err(PolicyError(msg));
    }
    Ok(())
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
    fn a_refusal_names_the_rule_that_refused() {
        let p = Policy::parse("operate,fs.*,status,!fs.remove").unwrap();
        assert_eq!(p.judge("fs.read", Privilege::Observe), Ok(()));
        assert_eq!(
            p.judge("fs.read", Privilege::Administer),
            Err(Refused::Ceiling(Privilege::Operate))
        );
        assert_eq!(
            p.judge("mem.read", Privilege::Observe),
            Err(Refused::NotAllowed)
        );
        assert_eq!(
            p.judge("fs.remove", Privilege::Observe),
            Err(Refused::Denied("fs.remove"))
        );
    }

    fn cap(name: &'static str, privilege: Privilege) -> Cap {
        Cap { name, privilege }
    }

    #[test]
    fn ceilings_globs_and_denials_combine() {
        let (o, w, a) = (
            Privilege::Observe,
            Privilege::Operate,
            Privilege::Administer,
        );
        for blank in ["", "  ", "full", "administer"] {
            let p = Policy::parse(blank).unwrap();
            assert!(p.is_full(), "{blank}");
            assert!(p.allows(cap("x", a)));
        }
        assert_eq!(Policy::parse("").unwrap().text(), "full");
        for (value, ceiling) in [
            ("read-only", o),
            (" observe ", o),
            ("no-destructive", w),
            ("operate", w),
        ] {
            let p = Policy::parse(value).unwrap();
            assert_eq!(p.ceiling(), ceiling, "{value}");
            assert_eq!(p.text(), value.trim());
        }
        let p = Policy::parse("observe").unwrap();
        assert_eq!(
            (p.allows(cap("a", o)), p.allows(cap("a", w))),
            (true, false)
        );
        let p = Policy::parse("operate").unwrap();
        assert_eq!(
            (p.allows(cap("a", w)), p.allows(cap("a", a))),
            (true, false)
        );
        // Globs alone: any privilege, only the names they match.
        let p = Policy::parse("fs.*, status ,serial.read").unwrap();
        assert_eq!(p.text(), "fs.*, status ,serial.read");
        assert!(p.allows(cap("fs.remove", a)));
        assert!(p.allows(cap("serial.read", o)));
        assert!(!p.allows(cap("serial.write", w)));
        assert!(!p.allows(cap("mem.read", o)));
        // A ceiling with denials: everything operate allows but the denied.
        let p = Policy::parse("operate,!shell.exec,!fs.w*").unwrap();
        assert!(p.allows(cap("fs.read", o)));
        assert!(!p.allows(cap("shell.exec", w)));
        assert!(!p.allows(cap("fs.write", w)));
        assert!(!p.allows(cap("system.reset", a)));
        // Denials win over allow globs.
        let p = Policy::parse("system.*,!system.poweroff").unwrap();
        assert!(p.allows(cap("system.reset", a)));
        assert!(!p.allows(cap("system.poweroff", a)));
        // Another separator, for mcp.tokens.
        let p = Policy::parse_items("observe+fs.*", '+').unwrap();
        assert!(p.allows(cap("fs.read", o)) && !p.allows(cap("fs.write", w)));
        assert!(!p.allows(cap("status", o)));
        assert_eq!(Policy::up_to(Privilege::Operate).text(), "operate");
    }

    #[test]
    fn bad_values_are_refused() {
        let long = "a".repeat(MAX_GLOB_LEN + 1);
        let many = ["x"; MAX_GLOBS + 1].join(",");
        for bad in [
            "readonly,",
            "fs.*,,status",
            ",",
            "read-only,operate",
            "fs.* status",
            "fs.[ab]",
            "fs.?",
            "FULL;",
            "!",
            "! ",
            long.as_str(),
            many.as_str(),
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad}");
        }
        let (p, err) = Policy::parse_or_observe("fs.*,,x");
        assert_eq!(p.ceiling(), Privilege::Observe);
        assert_eq!(p.text(), "observe (the configured \"fs.*,,x\" is invalid)");
        assert_eq!(err.unwrap().to_string(), "an empty item in the list");
        assert_eq!(Policy::parse_or_observe("no-destructive").1, None);
        // A single unknown word is a one-glob list: it allows that capability only.
        let p = Policy::parse("readonly").unwrap();
        assert!(!p.allows(cap("fs.read", Privilege::Observe)));
        assert_eq!(
            Policy::parse(&["x"; MAX_GLOBS].join(",")).map(|_| ()),
            Ok(())
        );
    }
}
