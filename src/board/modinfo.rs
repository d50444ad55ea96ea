//! The `.modinfo` section: what the kernel's loader reads before it relocates the image.
//!
//! NUL-separated `key=value` strings (`name`, `version`, `abi`), as `docs/image.md` describes.

use crate::services::identity::VERSION;
use indy::abi::ABI_MIN_VERSION;

const fn digits(mut n: u32) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

const NAME_KV: &[u8] = b"name=irix7-mcp\0version=";
const ABI_KV: &[u8] = b"\0abi=";
const LEN: usize = NAME_KV.len() + VERSION.len() + ABI_KV.len() + digits(ABI_MIN_VERSION) + 1;

const fn build() -> [u8; LEN] {
    let mut out = [0u8; LEN];
    let mut i = 0;
    let mut j = 0;
    while j < NAME_KV.len() {
        out[i] = NAME_KV[j];
        i += 1;
        j += 1;
    }
    let v = VERSION.as_bytes();
    j = 0;
    while j < v.len() {
        out[i] = v[j];
        i += 1;
        j += 1;
    }
    j = 0;
    while j < ABI_KV.len() {
        out[i] = ABI_KV[j];
        i += 1;
        j += 1;
    }
    let d = digits(ABI_MIN_VERSION);
    let mut n = ABI_MIN_VERSION;
    let mut k = d;
    while k > 0 {
        out[i + k - 1] = b'0' + (n % 10) as u8;
        n /= 10;
        k -= 1;
    }
    // The final byte stays NUL.
    out
}

/// The section contents. `#[used]` and the image's linker script keep it.
#[used]
#[unsafe(link_section = ".modinfo")]
pub static MODINFO: [u8; LEN] = build();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modinfo_is_nul_separated_key_values() {
        let text = core::str::from_utf8(&MODINFO).unwrap();
        let fields: std::vec::Vec<&str> = text.trim_end_matches('\0').split('\0').collect();
        assert_eq!(
            fields,
            [
                "name=irix7-mcp",
                &std::format!("version={VERSION}"),
                &std::format!("abi={ABI_MIN_VERSION}")
            ]
        );
        assert_eq!(MODINFO.last(), Some(&0));
    }
}
