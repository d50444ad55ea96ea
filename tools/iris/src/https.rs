//! `https://` image URLs: the kernel fetches the image over TLS (rustls with the ring
//! provider). The server is trusted through Mozilla's roots (`webpki-roots`) and its name, or —
//! for a lab server with a self-signed certificate — through a pin: the SHA-256 of its
//! certificate (DER), the boot configuration's `mcp.tls_pin`. With a pin nothing else about the
//! certificate is checked (name, issuer, dates): the pin is the trust. Either way the image's
//! own SHA-256 is checked after the fetch.

use std::sync::Arc;

use irix7_loader::sha256_hex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// A TLS client for the server `host`; `pin` is the hex SHA-256 of its certificate, if pinned.
/// The image fetch (`crate::image`) runs its request through it.
pub fn client(host: &str, pin: Option<&str>) -> Result<ClientConnection, String> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| format!("`{host}` is not a server name: {e}"))?;
    let config = client_config(pin).map_err(|e| e.to_string())?;
    ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())
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
