//! What a tool says of its own behaviour: the hints `tools/list` publishes, and what the
//! authority table judges a tool by when it has no row of its own.

/// Hints about a tool's behaviour, published in `tools/list` (`annotations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads state.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// A tool that changes state without destroying anything.
    pub const WRITE: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
    /// A tool that can destroy data or reset the machine.
    pub const DESTRUCTIVE: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: false,
    };
}
