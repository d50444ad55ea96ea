//! A profile's self instructions by layer (allocator and `alloc::` glue, JSON parsing and
//! writing, HTTP, TCP/IP, driver, copies, …) and by the part of the MCP server they were for
//! (gates, audit record, flight slot, authority, era handling, response framing, the tool's
//! own work, …), so `bench --profile` can say where a request's instructions go without
//! reading function lists. The categories come from the demangled names by one ordered table,
//! [`CATEGORIES`]: extend it there.

use std::fmt::Write as _;

use crate::profile::{PathCost, Profile};

/// What a function's name has to contain for each category; the first category with a match
/// wins, so more specific patterns come first (a `memcpy` is a copy whoever calls it; an
/// `alloc::` name that none of the layers above claimed is the glue of `Vec`, `String`, `Box`
/// and `BTreeMap` around the allocator: growing, cloning, dropping). A function whose name no
/// category claims (`memcmp`, a slice's `get`, a tape reader's step) works for its caller: its
/// instructions go to the category of the nearest function up its call path that has one, and
/// to [`OTHER`] only when none has.
///
/// A pattern is matched anywhere in the name; `^` at its start anchors it to the name's start
/// (a tool's type appears inside the names of the server's generic functions), and `…` stands
/// for anything (a method of the generic `McpServer<…>`).
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
            "irix7_kmem::text::ascii",
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
            // A tool's structured result, written as text (and integers as `itoa` does), its
            // short pieces appended by kmem.
            "rpc::json::object_writer",
            "itoa::",
            "irix7_kmem::append_",
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
        ],
    ),
    ("formatting", &["core::fmt::"]),
    ("alloc:: glue", &["alloc::"]),
    // The parts of the MCP server, for the instructions of the functions they call.
    (
        "audit record",
        &["rpc::mcp::guard::audit::", "irix7_mcp::services::audit::"],
    ),
    (
        "flight slot",
        &[
            "rpc::mcp::guard::call_watch::",
            "irix7_mcp::board::flight::",
        ],
    ),
    (
        "authority",
        &["rpc::mcp::guard::authority::", "McpServer<…>::authority_of"],
    ),
    (
        "admission",
        &[
            "rpc::mcp::admission",
            "rpc::mcp::guard::security::",
            "rpc::mcp::guard::limits::",
            "rpc::mcp::guard::login_failures::",
            "McpServer<…>::admit",
            "McpServer<…>::check_origin",
            "McpServer<…>::check_token",
            "McpServer<…>::within_rate",
        ],
    ),
    ("gates", &["rpc::mcp::tools::call::gates::"]),
    (
        "era handling",
        &[
            "rpc::mcp::eras::",
            "rpc::mcp::guard::request::",
            "McpServer<…>::modern",
            "McpServer<…>::legacy",
        ],
    ),
    (
        "response framing",
        &[
            "rpc::mcp::tools::call::emit::",
            // A structured result's JSON escaped as its text block's text.
            "irix7_kmem::text::append_json_text",
            "rpc::mcp::tools::result::",
            "rpc::mcp::wire::",
            "McpServer<…>::tool_result",
        ],
    ),
    (
        "MCP routing",
        &[
            "rpc::mcp::server::",
            "rpc::mcp::tools::registry::",
            "rpc::mcp::tools::tasks::",
            "rpc::mcp::tools::confirm::",
        ],
    ),
    (
        "the tool's own work",
        &[
            "^irix7_mcp::tools::",
            "^<irix7_mcp::tools::",
            "^irix7_mcp::services::",
            "^<irix7_mcp::services::",
        ],
    ),
    // Answers to the rig's multicast queries, when one falls into the exchange.
    ("mDNS", &["irix7_mcp::net::mdns::"]),
    (
        "poll loop",
        &[
            "irix7_mcp_poll",
            "irix7_mcp::board::entry::",
            "irix7_mcp::net::server::",
        ],
    ),
];

/// The category of instructions no function up their call path claims.
pub const OTHER: &str = "unnamed";

/// Whether `name` matches `pattern` (see [`CATEGORIES`] for `^` and `…`).
fn matches(name: &str, pattern: &str) -> bool {
    let (anchored, pattern) = match pattern.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let mut pieces = pattern.split('…');
    let mut rest = name;
    if anchored {
        match rest.strip_prefix(pieces.next().unwrap_or("")) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    for piece in pieces {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// The category the function called `name` claims, if any.
fn claimed(name: &str) -> Option<&'static str> {
    CATEGORIES
        .iter()
        .find(|(_, pats)| pats.iter().any(|p| matches(name, p)))
        .map(|(c, _)| *c)
}

/// The category of the function called `name` by its name alone.
pub fn category(name: &str) -> &'static str {
    claimed(name).unwrap_or(OTHER)
}

/// The category of a call path's own instructions: its innermost function's, else that of the
/// nearest caller that claims one.
fn path_category(p: &Profile, path: &PathCost) -> &'static str {
    path.stack
        .iter()
        .filter_map(|&f| p.functions.get(f))
        .find_map(|f| claimed(&f.name))
        .unwrap_or(OTHER)
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
    for path in &p.paths {
        let c = path_category(p, path);
        if let Some(i) = order.iter().position(|o| *o == c) {
            sums[i] += path.insns;
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
    use crate::profile::{FnCost, PathCost};

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
            ("irix7_kmem::text::append_json_text", "response framing"),
            ("irix7_kmem::append_key", "JSON writing"),
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
            (
                "<rpc::json::object_writer::ObjectWriter>::key",
                "JSON writing",
            ),
            ("<rpc::mcp::tools::call::gates::Gates>::check", "gates"),
            (
                "<rpc::mcp::server::McpServer<irix7_mcp::tools::context::Ctx>>::admit",
                "admission",
            ),
            (
                "<rpc::mcp::server::McpServer<irix7_mcp::tools::context::Ctx>>::tool_result",
                "response framing",
            ),
            (
                "<rpc::mcp::server::McpServer<irix7_mcp::tools::context::Ctx>>::dispatch",
                "MCP routing",
            ),
            (
                "<rpc::mcp::tools::call::emit::Emitter<irix7_mcp::tools::context::Ctx>>::tail_step",
                "response framing",
            ),
            (
                "irix7_mcp::tools::system::status::<irix7_mcp::tools::context::Ctx>",
                "the tool's own work",
            ),
            ("memcmp", OTHER),
            ("abi:now_ms", OTHER),
        ] {
            assert_eq!(category(name), want, "{name}");
        }
    }

    /// A profile of the given functions, each run by a call path of its own.
    fn flat(total: u64, functions: Vec<FnCost>) -> Profile {
        let paths = functions
            .iter()
            .enumerate()
            .map(|(i, f)| PathCost {
                stack: vec![i],
                insns: f.self_insns,
            })
            .collect();
        Profile {
            total,
            functions,
            paths,
        }
    }

    #[test]
    fn breakdown_sums_self_instructions_per_layer_in_table_order() {
        let p = flat(
            100,
            vec![
                cost("rpc::mcp::dispatch::dispatch", 40),
                cost("memcpy", 25),
                cost("smoltcp::wire::ip::checksum::data", 20),
                cost("memset", 10),
                cost("talc::talc::Talc<O>::malloc", 5),
            ],
        );
        assert_eq!(
            breakdown(&p),
            vec![
                ("copies", 35),
                ("allocator", 5),
                ("TCP/IP + checksum", 20),
                (OTHER, 40)
            ]
        );
        let small = flat(
            50,
            vec![
                cost("rpc::mcp::dispatch::dispatch", 30),
                cost("memcpy", 5),
                cost("rpc::http::parser::parse", 15),
            ],
        );
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

    /// `memcmp` claims no layer: what it runs for the schema check is the check's, what it
    /// runs for the gates is theirs, and a `memcpy` is a copy whoever calls it.
    #[test]
    fn unclaimed_functions_work_for_their_nearest_claimed_caller() {
        let names = [
            "memcmp",
            "<rpc::mcp::tools::schema::Schema>::check",
            "rpc::mcp::tools::call::gates::check::<Ctx>",
            "memcpy",
            "<core::str>::get",
        ];
        let functions = names.iter().map(|n| cost(n, 0)).collect();
        let path = |stack: Vec<usize>, insns| PathCost { stack, insns };
        let p = Profile {
            total: 100,
            functions,
            paths: vec![
                path(vec![0, 1, 2], 30),
                path(vec![1, 2], 20),
                path(vec![0, 2], 15),
                path(vec![3, 1, 2], 25),
                path(vec![4], 10),
            ],
        };
        assert_eq!(
            breakdown(&p),
            vec![
                ("copies", 25),
                ("schema check", 50),
                ("gates", 15),
                (OTHER, 10)
            ]
        );
    }

    #[test]
    fn patterns_anchor_and_skip() {
        assert!(matches("irix7_mcp::tools::x", "^irix7_mcp::tools::"));
        assert!(!matches(
            "f::<irix7_mcp::tools::Ctx>",
            "^irix7_mcp::tools::"
        ));
        assert!(matches("<a::McpServer<T>>::admit", "McpServer<…>::admit"));
        assert!(!matches("<a::McpServer<T>>::answer", "McpServer<…>::admit"));
        assert!(!matches("admit::McpServer<T>", "McpServer<…>::admit"));
    }
}
