//! What a stat or a directory listing says about one entry, in both layers of the merged view.

use alloc::string::String;

/// An `st_mode` in octal, `100644` style ([`Stat::mode_octal`]): at least six digits, as
/// `{:06o}` writes them. The digits are made by hand: a listing writes one per entry, and
/// `core::fmt`'s padded octal took about 200 instructions more each (`docs/bench.md`).
pub struct ModeOctal {
    /// The digits, right-aligned; those before `start` are not part of it.
    digits: [u8; 11],
    start: usize,
}

impl ModeOctal {
    fn new(mode: u32) -> Self {
        let mut digits = [b'0'; 11];
        // The six digits every mode shows, by their places; then any above them (an st_mode
        // has none).
        let [.., d5, d4, d3, d2, d1, d0] = &mut digits;
        for (k, d) in [d0, d1, d2, d3, d4, d5].into_iter().enumerate() {
            *d = b'0' + ((mode >> (3 * k)) & 7) as u8;
        }
        let (mut start, mut rest) = (digits.len() - 6, mode >> 18);
        while rest != 0 && start > 0 {
            start -= 1;
            if let Some(d) = digits.get_mut(start) {
                *d = b'0' + (rest & 7) as u8;
            }
            rest >>= 3;
        }
        ModeOctal { digits, start }
    }

    /// The digits, for a writer that takes ASCII as bytes (no UTF-8 check).
    pub fn as_bytes(&self) -> &[u8] {
        self.digits.get(self.start..).unwrap_or(&[])
    }
}

/// The type of a filesystem entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A character device node.
    CharDevice,
    /// A block device node.
    BlockDevice,
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A symbolic link.
    Symlink,
}

/// The `S_IFMT` mask of a mode.
pub const S_IFMT: u32 = 0o170_000;

impl FileType {
    /// The type encoded in the `S_IFMT` bits of `mode`, or `None` for an invalid type.
    pub const fn from_mode(mode: u32) -> Option<FileType> {
        Some(match mode & S_IFMT {
            0o100_000 => FileType::Regular,
            0o040_000 => FileType::Directory,
            0o020_000 => FileType::CharDevice,
            0o060_000 => FileType::BlockDevice,
            0o010_000 => FileType::Fifo,
            0o140_000 => FileType::Socket,
            0o120_000 => FileType::Symlink,
            _ => return None,
        })
    }

    /// A lower-case name for tools: `file`, `dir`, `chardev`, `blockdev`, `fifo`, `socket`,
    /// `symlink`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FileType::Regular => "file",
            FileType::Directory => "dir",
            FileType::CharDevice => "chardev",
            FileType::BlockDevice => "blockdev",
            FileType::Fifo => "fifo",
            FileType::Socket => "socket",
            FileType::Symlink => "symlink",
        }
    }
}

/// Which layer of the merged view an entry comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The read-only EROFS image.
    Erofs,
    /// The RAM overlay.
    Overlay,
}

impl Origin {
    /// `erofs` or `overlay`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Origin::Erofs => "erofs",
            Origin::Overlay => "overlay",
        }
    }
}

/// Metadata of one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The entry's type (also encoded in `mode`).
    pub file_type: FileType,
    /// Full `st_mode`: type bits and permission bits.
    pub mode: u32,
    /// Size in bytes: file length, symlink target length; for overlay directories 0.
    pub size: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count (1 for overlay entries).
    pub nlink: u32,
    /// Modification time, seconds since the epoch (0 for overlay entries: the layer has no
    /// clock).
    pub mtime: u64,
    /// Inode number: the EROFS nid, 0 for overlay entries.
    pub ino: u64,
    /// Device number of a device node (EROFS encoding), else 0.
    pub rdev: u32,
    /// The layer the entry comes from.
    pub origin: Origin,
}

impl Stat {
    /// The whole `st_mode` in octal, `100644` style (what the fs tools show), written where
    /// it goes: the tools write it into their results without a `String` of its own.
    pub fn mode_octal(&self) -> ModeOctal {
        ModeOctal::new(self.mode)
    }

    /// The type and permissions as `ls -l` shows them, `drwxr-xr-x` style (the shell's `ls`).
    pub fn mode_symbolic(&self) -> String {
        let kind = match self.file_type {
            FileType::Regular => '-',
            FileType::Directory => 'd',
            FileType::CharDevice => 'c',
            FileType::BlockDevice => 'b',
            FileType::Fifo => 'p',
            FileType::Socket => 's',
            FileType::Symlink => 'l',
        };
        let mut s = String::with_capacity(10);
        s.push(kind);
        for shift in [6u32, 3, 0] {
            let bits = (self.mode >> shift) & 7;
            s.push(if bits & 4 != 0 { 'r' } else { '-' });
            s.push(if bits & 2 != 0 { 'w' } else { '-' });
            s.push(if bits & 1 != 0 { 'x' } else { '-' });
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn st(file_type: FileType, mode: u32) -> Stat {
        Stat {
            file_type,
            mode,
            size: 0,
            uid: 0,
            gid: 0,
            nlink: 1,
            mtime: 0,
            ino: 0,
            rdev: 0,
            origin: Origin::Erofs,
        }
    }

    #[test]
    fn modes_read_as_octal_and_as_ls_shows_them() {
        let dir = st(FileType::Directory, 0o040_755);
        assert_eq!(dir.mode_octal().as_bytes(), b"040755");
        for mode in [0, 1, 0o7, 0o644, 0o100644, 0o177777, 0o1234567, u32::MAX] {
            assert_eq!(
                ModeOctal::new(mode).as_bytes(),
                format!("{mode:06o}").as_bytes()
            );
        }
        assert_eq!(dir.mode_symbolic(), "drwxr-xr-x");
        assert_eq!(
            st(FileType::Regular, 0o100_640).mode_symbolic(),
            "-rw-r-----"
        );
        assert_eq!(
            st(FileType::Symlink, 0o120_777).mode_symbolic(),
            "lrwxrwxrwx"
        );
    }
}
