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

fn circles_of(files: &[Source]) -> Vec<Circle> {
    circles(files, &imports(files))
}

#[test]
fn modules_of_paths() {
    let m = |p: &str| module_of(p).map(|(t, m)| (t, m.join("::")));
    let want = |t: &str, m: &str| Some((t.to_string(), m.to_string()));
    assert_eq!(m("rpc/src/lib.rs"), want("rpc/src", ""));
    assert_eq!(m("rpc/src/mcp/mod.rs"), want("rpc/src", "mcp"));
    assert_eq!(
        m("src/tools/testing/harness.rs"),
        want("src", "tools::testing::harness")
    );
    assert_eq!(
        m("tools/iris/tests/deploy.rs"),
        want("tools/iris/tests", "")
    );
    assert_eq!(
        m("tools/iris/tests/support/mod.rs"),
        want("tools/iris/tests", "support")
    );
    assert_eq!(
        m("tools/iris/tests/support/http.rs"),
        want("tools/iris/tests", "support::http")
    );
    assert_eq!(
        m("tools/iris/examples/bench/main.rs"),
        want("tools/iris/examples/bench", "")
    );
    assert_eq!(
        m("tools/iris/examples/bench/client.rs"),
        want("tools/iris/examples/bench", "client")
    );
    assert_eq!(m("fuzz/fuzz_targets/x.rs"), None);
}

#[test]
fn a_two_file_circle_names_both_imports() {
    let found = circles_of(&sources(&[
        ("k/src/lib.rs", "mod a;\nmod b;\n"),
        ("k/src/a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "k/src/b.rs",
            "//! b\npub struct B;\nfn f() -> super::a::A { todo!() }\n",
        ),
    ]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].files, ["k/src/a.rs", "k/src/b.rs"]);
    let links: Vec<_> = found[0]
        .links
        .iter()
        .map(|l| (l.from.as_str(), l.line, l.text.as_str(), l.to.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            ("k/src/a.rs", 1, "use crate::b::B;", "k/src/b.rs"),
            (
                "k/src/b.rs",
                3,
                "fn f() -> super::a::A { todo!() }",
                "k/src/a.rs"
            ),
        ]
    );
}

#[test]
fn re_exports_are_looked_through() {
    // `m/mod.rs` gathers its children's names; the children use each other's through it in
    // one direction only, so there is no circle.
    let tree = [
        ("k/src/lib.rs", "pub mod m;\n"),
        (
            "k/src/m/mod.rs",
            "mod a;\nmod b;\npub use a::A;\npub use self::b::{B as Bee};\n",
        ),
        ("k/src/m/a.rs", "use super::Bee;\npub struct A;\n"),
        ("k/src/m/b.rs", "pub struct B;\n"),
    ];
    assert_eq!(circles_of(&sources(&tree)), []);
    // Through the re-export, b naming A closes a circle with a.
    let mut tree = tree.to_vec();
    tree[3] = (
        "k/src/m/b.rs",
        "pub struct B;\nfn f() { let _ = crate::m::A; }\n",
    );
    let found = circles_of(&sources(&tree));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].files, ["k/src/m/a.rs", "k/src/m/b.rs"]);
}

#[test]
fn a_longer_loop_is_one_circle_and_tests_trees_resolve() {
    let found = circles_of(&sources(&[
        ("t/tests/one.rs", "mod support;\nuse support::a::x;\n"),
        ("t/tests/two.rs", "mod support;\n"),
        (
            "t/tests/support/mod.rs",
            "pub mod a;\npub mod b;\npub mod c;\n",
        ),
        ("t/tests/support/a.rs", "use super::b::y;\npub fn x() {}\n"),
        ("t/tests/support/b.rs", "use super::c::*;\npub fn y() {}\n"),
        (
            "t/tests/support/c.rs",
            "use crate::support::a::x;\npub fn z() {}\n",
        ),
    ]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].files,
        [
            "t/tests/support/a.rs",
            "t/tests/support/b.rs",
            "t/tests/support/c.rs"
        ]
    );
    assert_eq!(found[0].links.len(), 3);
}

#[test]
fn paths_to_other_crates_and_within_a_file_are_no_imports() {
    let found = circles_of(&sources(&[
        ("k/src/lib.rs", "mod a;\nuse std::fmt;\nuse a::A;\n"),
        (
            "k/src/a.rs",
            "pub struct A;\nmod inner { use super::A; use self::x::Y; mod x { pub struct Y; } }\n\
             use other::k::a;\n",
        ),
    ]));
    assert_eq!(found, []);
}

#[test]
fn a_visibility_scope_ties_its_file_to_that_module() {
    // `raw.rs` names `gate` as the module that may see its field; `gate` uses `raw`: a circle.
    // `pub(super)` says the same without a path, and leaves none.
    let tree = [
        ("k/src/lib.rs", "mod gate;\n"),
        (
            "k/src/gate.rs",
            "mod raw;\nuse raw::Raw;\nfn f(_: Raw) {}\n",
        ),
        (
            "k/src/gate/raw.rs",
            "pub struct Raw(pub(in crate::gate) u32);\n",
        ),
    ];
    let found = circles_of(&sources(&tree));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].files, ["k/src/gate.rs", "k/src/gate/raw.rs"]);
    let mut tree = tree.to_vec();
    tree[2] = ("k/src/gate/raw.rs", "pub struct Raw(pub(super) u32);\n");
    assert_eq!(circles_of(&sources(&tree)), []);
}

#[test]
fn a_path_through_a_re_export_ties_to_the_re_exporting_file() {
    // `message.rs` names `coding::Packed`, which `coding/mod.rs` re-exports from `zlib.rs`;
    // `coding/mod.rs` imports `message.rs`. The definer, `zlib.rs`, imports nothing, but the
    // path as written lands on `coding/mod.rs`: a circle.
    let tree = [
        ("k/src/lib.rs", "mod http;\n"),
        ("k/src/http/mod.rs", "pub mod coding;\npub mod message;\n"),
        (
            "k/src/http/coding/mod.rs",
            "mod zlib;\npub use zlib::Packed;\nuse super::message::Body;\nfn f(_: Body) {}\n",
        ),
        ("k/src/http/coding/zlib.rs", "pub struct Packed;\n"),
        (
            "k/src/http/message.rs",
            "pub struct Body(Option<super::coding::Packed>);\n",
        ),
    ];
    let found = circles_of(&sources(&tree));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].files,
        ["k/src/http/coding/mod.rs", "k/src/http/message.rs"]
    );
    // Naming the defining file, which imports nothing of `message.rs`, leaves no circle.
    let mut tree = tree.to_vec();
    tree[2].1 = "pub mod zlib;\nuse super::message::Body;\nfn f(_: Body) {}\n";
    tree[4] = (
        "k/src/http/message.rs",
        "pub struct Body(Option<super::coding::zlib::Packed>);\n",
    );
    assert_eq!(circles_of(&sources(&tree)), []);
}
