//! The capability table: every door into the machine (a tool, a resource or template, a
//! subscription, an HTTP route, a shell builtin) names the one capability it exercises, and
//! each capability has one privilege. Policies, roles and the gateway's narrowing all speak
//! of capabilities, so a capability refused one way is refused every way.

use super::policy::Cap;
use super::privilege::Privilege;
use crate::json::ValueRef;
use crate::mcp::wire::annotations::Annotations;

/// A way into the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// A tool, by name (`tools/call`, `tools/list`, tasks of it).
    Tool(&'static str),
    /// A fixed resource, by URI (read, listed, streamed).
    Resource(&'static str),
    /// A resource template, by its URI template.
    Template(&'static str),
    /// A watchable resource's subscription (`resources/subscribe`, `subscriptions/listen`).
    Watch(&'static str),
    /// An HTTP route of the module other than `/mcp`, as `METHOD /path`.
    Route(&'static str),
    /// A builtin of `shell.exec`, by name.
    Builtin(&'static str),
}

impl Door {
    /// What kind of door, as `docs/tools.md` and refusals name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Door::Tool(_) => "tool",
            Door::Resource(_) => "resource",
            Door::Template(_) => "template",
            Door::Watch(_) => "subscription",
            Door::Route(_) => "route",
            Door::Builtin(_) => "builtin",
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Door::Tool(n)
            | Door::Resource(n)
            | Door::Template(n)
            | Door::Watch(n)
            | Door::Route(n)
            | Door::Builtin(n) => n,
        }
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capability {
    /// What policies, roles and deny lists name (mostly the tool of the same power:
    /// `serial.read` covers the console resource and its subscription too).
    pub name: &'static str,
    pub privilege: Privilege,
    /// Every door that exercises it.
    pub doors: &'static [Door],
}

/// A tool that opens a further door, chosen by its arguments (`shell.exec` runs a builtin):
/// `door` reads the door from the call's validated arguments, so that the gates judge it
/// (authority and consent) before the tool starts.
#[derive(Clone, Copy, Debug)]
pub struct Opener {
    pub tool: &'static str,
    pub door: fn(ValueRef<'_>) -> Option<Door>,
}

/// The table a server judges by. Empty: every door is its own capability (tools privileged by
/// their annotations, everything else observe).
#[derive(Clone, Copy, Debug, Default)]
pub struct Table {
    pub rows: &'static [Capability],
    pub openers: &'static [Opener],
}

impl Table {
    /// The row of `door`, if the table has one.
    pub fn find(&self, door: Door) -> Option<&'static Capability> {
        self.rows.iter().find(|c| c.doors.contains(&door))
    }

    /// Whether the table has rows (a server with a table refuses doors missing from it).
    pub fn is_given(&self) -> bool {
        !self.rows.is_empty()
    }

    /// How the tool `name` picks a further door, if it does.
    pub fn opener(&self, name: &str) -> Option<Opener> {
        self.openers.iter().find(|o| o.tool == name).copied()
    }

    /// How `door` is judged: its row, or with no table the fallback above. `None`: a table
    /// is given and has no row for the door, which is then refused to everyone.
    pub fn judge(&self, door: Door, annotations: Option<Annotations>) -> Option<Cap> {
        if let Some(c) = self.find(door) {
            return Some(Cap {
                name: c.name,
                privilege: c.privilege,
            });
        }
        if self.is_given() {
            return None;
        }
        Some(match annotations {
            Some(a) => of_annotations(door.name(), a),
            None => Cap {
                name: door.name(),
                privilege: Privilege::Observe,
            },
        })
    }
}

/// The capability of a tool with no row in the table (a server given none, as in the
/// protocol's own tests): its own, privileged as its annotations say, the most a hint allows.
fn of_annotations(name: &'static str, a: Annotations) -> Cap {
    let privilege = if a.destructive {
        Privilege::Administer
    } else if a.read_only {
        Privilege::Observe
    } else {
        Privilege::Operate
    };
    Cap { name, privilege }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Capability] = &[
        Capability {
            name: "serial.read",
            privilege: Privilege::Observe,
            doors: &[
                Door::Tool("serial.read"),
                Door::Resource("irix7://serial"),
                Door::Watch("irix7://serial"),
            ],
        },
        Capability {
            name: "system.poweroff",
            privilege: Privilege::Administer,
            doors: &[Door::Tool("system.poweroff"), Door::Builtin("poweroff")],
        },
    ];

    #[test]
    fn doors_are_judged_by_their_row_or_refused_when_a_table_is_given() {
        let t = Table {
            rows: TABLE,
            openers: &[],
        };
        let cap = t.judge(Door::Watch("irix7://serial"), None).unwrap();
        assert_eq!(
            (cap.name, cap.privilege),
            ("serial.read", Privilege::Observe)
        );
        let cap = t.judge(Door::Builtin("poweroff"), None).unwrap();
        assert_eq!(cap.name, "system.poweroff");
        assert_eq!(t.judge(Door::Tool("mem.write"), None), None);
    }

    #[test]
    fn without_a_table_tools_take_their_annotations() {
        let t = Table::default();
        let judge = |a| t.judge(Door::Tool("x"), Some(a)).unwrap().privilege;
        assert_eq!(judge(Annotations::READ_ONLY), Privilege::Observe);
        assert_eq!(judge(Annotations::WRITE), Privilege::Operate);
        assert_eq!(judge(Annotations::DESTRUCTIVE), Privilege::Administer);
        let r = t.judge(Door::Resource("irix7://x"), None).unwrap();
        assert_eq!((r.name, r.privilege), ("irix7://x", Privilege::Observe));
    }
}
