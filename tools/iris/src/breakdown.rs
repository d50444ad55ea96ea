//! A profile's self instructions by layer (allocator and `alloc::` glue, JSON parsing and
//! writing, HTTP, TCP/IP, driver, copies, …), so `bench --profile` can say where a request's
//! instructions go without reading function lists. The categories come from the demangled
//! names by one ordered table, [`CATEGORIES`]: extend it there.

use std::fmt::Write as _;

use crate::profile::Profile;

/// What a function's name has to contain for each category; the first category with a match
/// wins, so more specific patterns come first (a `memcpy` is a copy whoever calls it; an
/// `alloc::` name that none of the layers above claimed is the glue of `Vec`, `String`, `Box`
/// and `BTreeMap` around the allocator: growing, cloning, dropping). Anything else is
/// [`OTHER`].
pub const CATEGORIES: &[(&str, &[&str])] = &[
    (
        "copies",
        &[
            "memcpy",
            "memmove",
            "memset",
            // kmem's copies and fills; its checksum sum is TCP/IP's.
            "irix7_kmem::copy",
            "irix7_kmem::fill",
            "rpc::mcp::wire::tool::append_zeroed",
        ],
    ),
    (
        "allocator",
        &[
            "as core::alloc::global::GlobalAlloc>",
            "talc::",
            "__rust_alloc",
            "__rust_realloc",
            "__rust_dealloc",
            "alloc::alloc::",
        ],
    ),
    (
        "JSON parsing",
        &[
            "serde_json::de::",
            "serde_json::read::",
            "rpc::jsonrpc::parse",
            "rpc::json::read",
            // The request body's ASCII test.
            "irix7_kmem::text::",
            "as serde_core::de::",
            "as serde::de::",
        ],
    ),
    // The `base64` crate (decoding) and rpc's encoder, `rpc::mcp::base64`.
    ("base64", &["base64::"]),
    (
        "JSON writing",
        &[
            "serde_json::ser::",
            "rpc::jsonrpc::response",
            "rpc::json::write",
            "rpc::json::escape",
            "rpc::mcp::wire::reply",
            "as serde_core::ser::",
            "as serde::ser::",
        ],
    ),
    ("schema check", &["rpc::mcp::tools::schema::"]),
    ("HTTP", &["rpc::http::"]),
    (
        "TCP/IP + checksum",
        &[
            "smoltcp::",
            "net::checksum",
            "irix7_kmem::csum::",
            "irix7_mcp::net::frame",
            "irix7_mcp::net::tcp_wire",
        ],
    ),
    (
        "driver + DMA",
        &["drivers::seeq", "board::seeq_bus", "board::mmio"],
    ),
    (
        "screen + PNG",
        &[
            "services::screen::",
            "drivers::newport",
            "board::newport_bus",
            "miniz_oxide::",
            "crc::",
        ],
    ),
    ("formatting", &["core::fmt::"]),
    ("alloc:: glue", &["alloc::"]),
];

/// The category of functions no pattern claims (MCP dispatch, tools, the poll loop, …).
pub const OTHER: &str = "MCP dispatch/other";

/// The category of the function called `name`.
pub fn category(name: &str) -> &'static str {
    CATEGORIES
        .iter()
        .find(|(_, pats)| pats.iter().any(|p| name.contains(p)))
        .map_or(OTHER, |(c, _)| c)
}

/// Self instructions per category, in [`CATEGORIES`] order with [`OTHER`] last (categories
/// without an instruction left out).
pub fn breakdown(p: &Profile) -> Vec<(&'static str, u64)> {
    let mut order: Vec<&'static str> = Vec::new();
    for (c, _) in CATEGORIES {
        if !order.contains(c) {
            order.push(c);
        }
    }
    order.push(OTHER);
    let mut sums = vec![0u64; order.len()];
    for f in &p.functions {
        let c = category(&f.name);
        if let Some(i) = order.iter().position(|o| *o == c) {
            sums[i] += f.self_insns;
        }
    }
    order
        .into_iter()
        .zip(sums)
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The breakdown as a table: instructions, share of the profile's total and, when `per` is
/// given (bytes), instructions per byte.
pub fn report(p: &Profile, per: Option<u64>) -> String {
    let mut s = String::new();
    for (c, n) in breakdown(p) {
        let share = 100.0 * n as f64 / p.total.max(1) as f64;
        let _ = write!(s, "  {c:<20} {n:>12} {share:>5.1}%");
        if let Some(bytes) = per {
            let _ = write!(s, " {:>8.2} insns/byte", n as f64 / bytes.max(1) as f64);
        }
        s.push('\n');
    }
    s
}

/// What `large` cost beyond `small` per extra byte, by category: the per-byte cost of a path
/// without its fixed cost (categories `small` has more of show negative).
pub fn per_byte_difference(
    large: &Profile,
    small: &Profile,
    bytes: u64,
) -> Vec<(&'static str, f64)> {
    let s = breakdown(small);
    breakdown(large)
        .into_iter()
        .chain(s.iter().map(|(c, _)| (*c, 0)))
        .fold(Vec::new(), |mut out: Vec<(&'static str, f64)>, (c, n)| {
            if !out.iter().any(|(o, _)| *o == c) {
                let before = s.iter().find(|(o, _)| *o == c).map_or(0, |(_, n)| *n);
                out.push((c, (n as f64 - before as f64) / bytes.max(1) as f64));
            }
            out
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::FnCost;

    fn cost(name: &str, self_insns: u64) -> FnCost {
        FnCost {
            name: name.into(),
            self_insns,
            incl_insns: self_insns,
            calls: 1,
            callers: Vec::new(),
        }
    }

    #[test]
    fn names_fall_into_their_layers() {
        for (name, want) in [
            ("memcpy", "copies"),
            ("compiler_builtins::mem::memmove", "copies"),
            (
                "<irix7_mcp::board::heap::CountingHeap as core::alloc::global::GlobalAlloc>::alloc",
                "allocator",
            ),
            ("talc::talc::Talc<O>::free", "allocator"),
            ("alloc::raw_vec::RawVec<T,A>::grow_one", "alloc:: glue"),
            (
                "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop",
                "alloc:: glue",
            ),
            (
                "serde_json::de::Deserializer<R>::parse_whitespace",
                "JSON parsing",
            ),
            ("rpc::jsonrpc::parse::parse", "JSON parsing"),
            ("<rpc::json::read::Reader>::tape", "JSON parsing"),
            ("irix7_kmem::text::ascii", "JSON parsing"),
            (
                "serde_json::ser::format_escaped_str_contents",
                "JSON writing",
            ),
            ("rpc::json::write::write_json", "JSON writing"),
            ("<rpc::json::escape::TextEscaper>::push", "JSON writing"),
            ("rpc::mcp::wire::base64::encode_into", "base64"),
            ("<rpc::mcp::wire::base64::Base64Stream>::push", "base64"),
            ("rpc::json::escape::plain_run", "JSON writing"),
            ("rpc::http::parser::parse_head", "HTTP"),
            (
                "smoltcp::socket::tcp::Socket::dispatch",
                "TCP/IP + checksum",
            ),
            ("irix7_mcp::net::checksum::sum", "TCP/IP + checksum"),
            ("irix7_kmem::csum::ones_sum", "TCP/IP + checksum"),
            ("irix7_kmem::copy_forward", "copies"),
            ("irix7_mcp::drivers::seeq::Seeq::transmit", "driver + DMA"),
            ("irix7_mcp::board::mmio::read32", "driver + DMA"),
            ("rpc::mcp::wire::tool::append_zeroed", "copies"),
            ("irix7_mcp::net::tcp_wire::shift", "TCP/IP + checksum"),
            ("rpc::mcp::tools::schema::check", "schema check"),
            (
                "base64::encode::encode_with_padding::<base64::engine::general_purpose::GeneralPurpose>",
                "base64",
            ),
            (
                "<irix7_mcp::services::screen::png::PngEncoder>::compress",
                "screen + PNG",
            ),
            ("miniz_oxide::deflate::core::flush_block", "screen + PNG"),
            ("<core::fmt::Formatter>::pad_integral", "formatting"),
            (
                "<alloc::string::String as core::fmt::Write>::write_str",
                "formatting",
            ),
            ("rpc::mcp::dispatch::dispatch", OTHER),
            ("abi:now_ms", OTHER),
        ] {
            assert_eq!(category(name), want, "{name}");
        }
    }

    #[test]
    fn breakdown_sums_self_instructions_per_layer_in_table_order() {
        let p = Profile {
            total: 100,
            functions: vec![
                cost("rpc::mcp::dispatch::dispatch", 40),
                cost("memcpy", 25),
                cost("smoltcp::wire::ip::checksum::data", 20),
                cost("memset", 10),
                cost("talc::talc::Talc<O>::malloc", 5),
            ],
        };
        assert_eq!(
            breakdown(&p),
            vec![
                ("copies", 35),
                ("allocator", 5),
                ("TCP/IP + checksum", 20),
                (OTHER, 40)
            ]
        );
        let small = Profile {
            total: 50,
            functions: vec![
                cost("rpc::mcp::dispatch::dispatch", 30),
                cost("memcpy", 5),
                cost("rpc::http::parser::parse", 15),
            ],
        };
        assert_eq!(
            per_byte_difference(&p, &small, 10),
            vec![
                ("copies", 3.0),
                ("allocator", 0.5),
                ("TCP/IP + checksum", 2.0),
                (OTHER, 1.0),
                ("HTTP", -1.5)
            ]
        );
        let r = report(&p, Some(10));
        assert!(r.contains("copies") && r.contains("35.0%") && r.contains("3.50 insns/byte"));
    }
}
