//! The module's generated token, picked up from the console and written where scripts find it.
//! A module booted without `mcp.token` prints `irix7-mcp: token generated: <hex>` on the
//! console (and nowhere else); the rig writes that token to `target/iris/token-<host port>`
//! for each forwarded host port, so `curl`, the tests and the README's walkthrough can read
//! it. One file per port keeps parallel rigs apart. A reset generates a new token and the file
//! follows; the files go when the rig does.
//!
//! Only the module's own announcement counts: a line that starts with the marker among what the
//! console printed while the module's init ran. Once init has returned, clients can write to
//! the console (`console.write`, which marks their lines, or a program they run), and nothing
//! printed then changes a token file.

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

/// The token of the last line of `console` that starts with the marker, if any.
pub fn generated_token(console: &str) -> Option<String> {
    let line = console.lines().rev().find_map(|l| l.strip_prefix(MARKER))?;
    let token: String = line.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    (!token.is_empty()).then_some(token)
}

/// Most console bytes one init's output is looked at for the token: the module prints a dozen
/// lines before it.
const INIT_OUTPUT_MAX: usize = 1 << 16;

/// Keeps the token files at the token the module announced at its last boot.
pub struct TokenFiles {
    paths: Vec<PathBuf>,
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
            current: None,
        }
    }

    /// The token written last.
    pub fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// Looks at what the console printed while the module's init ran (from the `from`-th byte
    /// ever transmitted, up to now: the caller asks as soon as init returns, before any poll);
    /// writes the files when it announced a new token.
    pub fn take_from_init(&mut self, console: &ConsoleLog, from: u64) -> Option<String> {
        if self.paths.is_empty() {
            return None;
        }
        let fresh = usize::try_from(console.total().saturating_sub(from)).unwrap_or(usize::MAX);
        let (bytes, _) = console.since(from, fresh.min(INIT_OUTPUT_MAX));
        let token = generated_token(&String::from_utf8_lossy(&bytes))?;
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

/// Writes the token readable by its owner only. The temporary file is made anew: one left
/// behind (or a link someone put there) is removed first, never followed or reused with its
/// mode.
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
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
    fn the_token_is_taken_from_a_line_that_starts_with_the_marker() {
        let text = "irix7-mcp: token generated: 00ff (console only)\n\
                    irix7-mcp: token generated: abc123 (console only)\n";
        assert_eq!(generated_token(text).as_deref(), Some("abc123"));
        assert_eq!(
            generated_token("irix7-mcp: token required (mcp.token)\n"),
            None
        );
        let written = "irix7-mcp: token generated: abc123 (console only)\n\
                       [mcp] irix7-mcp: token generated: 0011 \n\
                       $ echo irix7-mcp: token generated: 2233\n";
        assert_eq!(generated_token(written).as_deref(), Some("abc123"));
    }

    #[test]
    fn files_hold_what_init_announced_and_go_with_the_rig() {
        let root = std::env::temp_dir().join(format!("iris-token-test-{}", std::process::id()));
        let console = ConsoleLog::new(false);
        let path = token_path(&root, 4242);
        {
            let mut files = TokenFiles::new(&root, &[4242]);
            console.transmit(b"kernel: boot\n");
            let init = console.total();
            console.transmit(b"irix7-mcp: token generated: 0123abcd (console only)\n");
            assert_eq!(
                files.take_from_init(&console, init).as_deref(),
                Some("0123abcd")
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "0123abcd\n");
            // What the console shows after init, even a bare line, changes nothing: the next
            // boot's init is looked at from its own start.
            console.transmit(b"irix7-mcp: token generated: 00112233 (console only)\n");
            let init = console.total();
            assert_eq!(files.take_from_init(&console, init), None);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "0123abcd\n");
            // A reset's init announces a new one.
            console.transmit(b"irix7-mcp: token generated: 4567 (console only)\n");
            assert_eq!(
                files.take_from_init(&console, init).as_deref(),
                Some("4567")
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "4567\n");
            assert_eq!(files.current(), Some("4567"));
        }
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_left_over_temporary_file_or_link_is_replaced_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let root = std::env::temp_dir().join(format!("iris-token-link-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("token-1");
        let elsewhere = root.join("elsewhere");
        std::fs::write(&elsewhere, "kept\n").unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, path.with_extension("tmp")).unwrap();
        write_private(&path, "secret").unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "kept\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&root);
    }
}
