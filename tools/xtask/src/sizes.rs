//! Text and rodata of the image per crate, so every change can say what it cost and where.
//!
//! The image is one relocatable object built with LTO, so crate boundaries survive only in the
//! symbol names: each function and object symbol in `.text`/`.rodata` is charged to the crate
//! its demangled path starts with. Bytes no symbol covers (padding, anonymous literals merged
//! into `.rodata`) are "unattributed", so the rows always add up to text+rodata.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// The bytes one crate has in the image.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CrateSize {
    pub name: String,
    pub text: u64,
    pub rodata: u64,
}

impl CrateSize {
    pub fn total(&self) -> u64 {
        self.text + self.rodata
    }
}

/// The row of the bytes no crate can be named for.
pub const UNATTRIBUTED: &str = "unattributed";
/// Crates smaller than this are summed into one row.
const SMALL: u64 = 1024;

/// Per-crate sizes of `elf`'s `.text` and `.rodata`, largest first, the unattributed row last.
pub fn crate_sizes(elf: &[u8]) -> Result<Vec<CrateSize>, String> {
    let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
    let mut by_crate: BTreeMap<String, CrateSize> = BTreeMap::new();
    let mut unattributed = CrateSize {
        name: UNATTRIBUTED.into(),
        ..CrateSize::default()
    };
    for name in [".text", ".rodata"] {
        let Some(section) = file.section_by_name(name) else {
            continue;
        };
        let mut symbols: Vec<(u64, u64, Option<String>)> = file
            .symbols()
            .filter(|s| s.section_index() == Some(section.index()))
            .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
            .filter(|s| s.size() > 0)
            .map(|s| {
                let owner = s.name().ok().and_then(|n| crate_of(n, s.is_weak()));
                (s.address(), s.size(), owner)
            })
            .collect();
        symbols.sort_by_key(|&(addr, size, _)| (addr, std::cmp::Reverse(size)));
        let covered = charge(&symbols, section.size(), |owner, bytes| {
            let row = match owner {
                Some(c) => by_crate.entry(c.clone()).or_insert_with(|| CrateSize {
                    name: c.clone(),
                    ..CrateSize::default()
                }),
                None => &mut unattributed,
            };
            if name == ".text" {
                row.text += bytes;
            } else {
                row.rodata += bytes;
            }
        });
        let rest = section.size() - covered;
        if name == ".text" {
            unattributed.text += rest;
        } else {
            unattributed.rodata += rest;
        }
    }
    let mut rows: Vec<CrateSize> = by_crate.into_values().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.total()));
    rows.push(unattributed);
    Ok(rows)
}

/// Charges each byte of the section to the first symbol that covers it (aliases and overlaps
/// count once); returns the bytes charged.
fn charge(
    symbols: &[(u64, u64, Option<String>)],
    section_size: u64,
    mut add: impl FnMut(&Option<String>, u64),
) -> u64 {
    let mut done = 0u64;
    let mut covered = 0u64;
    for (addr, size, owner) in symbols {
        let start = (*addr).max(done);
        let end = (addr + size).min(section_size);
        if end > start {
            add(owner, end - start);
            covered += end - start;
            done = end;
        }
    }
    covered
}

/// The crate a symbol belongs to: the first segment of its demangled path (of the self type for
/// `<T as Trait>::f`, of the trait when the type is a primitive). Unmangled names are the
/// module's entry points, the image's `memcpy` (irix7-kmem's strong one replaces the weak
/// `compiler_builtins` copy) or compiler builtins; `None` for anonymous data.
pub fn crate_of(symbol: &str, weak: bool) -> Option<String> {
    let Ok(d) = rustc_demangle::try_demangle(symbol) else {
        return unmangled_crate(symbol, weak).map(str::to_string);
    };
    let path = format!("{d:#}");
    let path = path.trim_start_matches(['<', '&', '*', '(', '[', ' ']);
    let path = path
        .strip_prefix("mut ")
        .or_else(|| path.strip_prefix("const "))
        .unwrap_or(path);
    let first: String = path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let is_path = path[first.len()..].starts_with("::");
    if is_path && !first.is_empty() {
        return Some(first);
    }
    // A primitive self type: the trait names the crate.
    let trait_path = path.split_once(" as ")?.1;
    let krate: String = trait_path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!krate.is_empty()).then_some(krate)
}

fn unmangled_crate(name: &str, weak: bool) -> Option<&'static str> {
    if name.starts_with("irix7_mcp_") {
        Some("irix7_mcp")
    } else if name == "memcpy" && !weak {
        Some("irix7_kmem")
    } else if weak || name.starts_with("__") || name.starts_with("mem") {
        Some("compiler_builtins")
    } else {
        None
    }
}

/// An aligned table: crates of 1 KiB and more, the rest summed, the unattributed row, and the
/// total (text+rodata).
pub fn table(rows: &[CrateSize]) -> String {
    let total: u64 = rows.iter().map(CrateSize::total).sum();
    let (named, unattributed): (Vec<&CrateSize>, Vec<&CrateSize>) =
        rows.iter().partition(|r| r.name != UNATTRIBUTED);
    let (big, small): (Vec<&CrateSize>, Vec<&CrateSize>) =
        named.into_iter().partition(|r| r.total() >= SMALL);
    let mut shown: Vec<CrateSize> = big.into_iter().cloned().collect();
    if !small.is_empty() {
        shown.push(CrateSize {
            name: format!("{} others", small.len()),
            text: small.iter().map(|r| r.text).sum(),
            rodata: small.iter().map(|r| r.rodata).sum(),
        });
    }
    shown.extend(unattributed.into_iter().cloned());
    let width = shown.iter().map(|r| r.name.len()).max().unwrap_or(5).max(5);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<width$} {:>8} {:>8} {:>8} {:>6}",
        "crate", "text", "rodata", "total", "%"
    );
    for r in &shown {
        let _ = writeln!(
            s,
            "  {:<width$} {:>8} {:>8} {:>8} {:>5.1}%",
            r.name,
            r.text,
            r.rodata,
            r.total(),
            100.0 * r.total() as f64 / total.max(1) as f64
        );
    }
    let _ = writeln!(
        s,
        "  {:<width$} {:>8} {:>8} {:>8}",
        "text+rodata",
        rows.iter().map(|r| r.text).sum::<u64>(),
        rows.iter().map(|r| r.rodata).sum::<u64>(),
        total
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangled_paths_name_their_crate() {
        let cases = [
            (
                "_ZN7smoltcp5iface9interface9Interface4poll17h0123456789abcdefE",
                "smoltcp",
            ),
            ("_ZN4core3fmt5write17h0123456789abcdefE", "core"),
            (
                "_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE",
                "alloc",
            ),
            (
                "_ZN42_$LT$u32$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE",
                "core",
            ),
        ];
        for (sym, want) in cases {
            assert_eq!(crate_of(sym, false).as_deref(), Some(want), "{sym}");
        }
    }

    #[test]
    fn unmangled_names() {
        assert_eq!(
            crate_of("irix7_mcp_poll", false).as_deref(),
            Some("irix7_mcp")
        );
        assert_eq!(crate_of("memcpy", false).as_deref(), Some("irix7_kmem"));
        assert_eq!(
            crate_of("memset", true).as_deref(),
            Some("compiler_builtins")
        );
        assert_eq!(
            crate_of("__udivdi3", false).as_deref(),
            Some("compiler_builtins")
        );
        assert_eq!(crate_of("$anon.0123.45", false), None);
    }

    #[test]
    fn overlapping_symbols_count_once_and_the_rest_is_unattributed() {
        let a = Some("a".to_string());
        let b = Some("b".to_string());
        // b aliases a's start and runs past it; a gap, then a symbol past the section's end.
        let syms = vec![(0, 8, a), (0, 4, b.clone()), (4, 8, b.clone()), (16, 32, b)];
        let mut got = BTreeMap::new();
        let covered = charge(&syms, 40, |o, n| {
            *got.entry(o.clone().unwrap()).or_insert(0) += n;
        });
        assert_eq!(covered, 8 + 4 + 24);
        assert_eq!(got["a"], 8);
        assert_eq!(got["b"], 4 + 24);
    }

    #[test]
    fn the_table_sums_to_text_plus_rodata() {
        let rows = vec![
            CrateSize {
                name: "core".into(),
                text: 3000,
                rodata: 100,
            },
            CrateSize {
                name: "talc".into(),
                text: 500,
                rodata: 0,
            },
            CrateSize {
                name: "crc".into(),
                text: 100,
                rodata: 300,
            },
            CrateSize {
                name: UNATTRIBUTED.into(),
                text: 4,
                rodata: 900,
            },
        ];
        let t = table(&rows);
        assert!(t.contains("2 others"), "{t}");
        let last = t.lines().last().unwrap();
        assert!(last.ends_with(" 3604     1300     4904"), "{t}");
    }
}
