//! A machine's tool policy in the lab file: `allow` (absent or empty: every tool) and `deny`
//! (wins over `allow`), each a list of globs in the module's own policy grammar
//! (`rpc::mcp::authority::Policy`: capability names of `A-Z a-z 0-9 _ . : / -`, where `*` stands
//! for any run of them).
//!
//! The gateway judges the tools it lists and forwards with it, and also sends it, with the
//! agent's role as a ceiling, to the machine on every request (the `Irix7-Policy` header), so
//! the machine refuses the same capabilities through every door: a shell builtin, a batch.
//! Both read the lists with the same code, so a glob means the same on both sides.

use rpc::mcp::authority::{self, MAX_GLOB_LEN, MAX_GLOBS, Privilege, Refused};

/// The narrowing header the machine enforces on top of its token's role and `mcp.policy`.
pub use authority::NARROWING_HEADER as HEADER;

#[derive(Clone, Debug, Default)]
pub struct Policy {
    allow: Vec<String>,
    deny: Vec<String>,
    /// The lists as the module reads them, with no ceiling: they judge names only (the agent's
    /// role is judged against each tool's published privilege).
    rules: authority::Policy,
}

/// The policy value of a ceiling (if any), the allow globs, then each deny glob after `!`.
fn value(ceiling: Option<Privilege>, allow: &[String], deny: &[String]) -> String {
    let ceiling = ceiling.map(|c| c.as_str().to_string());
    let denials = deny.iter().map(|p| format!("!{p}"));
    ceiling
        .into_iter()
        .chain(allow.iter().cloned())
        .chain(denials)
        .collect::<Vec<_>>()
        .join(",")
}

impl Policy {
    /// The lab file's lists, refused whole if a pattern is not one glob of the grammar (at most
    /// [`MAX_GLOBS`] of at most [`MAX_GLOB_LEN`] bytes).
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Result<Policy, String> {
        // A comma would add an item, a leading `!` turn an allow into a deny and a privilege's
        // name set a ceiling: each pattern must be one glob, and nothing else.
        if let Some(p) = allow.iter().chain(&deny).find(|p| {
            p.is_empty()
                || p.contains(',')
                || p.starts_with('!')
                || p.trim() != *p
                || Privilege::parse(p).is_some()
        }) {
            return Err(format!(
                "policy pattern `{}`: one capability name or glob, not empty, a list, a denial or \
                 a privilege",
                p.escape_debug()
            ));
        }
        let rules = authority::Policy::parse(&value(None, &allow, &deny)).map_err(|e| {
            format!(
                "policy: {e} (at most {MAX_GLOBS} patterns of at most {MAX_GLOB_LEN} bytes of \
                 `A-Z a-z 0-9 _ . : / - *`)"
            )
        })?;
        Ok(Policy { allow, deny, rules })
    }

    /// Ok if the gateway may forward a call of `tool`; else the reason, for the agent.
    pub fn check(&self, tool: &str) -> Result<(), String> {
        match self.rules.judge(tool, Privilege::Observe) {
            Ok(()) => Ok(()),
            Err(Refused::Denied(glob)) => {
                Err(format!("denied by the lab's policy (deny `{glob}`)"))
            }
            Err(_) => Err("not in the lab's allow list for this machine".into()),
        }
    }

    /// The `Irix7-Policy` value for an agent of `role`: the ceiling, the allow globs, then each
    /// deny glob after `!` (`operate,fs.*,status,!fs.remove`), which the module's grammar reads
    /// as [`Policy::new`] did.
    pub fn narrowing(&self, role: Privilege) -> String {
        value(Some(role), &self.allow, &self.deny)
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
    fn deny_wins_and_globs_match() {
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
        // The module's globs: a star anywhere.
        assert!(p(&["*.read"], &[]).check("fs.read").is_ok());
        assert!(p(&["*.read"], &[]).check("fs.write").is_err());
    }

    #[test]
    fn refuses_what_the_header_could_not_carry() {
        let bad = |s: &str| Policy::new(vec![s.into()], vec![]).is_err();
        assert!(bad(""));
        assert!(bad("fs.read,system.*"), "a comma would add an item");
        assert!(bad("!fs.read"), "a bang would turn allow into deny");
        assert!(bad("observe"), "a privilege would set a ceiling");
        assert!(bad(" fs.read"));
        assert!(bad("fs read"));
        assert!(bad("fs.read\r\nX-Other: 1"));
        assert!(bad("fs.[ab]"));
        assert!(bad("système"));
        assert!(bad(&"x".repeat(MAX_GLOB_LEN + 1)));
        assert!(!bad(&"x".repeat(MAX_GLOB_LEN)));
        assert!(!bad("*") && !bad("fs.*") && !bad("a_b-c.d") && !bad("f*s"));
        let many = vec!["fs.read".to_string(); MAX_GLOBS];
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
        let pol = p(&["fs.*", "status"], &["fs.remove", "fs.write"]);
        let v = pol.narrowing(Privilege::Operate);
        assert_eq!(v, "operate,fs.*,status,!fs.remove,!fs.write");
        assert_eq!(p(&["*"], &[]).narrowing(Privilege::Observe), "observe,*");
        // The module reads the value as the gateway judged: the same ceiling and names.
        let module = authority::Policy::parse(&v).unwrap();
        assert_eq!(module.ceiling(), Privilege::Operate);
        for tool in ["fs.read", "status", "fs.remove", "fs.write", "system.reset"] {
            assert_eq!(
                module.judge(tool, Privilege::Observe).is_ok(),
                pol.check(tool).is_ok(),
                "{tool}"
            );
        }
        assert!(axum::http::HeaderValue::from_str(&v).is_ok());
    }
}
