//! One line per forwarded call (JSON: time, machine, tool, outcome, milliseconds, argument
//! bytes) in a log file that stays bounded: past `MAX_BYTES` it becomes `<file>.1`, the older
//! generations move one up and the oldest goes, so the log holds at most `GENERATIONS + 1`
//! files of that size. Arguments themselves are not logged: they can be large or hold
//! secrets. The machine and tool names are the agent's to choose, so they are clipped: a call
//! cannot make its line long enough to rotate the history away.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub const MAX_BYTES: u64 = 1 << 20;
/// Rotated files kept besides the current one (`<file>.1` is the newest of them).
pub const GENERATIONS: u32 = 4;
/// Most characters of an agent-chosen name recorded.
pub const NAME_MAX: usize = 64;

/// `s` cut to `NAME_MAX` characters, with `…` where it was cut.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(NAME_MAX).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `path` with `.n` appended.
fn generation(path: &Path, n: u32) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(format!(".{n}"));
    PathBuf::from(p)
}

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
            "t_ms": t, "machine": clip(machine), "tool": clip(tool), "outcome": outcome,
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
            for n in (1..GENERATIONS).rev() {
                let from = generation(&self.path, n);
                if from.exists() {
                    std::fs::rename(&from, generation(&self.path, n + 1))?;
                }
            }
            std::fs::rename(&self.path, generation(&self.path, 1))?;
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
        let mut files = vec![path.clone()];
        files.extend((1..=GENERATIONS).map(|n| generation(&path, n)));
        for f in &files {
            let len = std::fs::metadata(f).unwrap().len();
            assert!(len <= 1000, "{}: {len}", f.display());
        }
        assert!(!generation(&path, GENERATIONS + 1).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A call with huge names costs one short line: the earlier lines stay in the current file.
    #[test]
    fn agent_chosen_names_are_clipped_and_history_kept() {
        let dir = std::env::temp_dir().join(format!("irix7-gw-audit-clip-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("audit.log");
        let a = Audit::with_limit(&path, 4096);
        a.record("rig1", "fs.remove", "ok", 1, 20);
        let huge = "m".repeat(1 << 20);
        a.record(&huge, &huge, "unknown machine", 0, 2 << 20);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "nothing rotated away");
        assert_eq!(lines[0]["tool"], "fs.remove");
        let name = lines[1]["machine"].as_str().unwrap();
        assert_eq!(name.chars().count(), NAME_MAX + 1);
        assert!(name.ends_with('…'));
        assert_eq!(
            lines[1]["tool"].as_str().unwrap().chars().count(),
            NAME_MAX + 1
        );
        assert!(!generation(&path, 1).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Each rotation moves every generation one up; the oldest beyond the last goes.
    #[test]
    fn generations_shift_and_the_oldest_goes() {
        let dir = std::env::temp_dir().join(format!("irix7-gw-audit-gen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("audit.log");
        // One line per file: each record past the first rotates.
        let a = Audit::with_limit(&path, 120);
        for i in 0..GENERATIONS + 3 {
            a.record(&format!("m{i}"), "status", "ok", 0, 0);
        }
        let machine = |p: &Path| {
            let v: serde_json::Value =
                serde_json::from_str(std::fs::read_to_string(p).unwrap().trim()).unwrap();
            v["machine"].as_str().unwrap().to_string()
        };
        let last = GENERATIONS + 2;
        assert_eq!(machine(&path), format!("m{last}"));
        for n in 1..=GENERATIONS {
            assert_eq!(machine(&generation(&path, n)), format!("m{}", last - n));
        }
        assert!(!generation(&path, GENERATIONS + 1).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
