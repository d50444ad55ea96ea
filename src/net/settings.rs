//! The module's settings: every key of the kernel environment the module reads, read once at
//! init and bounded here, so `board` only wires what this file decided (and the host tests
//! check each key, its bounds and its bad values). A value that does not parse falls back to
//! its default (fail closed where it guards a door) and leaves a line for the console in
//! `notes`. The keys are listed in `docs/abi.md`, "Environment variables the module reads".

use super::access::{self, TokenChoice};
use super::config::{self, IpConfig};
use super::mdns;
use crate::services::fs::mount::RootSettings;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use rpc::mcp::Policy;
use rpc::mcp::authority::Token;

/// The MCP port unless `mcp.port` names another.
pub const DEFAULT_PORT: u16 = 7801;
/// At most this many extra origins in `mcp.origins`, each at most [`ORIGIN_MAX`] bytes (a
/// scheme, a host name of at most 253 and a port).
pub const ORIGINS_MAX: usize = 16;
pub const ORIGIN_MAX: usize = 272;

/// What the environment configures, each value checked.
pub struct Settings {
    /// `eaddr`, or the default station address.
    pub mac: [u8; 6],
    /// `netaddr` and `netgw`, or DHCP.
    pub ip: IpConfig,
    /// `mcp.port`.
    pub port: u16,
    /// `mcp.token` (or the image's built-in token): used, open, or generated at boot.
    pub token: TokenChoice,
    /// `mcp.hosts`: the names the machine answers to besides its address.
    pub hosts: Vec<String>,
    /// `mcp.origins`: the browser origins allowed besides the machine's own.
    pub origins: Vec<String>,
    /// `mcp.policy`: observe when it does not parse.
    pub policy: Policy,
    /// `mcp.tokens`: none when the value does not parse.
    pub tokens: Vec<Token>,
    /// `mcp.confirm`: destructive tools ask first; on when the value does not parse.
    pub confirm: bool,
    /// `mcp.disk` and `mcp.overlay_max`.
    pub root: RootSettings,
    /// `mcp.mdns` is not `off`.
    pub mdns: bool,
    /// `mcp.name`, or the name the MAC gives.
    pub name: String,
    /// One console line for each value refused, and what the module uses instead.
    pub notes: Vec<String>,
}

impl Settings {
    /// Reads every key through `env` (`None`: absent); `build_token` is a token built into the
    /// image, which `mcp.token` overrides.
    pub fn from_env(env: impl Fn(&str) -> Option<String>, build_token: Option<&str>) -> Settings {
        let mut notes = Vec::new();

        let (mac, mac_err) = config::mac_from_env(env("eaddr").as_deref());
        if let Some(e) = mac_err {
            notes.push(format!("eaddr ignored ({e:?}); using the default address"));
        }
        let ip = config::ip_config(env("netaddr").as_deref(), env("netgw").as_deref())
            .unwrap_or_else(|e| {
                notes.push(format!("netaddr/netgw ignored ({e:?}); using DHCP"));
                IpConfig::Dhcp
            });
        let port = match env("mcp.port").map(|p| p.trim().parse::<u16>()) {
            None => DEFAULT_PORT,
            Some(Ok(p)) if p != 0 => p,
            Some(_) => {
                notes.push(format!(
                    "mcp.port is not a port number; using {DEFAULT_PORT}"
                ));
                DEFAULT_PORT
            }
        };
        let token = access::choose_token(env("mcp.token").as_deref(), build_token);

        let (hosts, dropped) = access::bounded_list(
            env("mcp.hosts").as_deref(),
            access::HOSTS_MAX,
            access::HOST_MAX,
        );
        if dropped > 0 {
            notes.push(format!(
                "mcp.hosts: {dropped} names ignored (at most {} of at most {} characters)",
                access::HOSTS_MAX,
                access::HOST_MAX
            ));
        }
        let (origins, dropped) =
            access::bounded_list(env("mcp.origins").as_deref(), ORIGINS_MAX, ORIGIN_MAX);
        if dropped > 0 {
            notes.push(format!(
                "mcp.origins: {dropped} origins ignored (at most {ORIGINS_MAX} of at most \
                 {ORIGIN_MAX} characters)"
            ));
        }

        let (policy, refused) =
            Policy::parse_or_observe(env("mcp.policy").as_deref().unwrap_or(""));
        if let Some(why) = refused {
            notes.push(format!("mcp.policy refused ({why}): serving observe only"));
        }
        let tokens = access::lesser_tokens(env("mcp.tokens").as_deref()).unwrap_or_else(|why| {
            notes.push(format!("mcp.tokens refused ({why}): no lesser tokens"));
            Vec::new()
        });
        // A lesser token with the administrator's secret would be the administrator (the
        // administrator's match wins), whatever role it names: fail closed.
        let tokens = match (&token, tokens) {
            (TokenChoice::Use(admin, _), tokens) if tokens.iter().any(|t| t.secret == *admin) => {
                notes.push(String::from(
                    "mcp.tokens refused (a secret is mcp.token's): no lesser tokens",
                ));
                Vec::new()
            }
            (_, tokens) => tokens,
        };
        let confirm =
            rpc::mcp::confirm::parse(env("mcp.confirm").as_deref()).unwrap_or_else(|| {
                notes.push(String::from(
                    "mcp.confirm is not on/off: destructive tools ask for consent",
                ));
                true
            });

        let root = RootSettings::from_env(
            env("mcp.disk").as_deref(),
            env("mcp.overlay_max").as_deref(),
        );
        let mdns = !env("mcp.mdns").is_some_and(|v| v.trim().eq_ignore_ascii_case("off"));
        let (name, refused) = mdns::choose_name(env("mcp.name").as_deref(), mac);
        if let Some(why) = refused.filter(|_| mdns) {
            notes.push(format!("mcp.name refused ({why}): announcing {name}"));
        }

        Settings {
            mac,
            ip,
            port,
            token,
            hosts,
            origins,
            policy,
            tokens,
            confirm,
            root,
            mdns,
            name,
            notes,
        }
    }
}

#[cfg(test)]
mod tests;
