//! The machine's tokens: the administrator's (`mcp.token`, generated when unset) and the
//! named lesser ones of `mcp.tokens`, each with a role. A request's bearer names one of them;
//! the audit names the token's name, never its secret.

use super::policy::Policy;
use super::privilege::Privilege;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Named tokens besides the administrator's.
pub const MAX_TOKENS: usize = 8;
/// Bytes in a token's name.
pub const NAME_MAX: usize = 32;
/// The administrator token's name.
pub const ADMIN: &str = "admin";

/// One token: who holds it (its name) and what it may do (its role, a policy).
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub name: String,
    pub role: Policy,
    pub secret: String,
}

// By hand: the secret never reaches a log.
impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("name", &self.name)
            .field("role", &self.role.text())
            .finish_non_exhaustive()
    }
}

impl Token {
    /// The administrator's token.
    pub fn admin(secret: String) -> Token {
        Token {
            name: String::from(ADMIN),
            role: Policy::up_to(Privilege::Administer),
            secret,
        }
    }
}

/// Why `mcp.tokens` was refused (the whole value: a typo must not grant a role by accident).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokensError(pub String);

impl fmt::Display for TokensError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses `mcp.tokens`: comma-separated `name:role:secret`, where the role is a policy whose
/// items are joined with `+` (`observe`, `operate`, `serial.read+status`, `operate+!shell.exec`)
/// and the secret is what `mcp.token` accepts (`secret_ok`; no comma). Names are
/// `[a-z0-9_-]`, unique and not `admin`; no two secrets are the same.
pub fn parse(
    value: &str,
    secret_ok: impl Fn(&str) -> Result<(), String>,
) -> Result<Vec<Token>, TokensError> {
    let err = |what: String| Err(TokensError(what));
    let mut out: Vec<Token> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let mut parts = entry.splitn(3, ':');
        let (Some(name), Some(role), Some(secret)) = (parts.next(), parts.next(), parts.next())
        else {
            return err(String::from("an entry is not name:role:secret"));
        };
        let (name, role, secret) = (name.trim(), role.trim(), secret.trim());
        let name_ok = (1..=NAME_MAX).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
        if !name_ok {
            return err(alloc::format!(
                "a token name must be 1-{NAME_MAX} of [a-z0-9_-]"
            ));
        }
        if name == ADMIN || out.iter().any(|t| t.name == name) {
            return err(alloc::format!("token name {name} is taken"));
        }
        if role.is_empty() {
            return err(alloc::format!("token {name} has no role"));
        }
        let role = Policy::parse_items(role, '+')
            .map_err(|e| TokensError(alloc::format!("token {name}'s role: {e}")))?;
        if let Err(why) = secret_ok(secret) {
            return err(alloc::format!("token {name}: {why}"));
        }
        if out.iter().any(|t| t.secret == secret) {
            return err(alloc::format!(
                "token {name} repeats another token's secret"
            ));
        }
        if out.len() == MAX_TOKENS {
            return err(alloc::format!("more than {MAX_TOKENS} tokens"));
        }
        out.push(Token {
            name: String::from(name),
            role,
            secret: String::from(secret),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::guard::authority::Cap;

    fn ok(s: &str) -> Result<(), String> {
        if s.len() >= 16 {
            Ok(())
        } else {
            Err(String::from("too short"))
        }
    }

    #[test]
    fn entries_give_named_tokens_with_roles() {
        let t = parse(
            " watcher:observe:0123456789abcdef , ci:operate+!shell.exec:fedcba9876543210:x",
            ok,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].name.as_str(), t[0].role.ceiling()),
            ("watcher", Privilege::Observe)
        );
        assert_eq!(t[1].secret, "fedcba9876543210:x");
        let shell = Cap {
            name: "shell.exec",
            privilege: Privilege::Operate,
        };
        assert!(!t[1].role.allows(shell));
        assert!(parse("", ok).unwrap().is_empty());
        assert!(!alloc::format!("{:?}", t[0]).contains("0123"));
    }

    #[test]
    fn bad_entries_refuse_the_whole_value() {
        let many: Vec<String> = (0..=MAX_TOKENS)
            .map(|i| alloc::format!("t{i}:observe:secret-number-{i:04}"))
            .collect();
        for bad in [
            "watcher:observe",
            "admin:observe:0123456789abcdef",
            "Watcher:observe:0123456789abcdef",
            "w:observe:0123456789abcdef,w:operate:0123456789abcdeX",
            "w:observe:short",
            "w::0123456789abcdef",
            "w:root,x:0123456789abcdef",
            "a:observe:0123456789abcdef,b:operate:0123456789abcdef",
            many.join(",").as_str(),
        ] {
            assert!(parse(bad, ok).is_err(), "{bad}");
        }
    }
}
