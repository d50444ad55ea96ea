//! Who may use `/mcp`, from the kernel environment: the bearer token (`mcp.token`, a token
//! built into the image, or one generated at boot), the explicit opt-out `mcp.token=none`, and
//! the names the machine is reached by (`mcp.hosts`, for the Host check). The board prints what
//! was decided; docs/security.md explains why.

use alloc::string::String;
use alloc::vec::Vec;
use rpc::mcp::authority::{Token, TokensError, parse_tokens};

/// Tokens shorter than this are refused: a short token can be guessed through the rate limit.
pub const TOKEN_MIN: usize = 16;
/// Longer tokens are refused (they are compared on every request).
pub const TOKEN_MAX: usize = 256;
/// Random bytes in a generated token (printed as twice as many hex digits).
pub const GENERATED_BYTES: usize = 16;
/// At most this many `mcp.hosts` names, each at most [`HOST_MAX`] bytes (a DNS name's limit).
pub const HOSTS_MAX: usize = 16;
pub const HOST_MAX: usize = 253;

/// Why a configured token was not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Fewer than [`TOKEN_MIN`] characters (the length is given).
    TooShort(usize),
    TooLong(usize),
    /// A space, a control character or non-ASCII: it could not travel in a header as written.
    NotVisibleAscii,
}

/// Where a token came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Environment,
    Build,
}

/// What the module does about the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenChoice {
    /// Require this token.
    Use(String, Source),
    /// `mcp.token=none`: `/mcp` is open, by the operator's explicit choice.
    Open,
    /// Generate a token at boot, either because none is configured or because the configured
    /// one was refused (fail closed: a bad token never opens the endpoint).
    Generate(Option<(Source, Refused)>),
}

/// Decides from `mcp.token` (the environment wins) and the token built into the image.
pub fn choose_token(env: Option<&str>, build: Option<&str>) -> TokenChoice {
    let (value, source) = match (env.map(str::trim).filter(|t| !t.is_empty()), build) {
        (Some(t), _) => (t, Source::Environment),
        (None, Some(t)) => (t.trim(), Source::Build),
        (None, None) => return TokenChoice::Generate(None),
    };
    if source == Source::Environment && value.eq_ignore_ascii_case("none") {
        return TokenChoice::Open;
    }
    match check(value) {
        Ok(()) => TokenChoice::Use(String::from(value), source),
        Err(why) => TokenChoice::Generate(Some((source, why))),
    }
}

fn check(token: &str) -> Result<(), Refused> {
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Refused::NotVisibleAscii);
    }
    match token.len() {
        n if n < TOKEN_MIN => Err(Refused::TooShort(n)),
        n if n > TOKEN_MAX => Err(Refused::TooLong(n)),
        _ => Ok(()),
    }
}

/// Whether a secret of `mcp.tokens` is acceptable: what `mcp.token` accepts.
pub fn secret_ok(secret: &str) -> Result<(), String> {
    check(secret).map_err(|why| match why {
        Refused::TooShort(n) => alloc::format!("{n} characters, at least {TOKEN_MIN} are needed"),
        Refused::TooLong(n) => alloc::format!("{n} characters, at most {TOKEN_MAX}"),
        Refused::NotVisibleAscii => String::from("only visible ASCII characters are allowed"),
    })
}

/// `mcp.tokens`, parsed (see `rpc::mcp::authority::parse_tokens`): the lesser tokens, or why
/// the value was refused, in which case there are none (failing closed).
pub fn lesser_tokens(value: Option<&str>) -> Result<Vec<Token>, TokensError> {
    parse_tokens(value.unwrap_or(""), secret_ok)
}

/// A generated token: the random bytes in lower-case hex.
pub fn token_text(bytes: &[u8; GENERATED_BYTES]) -> String {
    let mut s = String::with_capacity(GENERATED_BYTES * 2);
    for &b in bytes {
        let [hi, lo] = irix7_kmem::hex_byte(b);
        s.push(char::from(hi));
        s.push(char::from(lo));
    }
    s
}

/// The console line for a refused token (never the token itself).
pub fn refusal_text(source: Source, why: Refused) -> String {
    let what = match source {
        Source::Environment => "mcp.token",
        Source::Build => "the token built into the image",
    };
    match why {
        Refused::TooShort(n) => alloc::format!(
            "{what} refused: {n} characters, at least {TOKEN_MIN} are needed; using a generated token"
        ),
        Refused::TooLong(n) => alloc::format!(
            "{what} refused: {n} characters, at most {TOKEN_MAX}; using a generated token"
        ),
        Refused::NotVisibleAscii => alloc::format!(
            "{what} refused: only visible ASCII characters are allowed; using a generated token"
        ),
    }
}

/// A comma-separated list (`mcp.hosts`, `mcp.origins`): blanks are skipped, and items past
/// `max_items` or longer than `max_len` bytes are dropped (the count dropped is returned, for
/// the console).
pub fn bounded_list(list: Option<&str>, max_items: usize, max_len: usize) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut dropped = 0;
    for name in list.unwrap_or("").split(',').map(str::trim) {
        if name.is_empty() {
            continue;
        }
        if out.len() < max_items && name.len() <= max_len {
            out.push(String::from(name));
        } else {
            dropped += 1;
        }
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_token_configured_generates_one() {
        assert_eq!(choose_token(None, None), TokenChoice::Generate(None));
        assert_eq!(choose_token(Some("  "), None), TokenChoice::Generate(None));
    }

    #[test]
    fn none_opens_only_from_the_environment() {
        assert_eq!(choose_token(Some("none"), None), TokenChoice::Open);
        assert_eq!(
            choose_token(Some("NONE"), Some("a-build-token-long")),
            TokenChoice::Open
        );
        // A build token spelled "none" is just too short.
        assert_eq!(
            choose_token(None, Some("none")),
            TokenChoice::Generate(Some((Source::Build, Refused::TooShort(4))))
        );
    }

    #[test]
    fn short_long_and_odd_tokens_fail_closed() {
        assert_eq!(
            choose_token(Some("s3cret"), None),
            TokenChoice::Generate(Some((Source::Environment, Refused::TooShort(6))))
        );
        assert_eq!(
            choose_token(Some("exactly-15-char"), None),
            TokenChoice::Generate(Some((Source::Environment, Refused::TooShort(15))))
        );
        let long = "x".repeat(TOKEN_MAX + 1);
        assert_eq!(
            choose_token(Some(&long), None),
            TokenChoice::Generate(Some((Source::Environment, Refused::TooLong(TOKEN_MAX + 1))))
        );
        assert_eq!(
            choose_token(Some("sixteen chars ok"), None),
            TokenChoice::Generate(Some((Source::Environment, Refused::NotVisibleAscii)))
        );
        let line = refusal_text(Source::Environment, Refused::TooShort(6));
        assert!(line.contains("at least 16"), "{line}");
    }

    #[test]
    fn good_tokens_are_used_and_the_environment_wins() {
        assert_eq!(
            choose_token(Some("exactly-16-chars"), Some("a-build-token-long")),
            TokenChoice::Use("exactly-16-chars".into(), Source::Environment)
        );
        assert_eq!(
            choose_token(None, Some("a-build-token-long")),
            TokenChoice::Use("a-build-token-long".into(), Source::Build)
        );
    }

    #[test]
    fn generated_tokens_are_hex() {
        let t = token_text(&[0xab; GENERATED_BYTES]);
        assert_eq!(t.len(), 32);
        assert!(t.bytes().all(|b| b == b'a' || b == b'b'));
        assert_eq!(token_text(&[0; GENERATED_BYTES]), "0".repeat(32));
    }

    #[test]
    fn lists_are_split_and_bounded() {
        let hosts = |v| bounded_list(v, HOSTS_MAX, HOST_MAX);
        assert_eq!(hosts(None), (Vec::<String>::new(), 0));
        let (h, dropped) = hosts(Some(" indy , indy.lab,,"));
        assert_eq!(h, ["indy", "indy.lab"]);
        assert_eq!(dropped, 0);
        let many = (0..20)
            .map(|i| alloc::format!("h{i}"))
            .collect::<Vec<_>>()
            .join(",");
        let (h, dropped) = hosts(Some(&many));
        assert_eq!((h.len(), dropped), (HOSTS_MAX, 4));
        let (h, dropped) = hosts(Some(&"a".repeat(HOST_MAX + 1)));
        assert_eq!((h.len(), dropped), (0, 1));
    }
}
