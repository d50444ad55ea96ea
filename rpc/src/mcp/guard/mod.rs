//! Who may ask and how much, and what is written down: the bearer, Origin and Host checks,
//! least authority ([`authority`]), rate and concurrency limits, failed logins, the audit
//! line and the call observer, the module's [`config::Config`], and the per-request context
//! ([`request::Cx`]) these produce. Imports only `wire`.

pub(crate) mod arg_summary;
pub(crate) mod audit;
pub mod authority;
pub(crate) mod call_watch;
pub(crate) mod config;
pub(crate) mod limits;
pub(crate) mod login_failures;
pub(crate) mod outcome;
pub(crate) mod refusals;
pub(crate) mod request;
pub(crate) mod security;
