//! The module's generated token, picked up from the console and written where scripts find it.
//! A module booted without `mcp.token` prints `irix7-mcp: token generated: <hex>` on the
//! console (and nowhere else); the rig writes that token to `target/iris/token-<host port>`
//! for each forwarded host port, so `curl`, the tests and the README's walkthrough can read
//! it. One file per port keeps parallel rigs apart. A reset generates a new token and the file
//! follows; the files go when the rig does.

use std::path::{Path, PathBuf};

use crate::console::ConsoleLog;

/// What precedes the token on its console line.
pub const MARKER: &str = "irix7-mcp: token generated: ";
/// Where the token files live, under the repository root.
pub const TOKEN_DIR: &str = "target/iris";

/// The token file of a rig forwarding `host_port` (under the repository `root`).
pub fn token_path(root: &Path, host_port: u16) -> PathBuf {
    root.join(TOKEN_DIR).join(format!("token-{host_port}"))
}

/// The last token the console shows, if the module generated one.
pub fn generated_token(console: &str) -> Option<String> {
    let at = console.rfind(MARKER)? + MARKER.len();
    let token: String = console[at..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    (!token.is_empty()).then_some(token)
}

/// Follows the console and keeps the token files current.
pub struct TokenFiles {
    paths: Vec<PathBuf>,
    /// Console bytes already looked at.
    seen: u64,
    /// The start of a line not yet complete.
    partial: String,
    current: Option<String>,
}

impl TokenFiles {
    /// Files for these forwarded host ports; stale ones from an earlier rig on the same ports
    /// are removed now.
    pub fn new(root: &Path, host_ports: &[u16]) -> TokenFiles {
        let paths: Vec<PathBuf> = host_ports.iter().map(|&p| token_path(root, p)).collect();
        for p in &paths {
            let _ = std::fs::remove_file(p);
        }
        TokenFiles {
            paths,
            seen: 0,
            partial: String::new(),
            current: None,
        }
    }

    /// The token written last.
    pub fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// Looks at what the console printed since the last call; writes the files when a new
    /// token appears. Cheap when nothing was printed.
    pub fn scan(&mut self, console: &ConsoleLog) -> Option<String> {
        if self.paths.is_empty() || console.total() == self.seen {
            return None;
        }
        let (bytes, total) = console.since(self.seen, 1 << 16);
        self.seen = total;
        self.partial.push_str(&String::from_utf8_lossy(&bytes));
        let mut found = None;
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            if let Some(t) = generated_token(&line) {
                found = Some(t);
            }
        }
        if self.partial.len() > 4096 {
            self.partial.clear();
        }
        let token = found?;
        if self.current.as_deref() == Some(token.as_str()) {
            return None;
        }
        for p in &self.paths {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = write_private(p, &token);
        }
        self.current = Some(token.clone());
        Some(token)
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl Drop for TokenFiles {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes the token readable by its owner only.
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(token.as_bytes())?;
    f.write_all(b"\n")?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_generated_token_is_found() {
        let text = "irix7-mcp: token generated: 00ff (console only)\n\
                    irix7-mcp: token generated: abc123 (console only)\n";
        assert_eq!(generated_token(text).as_deref(), Some("abc123"));
        assert_eq!(
            generated_token("irix7-mcp: token required (mcp.token)\n"),
            None
        );
    }

    #[test]
    fn files_follow_the_console_and_go_with_the_rig() {
        let root = std::env::temp_dir().join(format!("iris-token-test-{}", std::process::id()));
        let console = ConsoleLog::new(false);
        let path = token_path(&root, 4242);
        {
            let mut files = TokenFiles::new(&root, &[4242]);
            console.transmit(b"irix7-mcp: token gen");
            assert_eq!(files.scan(&console), None);
            console.transmit(b"erated: 0123abcd (console only)\n");
            assert_eq!(files.scan(&console).as_deref(), Some("0123abcd"));
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "0123abcd\n");
            // A reset prints a new one.
            console.transmit(b"irix7-mcp: token generated: 4567 (console only)\n");
            assert_eq!(files.scan(&console).as_deref(), Some("4567"));
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "4567\n");
            assert_eq!(files.current(), Some("4567"));
        }
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&root);
    }
}
