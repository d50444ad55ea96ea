//! `irix7://fs/{+path}`: a file's contents as a resource, streamed like `fs.read` and held to
//! its default cap ([`READ_DEFAULT_MAX`]): a bigger file is refused (`E_TOO_LARGE`, read it in
//! ranges with `fs.read`) rather than cut without a word.
//!
//! The MIME type is decided before the first byte goes out, from the file's first 4 KiB:
//! `text/plain` when they are UTF-8 (a later invalid byte becomes U+FFFD), else
//! `application/octet-stream` as a base64 blob.

use super::{FileSource, READ_DEFAULT_MAX, fs_error, mounted};
use crate::services::fs::check::check_path;
use crate::services::fs::read::FileRange;
use crate::tools::Ctx;
use crate::tools::reach::Files;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use rpc::mcp::{
    Content, ErrorCode, ResourceContents, StreamKind, TemplateDef, TemplateStreamDef, ToolError,
};

pub const PREFIX: &str = "irix7://fs/";

pub const TEMPLATES: &[TemplateDef<Ctx>] = &[TemplateDef {
    uri_template: "irix7://fs/{+path}",
    name: "file",
    title: Some("A file"),
    description: "A file's contents (path from the root, e.g. irix7://fs/etc/motd; \
                  percent-encode what is not a URI character): text when its first 4 KiB \
                  are UTF-8, else a base64 blob. At most 1 MiB: read bigger files in ranges \
                  with fs.read.",
    mime_type: None,
    read: read_whole,
}];

pub const STREAMS: &[TemplateStreamDef<Ctx>] = &[TemplateStreamDef {
    uri_template: "irix7://fs/{+path}",
    open,
}];

/// Bytes looked at to choose text or blob.
const SNIFF: usize = 4096;

/// The path a URI names: what follows the prefix, percent-decoded, from the root.
fn path_of(uri: &str) -> Result<String, ToolError> {
    let rest = uri.strip_prefix(PREFIX).unwrap_or("");
    let bad = || ToolError::new(ErrorCode::Inval, format!("{uri}: bad percent-encoding"));
    let mut bytes = Vec::with_capacity(rest.len() + 1);
    bytes.push(b'/');
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b != b'%' {
            bytes.push(b);
            continue;
        }
        let hex = |c: Option<u8>| c.and_then(|c| char::from(c).to_digit(16));
        let (Some(hi), Some(lo)) = (hex(it.next()), hex(it.next())) else {
            return Err(bad());
        };
        bytes.push((hi * 16 + lo) as u8);
    }
    let path = String::from_utf8(bytes).map_err(|_| bad())?;
    check_path(&path).map_err(fs_error)?;
    Ok(path)
}

/// A missing file is the protocol's "resource not found".
fn not_found_if_missing(e: ToolError) -> ToolError {
    match e.code {
        ErrorCode::NoEnt | ErrorCode::NotDir => ToolError::new(ErrorCode::NotFound, e.message),
        _ => e,
    }
}

fn open<C: Files>(ctx: &mut C, uri: &str) -> Result<Content<C>, ToolError> {
    let path = path_of(uri)?;
    let fs = mounted(ctx)?;
    let file = fs
        .open(&path)
        .map_err(fs_error)
        .map_err(not_found_if_missing)?;
    let size = file.size();
    if size > READ_DEFAULT_MAX {
        return Err(ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "{} is {size} bytes; a resource read returns at most {READ_DEFAULT_MAX}: \
                 read it in ranges with fs.read",
                file.path()
            ),
        ));
    }
    let mut head = [0u8; SNIFF];
    let n = fs.read_at(&file, 0, &mut head).map_err(fs_error)?;
    let head = head.get(..n).unwrap_or(&[]);
    let text = match core::str::from_utf8(head) {
        Ok(_) => true,
        // Cut inside a character at the end of the sample: still text.
        Err(e) => e.error_len().is_none(),
    };
    let (uri, mime_type) = (
        String::from(uri),
        String::from(if text {
            "text/plain"
        } else {
            "application/octet-stream"
        }),
    );
    let kind = if text {
        StreamKind::ResourceText { uri, mime_type }
    } else {
        StreamKind::ResourceBlob { uri, mime_type }
    };
    let source = FileSource::new(FileRange {
        file,
        offset: 0,
        end: size,
    });
    Ok(Content::stream(kind, Box::new(source)))
}

/// Never used: [`STREAMS`] reads every URI of the template.
fn read_whole<C>(
    _: &mut C,
    uri: &str,
    _: &[(&str, &str)],
) -> Result<Vec<ResourceContents>, ToolError> {
    Err(ToolError::new(
        ErrorCode::Internal,
        format!("{uri} is read as a stream"),
    ))
}

#[cfg(test)]
mod tests {
    use super::path_of;
    use crate::tools::testing::harness::{request, server_with_files as server};
    use serde_json::{Value, json};

    fn read(s: &mut rpc::mcp::McpServer<crate::tools::Ctx>, uri: &str) -> Value {
        request(s, "resources/read", json!({"uri": uri}))
    }

    #[test]
    fn files_read_as_text_or_blob_by_what_they_hold() {
        let mut s = server("full");
        let c = &read(&mut s, "irix7://fs/etc/motd")["result"]["contents"][0];
        assert_eq!(
            *c,
            json!({"uri": "irix7://fs/etc/motd", "mimeType": "text/plain", "text": "Welcome to IRIX 7\n"})
        );
        let c = &read(&mut s, "irix7://fs/etc/a%20b")["result"]["contents"][0];
        assert_eq!(c["text"], "caf\u{e9}");
        let c = &read(&mut s, "irix7://fs/bin")["result"]["contents"][0];
        assert_eq!(c["mimeType"], "application/octet-stream");
        assert_eq!(c["blob"], "f0VMRv8A");
    }

    #[test]
    fn missing_and_oversized_files_are_refused() {
        let mut s = server("full");
        let r = read(&mut s, "irix7://fs/etc/nope");
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["uri"], "irix7://fs/etc/nope");
        let r = read(&mut s, "irix7://fs/big");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("E_TOO_LARGE: /big is 1048577 bytes"),
            "{msg}"
        );
        let r = read(&mut s, "irix7://fs/etc");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("E_ISDIR"),
            "{r}"
        );
        let r = read(&mut s, "irix7://fs/a%0");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("E_INVAL"),
            "{r}"
        );
    }

    #[test]
    fn paths_are_decoded_and_checked() {
        assert_eq!(path_of("irix7://fs/etc/motd").unwrap(), "/etc/motd");
        assert_eq!(path_of("irix7://fs/a%20b/c%C3%A9").unwrap(), "/a b/c\u{e9}");
        assert!(path_of("irix7://fs/a%2").is_err());
        assert!(path_of("irix7://fs/a%zz").is_err());
        assert!(path_of("irix7://fs/%FF").is_err(), "not UTF-8");
        assert!(path_of("irix7://fs/a%00b").is_err(), "a NUL in a path");
    }
}
