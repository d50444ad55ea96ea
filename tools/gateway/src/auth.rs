//! The gateway's own bearer token: taken from the lab's token file if one is there, else
//! generated (128 random bits as hex) and written there with mode 0600, like the rig writes
//! a machine's generated token. Every request to `/mcp` must carry it.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The shortest token accepted from a file (the module's own minimum).
const TOKEN_MIN: usize = 16;

pub fn ensure_token(path: &Path) -> Result<String, String> {
    if let Ok(t) = crate::machine::read_token(path) {
        if t.len() < TOKEN_MIN {
            return Err(format!(
                "{}: the token must have at least {TOKEN_MIN} characters",
                path.display()
            ));
        }
        return Ok(t);
    }
    let mut raw = [0u8; 16];
    getrandom::getrandom(&mut raw).map_err(|e| format!("no randomness for a token: {e}"))?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    write_private(path, &token).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(token)
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.write_all(b"\n")
}

/// Refuses a request without `Authorization: Bearer <token>` (401, nothing else said).
pub async fn require_bearer(
    State(token): State<Arc<String>>,
    req: Request,
    next: Next,
) -> Response {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| bool::from(t.as_bytes().ct_eq(token.as_bytes())));
    if ok {
        return next.run(req).await;
    }
    let mut r = (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// Legacy-era sessions: one client's session ends after this long without a request.
const SESSION_IDLE: Duration = Duration::from_secs(300);

pub fn session_manager() -> LocalSessionManager {
    let mut m = LocalSessionManager::default();
    m.session_config.keep_alive = Some(SESSION_IDLE);
    m
}
