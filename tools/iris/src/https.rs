//! `https://` image URLs: the kernel fetches the image over TLS (rustls with the ring
//! provider). The server is trusted through Mozilla's roots (`webpki-roots`) and its name, or —
//! for a lab server with a self-signed certificate — through a pin: the SHA-256 of its
//! certificate (DER), the boot configuration's `mcp.tls_pin`. With a pin nothing else about the
//! certificate is checked (name, issuer, dates): the pin is the trust. Either way the image's
//! own SHA-256 is checked after the fetch.

use std::io::{Read, Write};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::image::{
    ImageError, MAX_HTTP_HEAD, MAX_IMAGE_BYTES, connect, parse_http_response, sha256_hex, split_url,
};

/// GET an image over HTTPS (HTTP/1.0 inside TLS, no redirects): a 200 response whose body is
/// the image. `pin` is the lower-case hex SHA-256 of the server's certificate, if pinned.
pub fn fetch_https(url: &str, pin: Option<&str>) -> Result<Vec<u8>, ImageError> {
    let err = |e: String| ImageError::Http {
        url: url.into(),
        error: e,
    };
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| ImageError::UnsupportedUrl(url.into()))?;
    let (authority, path) = split_url(url, rest)?;
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| err(format!("`{host}` is not a server name: {e}")))?;
    let config = client_config(pin).map_err(|e| err(e.to_string()))?;
    let conn = ClientConnection::new(Arc::new(config), name).map_err(|e| err(e.to_string()))?;
    let tcp = connect(url, authority, 443)?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .map_err(|e| err(e.to_string()))?;
    let mut response = Vec::new();
    let limit = MAX_IMAGE_BYTES + MAX_HTTP_HEAD as u64 + 1;
    match (&mut tls).take(limit).read_to_end(&mut response) {
        Ok(_) => {}
        // A server that closes without close_notify: what arrived is checked below (length,
        // then the image's digest), so a cut image is refused all the same.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(err(e.to_string())),
    }
    parse_http_response(&response).map_err(err)
}

/// Mozilla's roots and the server's name, or only the pinned certificate.
fn client_config(pin: Option<&str>) -> Result<ClientConfig, rustls::Error> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    Ok(match pin {
        Some(pin) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned {
                sha256: pin.to_ascii_lowercase(),
                provider,
            }))
            .with_no_client_auth(),
        None => {
            let roots = RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    })
}

/// Trusts exactly the certificate whose SHA-256 is `sha256`; the handshake's signatures are
/// still verified against it.
#[derive(Debug)]
struct Pinned {
    sha256: String,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let actual = sha256_hex(end_entity);
        if actual == self.sha256 {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "certificate sha256 {actual} is not the pinned {}",
                self.sha256
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
