//! File tools over the merged view (EROFS image + RAM overlay): `fs.stat`, `fs.readlink`,
//! `fs.read`, `fs.write`, `fs.list`, `fs.remove`, `fs.mkdir` (the mount at init is
//! `services/fs/mount.rs`).
//!
//! `fs.read` streams: its data is the first content block, produced piece by piece from the
//! file (through the LRU, `services/fs/read.rs`) while the response is written, so an 8 MiB
//! read never sits in memory;
//! `structuredContent` carries only the metadata (path, size, offset, length, encoding,
//! truncated). See `docs/tools.md`.

use super::reach::Files;
use super::{Ctx, args};
use crate::services::fs::Fs;
use crate::services::fs::check::check_path;
use crate::services::fs::overlay::{Node, WriteMode};
use crate::services::fs::path::Resolved;
use crate::services::fs::read::{FileRange, RangeReader, ReadError, Utf8Check};
use crate::services::fs::{Errno, FileType, FsError, Stat};
use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rpc::json::ObjectWriter;
use rpc::mcp::{
    Annotations, Content, ContentSource, ErrorCode, SourcePoll, Started, Step, StepIo, StreamKind,
    TaskSupport, TaskTool, ToolCall, ToolDef, ToolError, ToolOutput, ToolRun,
};

/// Default `max_output` of `fs.read`: 1 MiB of file data.
pub const READ_DEFAULT_MAX: u64 = 1 << 20;
/// Largest `max_output` of `fs.read`: 8 MiB of file data.
pub const READ_MAX: u64 = 8 << 20;
/// Longest symlink target `fs.readlink` returns and `fs.stat` shows.
pub const LINK_MAX: usize = 512;
/// Default page of `fs.list`.
pub const LIST_DEFAULT: u64 = 256;
/// At most 512: the output schema check of a page runs in one poll (~13K guest instructions
/// an entry), so 512 entries keep it near 7M, under the 10M a poll may run.
pub const LIST_MAX: u64 = 512;

pub const TOOLS: &[ToolDef<Ctx>] = &[
    ToolDef {
        name: "fs.stat",
        title: Some("Stat a path"),
        description: "Metadata of a path in the merged filesystem (EROFS image + RAM overlay). A \
                      final symlink is not followed: `/link` is reported as a symlink with its \
                      `target` (first 512 bytes; `target_truncated` when longer). `mode` is an \
                      octal string (`100644`), `origin` is erofs or overlay.",
        input_schema: PATH_INPUT,
        output_schema: Some(STAT_OUTPUT),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: PATH_ERRORS,
        start: stat,
    },
    ToolDef {
        name: "fs.readlink",
        title: Some("Read a symlink"),
        description: "The target of a symlink (not followed). Fails when the path is not a \
                      symlink, and when the target is over 512 bytes (fs.stat shows its start).",
        input_schema: PATH_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"path":{"type":"string"},
            "target":{"type":"string"}},"required":["path","target"]}"#,
        ),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: PATH_ERRORS,
        start: readlink,
    },
    READ,
    ToolDef {
        name: "fs.write",
        title: Some("Write a file"),
        description: "Writes a file in the RAM overlay (lost at reset), creating it if its \
                      directory exists. Replaces the contents unless `append` is true or \
                      `offset` is given (overwrite in place, zero-filling a gap). `content` is \
                      UTF-8 text, or base64 with `encoding: \"base64\"`. Overlay memory is capped \
                      (mcp.overlay_max); a write past the cap fails with E_NOSPC and changes \
                      nothing.",
        input_schema: r#"{"type":"object","properties":{
          "path":{"type":"string","description":"File to write"},
          "content":{"type":"string","description":"The data, as text or base64"},
          "encoding":{"type":"string","enum":["utf-8","base64"],"default":"utf-8"},
          "append":{"type":"boolean","default":false,"description":"Add at the end"},
          "offset":{"type":"integer","minimum":0,
            "description":"Overwrite from this byte, keeping the rest"}},
          "required":["path","content"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"path":{"type":"string"},
            "size":{"type":"integer"},"written":{"type":"integer"},"created":{"type":"boolean"}},
            "required":["path","size","written","created"]}"#,
        ),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: WRITE_ERRORS,
        start: write,
    },
    ToolDef {
        name: "fs.list",
        title: Some("List a directory"),
        description: "Lists a directory of the merged view (symlinks followed), sorted by name, \
                      without . and ..: name, type, size, mode, origin of each entry. Pages of \
                      `limit` entries (default 256, at most 512) from `offset`; `next_offset` \
                      is there while more entries follow.",
        input_schema: r#"{"type":"object","properties":{
          "path":{"type":"string","description":"Directory to list"},
          "offset":{"type":"integer","minimum":0,"default":0},
          "limit":{"type":"integer","minimum":1,"maximum":512,"default":256}},
          "required":["path"],"additionalProperties":false}"#,
        output_schema: Some(LIST_OUTPUT),
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: PATH_ERRORS,
        start: list,
    },
    ToolDef {
        name: "fs.remove",
        title: Some("Remove a path"),
        description: "Removes a file, symlink or directory (a final symlink itself, not its \
                      target). Overlay entries are dropped; image entries are hidden by a \
                      whiteout (the image is read-only). A non-empty directory needs \
                      `recursive: true`.",
        input_schema: r#"{"type":"object","properties":{
          "path":{"type":"string","description":"Path to remove"},
          "recursive":{"type":"boolean","default":false,
            "description":"Remove a directory with everything below it"}},
          "required":["path"],"additionalProperties":false}"#,
        output_schema: Some(
            r#"{"type":"object","properties":{"path":{"type":"string"},
            "type":{"type":"string"},"origin":{"type":"string","enum":["erofs","overlay"]},
            "whiteout":{"type":"boolean"}},"required":["path","type","origin","whiteout"]}"#,
        ),
        annotations: Annotations::DESTRUCTIVE,
        requires: &[],
        errors: REMOVE_ERRORS,
        start: remove,
    },
    ToolDef {
        name: "fs.mkdir",
        title: Some("Make a directory"),
        description: "Creates a directory in the RAM overlay (lost at reset). Its parent must \
                      exist; anything already at the path is E_EXIST.",
        input_schema: PATH_INPUT,
        output_schema: Some(
            r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#,
        ),
        annotations: Annotations::WRITE,
        requires: &[],
        errors: MKDIR_ERRORS,
        start: mkdir,
    },
];

/// `fs.read` may run as a task (when it does not answer at once).
pub const TASKS: &[TaskTool] = &[TaskTool {
    name: READ.name,
    support: TaskSupport::Optional,
}];

const READ: ToolDef<Ctx> = ToolDef {
    name: "fs.read",
    title: Some("Read a file"),
    description: "Reads a regular file (symlinks followed). The data is the first content \
                  block: UTF-8 text by default (non-UTF-8 data is refused: ask for \
                  `encoding: \"base64\"`), or with base64 an embedded resource whose \
                  `blob` holds the bytes. `offset`/`length` select a range; \
                  at most `max_output` bytes of file data are returned (default 1 MiB, at \
                  most 8 MiB) and `truncated` says the range was cut (`next_offset` \
                  continues). structuredContent holds the metadata only, never the data.",
    input_schema: r#"{"type":"object","properties":{
      "path":{"type":"string","description":"File to read"},
      "encoding":{"type":"string","enum":["utf-8","base64"],"default":"utf-8",
        "description":"utf-8 for text, base64 for binary data"},
      "offset":{"type":"integer","minimum":0,"default":0,
        "description":"First byte to read"},
      "length":{"type":"integer","minimum":0,
        "description":"Bytes to read from offset (default: to the end of the file)"},
      "max_output":{"type":"integer","minimum":1,"maximum":8388608,"default":1048576,
        "description":"Most bytes of file data to return (before base64)"}},
      "required":["path"],"additionalProperties":false}"#,
    output_schema: Some(READ_OUTPUT),
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: READ_ERRORS,
    start: read,
};

/// The error codes of a tool that looks up a path, followed by its own: what any path lookup can
/// fail with is no or a refused filesystem (the mount's error), a disk or image fault, a bad
/// path, a missing component, a symlink loop.
macro_rules! path_errors {
    ($($own:ident),*) => {
        &[
            ErrorCode::NoDev,
            ErrorCode::Io,
            ErrorCode::Corrupt,
            ErrorCode::NotSup,
            ErrorCode::NameTooLong,
            ErrorCode::NoEnt,
            ErrorCode::NotDir,
            ErrorCode::Loop
            $(, ErrorCode::$own)*
        ]
    };
}

const PATH_ERRORS: &[ErrorCode] = path_errors!();
const READ_ERRORS: &[ErrorCode] = path_errors!(IsDir, Encoding);
const WRITE_ERRORS: &[ErrorCode] = path_errors!(IsDir, NoSpc);
const REMOVE_ERRORS: &[ErrorCode] = path_errors!(NotEmpty);
const MKDIR_ERRORS: &[ErrorCode] = path_errors!(Exist, NoSpc);

const PATH_INPUT: &str = r#"{"type":"object","properties":{
  "path":{"type":"string","description":"Absolute path, e.g. /etc/motd"}},
  "required":["path"],"additionalProperties":false}"#;

const STAT_OUTPUT: &str = r#"{"type":"object","properties":{
  "path":{"type":"string"},
  "type":{"type":"string","enum":["file","dir","symlink","chardev","blockdev","fifo","socket"]},
  "mode":{"type":"string"},"size":{"type":"integer"},"uid":{"type":"integer"},
  "gid":{"type":"integer"},"mtime":{"type":"integer"},"nlink":{"type":"integer"},
  "ino":{"type":"integer"},"origin":{"type":"string","enum":["erofs","overlay"]},
  "target":{"type":"string"},"target_truncated":{"type":"boolean"},
  "rdev":{"type":"object","properties":{"major":{"type":"integer"},
    "minor":{"type":"integer"}},"required":["major","minor"]}},
  "required":["path","type","mode","size","uid","gid","mtime","origin"]}"#;

const READ_OUTPUT: &str = r#"{"type":"object","properties":{
  "path":{"type":"string"},"size":{"type":"integer"},"offset":{"type":"integer"},
  "length":{"type":"integer"},"encoding":{"type":"string","enum":["utf-8","base64"]},
  "truncated":{"type":"boolean"},"next_offset":{"type":"integer"},
  "origin":{"type":"string","enum":["erofs","overlay"]}},
  "required":["path","size","offset","length","encoding","truncated"]}"#;

const LIST_OUTPUT: &str = r#"{"type":"object","properties":{
  "path":{"type":"string"},"total":{"type":"integer"},"offset":{"type":"integer"},
  "next_offset":{"type":"integer"},
  "entries":{"type":"array","items":{"type":"object","properties":{
    "name":{"type":"string"},"type":{"type":"string"},"size":{"type":"integer"},
    "mode":{"type":"string"},"origin":{"type":"string"}},
    "required":["name","type","size","mode","origin"]}}},
  "required":["path","total","offset","entries"]}"#;

/// A filesystem error as a tool error, code for code.
pub fn fs_error(e: FsError) -> ToolError {
    let code = match e.code {
        Errno::NoEnt => ErrorCode::NoEnt,
        Errno::NotDir => ErrorCode::NotDir,
        Errno::IsDir => ErrorCode::IsDir,
        Errno::Exist => ErrorCode::Exist,
        Errno::NotEmpty => ErrorCode::NotEmpty,
        Errno::NoSpc => ErrorCode::NoSpc,
        Errno::Loop => ErrorCode::Loop,
        Errno::NameTooLong => ErrorCode::NameTooLong,
        Errno::Inval => ErrorCode::Inval,
        Errno::NotSup => ErrorCode::NotSup,
        Errno::Io => ErrorCode::Io,
        Errno::NoDev => ErrorCode::NoDev,
        Errno::Corrupt => ErrorCode::Corrupt,
    };
    ToolError::new(code, e.message)
}

/// The mounted filesystem, or why there is none.
fn mounted(ctx: &mut impl Files) -> Result<&mut Fs, ToolError> {
    ctx.fs().map_err(|why| match why {
        Some(e) => fs_error(e.clone()),
        None => ToolError::new(ErrorCode::NoDev, "no filesystem is mounted"),
    })
}

/// The `path` argument, checked.
fn path_arg<'a>(call: &ToolCall<'a>) -> Result<Cow<'a, str>, ToolError> {
    let p = args::string(call, "path")?;
    check_path(&p).map_err(fs_error)?;
    Ok(p)
}

/// Writes `st`'s members from `path` to `rdev` (a device's numbers) into `w`: `fs.stat`'s
/// result but for its trailing `size`, `target*`, `type` and `uid`.
fn stat_json(w: &mut ObjectWriter, path: &str, st: &Stat) {
    w.key("gid").u64(st.gid.into()).key("ino").u64(st.ino);
    w.key("mode").ascii(st.mode_octal().as_bytes());
    w.key("mtime")
        .u64(st.mtime)
        .key("nlink")
        .u64(st.nlink.into());
    w.key("origin")
        .str(st.origin.as_str())
        .key("path")
        .str(path);
    if matches!(st.file_type, FileType::CharDevice | FileType::BlockDevice) {
        // Linux's new_encode_dev, which mkfs.erofs stores.
        let major = (st.rdev >> 8) & 0xfff;
        let minor = (st.rdev & 0xff) | ((st.rdev >> 12) & 0xfff00);
        w.key("rdev").begin_object();
        w.key("major")
            .u64(major.into())
            .key("minor")
            .u64(minor.into());
        w.end_object();
    }
}

/// Up to [`LINK_MAX`] bytes of the symlink target at a resolved node, and whether it was cut.
fn link_target(fs: &mut Fs, r: &Resolved<Node>) -> Result<(String, bool), ToolError> {
    let Node::Lower(inode) = &r.node else {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("not a symlink: {}", r.path),
        ));
    };
    let Some(lower) = fs.lower_mut() else {
        return Err(ToolError::new(
            ErrorCode::Io,
            "no filesystem image is mounted",
        ));
    };
    let want = usize::try_from(inode.size)
        .unwrap_or(usize::MAX)
        .min(LINK_MAX);
    let mut buf = alloc::vec![0u8; want];
    let n = lower.read_at(inode, 0, &mut buf).map_err(fs_error)?;
    buf.truncate(n);
    let cut = inode.size > LINK_MAX as u64;
    if cut && let Err(e) = core::str::from_utf8(&buf) {
        // Do not end the shown start in half a character.
        if e.error_len().is_none() {
            buf.truncate(e.valid_up_to());
        }
    }
    Ok((String::from_utf8_lossy(&buf).into_owned(), cut))
}

fn stat<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let fs = mounted(ctx)?;
    let r = fs.resolve(&path, false).map_err(fs_error)?;
    let st = fs.node_stat(&r);
    let mut w = ObjectWriter::new(200 + r.path.len());
    stat_json(&mut w, &r.path, &st);
    w.key("size").u64(st.size);
    if st.file_type == FileType::Symlink {
        let (target, cut) = link_target(fs, &r)?;
        w.key("target")
            .str(&target)
            .key("target_truncated")
            .bool(cut);
    }
    w.key("type")
        .str(st.file_type.as_str())
        .key("uid")
        .u64(st.uid.into());
    Ok(Started::structured(w.finish()))
}

fn readlink<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let fs = mounted(ctx)?;
    let r = fs.resolve(&path, false).map_err(fs_error)?;
    let st = fs.node_stat(&r);
    if st.file_type != FileType::Symlink {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("not a symlink: {} is a {}", r.path, st.file_type.as_str()),
        ));
    }
    if st.size > LINK_MAX as u64 {
        return Err(ToolError::new(
            ErrorCode::NameTooLong,
            format!(
                "the target of {} is {} bytes, over fs.readlink's limit of {LINK_MAX}; \
                 fs.stat shows its first {LINK_MAX} bytes",
                r.path, st.size
            ),
        ));
    }
    let (target, _) = link_target(fs, &r)?;
    let mut w = ObjectWriter::new(24 + r.path.len() + target.len());
    w.key("path").str(&r.path).key("target").str(&target);
    Ok(Started::structured(w.finish()))
}

/// How `fs.read` and `fs.write` carry data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Base64,
}

impl Encoding {
    fn from_call(call: &ToolCall<'_>) -> Result<Self, ToolError> {
        match args::opt_str(call, "encoding")?.as_deref() {
            None | Some("utf-8") => Ok(Encoding::Utf8),
            Some("base64") => Ok(Encoding::Base64),
            Some(other) => Err(ToolError::new(
                ErrorCode::Inval,
                format!("unknown encoding {other:?}: use utf-8 or base64"),
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Base64 => "base64",
        }
    }
}

fn read<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let encoding = Encoding::from_call(call)?;
    let offset = args::opt_u64(call, "offset")?.unwrap_or(0);
    let length = args::opt_u64(call, "length")?;
    let max_output = args::opt_u64(call, "max_output")?.unwrap_or(READ_DEFAULT_MAX);
    if !(1..=READ_MAX).contains(&max_output) {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!("max_output must be 1..={READ_MAX}"),
        ));
    }
    let fs = mounted(ctx)?;
    let file = fs.open(&path).map_err(fs_error)?;
    let size = file.size();
    if offset > size {
        return Err(ToolError::new(
            ErrorCode::Inval,
            format!(
                "offset {offset} is past the end of {} ({size} bytes)",
                file.path()
            ),
        ));
    }
    let wanted = length.map_or(size - offset, |l| l.min(size - offset));
    let n = wanted.min(max_output);
    let mut plan = ReadPlan {
        range: FileRange {
            file,
            offset,
            end: offset + n,
        },
        encoding,
        truncated: n < wanted,
    };
    if encoding == Encoding::Base64 {
        return Ok(Started::Done(plan.output()));
    }
    // UTF-8 is checked before the first byte goes out, so a binary file gets a clean error
    // instead of half a text block; a range cut by max_output ends on a whole character.
    if plan.truncated {
        plan.range.end_on_char(fs).map_err(fs_error)?;
    }
    Ok(Started::Run(Box::new(CheckThenStream {
        check: Utf8Check::new(&plan.range),
        plan: Some(plan),
    })))
}

/// A checked range of an open file, ready to stream.
struct ReadPlan {
    range: FileRange,
    encoding: Encoding,
    truncated: bool,
}

impl ReadPlan {
    fn output<C: Files>(self) -> ToolOutput<C> {
        let FileRange { file, offset, end } = &self.range;
        let mut w = ObjectWriter::new(160 + file.path().len());
        w.key("encoding").str(self.encoding.as_str());
        w.key("length").u64(end - offset);
        if self.truncated {
            w.key("next_offset").u64(*end);
        }
        w.key("offset").u64(*offset);
        w.key("origin").str(file.origin().as_str());
        w.key("path").str(file.path());
        w.key("size").u64(file.size());
        w.key("truncated").bool(self.truncated);
        let structured = w.finish();
        // Text goes out as a text block; binary as an embedded blob, which the server
        // base64-encodes itself (no JSON escaping pass over the base64: half the cost).
        let kind = match self.encoding {
            Encoding::Utf8 => StreamKind::Text,
            Encoding::Base64 => StreamKind::ResourceBlob {
                uri: file_uri(file.path()),
                mime_type: String::from("application/octet-stream"),
            },
        };
        let source = FileSource::new(self.range);
        ToolOutput {
            content: alloc::vec![Content::stream(kind, Box::new(source))],
            structured: Some(structured),
            is_error: false,
        }
    }
}

/// `file://` + the path, percent-encoded outside the URI's unreserved characters and `/`.
fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// A UTF-8 read: its range checked a piece a poll (`services::fs::read`), then streamed.
struct CheckThenStream {
    plan: Option<ReadPlan>,
    check: Utf8Check,
}

impl<C: Files> ToolRun<C> for CheckThenStream {
    fn step(&mut self, ctx: &mut C, _io: &mut StepIo<'_>) -> Step<C> {
        let Some(plan) = &self.plan else {
            return Step::Failed(ToolError::new(
                ErrorCode::Internal,
                "read stepped after it ended",
            ));
        };
        let fs = match mounted(ctx) {
            Ok(fs) => fs,
            Err(e) => return Step::Failed(e),
        };
        match self.check.step(fs, &plan.range) {
            Ok(false) => Step::Pending,
            Ok(true) => match self.plan.take() {
                Some(p) => Step::Done(p.output()),
                None => Step::Failed(ToolError::new(ErrorCode::Internal, "read plan missing")),
            },
            Err(e) => Step::Failed(read_error(plan.range.file.path(), e)),
        }
    }
}

/// A range that could not be read, as the tool says it.
fn read_error(path: &str, e: ReadError) -> ToolError {
    match e {
        ReadError::Fs(e) => fs_error(e),
        ReadError::Shrank => ToolError::new(
            ErrorCode::Io,
            format!("{path} became shorter while it was being read"),
        ),
        ReadError::NotUtf8 { at } => ToolError::new(
            ErrorCode::Encoding,
            format!(
                "{path} is not UTF-8 text (invalid byte sequence at byte {at}); read it with \
                 encoding \"base64\""
            ),
        ),
    }
}

/// Streams a file range as raw bytes in pieces of at most the size the server asks for (4 KiB,
/// block-aligned when the range starts aligned, so bulk data goes around the LRU). The server
/// JSON-escapes them (text) or base64-encodes them (blob) on the way out.
struct FileSource {
    range: FileRange,
    reader: RangeReader,
}

impl FileSource {
    fn new(range: FileRange) -> FileSource {
        FileSource {
            reader: RangeReader::new(&range),
            range,
        }
    }
}

impl<C: Files> ContentSource<C> for FileSource {
    fn read(&mut self, ctx: &mut C, buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        let fs = mounted(ctx)?;
        match self.reader.read(fs, &self.range, buf) {
            Ok((n, true)) => Ok((n, SourcePoll::End)),
            Ok((n, false)) => Ok((n, SourcePoll::Data)),
            Err(e) => Err(read_error(self.range.file.path(), e)),
        }
    }
}

fn write<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let content = args::string(call, "content")?;
    let append = args::bool_or(call, "append", false)?;
    let offset = args::opt_u64(call, "offset")?;
    let mode = match (append, offset) {
        (true, Some(_)) => {
            return Err(ToolError::new(
                ErrorCode::Inval,
                "give either append or offset, not both",
            ));
        }
        (true, None) => WriteMode::Append,
        (false, Some(o)) => WriteMode::At(o),
        (false, None) => WriteMode::Truncate,
    };
    let decoded;
    let data: &[u8] = match Encoding::from_call(call)? {
        Encoding::Utf8 => content.as_bytes(),
        Encoding::Base64 => {
            decoded = STANDARD.decode(content.as_bytes()).map_err(|e| {
                ToolError::new(
                    ErrorCode::Inval,
                    format!("content is not valid base64: {e}"),
                )
            })?;
            &decoded
        }
    };
    let fs = mounted(ctx)?;
    let w = fs.write(&path, data, mode).map_err(fs_error)?;
    let mut json = ObjectWriter::new(64 + w.path.len());
    json.key("created").bool(w.created).key("path").str(&w.path);
    json.key("size")
        .u64(w.size)
        .key("written")
        .u64(data.len() as u64);
    Ok(Started::structured(json.finish()))
}

/// Entries `fs.list` stats per step: each costs ~35K guest instructions (an inode read and
/// its JSON), so 48 keep a step near 2M where a 300-entry page took 11M in one poll.
const LIST_STEP: usize = 48;

fn list<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let offset = args::opt_u64(call, "offset")?.unwrap_or(0);
    let limit = args::opt_u64(call, "limit")?
        .unwrap_or(LIST_DEFAULT)
        .clamp(1, LIST_MAX) as usize;
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    let fs = mounted(ctx)?;
    // The first piece now (it checks the path and counts the directory), the rest a step per
    // poll.
    let l = fs
        .list(&path, offset, limit.min(LIST_STEP))
        .map_err(fs_error)?;
    // About 90 bytes and 11 entries of the record a listed entry.
    let n = limit.min(l.total.saturating_sub(offset));
    let mut json = ObjectWriter::new(64 + l.path.len() + n * 90);
    json.key("entries").begin_array();
    let mut run = ListRun {
        path: l.path,
        offset,
        limit,
        total: l.total,
        listed: 0,
        json: Some(json),
    };
    run.add(&l.entries);
    if run.complete() {
        return Ok(Started::Done(run.output()));
    }
    Ok(Started::Run(Box::new(run)))
}

/// A listing gathered [`LIST_STEP`] entries a step.
struct ListRun {
    /// The directory's canonical path.
    path: String,
    offset: usize,
    limit: usize,
    /// The directory's size when the listing began.
    total: usize,
    /// Entries written so far into `json`, an object whose `entries` array is still open.
    listed: usize,
    /// Taken when the listing is answered.
    json: Option<ObjectWriter>,
}

impl ListRun {
    fn add(&mut self, entries: &crate::services::fs::listing::ListEntries) {
        let Some(w) = &mut self.json else { return };
        for e in entries {
            w.begin_object();
            w.key("mode").ascii(e.stat.mode_octal().as_bytes());
            w.key("name")
                .str(e.name)
                .key("origin")
                .str(e.stat.origin.as_str());
            w.key("size").u64(e.stat.size);
            w.key("type").str(e.stat.file_type.as_str()).end_object();
        }
        self.listed += entries.len();
    }

    /// Where the next piece starts.
    fn next(&self) -> usize {
        self.offset.saturating_add(self.listed)
    }

    fn complete(&self) -> bool {
        self.listed >= self.limit || self.next() >= self.total
    }

    fn output<C>(&mut self) -> ToolOutput<C> {
        let next = self.next();
        let Some(mut w) = self.json.take() else {
            let e = ToolError::new(ErrorCode::Internal, "the listing was answered already");
            return ToolOutput::error(&e);
        };
        w.end_array();
        if next < self.total {
            w.key("next_offset").u64(next as u64);
        }
        w.key("offset").u64(self.offset as u64);
        w.key("path").str(&self.path);
        w.key("total").u64(self.total as u64);
        ToolOutput::structured(w.finish())
    }
}

impl<C: Files> ToolRun<C> for ListRun {
    fn step(&mut self, ctx: &mut C, _io: &mut StepIo<'_>) -> Step<C> {
        let fs = match mounted(ctx) {
            Ok(fs) => fs,
            Err(e) => return Step::Failed(e),
        };
        let want = (self.limit - self.listed).min(LIST_STEP);
        let l = match fs.list(&self.path, self.next(), want) {
            Ok(l) => l,
            Err(e) => return Step::Failed(fs_error(e)),
        };
        // Pieces of a directory that changed in between would not fit together.
        if l.total != self.total || l.entries.is_empty() {
            return Step::Failed(ToolError::new(
                ErrorCode::Busy,
                format!("{} changed while it was listed; list it again", self.path),
            ));
        }
        self.add(&l.entries);
        if self.complete() {
            Step::Done(self.output())
        } else {
            Step::Pending
        }
    }
}

fn remove<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let recursive = args::bool_or(call, "recursive", false)?;
    let fs = mounted(ctx)?;
    let r = fs.resolve(&path, false).map_err(fs_error)?;
    let st = fs.node_stat(&r);
    fs.remove(&path, recursive).map_err(fs_error)?;
    let mut w = ObjectWriter::new(64 + r.path.len());
    w.key("origin")
        .str(st.origin.as_str())
        .key("path")
        .str(&r.path);
    w.key("type").str(st.file_type.as_str());
    // Whether the image still has an entry the overlay now hides.
    w.key("whiteout")
        .bool(st.origin == crate::services::fs::Origin::Erofs);
    Ok(Started::structured(w.finish()))
}

fn mkdir<C: Files>(ctx: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let path = path_arg(call)?;
    let fs = mounted(ctx)?;
    let made = fs.mkdir(&path).map_err(fs_error)?;
    let mut w = ObjectWriter::new(12 + made.len());
    w.key("path").str(&made);
    Ok(Started::structured(w.finish()))
}

pub mod resource;
#[cfg(test)]
mod tests;
