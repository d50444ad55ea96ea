//! Finding machines on the LAN. The module announces itself with mDNS/DNS-SD as `_mcp._tcp`
//! (its TXT carries path, eras, version, build and auth; `docs/network.md`); `irix7-gateway
//! discover` browses for a while with the `mdns-sd` crate, lists what answered and, with
//! `--adopt LAB.toml`, appends the machines the lab file does not have yet. Rigs are not on the
//! host's LAN (their wire is virtual): they register under `target/iris/rigs/` instead.

use crate::lab::{Lab, NAME_MAX, check_name};
use mdns_sd::{IfKind, ResolvedService, ServiceDaemon, ServiceEvent};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// The DNS-SD service type the module announces.
pub const SERVICE: &str = "_mcp._tcp.local.";
/// Most machines one browse reports (a lab holds at most `lab::MACHINES_MAX` anyway).
const FOUND_MAX: usize = 256;

/// A machine that answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The instance name, made a lab machine name (letters, digits, `-`, `_`).
    pub name: String,
    pub url: String,
    pub version: Option<String>,
    pub build: Option<String>,
    /// `bearer` (a token is needed: the operator puts it in the token file) or `none`.
    pub auth: Option<String>,
}

/// Browses for `wait`; `loopback` also listens on the loopback interface (tests).
pub fn browse(wait: Duration, loopback: bool) -> Result<Vec<Found>, String> {
    let daemon = ServiceDaemon::new().map_err(|e| format!("mDNS: {e}"))?;
    if loopback {
        daemon
            .enable_interface(IfKind::LoopbackV4)
            .map_err(|e| format!("mDNS: {e}"))?;
    }
    let events = daemon.browse(SERVICE).map_err(|e| format!("mDNS: {e}"))?;
    let deadline = Instant::now() + wait;
    let mut found = BTreeMap::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match events.recv_timeout(left) {
            Ok(ServiceEvent::ServiceResolved(s)) => {
                if let Some(f) = found_of(&s)
                    && (found.len() < FOUND_MAX || found.contains_key(&f.name))
                {
                    found.insert(f.name.clone(), f);
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = daemon.shutdown();
    Ok(found.into_values().collect())
}

/// A resolved instance as a lab machine: its first IPv4 address, port and TXT `path`.
fn found_of(s: &ResolvedService) -> Option<Found> {
    let instance = s.get_fullname().strip_suffix(SERVICE)?.strip_suffix('.')?;
    let name = machine_name(instance)?;
    let ip = s
        .get_addresses()
        .iter()
        .map(|a| a.to_ip_addr())
        .find(IpAddr::is_ipv4)?;
    let path = s.get_property_val_str("path").unwrap_or("/mcp");
    if !path.starts_with('/') {
        return None;
    }
    let txt = |k: &str| s.get_property_val_str(k).map(String::from);
    Some(Found {
        name,
        url: format!("http://{ip}:{}{path}", s.get_port()),
        version: txt("version"),
        build: txt("build"),
        auth: txt("auth"),
    })
}

/// An instance name as a lab machine name: other characters become `-`, cut to the limit.
fn machine_name(instance: &str) -> Option<String> {
    let name: String = instance
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(NAME_MAX)
        .collect();
    check_name(&name).ok().map(|_| name)
}

/// Appends to the lab file at `path` the machines it does not have (by name or URL), each with
/// a token file beside the lab file (`tokens/<name>`) unless it announced `auth=none`. The new
/// text must parse as a lab file before it replaces the old. Returns the names adopted.
pub fn adopt(path: &Path, found: &[Found]) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let (text, adopted) = adopt_text(&text, base, found)?;
    if !adopted.is_empty() {
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, &text)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(adopted)
}

fn adopt_text(text: &str, base: &Path, found: &[Found]) -> Result<(String, Vec<String>), String> {
    let lab = Lab::parse(text, base)?;
    let mut out = String::from(text);
    let mut adopted = Vec::new();
    for f in found {
        let known = lab
            .machines
            .iter()
            .any(|m| m.name == f.name || m.url == f.url)
            || adopted.contains(&f.name);
        if known {
            continue;
        }
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "\n# adopted by `irix7-gateway discover` (build {})\n[machines.{}]\nurl = \"{}\"\n",
            f.build.as_deref().unwrap_or("?"),
            f.name,
            f.url
        ));
        if f.auth.as_deref() != Some("none") {
            out.push_str(&format!("token_file = \"tokens/{}\"\n", f.name));
        }
        adopted.push(f.name.clone());
    }
    Lab::parse(&out, base)
        .map_err(|e| format!("the lab file would not parse after adopting: {e}"))?;
    Ok((out, adopted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdns_sd::ServiceInfo;

    fn found(name: &str, url: &str, auth: &str) -> Found {
        Found {
            name: name.into(),
            url: url.into(),
            version: Some("0.1.0+abc".into()),
            build: Some("abc".into()),
            auth: Some(auth.into()),
        }
    }

    #[test]
    fn adopting_appends_only_new_machines_and_keeps_the_file_valid() {
        let lab =
            "listen = \"127.0.0.1:7800\"\n\n[machines.bench]\nurl = \"http://10.0.0.5:7801/mcp\"\n";
        let (text, names) = adopt_text(
            lab,
            Path::new("."),
            &[
                found("bench", "http://10.0.0.9:7801/mcp", "bearer"),
                found("indy-0a1b2c", "http://10.0.0.5:7801/mcp", "bearer"),
                found("indy-4d4145", "http://10.0.0.7:7801/mcp", "bearer"),
                found("open-one", "http://10.0.0.8:7801/mcp", "none"),
            ],
        )
        .unwrap();
        assert_eq!(
            names,
            ["indy-4d4145", "open-one"],
            "same name or same URL: known"
        );
        let parsed = Lab::parse(&text, Path::new("/lab")).unwrap();
        let m = |n: &str| {
            parsed
                .machines
                .iter()
                .find(|m| m.name == n)
                .unwrap()
                .clone()
        };
        assert_eq!(m("indy-4d4145").url, "http://10.0.0.7:7801/mcp");
        assert_eq!(
            m("indy-4d4145").token_file.as_deref(),
            Some(Path::new("/lab/tokens/indy-4d4145"))
        );
        assert_eq!(m("open-one").token_file, None);
        assert!(
            text.starts_with(lab),
            "the operator's text is kept as written"
        );
    }

    #[test]
    fn instance_names_become_machine_names() {
        assert_eq!(machine_name("indy-0a1b2c").as_deref(), Some("indy-0a1b2c"));
        assert_eq!(
            machine_name("Bench Indy (2)").as_deref(),
            Some("Bench-Indy--2-")
        );
        assert_eq!(
            machine_name(&"x".repeat(80)).map(|n| n.len()),
            Some(NAME_MAX)
        );
        assert_eq!(machine_name(""), None);
    }

    /// A responder on this host's loopback, announcing what the module announces, is found
    /// with its URL and TXT.
    #[test]
    fn a_browse_finds_an_announced_machine() {
        let responder = ServiceDaemon::new().unwrap();
        responder.enable_interface(IfKind::LoopbackV4).unwrap();
        let txt = [
            ("path", "/mcp"),
            ("eras", "2026-07-28,2025-11-25"),
            ("version", "0.1.0+t.1234"),
            ("build", "t"),
            ("auth", "bearer"),
        ];
        let info = ServiceInfo::new(
            SERVICE,
            "indy-test42",
            "indy-test42.local.",
            "127.0.0.1",
            17801,
            &txt[..],
        )
        .unwrap();
        responder.register(info).unwrap();
        let found = browse(Duration::from_secs(5), true).unwrap();
        let _ = responder.shutdown();
        let f = found
            .iter()
            .find(|f| f.name == "indy-test42")
            .unwrap_or_else(|| panic!("not found: {found:?}"));
        assert_eq!(f.url, "http://127.0.0.1:17801/mcp");
        assert_eq!(
            (f.build.as_deref(), f.auth.as_deref()),
            (Some("t"), Some("bearer"))
        );
    }
}
