//! One line per forwarded call (JSON: time, machine, tool, outcome, milliseconds, argument
//! bytes) in a log file that stays bounded: past `MAX_BYTES` it becomes `<file>.1` (replacing
//! the previous one) and a new file starts, so the log never holds more than twice that.
//! Arguments themselves are not logged: they can be large or hold secrets.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub const MAX_BYTES: u64 = 1 << 20;

pub struct Audit {
    path: PathBuf,
    max: u64,
    file: Mutex<Option<(File, u64)>>,
}

impl Audit {
    pub fn new(path: &Path) -> Audit {
        Audit::with_limit(path, MAX_BYTES)
    }

    pub fn with_limit(path: &Path, max: u64) -> Audit {
        Audit {
            path: path.to_path_buf(),
            max,
            file: Mutex::new(None),
        }
    }

    /// Appends one line; a log that cannot be written costs a message on stderr, never a call.
    pub fn record(&self, machine: &str, tool: &str, outcome: &str, ms: u128, arg_bytes: usize) {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let mut line = serde_json::json!({
            "t_ms": t, "machine": machine, "tool": tool, "outcome": outcome,
            "ms": ms, "arg_bytes": arg_bytes,
        })
        .to_string();
        line.push('\n');
        if let Err(e) = self.append(line.as_bytes()) {
            eprintln!("irix7-gateway: audit log {}: {e}", self.path.display());
        }
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if guard
            .as_ref()
            .is_some_and(|(_, len)| *len + line.len() as u64 > self.max)
        {
            *guard = None;
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            std::fs::rename(&self.path, old)?;
        }
        if guard.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let len = f.metadata()?.len();
            *guard = Some((f, len));
        }
        let (f, len) = guard.as_mut().expect("opened above");
        f.write_all(line)?;
        *len += line.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_call_and_bounded() {
        let dir = std::env::temp_dir().join(format!("irix7-gw-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("audit.log");
        let a = Audit::with_limit(&path, 1000);
        a.record("rig1", "status", "ok", 3, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["machine"], "rig1");
        assert_eq!(v["tool"], "status");
        assert_eq!(v["outcome"], "ok");
        for _ in 0..100 {
            a.record("rig1", "echo", "ok", 1, 10);
        }
        let cur = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(dir.join("audit.log.1")).unwrap().len();
        assert!(cur <= 1000 && old <= 1000, "{cur} {old}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
