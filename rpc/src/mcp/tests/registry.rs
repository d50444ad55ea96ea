//! Registering tables: rejected tables, the spliced `tools/list`, reserved names.

use super::*;

#[test]
fn registry_rejects_bad_tables() {
    let mut s = server();
    let dup = [TOOLS[0]];
    assert!(s.register_tools(&dup).unwrap_err().reason.contains("twice"));
    let mut bad = TOOLS[0];
    bad.name = "bad name";
    assert!(s.register_tools(&[bad]).is_err());
    let mut bad = TOOLS[0];
    bad.name = "ok.name";
    bad.input_schema = "{not json";
    assert!(s.register_tools(&[bad]).is_err());
    bad.input_schema = r#"{"type":"string"}"#;
    assert!(s.register_tools(&[bad]).is_err());
    assert_eq!(s.tools().len(), TOOLS.len());
}

#[test]
fn declared_error_codes_are_checked_at_registration() {
    let mut s = server();
    let mut t = TOOLS[0];
    t.name = "codes.twice";
    t.errors = &[ErrorCode::Io, ErrorCode::Range, ErrorCode::Io];
    let e = s.register_tools(&[t]).unwrap_err();
    assert!(e.reason.contains("E_IO twice"), "{e}");
    t.errors = &[ErrorCode::Inval];
    let e = s.register_tools(&[t]).unwrap_err();
    assert!(e.reason.contains("every tool may answer"), "{e}");
    t.errors = &[ErrorCode::InvalidParams];
    assert!(s.register_tools(&[t]).is_err());
    t.errors = &[ErrorCode::Busy, ErrorCode::Io];
    assert!(s.register_tools(&[t]).is_ok());
}

#[test]
fn tools_list_shares_the_registry_listings_rather_than_copying_them() {
    let mut c = config();
    c.limits.page_size = 100;
    let mut s = server_with(c);
    let mut r = modern(&mut s, "tools/list", json!({}), T0);
    let Body::Spliced(own, splice) = &r.body else {
        panic!("tools/list answers with the listings spliced in")
    };
    let listings = s.tools.listings(s.tools.listed());
    assert_eq!(splice.bytes(), listings);
    assert!(
        matches!(&splice.shared, crate::http::Shared::Kept(kept)
            if Rc::ptr_eq(kept, s.tools.shared_listings())),
        "the answer holds the registry's own listings"
    );
    assert!(own.len() < 400, "only the envelope is the answer's own");
    assert!(own[..splice.at].ends_with(b"\"tools\":["), "{own:?}");
    assert!(own[splice.at..].starts_with(b"]"), "{own:?}");
    let (body, ended) = crate::testing::drain(&mut r, T0, 1);
    assert!(ended);
    let v: Value = serde_json::from_slice(&body).unwrap();
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(names, want);
    // Put together for a batch, it is the same JSON.
    let body_again = match r.body.joined() {
        Body::Full(b) => b,
        _ => panic!("joined into one buffer"),
    };
    assert_eq!(body_again, body);
}

const GDB: Reserved = Reserved {
    prefix: "debug.",
    names: &["debug.attach", "debug.step"],
    why: "reserved for the GDB stub milestone",
};

#[test]
fn reserved_names_answer_nosys_in_both_eras_and_are_not_listed() {
    let mut s = server();
    s.reserve_tools(GDB).unwrap();
    // A planned name and an unplanned one under the prefix both answer E_NOSYS.
    for name in ["debug.attach", "debug.frobnicate"] {
        let (st, v) = modern_json(
            &mut s,
            "tools/call",
            json!({"name": name, "arguments": {}}),
            T0,
        );
        assert_eq!(st, 200);
        assert_eq!(v["result"]["isError"], true, "{v}");
        assert_eq!(
            v["result"]["content"][0]["text"],
            format!("E_NOSYS: {name} is reserved for the GDB stub milestone")
        );
    }
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "tools/call",
        json!({"name": "debug.step", "arguments": {}}),
        T0,
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(
        v["result"]["content"][0]["text"],
        "E_NOSYS: debug.step is reserved for the GDB stub milestone"
    );
    // A name that only resembles the prefix is still unknown.
    let (_, v) = modern_json(&mut s, "tools/call", json!({"name": "debugger"}), T0);
    assert_eq!(v["error"]["code"], -32602);
    // Not listed: every page of tools/list holds registered tools only.
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, v) = modern_json(&mut s, "tools/list", params, T0);
        for t in v["result"]["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_string());
        }
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let want: Vec<String> = TOOLS.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, want);
    assert_eq!(s.tools().reserved(), &[GDB]);
}

#[test]
fn reservations_and_tables_cannot_overlap() {
    let mut s = server();
    s.reserve_tools(GDB).unwrap();
    let mut t = TOOLS[0];
    t.name = "debug.attach";
    let e = s.register_tools(&[t]).unwrap_err();
    assert_eq!(e.name, "debug.attach");
    assert!(e.reason.contains("reserved"), "{e}");
    // A prefix over a registered tool is refused, and so is a planned name outside it.
    let over = Reserved {
        prefix: "ec",
        names: &[],
        why: "x",
    };
    assert_eq!(s.reserve_tools(over).unwrap_err().name, "echo");
    let stray = Reserved {
        prefix: "gdb.",
        names: &["debug.x"],
        why: "x",
    };
    assert!(s.reserve_tools(stray).is_err());
    assert_eq!(s.tools().reserved().len(), 1);
    assert_eq!(s.tools().len(), TOOLS.len());
}

#[test]
fn a_server_with_the_catalog_of_another_offers_the_same_and_shares_no_state() {
    let mut first = server();
    initialize(&mut first, "2025-11-25", T0);
    assert_eq!(first.sessions.len(), 1);
    let mut c = config();
    c.limits.page_size = 100;
    let mut copy = McpServer::with_catalog_of(
        &first,
        c,
        Rc::new(RefCell::new(Ctx::default())),
        Box::new(|b: &mut [u8]| b.fill(7)),
    );
    assert_eq!(copy.sessions.len(), 0, "sessions stay the first server's");
    assert_eq!(copy.tools().len(), first.tools().len());
    assert_eq!(
        copy.tools.listings(copy.tools.listed()),
        first.tools.listings(first.tools.listed())
    );
    let (_, templates) = modern_json(&mut copy, "resources/templates/list", json!({}), T0);
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        TEMPLATES[0].uri_template
    );
    let args = json!({"name": "echo", "arguments": {"text": "from the copy"}});
    let (status, called) = modern_json(&mut copy, "tools/call", args, T0);
    assert_eq!(status, 200);
    assert!(called.to_string().contains("from the copy"), "{called}");
}
