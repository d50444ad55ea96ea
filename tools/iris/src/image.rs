//! Fetching the module image named by the boot configuration and verifying its SHA-256, and
//! finding the repository root that relative paths are resolved against.

use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use host_http::Head;

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
    if let Some(rest) = url.strip_prefix("http://") {
        return fetch_net(url, rest, None);
    }
    if let Some(rest) = url.strip_prefix("https://") {
        return fetch_net(url, rest, Some(tls_pin));
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
const HTTP_TIMEOUT: Duration = Duration::from_secs(20);
/// Largest response head accepted.
const MAX_HTTP_HEAD: usize = 16 * 1024;

/// GET an image over HTTP/1.0 (no redirects), inside TLS when `tls` holds the certificate pin
/// (or none): a 200 response whose body is the image, checked against Content-Length when the
/// server sends one. `rest` is what follows the URL's scheme.
fn fetch_net(url: &str, rest: &str, tls: Option<Option<&str>>) -> Result<Vec<u8>, ImageError> {
    let err = |e: String| ImageError::Http {
        url: url.into(),
        error: e,
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(ImageError::UnsupportedUrl(url.into()));
    }
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let response = match tls {
        None => exchange(connect(url, authority, 80)?, request.as_bytes()),
        Some(pin) => {
            let host = match authority.rsplit_once(':') {
                Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
                _ => authority,
            };
            let conn = crate::https::client(host, pin).map_err(err)?;
            let tcp = connect(url, authority, 443)?;
            exchange(rustls::StreamOwned::new(conn, tcp), request.as_bytes())
        }
    };
    image_body(&response.map_err(|e| err(e.to_string()))?).map_err(err)
}

/// A TCP connection to `authority` (`host[:port]`, `default_port` without one), with the
/// kernel's timeouts.
fn connect(url: &str, authority: &str, default_port: u16) -> Result<TcpStream, ImageError> {
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

/// Sends `request` and reads the answer to the end of the connection (bounded).
fn exchange(mut s: impl Read + Write, request: &[u8]) -> std::io::Result<Vec<u8>> {
    s.write_all(request)?;
    let mut response = Vec::new();
    match s
        .take(MAX_IMAGE_BYTES + MAX_HTTP_HEAD as u64 + 1)
        .read_to_end(&mut response)
    {
        Ok(_) => Ok(response),
        // A TLS server that closes without close_notify: what arrived is checked (length, then
        // the image's digest), so a cut image is refused all the same.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(response),
        Err(e) => Err(e),
    }
}

/// The image in a whole HTTP/1.x response: a 200 with an identity body that is as long as its
/// Content-Length says.
fn image_body(response: &[u8]) -> Result<Vec<u8>, String> {
    let (head, head_len) = Head::parse(response)
        .map_err(|e| e.to_string())?
        .filter(|(_, len)| *len <= MAX_HTTP_HEAD)
        .ok_or("no complete response head")?;
    if head.status != 200 {
        return Err(format!("server answered `{}`", head.status_line()));
    }
    let body = &response[head_len..];
    for (name, value) in &head.headers {
        if name.eq_ignore_ascii_case("transfer-encoding") && !value.eq_ignore_ascii_case("identity")
        {
            return Err(format!("unsupported transfer encoding `{value}`"));
        }
        if name.eq_ignore_ascii_case("content-length") {
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
