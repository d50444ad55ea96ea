//! What a client may call: the tool registry and its argument schemas, a running call
//! ([`call`]: its gates, stream, result and rounds of input), tasks, consent, the legacy input
//! bridge, how a result is written for its era, and prompts. Imports `guard` and `wire`.

pub(crate) mod call;
pub mod confirm;
pub(crate) mod inputs;
pub(crate) mod prompt;
pub(crate) mod registry;
pub(crate) mod result;
pub(crate) mod schema;
pub(crate) mod tasks;
