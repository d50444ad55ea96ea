//! A machine's tool policy in the lab file: `allow` (absent or empty: every tool) and `deny`
//! (wins over `allow`). A pattern is a capability name or a prefix ending in `*` (`fs.*`).
//!
//! The gateway checks it on the tools it lists and forwards, and also sends it, with the
//! agent's role as a ceiling, to the machine on every request (the `Irix7-Policy` header), so
//! the machine refuses the same capabilities through every door: a shell builtin, a batch.

use crate::privilege::Privilege;

/// The narrowing header the machine enforces on top of its token's role and `mcp.policy`.
pub const HEADER: &str = "irix7-policy";
/// Most patterns in both lists together: the header carries them all plus the ceiling, and the
/// module reads at most 32 items (a policy is read by people, not generated).
pub const PATTERNS_MAX: usize = 31;
/// Longest pattern: capability names are a few words.
pub const PATTERN_MAX: usize = 64;

#[derive(Clone, Debug, Default)]
pub struct Policy {
    allow: Vec<String>,
    deny: Vec<String>,
}

fn matches(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

/// A pattern the header can carry as written: `[A-Za-z0-9_.-]`, then at most a final `*`
/// (the module's glob reads such a pattern exactly as the gateway does).
fn check_pattern(p: &str) -> Result<(), String> {
    let body = p.strip_suffix('*').unwrap_or(p);
    let ok = !p.is_empty()
        && p.len() <= PATTERN_MAX
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "policy pattern `{}`: a capability name or a prefix ending in `*`, 1 to \
             {PATTERN_MAX} of `A-Z a-z 0-9 _ . -`",
            p.escape_debug()
        ))
    }
}

impl Policy {
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Result<Policy, String> {
        if allow.len() + deny.len() > PATTERNS_MAX {
            return Err(format!(
                "more than {PATTERNS_MAX} policy patterns (allow and deny together)"
            ));
        }
        for p in allow.iter().chain(&deny) {
            check_pattern(p)?;
        }
        Ok(Policy { allow, deny })
    }

    /// Ok if the gateway may forward a call of `tool`; else the reason, for the agent.
    pub fn check(&self, tool: &str) -> Result<(), String> {
        if let Some(p) = self.deny.iter().find(|p| matches(p, tool)) {
            return Err(format!("denied by the lab's policy (deny `{p}`)"));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| matches(p, tool)) {
            return Err("not in the lab's allow list for this machine".into());
        }
        Ok(())
    }

    /// The `Irix7-Policy` value for an agent of `role`: the ceiling, the allow globs, then each
    /// deny glob after `!` (`operate,fs.*,status,!fs.remove`). Every pattern was checked by
    /// [`Policy::new`], so the value is plain ASCII the module's grammar reads.
    pub fn narrowing(&self, role: Privilege) -> String {
        let mut items = vec![role.name().to_string()];
        items.extend(self.allow.iter().cloned());
        items.extend(self.deny.iter().map(|p| format!("!{p}")));
        items.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(allow: &[&str], deny: &[&str]) -> Policy {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Policy::new(v(allow), v(deny)).unwrap()
    }

    #[test]
    fn deny_wins_and_prefixes_match() {
        let pol = p(&["fs.*", "status"], &["fs.remove"]);
        assert!(pol.check("status").is_ok());
        assert!(pol.check("fs.read").is_ok());
        assert!(
            pol.check("fs.remove")
                .unwrap_err()
                .contains("deny `fs.remove`")
        );
        assert!(
            pol.check("system.reset")
                .unwrap_err()
                .contains("allow list")
        );
        assert!(p(&[], &["system.*"]).check("system.reset").is_err());
        assert!(p(&[], &[]).check("anything").is_ok());
    }

    #[test]
    fn refuses_what_the_header_could_not_carry() {
        let bad = |s: &str| Policy::new(vec![s.into()], vec![]).is_err();
        assert!(bad("f*s"), "a star inside");
        assert!(bad(""));
        assert!(bad("fs.read,system.*"), "a comma would add an item");
        assert!(bad("!fs.read"), "a bang would turn allow into deny");
        assert!(bad("fs read"));
        assert!(bad("fs.read\r\nX-Other: 1"));
        assert!(bad("fs.[ab]"));
        assert!(bad("système"));
        assert!(bad(&"x".repeat(PATTERN_MAX + 1)));
        assert!(!bad(&"x".repeat(PATTERN_MAX)));
        assert!(!bad("*") && !bad("fs.*") && !bad("a_b-c.d"));
        let many = vec!["fs.read".to_string(); PATTERNS_MAX];
        assert!(Policy::new(many.clone(), vec![]).is_ok());
        assert!(Policy::new(many, vec!["status".into()]).is_err());
    }

    #[test]
    fn the_narrowing_header_carries_the_ceiling_the_allows_and_the_denies() {
        assert_eq!(p(&[], &[]).narrowing(Privilege::Administer), "administer");
        assert_eq!(
            p(&[], &["system.poweroff"]).narrowing(Privilege::Administer),
            "administer,!system.poweroff"
        );
        assert_eq!(
            p(&["fs.*", "status"], &["fs.remove", "fs.write"]).narrowing(Privilege::Operate),
            "operate,fs.*,status,!fs.remove,!fs.write"
        );
        assert_eq!(p(&["*"], &[]).narrowing(Privilege::Observe), "observe,*");
        // Whatever the lab file held, the value is a valid header value of the grammar's
        // characters: items of `[A-Za-z0-9_.*-]`, a leading `!` on denies, commas between.
        let v = p(&["a-b_c.*"], &["x.y"]).narrowing(Privilege::Operate);
        assert!(axum::http::HeaderValue::from_str(&v).is_ok());
        for item in v.split(',') {
            let glob = item.strip_prefix('!').unwrap_or(item);
            assert!(
                !glob.is_empty()
                    && glob
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.*-".contains(&b)),
                "{item}"
            );
        }
    }
}
