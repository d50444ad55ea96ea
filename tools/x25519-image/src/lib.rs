//! A test image for the rig (`cargo xtask` builds it as `target/image/x25519-test.o`, as it
//! builds the product image): a module whose `init` computes X25519 with `x25519-dalek` on the
//! first test vector of RFC 7748 (section 5.2) and prints the result on the console. Built for
//! the R4400, curve25519-dalek's 32-bit field arithmetic compiles to straight runs of hundreds of
//! instructions: the code stock Unicorn 2.1.5's translator crashed on
//! (`tools/iris/tests/x25519.rs`, docs/rig.md "Which Unicorn").

#![no_std]

/// RFC 7748, section 5.2, first vector: the scalar.
pub const SCALAR: [u8; 32] =
    hex32("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
/// The input u-coordinate.
pub const U: [u8; 32] = hex32("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
/// The output u-coordinate the RFC gives.
pub const EXPECTED: &str = "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552";
/// What `init` prints before the computed hex.
pub const PREFIX: &[u8] = b"x25519: ";

const fn hex32(s: &str) -> [u8; 32] {
    let s = s.as_bytes();
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = (nibble(s[2 * i]) << 4) | nibble(s[2 * i + 1]);
        i += 1;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        _ => c - b'a' + 10,
    }
}

/// The console line: [`PREFIX`], the result in lowercase hex, a newline.
pub fn line(out: &[u8; 32]) -> [u8; 73] {
    let mut l = [b'\n'; 73];
    l[..8].copy_from_slice(PREFIX);
    for (i, b) in out.iter().enumerate() {
        l[8 + 2 * i] = b"0123456789abcdef"[(b >> 4) as usize];
        l[9 + 2 * i] = b"0123456789abcdef"[(b & 15) as usize];
    }
    l
}

/// X25519 of the RFC's scalar and u-coordinate.
pub fn compute() -> [u8; 32] {
    x25519_dalek::x25519(SCALAR, U)
}

/// The module's face to the kernel: `.modinfo` and the three entry points.
#[cfg(target_os = "none")]
mod module {
    use indy::abi::AbiTable;

    #[used]
    #[unsafe(link_section = ".modinfo")]
    static MODINFO: [u8; 38] = *b"name=x25519-test\0version=0.1.0\0abi=10\0";

    /// Computes the vector and prints it; 0 (success).
    ///
    /// # Safety
    /// `abi` is the kernel's table (ABI 10 or later).
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn irix7_mcp_init(abi: *const AbiTable) -> i32 {
        let l = super::line(&super::compute());
        // SAFETY: the kernel hands a valid table whose console_write takes a buffer and length.
        unsafe { ((*abi).console_write)(l.as_ptr(), l.len()) };
        0
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn irix7_mcp_poll(_now_hi: u32, _now_lo: u32) -> i32 {
        0
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn irix7_mcp_exit() -> i32 {
        0
    }

    /// Never reached: the image is built with `-Cpanic=immediate-abort` (a panic traps), but a
    /// `no_std` library must name a handler.
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        loop {
            core::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector on the host, through the same code the image runs.
    #[test]
    fn the_rfc_7748_vector_holds_on_the_host() {
        let l = line(&compute());
        assert_eq!(&l[..8], PREFIX);
        assert_eq!(core::str::from_utf8(&l[8..72]).unwrap(), EXPECTED);
        assert_eq!(l[72], b'\n');
    }
}
