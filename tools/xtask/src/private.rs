//! Files that may hold a secret — a rig's log (its console shows the generated token), MAME's
//! boot environment (`mcp.token`) and its console capture — are created readable and writable
//! by their owner only, whatever the umask, and a file left by an earlier run is cut to 0600
//! too.

use std::fs::{File, OpenOptions, Permissions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// `path` created (or emptied) with mode 0600.
pub fn create(path: &Path) -> Result<File, String> {
    let what = |e: std::io::Error| format!("{}: {e}", path.display());
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(what)?;
    f.set_permissions(Permissions::from_mode(0o600))
        .map_err(what)?;
    Ok(f)
}

/// `data` written to `path`, created with mode 0600.
pub fn write(path: &Path, data: &[u8]) -> Result<(), String> {
    use std::io::Write;
    create(path)?
        .write_all(data)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_the_owners_alone_even_when_they_existed() {
        let dir = std::env::temp_dir().join(format!("xtask-private-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        std::fs::write(&path, "old and longer").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        write(&path, b"new").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
