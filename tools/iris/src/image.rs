//! Fetching the module image named by the boot configuration and verifying its SHA-256, and
//! finding the repository root that relative paths are resolved against.

use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest image the kernel will fetch (the module area is smaller still).
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    UnsupportedUrl(String),
    Read { path: PathBuf, error: String },
    TooBig { path: PathBuf, size: u64 },
    DigestMismatch { expected: String, actual: String },
    Http { url: String, error: String },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::UnsupportedUrl(u) => {
                write!(
                    f,
                    "unsupported image URL `{u}` (use file:PATH, a path relative to the repository, http:// or https://)"
                )
            }
            ImageError::Read { path, error } => {
                write!(f, "cannot read image {}: {error}", path.display())
            }
            ImageError::TooBig { path, size } => {
                write!(
                    f,
                    "image {} is {size} bytes, over the {MAX_IMAGE_BYTES}-byte limit",
                    path.display()
                )
            }
            ImageError::DigestMismatch { expected, actual } => write!(
                f,
                "sha256 mismatch: refusing to load (expected {expected}, actual {actual})"
            ),
            ImageError::Http { url, error } => write!(f, "cannot fetch image {url}: {error}"),
        }
    }
}

impl std::error::Error for ImageError {}

/// The file a `file:` URL or plain path names, relative paths taken from `root`.
pub fn resolve_url(url: &str, root: &Path) -> Result<PathBuf, ImageError> {
    let path = if let Some(rest) = url.strip_prefix("file://") {
        if !rest.starts_with('/') {
            return Err(ImageError::UnsupportedUrl(url.into()));
        }
        PathBuf::from(rest)
    } else if let Some(rest) = url.strip_prefix("file:") {
        PathBuf::from(rest)
    } else if url.contains("://") {
        return Err(ImageError::UnsupportedUrl(url.into()));
    } else {
        PathBuf::from(url)
    };
    Ok(if path.is_absolute() {
        path
    } else {
        root.join(path)
    })
}

/// Read the image a URL names: `http://` and `https://` over the network (`tls_pin`: the
/// SHA-256 of the HTTPS server's certificate, for a self-signed one), anything else from a file.
pub fn fetch(url: &str, root: &Path, tls_pin: Option<&str>) -> Result<Vec<u8>, ImageError> {
    if url.starts_with("http://") {
        return fetch_http(url);
    }
    if url.starts_with("https://") {
        return crate::https::fetch_https(url, tls_pin);
    }
    let path = resolve_url(url, root)?;
    let read_err = |e: std::io::Error| ImageError::Read {
        path: path.clone(),
        error: e.to_string(),
    };
    let size = std::fs::metadata(&path).map_err(read_err)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig { path, size });
    }
    std::fs::read(&path).map_err(read_err)
}

/// How long the kernel waits for an image server.
pub(crate) const HTTP_TIMEOUT: Duration = Duration::from_secs(20);
/// Largest response head accepted.
pub(crate) const MAX_HTTP_HEAD: usize = 16 * 1024;

/// The authority and path of a URL's `rest` (what follows the scheme).
pub(crate) fn split_url<'a>(url: &str, rest: &'a str) -> Result<(&'a str, &'a str), ImageError> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(ImageError::UnsupportedUrl(url.into()));
    }
    Ok((authority, path))
}

/// A TCP connection to `authority` (`host[:port]`, `default_port` without one), with the
/// kernel's timeouts.
pub(crate) fn connect(
    url: &str,
    authority: &str,
    default_port: u16,
) -> Result<TcpStream, ImageError> {
    let err = |e: String| ImageError::Http {
        url: url.into(),
        error: e,
    };
    let target = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:{default_port}")
    };
    let addr = target
        .to_socket_addrs()
        .map_err(|e| err(format!("cannot resolve {target}: {e}")))?
        .next()
        .ok_or_else(|| err(format!("{target} has no address")))?;
    let stream = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT).map_err(|e| err(e.to_string()))?;
    stream
        .set_read_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| err(e.to_string()))?;
    stream
        .set_write_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| err(e.to_string()))?;
    Ok(stream)
}

/// GET an image over plain HTTP/1.0 (no TLS, no redirects): a 200 response whose body is the
/// image, checked against Content-Length when the server sends one.
pub fn fetch_http(url: &str) -> Result<Vec<u8>, ImageError> {
    let err = |e: String| ImageError::Http {
        url: url.into(),
        error: e,
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ImageError::UnsupportedUrl(url.into()))?;
    let (authority, path) = split_url(url, rest)?;
    let mut stream = connect(url, authority, 80)?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| err(e.to_string()))?;
    let mut response = Vec::new();
    stream
        .take(MAX_IMAGE_BYTES + MAX_HTTP_HEAD as u64 + 1)
        .read_to_end(&mut response)
        .map_err(|e| err(e.to_string()))?;
    parse_http_response(&response).map_err(err)
}

/// The body of a complete HTTP/1.x 200 response.
pub(crate) fn parse_http_response(response: &[u8]) -> Result<Vec<u8>, String> {
    let head_end = response
        .windows(4)
        .take(MAX_HTTP_HEAD)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no complete response head")?;
    let head = String::from_utf8_lossy(&response[..head_end]);
    let body = &response[head_end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    let code = status.split_whitespace().nth(1).unwrap_or_default();
    if !status.starts_with("HTTP/1.") || code != "200" {
        return Err(format!("server answered `{status}`"));
    }
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "transfer-encoding" && !value.eq_ignore_ascii_case("identity") {
            return Err(format!("unsupported transfer encoding `{value}`"));
        }
        if name == "content-length" {
            let want: u64 = value
                .parse()
                .map_err(|_| format!("bad Content-Length `{value}`"))?;
            if want != body.len() as u64 {
                return Err(format!(
                    "body is {} bytes, Content-Length says {want}",
                    body.len()
                ));
            }
        }
    }
    if body.len() as u64 > MAX_IMAGE_BYTES {
        return Err(format!("image over the {MAX_IMAGE_BYTES}-byte limit"));
    }
    Ok(body.to_vec())
}

pub use irix7_loader::sha256_hex;

/// Refuse an image whose digest is not the expected one (the shared loader's check).
pub fn verify(data: &[u8], expected: &str) -> Result<String, ImageError> {
    irix7_loader::verify(data, expected).map_err(|e| ImageError::DigestMismatch {
        expected: e.expected,
        actual: e.actual,
    })
}

/// The repository root: the first ancestor of the current directory that holds
/// `tools/iris/Cargo.toml`, else the root this rig was built from.
pub fn find_repo_root() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("tools/iris/Cargo.toml").is_file() {
                return dir.to_path_buf();
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_abc() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(verify(b"abc", &sha256_hex(b"abc").to_uppercase()).is_ok());
        let e = verify(b"abd", &sha256_hex(b"abc")).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("expected ba7816bf") && text.contains(&sha256_hex(b"abd")),
            "{text}"
        );
    }

    #[test]
    fn urls() {
        let root = Path::new("/r");
        assert_eq!(
            resolve_url("file:target/x.o", root).unwrap(),
            PathBuf::from("/r/target/x.o")
        );
        assert_eq!(
            resolve_url("file:///abs/x.o", root).unwrap(),
            PathBuf::from("/abs/x.o")
        );
        assert_eq!(
            resolve_url("target/x.o", root).unwrap(),
            PathBuf::from("/r/target/x.o")
        );
        assert!(resolve_url("http://h/x.o", root).is_err());
    }

    /// Serve one canned response on a local port; returns the URL.
    fn serve_once(response: Vec<u8>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(&response);
            }
        });
        format!("http://127.0.0.1:{port}/image/irix7-mcp.o")
    }

    #[test]
    fn http_fetch() {
        let ok = b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nimage".to_vec();
        assert_eq!(
            fetch(&serve_once(ok), Path::new("/"), None).unwrap(),
            b"image"
        );
        let missing = b"HTTP/1.0 404 Not Found\r\n\r\n".to_vec();
        let e = fetch(&serve_once(missing), Path::new("/"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("server answered `HTTP/1.0 404 Not Found`"),
            "{e}"
        );
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nimage".to_vec();
        let e = fetch(&serve_once(short), Path::new("/"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("body is 5 bytes, Content-Length says 9"), "{e}");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nimage\r\n0\r\n\r\n"
                .to_vec();
        assert!(fetch(&serve_once(chunked), Path::new("/"), None).is_err());
    }

    #[test]
    fn repo_root_has_the_rig() {
        assert!(find_repo_root().join("tools/iris/Cargo.toml").is_file());
    }
}
