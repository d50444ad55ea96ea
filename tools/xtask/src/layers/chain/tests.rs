use super::super::circles::imports;
use super::*;

fn sources(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(p, t)| Source {
            path: p.to_string(),
            text: t.to_string(),
        })
        .collect()
}

fn chain(files: &[(&str, &str)]) -> Vec<(String, usize, String)> {
    let files = sources(files);
    longest(&files, &imports(&files), "k/src/m/")
        .into_iter()
        .map(|s| (s.from, s.line, s.to))
        .collect()
}

fn step(from: &str, line: usize, to: &str) -> (String, usize, String) {
    (format!("k/src/m/{from}"), line, format!("k/src/m/{to}"))
}

#[test]
fn the_longest_of_two_ways_down_is_taken() {
    let found = chain(&[
        ("k/src/lib.rs", "mod m;\n"),
        ("k/src/m/mod.rs", "mod a;\nmod b;\nmod c;\n"),
        ("k/src/m/a.rs", "use super::c::C;\nuse super::b::B;\n"),
        ("k/src/m/b.rs", "pub struct B(super::c::C);\n"),
        ("k/src/m/c.rs", "pub struct C;\n"),
    ]);
    assert_eq!(found, [step("a.rs", 2, "b.rs"), step("b.rs", 1, "c.rs")]);
}

#[test]
fn re_export_landings_tests_and_other_folders_are_no_links() {
    let found = chain(&[
        ("k/src/lib.rs", "mod m;\nmod other;\n"),
        // `a` names `C` through `mod.rs`: the chain goes to `c.rs`, which defines it.
        ("k/src/m/mod.rs", "mod a;\nmod c;\npub use c::C;\n"),
        ("k/src/m/a.rs", "use super::C;\n"),
        (
            "k/src/m/c.rs",
            "pub struct C;\nfn f() { crate::other::g(); }\n",
        ),
        ("k/src/other.rs", "pub fn g() {}\n"),
        ("k/src/m/tests.rs", "use super::a::*;\n"),
        ("k/src/m/c/tests.rs", "use super::super::a::*;\n"),
    ]);
    assert_eq!(found, [step("a.rs", 1, "c.rs")]);
}

#[test]
fn a_circle_ends_the_chain() {
    let found = chain(&[
        ("k/src/lib.rs", "mod m;\n"),
        ("k/src/m/mod.rs", "mod a;\nmod b;\n"),
        ("k/src/m/a.rs", "pub struct A(super::b::B);\n"),
        ("k/src/m/b.rs", "pub struct B(super::a::A);\n"),
    ]);
    assert_eq!(found, [step("a.rs", 1, "b.rs")]);
}

#[test]
fn no_import_no_chain() {
    assert_eq!(chain(&[("k/src/m/a.rs", "pub struct A;\n")]), []);
}
