//! A local HTTPS image server with a fresh self-signed certificate (rcgen), for the tests of
//! `https://` image URLs and certificate pinning.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris::image::sha256_hex;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

/// A server answering every GET with `image`, on 127.0.0.1.
pub struct TlsImageServer {
    pub port: u16,
    /// SHA-256 (hex) of the server's certificate: what `mcp.tls_pin` names.
    pub cert_sha256: String,
    /// Responses sent so far.
    pub served: Arc<AtomicUsize>,
}

impl TlsImageServer {
    pub fn start(image: Vec<u8>) -> TlsImageServer {
        let rcgen::CertifiedKey { cert, key_pair } =
            rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                .unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pair.serialize_der()));
        let cert_sha256 = sha256_hex(cert.der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert.der().clone()], key)
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                let Ok(tcp) = tcp else { continue };
                let Ok(conn) = ServerConnection::new(config.clone()) else {
                    continue;
                };
                let mut tls = StreamOwned::new(conn, tcp);
                // Read the request head (a client that refuses the certificate ends here).
                let mut head = Vec::new();
                let mut b = [0u8; 512];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut b) {
                        Ok(n) if n > 0 => head.extend_from_slice(&b[..n]),
                        _ => break,
                    }
                }
                if !head.starts_with(b"GET ") {
                    continue;
                }
                let ok = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    image.len()
                );
                if tls.write_all(ok.as_bytes()).is_ok() && tls.write_all(&image).is_ok() {
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        TlsImageServer {
            port,
            cert_sha256,
            served,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}/{path}", self.port)
    }
}
