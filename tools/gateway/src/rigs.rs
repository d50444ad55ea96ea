//! The rigs that registered themselves under `target/iris/rigs/` (written by the rig,
//! `tools/iris/src/registration.rs`). Anyone who can write that directory can write a
//! registration, so each is checked before it is adopted: the URL must be the loopback
//! `http://` address of the port the file is named for, and the token file must lie inside
//! the rigs' own directory tree (`target/iris/`), so a registration can neither send a token
//! elsewhere nor have the gateway read any other token file (docs/gateway.md).

use crate::lab::{MACHINES_MAX, MachineSpec};
use crate::policy::Policy;
use serde::Deserialize;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};
use url::{Host, Url};

/// One rig's registration file (`target/iris/rigs/<port>.json`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Registration {
    url: String,
    token_file: Option<PathBuf>,
    pid: u32,
}

/// Largest registration file read: the rig writes about 100 bytes.
const FILE_MAX: u64 = 4096;
/// Longest piece of a refused value quoted in the log.
const QUOTE_MAX: usize = 80;

/// What one look at the registrations found: the rigs to adopt and, for each file refused,
/// why (for the gateway's log).
#[derive(Debug, Default)]
pub struct Registered {
    pub rigs: Vec<MachineSpec>,
    pub refused: Vec<String>,
}

/// The rigs registered in `dir` whose process still runs, as machines named `rig-<port>` with
/// the default policy. A rig killed without removing its file is skipped silently; a file
/// that fails a check is refused with the reason.
pub fn registered(dir: &Path) -> Registered {
    let mut out = Registered::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    // Token files may lie anywhere under the directory that holds the rigs' directory.
    let iris = dir.parent().and_then(|p| p.canonicalize().ok());
    for e in entries.flatten().take(MACHINES_MAX) {
        let path = e.path();
        if path.extension().and_then(|s| s.to_str()) != Some("json") {
            continue;
        }
        let Some(port) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u16>().ok())
        else {
            continue;
        };
        match adopt(&path, port, iris.as_deref()) {
            Ok(Some(spec)) => out.rigs.push(spec),
            Ok(None) => {}
            Err(why) => out.refused.push(format!("{}: {why}", path.display())),
        }
    }
    out.rigs.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The machine a registration stands for; `None` if its rig is gone or the file cannot be
/// read (a rig writing it just now).
fn adopt(path: &Path, port: u16, iris: Option<&Path>) -> Result<Option<MachineSpec>, String> {
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(FILE_MAX).read_to_string(&mut text));
    if read.is_err() {
        return Ok(None);
    }
    let r: Registration =
        serde_json::from_str(&text).map_err(|e| format!("not a registration: {e}"))?;
    if !Path::new(&format!("/proc/{}", r.pid)).exists() {
        return Ok(None);
    }
    let url = loopback_url(&r.url, port)?;
    let token_file = match r.token_file {
        None => None,
        Some(t) => Some(inside(&t, iris)?),
    };
    Ok(Some(MachineSpec {
        name: format!("rig-{port}"),
        url,
        token_file,
        mac: None,
        policy: Policy::default(),
    }))
}

/// `url` if it is `http://` to a loopback address at `port` (no user, no query), normalised.
fn loopback_url(url: &str, port: u16) -> Result<String, String> {
    let refuse = || {
        format!(
            "url `{}` is not http:// to a loopback address at port {port}",
            quote(url)
        )
    };
    // The URL parser drops tabs and line breaks silently: such a value is refused, not mended.
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refuse());
    }
    let u = Url::parse(url).map_err(|_| refuse())?;
    let loopback = match u.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        _ => false,
    };
    let ok = u.scheme() == "http"
        && loopback
        && u.port() == Some(port)
        && u.username().is_empty()
        && u.password().is_none()
        && u.query().is_none()
        && u.fragment().is_none();
    if ok { Ok(u.to_string()) } else { Err(refuse()) }
}

/// `token` resolved (symbolic links and `..` followed) if it lies inside `iris`. A token file
/// the rig has not written yet is judged by its directory.
fn inside(token: &Path, iris: Option<&Path>) -> Result<PathBuf, String> {
    let refuse = || {
        format!(
            "token_file `{}` is not inside {}",
            quote(&token.display().to_string()),
            iris.map_or("the rigs' directory".into(), |p| p.display().to_string())
        )
    };
    let iris = iris.ok_or_else(refuse)?;
    if !token.is_absolute() {
        return Err(refuse());
    }
    let real = match token.canonicalize() {
        Ok(p) => p,
        Err(_) => {
            let (Some(dir), Some(Component::Normal(name))) =
                (token.parent(), token.components().next_back())
            else {
                return Err(refuse());
            };
            dir.canonicalize().map_err(|_| refuse())?.join(name)
        }
    };
    if real.starts_with(iris) && real != iris {
        Ok(real)
    } else {
        Err(refuse())
    }
}

/// A value from a registration, safe to write in the log: control characters escaped, cut.
fn quote(s: &str) -> String {
    s.chars()
        .take(QUOTE_MAX)
        .flat_map(char::escape_debug)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree(PathBuf);

    impl Tree {
        /// `<tmp>/<tag>/target/iris/rigs`, made empty.
        fn new(tag: &str) -> Tree {
            let root = std::env::temp_dir().join(format!("irix7-gw-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("target/iris/rigs")).unwrap();
            Tree(root)
        }
        fn rigs(&self) -> PathBuf {
            self.0.join("target/iris/rigs")
        }
        fn iris(&self) -> PathBuf {
            self.0.join("target/iris").canonicalize().unwrap()
        }
        fn register(&self, port: u16, url: &str, token: Option<&Path>, pid: u32) {
            let v = serde_json::json!({"url": url, "token_file": token, "pid": pid});
            std::fs::write(self.rigs().join(format!("{port}.json")), v.to_string()).unwrap();
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn adopts_registered_rigs_whose_process_runs() {
        let t = Tree::new("rigs");
        let me = std::process::id();
        let token = t.iris().join("token-4100");
        t.register(4100, "http://127.0.0.1:4100/mcp", Some(&token), me);
        // A killed rig leaves its file: no process has pid 0x7ffffffe.
        t.register(4101, "http://127.0.0.1:4101/mcp", None, 2147483646);
        std::fs::write(t.rigs().join("4102.json"), "not json").unwrap();
        std::fs::write(t.rigs().join("notes.txt"), "ignored").unwrap();
        let r = registered(&t.rigs());
        assert_eq!(r.rigs.len(), 1);
        assert_eq!(r.rigs[0].name, "rig-4100");
        assert_eq!(r.rigs[0].url, "http://127.0.0.1:4100/mcp");
        assert_eq!(r.rigs[0].token_file.as_deref(), Some(token.as_path()));
        assert_eq!(r.refused.len(), 1, "{:?}", r.refused);
        assert!(r.refused[0].contains("4102.json: not a registration"));
        assert!(registered(&t.rigs().join("absent")).rigs.is_empty());
    }

    #[test]
    fn refuses_urls_that_are_not_the_rigs_loopback_port() {
        let t = Tree::new("rig-urls");
        let me = std::process::id();
        for (port, url) in [
            (4200, "http://10.0.0.66:4200/mcp"),
            (4201, "https://127.0.0.1:4201/mcp"),
            (4202, "http://127.0.0.1:40001/mcp"),
            (4203, "http://localhost:4203/mcp"),
            (4204, "http://user:pw@127.0.0.1:4204/mcp"),
            (4205, "http://0.0.0.0:4205/mcp"),
            (4206, "file:///etc/passwd"),
            (4207, "http://127.0.0.1:4207/mcp\n[machines.x]"),
        ] {
            t.register(port, url, None, me);
        }
        // The same rig under other spellings of the loopback address is fine, normalised.
        t.register(4208, "http://127.1:4208/mcp", None, me);
        t.register(4209, "http://[::1]:4209/mcp", None, me);
        let r = registered(&t.rigs());
        let urls: Vec<_> = r.rigs.iter().map(|m| m.url.as_str()).collect();
        assert_eq!(urls, ["http://127.0.0.1:4208/mcp", "http://[::1]:4209/mcp"]);
        assert_eq!(r.refused.len(), 8, "{:#?}", r.refused);
        for why in &r.refused {
            assert!(why.contains("not http:// to a loopback address"), "{why}");
            assert!(!why.contains('\n'), "a refusal is one log line: {why}");
        }
    }

    #[test]
    fn refuses_token_files_outside_the_rigs_tree() {
        let t = Tree::new("rig-tokens");
        let me = std::process::id();
        let outside = t.0.join("bench.token");
        std::fs::write(&outside, "secret-of-another-machine\n").unwrap();
        let link = t.iris().join("token-4302");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let url = |p: u16| format!("http://127.0.0.1:{p}/mcp");
        t.register(4300, &url(4300), Some(&outside), me);
        t.register(4301, &url(4301), Some(&t.iris().join("../bench.token")), me);
        t.register(4302, &url(4302), Some(&link), me);
        t.register(4303, &url(4303), Some(Path::new("token-4303")), me);
        t.register(4304, &url(4304), Some(&t.iris()), me);
        // Not written yet, inside: adopted (the rig writes it when the module boots).
        let later = t.iris().join("token-4305");
        t.register(4305, &url(4305), Some(&later), me);
        let r = registered(&t.rigs());
        assert_eq!(r.rigs.len(), 1, "{:?}", r.rigs);
        assert_eq!(r.rigs[0].token_file.as_deref(), Some(later.as_path()));
        assert_eq!(r.refused.len(), 5, "{:#?}", r.refused);
        assert!(
            r.refused.iter().all(|w| w.contains("is not inside")),
            "{:#?}",
            r.refused
        );
    }
}
