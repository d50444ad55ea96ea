//! The lab file: which machines the gateway fronts (name, MCP URL, token file, policy), the
//! role of the agent's token, where the gateway listens and where it keeps its token and audit
//! log (docs/gateway.md).

use crate::neighbour::Mac;
use crate::policy::Policy;
use rpc::mcp::authority::Privilege;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::{Host, Url};

/// Longest machine name: `lab.list` rows and audit lines stay short, and a name is one word.
pub const NAME_MAX: usize = 32;
/// Most machines one lab holds: every probe of `lab.list` runs them all at once.
pub const MACHINES_MAX: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<SocketAddr>,
    token_file: Option<PathBuf>,
    /// What the agent holding the gateway's token may do on any machine.
    agent_role: Option<String>,
    audit_log: Option<PathBuf>,
    /// A directory of rig registrations to adopt (`target/iris/rigs`).
    rigs: Option<PathBuf>,
    /// Seconds a forwarded call may go without an answer or a progress notice.
    call_timeout_s: Option<u64>,
    /// Seconds one probe (connect plus `status`) may take.
    probe_timeout_s: Option<u64>,
    #[serde(default)]
    machines: BTreeMap<String, MachineEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineEntry {
    url: String,
    token_file: Option<PathBuf>,
    /// The MAC the machine had when it was adopted from the LAN (`discover --adopt`).
    mac: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// One machine of the lab.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    pub name: String,
    pub url: String,
    /// The machine's bearer token lives here (read at every connect: a reset machine that
    /// generated a new token is followed); `None`: an open machine.
    pub token_file: Option<PathBuf>,
    /// The MAC it is pinned to (adopted from the LAN): the gateway sends it a request only
    /// after the host's neighbour table showed that MAC at its address (`machine.rs`), and a
    /// later answer under its name from another shows as such (`adopt.rs`).
    pub mac: Option<Mac>,
    pub policy: Policy,
}

/// The whole lab file, with relative paths resolved against its directory.
#[derive(Debug)]
pub struct Lab {
    pub listen: SocketAddr,
    pub token_file: PathBuf,
    pub agent_role: Privilege,
    pub audit_log: PathBuf,
    pub rigs: Option<PathBuf>,
    pub call_timeout: Duration,
    pub probe_timeout: Duration,
    pub machines: Vec<MachineSpec>,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7800";

impl Lab {
    pub fn load(path: &Path) -> Result<Lab, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Lab::parse(&text, base).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses a lab file; relative paths are taken from `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Lab, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let listen = f
            .listen
            .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("constant address"));
        if !listen.ip().is_loopback() {
            return Err(format!(
                "listen = {listen}: the gateway listens on the loopback interface only"
            ));
        }
        if f.machines.len() > MACHINES_MAX {
            return Err(format!("more than {MACHINES_MAX} machines"));
        }
        let resolve = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
        let mut machines = Vec::new();
        for (name, m) in f.machines {
            check_name(&name)?;
            if endpoint(&m.url).is_none() {
                return Err(format!(
                    "machine {name}: url must be an http:// or https:// URL with a host"
                ));
            }
            let mac = match m.mac {
                Some(mac) => Some(mac.parse().map_err(|e| format!("machine {name}: {e}"))?),
                None => None,
            };
            machines.push(MachineSpec {
                policy: Policy::new(m.allow, m.deny).map_err(|e| format!("machine {name}: {e}"))?,
                mac,
                name,
                url: m.url,
                token_file: m.token_file.map(resolve),
            });
        }
        Ok(Lab {
            listen,
            agent_role: match f.agent_role.as_deref() {
                None => Privilege::Administer,
                Some(word) => Privilege::parse(word).ok_or_else(|| {
                    format!(
                        "agent_role `{}`: observe, operate or administer",
                        word.escape_debug()
                    )
                })?,
            },
            token_file: resolve(
                f.token_file
                    .unwrap_or_else(|| PathBuf::from("target/gateway/token")),
            ),
            audit_log: resolve(
                f.audit_log
                    .unwrap_or_else(|| PathBuf::from("target/gateway/audit.log")),
            ),
            rigs: f.rigs.map(resolve),
            call_timeout: Duration::from_secs(f.call_timeout_s.unwrap_or(60).clamp(1, 3600)),
            probe_timeout: Duration::from_secs(f.probe_timeout_s.unwrap_or(3).clamp(1, 60)),
            machines,
        })
    }
}

/// A machine name is one word agents can type: letters, digits, `-` and `_`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "machine name `{name}`: 1 to {NAME_MAX} letters, digits, `-` or `_`"
        ))
    }
}

/// Where a machine URL points, for telling two spellings of one machine apart: the host as
/// the URL parser normalises it (`127.1`, `0x7f.0.0.1` and `127.0.0.1` are one; every
/// loopback or unspecified address and `localhost` are "this host") and the port. The path
/// does not count: one port serves one module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
}

/// The endpoint of an `http://` or `https://` URL with a host; `None` for anything else.
pub fn endpoint(url: &str) -> Option<Endpoint> {
    let u = Url::parse(url).ok()?;
    if !matches!(u.scheme(), "http" | "https") {
        return None;
    }
    let port = u.port_or_known_default()?;
    let this_host = |ip: IpAddr| {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        ip.is_loopback() || ip.is_unspecified()
    };
    let host = match u.host()? {
        Host::Ipv4(ip) if this_host(ip.into()) => "this host".to_string(),
        Host::Ipv6(ip) if this_host(ip.into()) => "this host".to_string(),
        Host::Domain(d) if d.trim_end_matches('.').eq_ignore_ascii_case("localhost") => {
            "this host".to_string()
        }
        h => h.to_string().to_ascii_lowercase(),
    };
    Some(Endpoint { host, port })
}

/// True if the two URLs reach the same machine (see [`Endpoint`]).
pub fn same_machine(a: &str, b: &str) -> bool {
    matches!((endpoint(a), endpoint(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_machines_and_resolves_paths() {
        let lab = Lab::parse(
            r#"
            listen = "127.0.0.1:9000"
            [machines.bench]
            url = "http://10.0.0.5:7801/mcp"
            token_file = "bench.token"
            deny = ["system.reset"]
            [machines.rig1]
            url = "http://127.0.0.1:40001/mcp"
            "#,
            Path::new("/labs"),
        )
        .unwrap();
        assert_eq!(lab.listen.port(), 9000);
        assert_eq!(lab.machines.len(), 2);
        let bench = &lab.machines[0];
        assert_eq!(bench.name, "bench");
        assert_eq!(
            bench.token_file.as_deref(),
            Some(Path::new("/labs/bench.token"))
        );
        assert!(bench.policy.check("system.reset").is_err());
        assert!(bench.policy.check("status").is_ok());
        assert_eq!(lab.machines[1].token_file, None);
        assert_eq!(lab.machines[1].mac, None);
        assert_eq!(lab.token_file, Path::new("/labs/target/gateway/token"));
    }

    #[test]
    fn spellings_of_one_machine_are_one_machine() {
        let same = |a, b| same_machine(a, b);
        assert!(same(
            "http://127.0.0.1:40001/mcp",
            "http://127.1:40001/other"
        ));
        assert!(same(
            "http://127.0.0.1:40001/mcp",
            "http://0x7f.0.0.1:40001/mcp"
        ));
        assert!(same(
            "http://127.0.0.1:40001/mcp",
            "http://LOCALHOST.:40001/mcp"
        ));
        assert!(same("http://127.0.0.1:40001/mcp", "http://[::1]:40001/mcp"));
        assert!(same(
            "http://127.0.0.1:40001/mcp",
            "http://[::ffff:127.0.0.1]:40001/"
        ));
        assert!(same(
            "http://127.0.0.1:40001/mcp",
            "http://0.0.0.0:40001/mcp"
        ));
        assert!(same("http://Bench.lan/mcp", "http://bench.lan:80/mcp"));
        assert!(!same(
            "http://127.0.0.1:40001/mcp",
            "http://127.0.0.1:40002/mcp"
        ));
        assert!(!same(
            "http://10.0.0.5:7801/mcp",
            "http://10.0.0.6:7801/mcp"
        ));
        assert!(!same("ftp://h/", "ftp://h/"), "not a machine URL");
    }

    #[test]
    fn the_agent_role_defaults_to_administer() {
        let role = |t: &str| Lab::parse(t, Path::new(".")).map(|l| l.agent_role);
        assert_eq!(role("").unwrap(), Privilege::Administer);
        assert_eq!(
            role("agent_role = \"observe\"").unwrap(),
            Privilege::Observe
        );
        assert_eq!(
            role("agent_role = \"operate\"").unwrap(),
            Privilege::Operate
        );
        assert!(role("agent_role = \"root\"").is_err());
    }

    #[test]
    fn refuses_a_public_listen_address_and_bad_names() {
        let e = Lab::parse("listen = \"0.0.0.0:7800\"", Path::new(".")).unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        let e = Lab::parse(
            "[machines.\"a.b\"]\nurl = \"http://127.0.0.1:1/mcp\"",
            Path::new("."),
        )
        .unwrap_err();
        assert!(e.contains("machine name"), "{e}");
        let e = Lab::parse("[machines.x]\nurl = \"ftp://h/\"", Path::new(".")).unwrap_err();
        assert!(e.contains("http"), "{e}");
        let e = Lab::parse("[machines.x]\nurl = \"http://\"", Path::new(".")).unwrap_err();
        assert!(e.contains("http"), "{e}");
        assert!(Lab::parse("bogus = 1", Path::new(".")).is_err());
        let mac = |v: &str| {
            Lab::parse(
                &format!("[machines.x]\nurl = \"http://10.0.0.5/mcp\"\nmac = \"{v}\""),
                Path::new("."),
            )
            .map(|l| l.machines[0].mac.map(|m| m.to_string()))
        };
        assert_eq!(
            mac("08:00:69:4D:41:45").unwrap().as_deref(),
            Some("08:00:69:4d:41:45")
        );
        let e = mac("08:00:69:4d:41").unwrap_err();
        assert!(e.contains("machine x: MAC"), "{e}");
    }
}
