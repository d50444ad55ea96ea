//! The lab file: which machines the gateway fronts (name, MCP URL, token file, policy), where
//! it listens and where it keeps its token and audit log; plus the rigs that registered
//! themselves under `target/iris/rigs/` (docs/gateway.md).

use crate::policy::Policy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest machine name: `lab.list` rows and audit lines stay short, and a name is one word.
pub const NAME_MAX: usize = 32;
/// Most machines one lab holds: every probe of `lab.list` runs them all at once.
pub const MACHINES_MAX: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<SocketAddr>,
    token_file: Option<PathBuf>,
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
    pub policy: Policy,
}

/// The whole lab file, with relative paths resolved against its directory.
#[derive(Debug)]
pub struct Lab {
    pub listen: SocketAddr,
    pub token_file: PathBuf,
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
            if !m.url.starts_with("http://") && !m.url.starts_with("https://") {
                return Err(format!("machine {name}: url must be http:// or https://"));
            }
            machines.push(MachineSpec {
                policy: Policy::new(m.allow, m.deny).map_err(|e| format!("machine {name}: {e}"))?,
                name,
                url: m.url,
                token_file: m.token_file.map(resolve),
            });
        }
        Ok(Lab {
            listen,
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

/// One rig's registration file (`target/iris/rigs/<port>.json`, written by the rig).
#[derive(Deserialize)]
struct Registration {
    url: String,
    token_file: Option<PathBuf>,
    pid: u32,
}

/// The rigs registered in `dir` whose process still runs, as machines named `rig-<port>`
/// with the default policy. A rig killed without removing its file is skipped.
pub fn registered_rigs(dir: &Path) -> Vec<MachineSpec> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten().take(MACHINES_MAX) {
        let path = e.path();
        let Some(port) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| s.parse::<u16>().is_ok())
        else {
            continue;
        };
        if path.extension().and_then(|s| s.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(r) = serde_json::from_str::<Registration>(&text) else {
            continue;
        };
        if !Path::new(&format!("/proc/{}", r.pid)).exists() {
            continue;
        }
        out.push(MachineSpec {
            name: format!("rig-{port}"),
            url: r.url,
            token_file: r.token_file,
            policy: Policy::default(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
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
        assert_eq!(lab.token_file, Path::new("/labs/target/gateway/token"));
    }

    #[test]
    fn adopts_registered_rigs_whose_process_runs() {
        let dir = std::env::temp_dir().join(format!("irix7-gw-rigs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let live = format!(
            "{{\"url\":\"http://127.0.0.1:4100/mcp\",\"token_file\":\"/t/token-4100\",\"pid\":{}}}",
            std::process::id()
        );
        std::fs::write(dir.join("4100.json"), live).unwrap();
        // A killed rig leaves its file: no process has pid 0x7ffffffe.
        let dead = r#"{"url":"http://127.0.0.1:4101/mcp","token_file":null,"pid":2147483646}"#;
        std::fs::write(dir.join("4101.json"), dead).unwrap();
        std::fs::write(dir.join("4102.json"), "not json").unwrap();
        std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
        let rigs = registered_rigs(&dir);
        assert_eq!(rigs.len(), 1);
        assert_eq!(rigs[0].name, "rig-4100");
        assert_eq!(rigs[0].url, "http://127.0.0.1:4100/mcp");
        assert_eq!(
            rigs[0].token_file.as_deref(),
            Some(Path::new("/t/token-4100"))
        );
        assert!(registered_rigs(&dir.join("absent")).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
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
        assert!(Lab::parse("bogus = 1", Path::new(".")).is_err());
    }
}
