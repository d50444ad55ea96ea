//! The field syntax the whole HTTP layer shares (RFC 9110 §5.6).

/// The non-empty elements of a comma-separated header list, trimmed.
pub(crate) fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|s| s.trim_matches([' ', '\t']))
        .filter(|s| !s.is_empty())
}

/// RFC 9110 token characters.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
