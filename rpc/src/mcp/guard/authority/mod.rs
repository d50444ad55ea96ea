//! Least authority: what one request may do. Every door into the machine names a capability
//! in one table ([`table`]); a request may use a capability when the machine's policy
//! (`mcp.policy`), its token's role (`mcp.tokens`) and the narrowing a gateway sent with it
//! (`Irix7-Policy`) all allow it ([`Authority`]). Tools, resources, subscriptions, routes and
//! shell builtins all ask the same question, so a capability refused one way is refused
//! every way.

mod owner;
mod policy;
mod privilege;
mod table;
mod tokens;

pub(crate) use owner::Key;
pub use owner::{Client, Holder, Owner};
pub use policy::{Cap, MAX_GLOB_LEN, MAX_GLOBS, Policy, PolicyError, Refused};
pub use privilege::{PRIVILEGE_META, Privilege};
pub use table::{Capability, Door, Opener, Table};
pub use tokens::{ADMIN, MAX_TOKENS, NAME_MAX, Token, TokensError, parse as parse_tokens};

use crate::jsonrpc::{self, RpcError};
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;

/// The route of a legacy session's event stream, as the capability table names it.
pub const EVENT_STREAM_ROUTE: &str = "GET /mcp";

/// The route that ends a legacy session (its owner's alone: another owner gets 404), as the
/// capability table names it.
pub const SESSION_END_ROUTE: &str = "DELETE /mcp";

/// The header a gateway narrows a request's authority with (the policy grammar).
pub const NARROWING_HEADER: &str = "Irix7-Policy";

/// What one request may do: cheap to clone (shared parts), so each request context and each
/// tool call can hold its own.
#[derive(Clone, Debug)]
pub struct Authority {
    table: Table,
    policy: Rc<Policy>,
    token: Rc<Token>,
    narrowing: Option<Rc<Policy>>,
    owner: Owner,
}

/// How `token`, narrowed by `narrowing`, ranks among the holders of shared pools: the highest
/// privilege of a capability both allow (the machine's policy, the same for every caller, does
/// not rank them). Without a table, the role's ceiling.
pub fn rank(table: Table, token: &Token, narrowing: Option<&Policy>) -> Privilege {
    let role = &token.role;
    if role.is_full() && narrowing.is_none() {
        Privilege::Administer
    } else if table.is_given() {
        table
            .rows
            .iter()
            .map(|c| Cap {
                name: c.name,
                privilege: c.privilege,
            })
            .filter(|&cap| role.allows(cap) && narrowing.is_none_or(|n| n.allows(cap)))
            .map(|cap| cap.privilege)
            .max()
            .unwrap_or(Privilege::Observe)
    } else {
        let ceiling = role.ceiling();
        narrowing.map_or(ceiling, |n| ceiling.min(n.ceiling()))
    }
}

/// A refusal, saying which of the three said no.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied(pub String);

/// A read outside the caller's authority: the message names the capability and which of
/// policy, role or narrowing refused it (the resource is not secret: only its content is).
pub(crate) fn forbidden(denied: &Denied) -> RpcError {
    RpcError::new(
        jsonrpc::INVALID_PARAMS,
        alloc::format!("E_PERM: {}", denied.0),
    )
}

impl Authority {
    /// `owner` is who the request counts to in shared pools: its holder at the [`rank`] of
    /// `token` and `narrowing` (worked out by the caller, which knows each token's rank from
    /// init).
    pub fn new(
        table: Table,
        policy: Rc<Policy>,
        token: Rc<Token>,
        narrowing: Option<Rc<Policy>>,
        owner: Owner,
    ) -> Self {
        Authority {
            table,
            policy,
            token,
            narrowing,
            owner,
        }
    }

    /// Who the request's part of shared pools is counted to: its holder at its [`rank`].
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// The name of the caller's token (what the audit records).
    pub fn token_name(&self) -> &str {
        &self.token.name
    }

    pub fn table(&self) -> Table {
        self.table
    }

    /// Whether the caller is the administrator, not narrowed: the one who may see the
    /// secrets the machine printed (see [`crate::mcp::wire::tool::ToolCall::sees_secrets`]).
    pub fn sees_secrets(&self) -> bool {
        self.token.name == tokens::ADMIN && self.narrowing.is_none()
    }

    /// Whether the caller may use whatever the machine's policy offers (the administrator
    /// token without narrowing): listings made for the policy serve it as they are.
    pub fn is_policy_wide(&self) -> bool {
        self.token.role.is_full() && self.narrowing.is_none()
    }

    /// Whether capability `cap` (exercised through `door`, named in the refusal) is allowed.
    pub fn check(&self, cap: Cap, door: &str) -> Result<(), Denied> {
        let why = if !self.policy.allows(cap) {
            format!("is outside mcp.policy={}", self.policy.text())
        } else if !self.token.role.allows(cap) {
            format!(
                "is outside the role of token {} ({})",
                self.token.name,
                self.token.role.text()
            )
        } else if let Some(n) = self.narrowing.as_ref().filter(|n| !n.allows(cap)) {
            format!("is outside this request's {NARROWING_HEADER}={}", n.text())
        } else {
            return Ok(());
        };
        let named = if door == cap.name {
            format!("{door} ({})", cap.privilege)
        } else {
            format!("{door} ({}, {})", cap.name, cap.privilege)
        };
        Err(Denied(format!("{named} {why}")))
    }

    pub fn allows(&self, cap: Cap) -> bool {
        self.check(cap, cap.name).is_ok()
    }

    /// Whether `door` may be used: its row in the table (a door the table lacks is refused).
    pub fn check_door(&self, door: Door) -> Result<(), Denied> {
        match self.table.judge(door, None) {
            Some(cap) => self.check(cap, door.name()),
            None => Err(Denied(format!(
                "{} {} has no row in the capability table",
                door.kind(),
                door.name()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Capability] = &[
        Capability {
            name: "serial.read",
            privilege: Privilege::Observe,
            doors: &[Door::Tool("serial.read"), Door::Resource("irix7://serial")],
        },
        Capability {
            name: "system.poweroff",
            privilege: Privilege::Administer,
            doors: &[Door::Tool("system.poweroff"), Door::Builtin("poweroff")],
        },
    ];

    fn authority(policy: &str, role: &str, narrowing: Option<&str>) -> Authority {
        let token = Token {
            name: "w".into(),
            role: Policy::parse(role).unwrap(),
            secret: "s".into(),
        };
        let table = Table {
            rows: TABLE,
            openers: &[],
        };
        let narrowing = narrowing.map(|n| Rc::new(Policy::parse(n).unwrap()));
        let owner = Owner {
            holder: Holder::Token(1),
            rank: rank(table, &token, narrowing.as_deref()),
        };
        Authority::new(
            table,
            Rc::new(Policy::parse(policy).unwrap()),
            Rc::new(token),
            narrowing,
            owner,
        )
    }

    #[test]
    fn the_owner_ranks_at_the_highest_capability_role_and_narrowing_allow() {
        let rank = |role, narrowing| authority("observe", role, narrowing).owner().rank;
        assert_eq!(rank("full", None), Privilege::Administer);
        assert_eq!(rank("full", Some("observe")), Privilege::Observe);
        assert_eq!(rank("serial.read", None), Privilege::Observe);
        assert_eq!(rank("operate", None), Privilege::Observe);
        assert_eq!(rank("full", Some("!system.*")), Privilege::Observe);
        assert_eq!(rank("system.poweroff", Some("full")), Privilege::Administer);
        assert_eq!(
            authority("full", "full", None).owner().holder,
            Holder::Token(1)
        );
    }

    #[test]
    fn all_three_must_allow_and_the_refusal_names_which_did_not() {
        let a = authority("full", "full", None);
        assert!(a.is_policy_wide());
        assert_eq!(a.check_door(Door::Builtin("poweroff")), Ok(()));
        let a = authority("full", "observe", None);
        assert!(!a.is_policy_wide());
        assert_eq!(a.check_door(Door::Resource("irix7://serial")), Ok(()));
        assert_eq!(
            a.check_door(Door::Builtin("poweroff")).unwrap_err().0,
            "poweroff (system.poweroff, administer) is outside the role of token w (observe)"
        );
        let a = authority("full", "full", Some("!system.poweroff"));
        assert_eq!(
            a.check_door(Door::Tool("system.poweroff")).unwrap_err().0,
            "system.poweroff (administer) is outside this request's Irix7-Policy=!system.poweroff"
        );
        let a = authority("observe", "full", None);
        assert!(
            a.check_door(Door::Tool("system.poweroff"))
                .unwrap_err()
                .0
                .contains("mcp.policy=observe")
        );
        assert!(
            a.check_door(Door::Tool("mem.write"))
                .unwrap_err()
                .0
                .contains("no row")
        );
    }
}
