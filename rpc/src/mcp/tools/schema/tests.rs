use super::*;
use serde_json::json;

/// The verdict on `value`, read in place.
fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let text = alloc::string::ToString::to_string(value);
    let mut tape = crate::json::Tape::default();
    let v = tape.read(&text).expect("readable");
    Schema::compile(schema).validate(v)
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 8},
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"enum": ["a", "b"]},
            "list": {"type": "array", "items": {"type": "number"}, "maxItems": 2}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

#[test]
fn lengths_count_characters_not_bytes() {
    // Three two-byte characters: six bytes, which neither bound may be judged by.
    let text = json!("\u{e9}\u{e9}\u{e9}");
    assert_eq!(validate(&json!({"maxLength": 3}), &text), Ok(()));
    assert_eq!(validate(&json!({"minLength": 3}), &text), Ok(()));
    assert_eq!(
        validate(&json!({"maxLength": 2}), &text),
        Err(String::from("$: allows at most 2 characters"))
    );
    assert_eq!(
        validate(&json!({"minLength": 4}), &text),
        Err(String::from("$: needs at least 4 characters"))
    );
    // A four-byte character is one character; plain ASCII is judged by its length.
    let wide = json!("\u{1F5A5}");
    assert_eq!(
        validate(&json!({"minLength": 1, "maxLength": 1}), &wide),
        Ok(())
    );
    let long = json!("x".repeat(1000));
    assert_eq!(
        validate(&json!({"maxLength": 1000, "minLength": 250}), &long),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"maxLength": 999}), &long),
        Err(String::from("$: allows at most 999 characters"))
    );
}

#[test]
fn reports_the_first_missing_required_name_as_written() {
    // Past 64 names (two passes), out of order and one name given twice.
    let names: Vec<String> = (0..70).rev().map(|i| format!("n{i:02}")).collect();
    let mut required: Vec<Value> = names.iter().map(|n| json!(n)).collect();
    required.push(json!("n05"));
    let s = json!({"required": required});
    let all: serde_json::Map<String, Value> = names.iter().map(|n| (n.clone(), json!(1))).collect();
    assert_eq!(validate(&s, &Value::Object(all.clone())), Ok(()));
    for (gone, reported) in [
        (&["n05"][..], "n05"),
        (&["n02", "n68"], "n68"),
        (&["n00", "n66", "n30"], "n66"),
    ] {
        let mut some = all.clone();
        for g in gone {
            some.remove(*g);
        }
        let want = format!("$: missing required property \"{reported}\"");
        assert_eq!(validate(&s, &Value::Object(some)), Err(want));
    }
}

#[test]
fn accepts_valid_arguments() {
    assert_eq!(
        validate(
            &schema(),
            &json!({"path": "/a", "count": 3, "mode": "b", "list": [1.5]})
        ),
        Ok(())
    );
}

#[test]
fn rejects_each_violation_with_its_location() {
    let s = schema();
    let cases = [
        (json!({}), "missing required property \"path\""),
        (json!({"path": 1}), "$.path: expected string"),
        (json!({"path": ""}), "$.path: needs at least 1"),
        (json!({"path": "123456789"}), "$.path: allows at most 8"),
        (json!({"path": "a", "count": 0}), "$.count: must be >= 1"),
        (json!({"path": "a", "count": 11}), "$.count: must be <= 10"),
        (
            json!({"path": "a", "count": 1.5}),
            "$.count: expected integer",
        ),
        (json!({"path": "a", "mode": "c"}), "$.mode: not one of"),
        (
            json!({"path": "a", "list": [1, "x"]}),
            "$.list[1]: expected number",
        ),
        (
            json!({"path": "a", "list": [1, 2, 3]}),
            "$.list: allows at most 2",
        ),
        (
            json!({"path": "a", "extra": true}),
            "$.extra: unknown property",
        ),
        (json!([]), "$: expected object"),
    ];
    for (value, want) in cases {
        let err = validate(&s, &value).expect_err("must fail");
        assert!(err.contains(want), "{value}: {err} lacks {want}");
    }
}

#[test]
fn combinators_and_deep_nesting() {
    let s = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
    assert!(validate(&s, &json!("x")).is_ok());
    assert!(validate(&s, &json!(true)).is_err());
    let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    assert!(validate(&one, &json!(1)).is_err());
    assert!(validate(&one, &json!(1.5)).is_ok());
    let mut deep = json!({"type": "array"});
    for _ in 0..40 {
        deep = json!({"type": "array", "items": deep});
    }
    // A value as deep as a reader takes is checked; the reader refuses a deeper one.
    let mut v = json!([]);
    for _ in 1..crate::json::MAX_NESTING {
        v = json!([v]);
    }
    assert!(validate(&deep, &v).is_ok());
    let v = alloc::string::ToString::to_string(&json!([v]));
    assert!(crate::json::Tape::default().read(&v).is_none());
}

#[test]
fn schema_shape_is_checked() {
    assert!(check_schema(&json!({"type": "object"})).is_ok());
    assert!(check_schema(&json!({"type": "string"})).is_err());
    assert!(check_schema(&json!({"type": "object", "required": [1]})).is_err());
}

#[test]
fn keyword_messages_and_rules() {
    let cases = [
        (
            json!({"const": {"a": 1}}),
            json!({"a": 2}),
            "$: must equal {\"a\":1}",
        ),
        (json!({"exclusiveMinimum": 1}), json!(1), "$: must be > 1"),
        (
            json!({"exclusiveMaximum": 1.5}),
            json!(2),
            "$: must be < 1.5",
        ),
        (
            json!({"type": ["string", "null"]}),
            json!(1),
            "$: expected [\"string\",\"null\"], got number",
        ),
        (json!({"type": []}), json!(1), "$: expected [], got number"),
        (
            json!({"minItems": 2}),
            json!([1]),
            "$: needs at least 2 items",
        ),
        (
            json!({"maxLength": 1}),
            json!("\u{e9}\u{e9}"),
            "$: allows at most 1 characters",
        ),
        (json!(false), json!(1), "$: not allowed"),
        (
            json!({"properties": {"a": false}}),
            json!({"a": 1}),
            "$.a: not allowed",
        ),
        (
            json!({"additionalProperties": {"type": "string"}}),
            json!({"b": 1}),
            "$.b: expected string, got number",
        ),
        (
            json!({"allOf": [{"minimum": 0}, {"maximum": 5}]}),
            json!(6),
            "$: must be <= 5",
        ),
        (
            json!({"type": "integer", "enum": [1, 2], "minimum": 3}),
            json!(1),
            "$: must be >= 3",
        ),
    ];
    for (schema, value, want) in cases {
        assert_eq!(
            validate(&schema, &value),
            Err(String::from(want)),
            "{schema}"
        );
    }
    let accepted = [
        (json!({"type": "whatever"}), json!(1)),
        (json!({"type": ["string", "thing"]}), json!(1)),
        (json!({"type": 7, "minimum": "x", "enum": 3}), json!(-1)),
        (json!({"type": "number"}), json!(3)),
        (json!({"type": "integer"}), json!(3.0)),
        (json!({"minLength": 5}), json!(3)),
        (
            json!({"properties": {"a": {"type": "string"}}}),
            json!({"b": 1}),
        ),
        (json!({"additionalProperties": true}), json!({"b": 1})),
        (json!({"const": null}), json!(null)),
        (json!({"required": ["a"]}), json!([])),
    ];
    for (schema, value) in accepted {
        assert_eq!(validate(&schema, &value), Ok(()), "{schema} {value}");
    }
}

#[test]
fn required_properties_are_found_in_the_pass_that_checks_the_members() {
    let missing = |name: &str| Err(format!("$: missing required property \"{name}\""));
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["b", "a"],
    });
    assert_eq!(validate(&schema, &json!({"a": "x", "b": 1})), Ok(()));
    assert_eq!(validate(&schema, &json!({})), missing("b"));
    assert_eq!(validate(&schema, &json!({"b": 1})), missing("a"));
    // A missing property is reported before a member that fails, wherever they are.
    assert_eq!(validate(&schema, &json!({"a": 1})), missing("b"));
    assert_eq!(
        validate(&schema, &json!({"a": 1, "b": 2})),
        Err(String::from("$.a: expected string, got number"))
    );
    // A required name without a schema of its own.
    let loose = json!({"properties": {"a": {}}, "required": ["a", "z"]});
    assert_eq!(validate(&loose, &json!({"a": 1})), missing("z"));
    assert_eq!(validate(&loose, &json!({"z": 1})), missing("a"));
    // Required properties past the 64th are looked up.
    let mut props = serde_json::Map::new();
    for i in 0..70 {
        props.insert(format!("p{i:02}"), json!({"type": "integer"}));
    }
    let many = json!({"properties": props, "required": ["p01", "p68"]});
    assert_eq!(validate(&many, &json!({"p01": 1, "p68": 2})), Ok(()));
    assert_eq!(validate(&many, &json!({"p01": 1})), missing("p68"));
    assert_eq!(
        validate(&many, &json!({"p68": 1, "p69": "x"})),
        missing("p01")
    );
}

#[test]
fn integers_are_told_from_their_text_as_written() {
    let schema = Schema::compile(&json!({"type": "integer"}));
    let verdict = |text: &str| {
        let mut tape = crate::json::Tape::default();
        schema.validate(tape.read(text).expect("readable")).is_ok()
    };
    for text in [
        "0",
        "-0",
        "12",
        "-12",
        "123456789012345678901234",
        "1e2",
        "2.0",
    ] {
        assert!(verdict(text), "{text}");
    }
    for text in ["1.5", "-0.25", "1e-2", "\"1\"", "[1]"] {
        assert!(!verdict(text), "{text}");
    }
}

#[test]
fn property_headers_are_listed_in_name_order() {
    let s = Schema::compile(&json!({
        "type": "object",
        "properties": {
            "z": {"type": "string", "x-mcp-header": "Z"},
            "a": {"x-mcp-header": "A"},
            "m": {"type": "string"},
            "n": {"properties": {"deep": {"x-mcp-header": "D"}}}
        }
    }));
    assert_eq!(s.headers().collect::<Vec<_>>(), [("a", "A"), ("z", "Z")]);
}

#[test]
fn bounds_compare_integers_exactly_and_other_numbers_as_floats() {
    // 2^53 and 2^53 + 1 are one float: only an exact comparison tells them apart.
    let max = json!({"maximum": 9_007_199_254_740_992u64});
    assert_eq!(validate(&max, &json!(9_007_199_254_740_992u64)), Ok(()));
    assert_eq!(
        validate(&max, &json!(9_007_199_254_740_993u64)),
        Err(String::from("$: must be <= 9007199254740992"))
    );
    // Signed and unsigned integers meet; each keyword's own edge.
    assert_eq!(validate(&json!({"minimum": -3}), &json!(u64::MAX)), Ok(()));
    assert_eq!(validate(&json!({"minimum": -3}), &json!(-3)), Ok(()));
    assert_eq!(
        validate(&json!({"exclusiveMinimum": -3}), &json!(-3)),
        Err(String::from("$: must be > -3"))
    );
    assert_eq!(
        validate(&json!({"exclusiveMaximum": 0}), &json!(-1)),
        Ok(())
    );
    assert_eq!(
        validate(&json!({"exclusiveMaximum": 0}), &json!(0)),
        Err(String::from("$: must be < 0"))
    );
    // A fraction on either side is compared as a float.
    assert_eq!(validate(&json!({"maximum": 1.5}), &json!(1)), Ok(()));
    assert_eq!(
        validate(&json!({"maximum": 1}), &json!(1.25)),
        Err(String::from("$: must be <= 1"))
    );
    assert_eq!(validate(&json!({"minimum": 0.5}), &json!(0.75)), Ok(()));
}
