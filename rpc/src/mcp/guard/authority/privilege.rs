//! The three privileges every door into the machine is classed under, in the spirit of
//! Redfish's privilege registry: a role or a policy that grants one grants those below it.

use core::fmt;

/// The `_meta` key under which `tools/list` names each tool's privilege (a gateway reads it to
/// judge a forwarded call before sending it).
pub const PRIVILEGE_META: &str = "irix7/privilege";

/// What a capability lets a caller do, least first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Privilege {
    /// Read state: status, console, screen, files, lists.
    Observe,
    /// Change state that a reset undoes: console writes, files in the RAM overlay, harmless
    /// shell builtins.
    Operate,
    /// Everything else: reset, power, raw memory, registers and disk sectors, removal, typing
    /// as whoever is logged in at the console.
    Administer,
}

impl Privilege {
    /// The word the configuration, `docs/tools.md` and `tools/list`'s `_meta` use.
    pub const fn as_str(self) -> &'static str {
        match self {
            Privilege::Observe => "observe",
            Privilege::Operate => "operate",
            Privilege::Administer => "administer",
        }
    }

    /// The privilege named `word`, with the older policy keywords as synonyms (`read-only`
    /// is observe, `no-destructive` operate, `full` administer).
    pub fn parse(word: &str) -> Option<Privilege> {
        match word {
            "observe" | "read-only" => Some(Privilege::Observe),
            "operate" | "no-destructive" => Some(Privilege::Operate),
            "administer" | "full" => Some(Privilege::Administer),
            _ => None,
        }
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileges_are_ordered_and_named_both_ways() {
        assert!(Privilege::Observe < Privilege::Operate);
        assert!(Privilege::Operate < Privilege::Administer);
        for p in [
            Privilege::Observe,
            Privilege::Operate,
            Privilege::Administer,
        ] {
            assert_eq!(Privilege::parse(p.as_str()), Some(p));
        }
        assert_eq!(Privilege::parse("read-only"), Some(Privilege::Observe));
        assert_eq!(Privilege::parse("no-destructive"), Some(Privilege::Operate));
        assert_eq!(Privilege::parse("full"), Some(Privilege::Administer));
        assert_eq!(Privilege::parse("root"), None);
    }
}
