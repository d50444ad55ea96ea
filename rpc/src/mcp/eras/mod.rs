//! The two eras of the protocol: the stateless 2026-07-28 era ([`modern`]) and the
//! session-based legacy family ([`legacy`]: its sessions, subscriptions and the `GET /mcp`
//! event stream). Imports every folder below it: `resources`, `tools`, `guard`, `wire`.

pub(crate) mod get_stream;
pub(crate) mod legacy;
pub(crate) mod modern;
pub(crate) mod session;
pub(crate) mod subscriptions;
