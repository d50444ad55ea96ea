//! The rig's registration for the lab gateway (`irix7-gateway`, docs/gateway.md): for each
//! forwarded host port that reaches the module's MCP port, a file
//! `target/iris/rigs/<host port>.json` saying where MCP answers, where the rig writes the
//! generated token (`token`) and which process serves it. A rig's virtual wire is not the
//! host's LAN, so the gateway cannot discover it there; it reads these instead. The files go
//! when the rig does; the gateway skips one whose process is gone (a killed rig).

use std::path::{Path, PathBuf};

/// The guest port the module serves MCP on.
pub const MCP_PORT: u16 = 7801;
/// Where the registrations live, under the repository root.
pub const RIGS_DIR: &str = "target/iris/rigs";

pub struct Registrations {
    paths: Vec<PathBuf>,
}

impl Registrations {
    /// Registers each `(host port, guest port)` forward to the MCP port.
    pub fn new(root: &Path, forwards: &[(u16, u16)]) -> Registrations {
        let dir = root.join(RIGS_DIR);
        let mut paths = Vec::new();
        for &(host, guest) in forwards {
            if guest != MCP_PORT {
                continue;
            }
            let path = dir.join(format!("{host}.json"));
            let text = format!(
                "{{\"url\":\"http://127.0.0.1:{host}/mcp\",\"token_file\":{},\"pid\":{}}}\n",
                json_string(&crate::token::token_path(root, host).display().to_string()),
                std::process::id()
            );
            if std::fs::create_dir_all(&dir).is_ok() && write_atomic(&path, &text).is_ok() {
                paths.push(path);
            }
        }
        Registrations { paths }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl Drop for Registrations {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_forwards_register_and_go_with_the_rig() {
        let root = std::env::temp_dir().join(format!("iris-reg-test-{}", std::process::id()));
        let path = root.join(RIGS_DIR).join("4343.json");
        {
            let r = Registrations::new(&root, &[(4343, MCP_PORT), (4344, 80)]);
            assert_eq!(r.paths(), std::slice::from_ref(&path));
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.contains("\"url\":\"http://127.0.0.1:4343/mcp\""),
                "{text}"
            );
            assert!(text.contains("token-4343"), "{text}");
            assert!(
                text.contains(&format!("\"pid\":{}", std::process::id())),
                "{text}"
            );
            assert!(!root.join(RIGS_DIR).join("4344.json").exists());
        }
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
