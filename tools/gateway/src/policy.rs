//! A machine's tool policy in the lab file: `allow` (absent or empty: every tool) and `deny`
//! (wins over `allow`). A pattern is a tool name or a prefix ending in `*` (`fs.*`).

/// Most patterns in one list; a policy is read by people, not generated.
const PATTERNS_MAX: usize = 128;

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

impl Policy {
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Result<Policy, String> {
        for p in allow.iter().chain(&deny) {
            if p.is_empty() || p[..p.len() - 1].contains('*') {
                return Err(format!(
                    "policy pattern `{p}`: a tool name or a prefix ending in `*`"
                ));
            }
        }
        if allow.len() > PATTERNS_MAX || deny.len() > PATTERNS_MAX {
            return Err(format!("more than {PATTERNS_MAX} policy patterns"));
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
    fn refuses_a_star_inside_a_pattern() {
        assert!(Policy::new(vec!["f*s".into()], vec![]).is_err());
        assert!(Policy::new(vec![], vec!["".into()]).is_err());
    }
}
