//! A small JSON Schema validator for tool arguments and structured results: `type`,
//! `properties`, `required`, `additionalProperties`, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `items`, `minItems`,
//! `maxItems`, `allOf`, `anyOf`, `oneOf`. Other keywords are ignored (accepted), which is
//! what a validator that does not know them must do.

use alloc::format;
use alloc::string::String;
use serde_json::{Map, Value};

/// Nesting limit for schema and value walks; deeper input is rejected, not recursed into.
const MAX_DEPTH: usize = 32;

/// Checks `value` against `schema`. The error names the failing location (`$.a.b[2]`).
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    // Room for the usual depth of a path, so building it does not reallocate.
    let mut path = String::with_capacity(64);
    path.push('$');
    check(schema, value, &mut path, 0)
}

/// Checks that a schema uses only shapes this validator understands where it matters
/// (keywords hold values of the right JSON type), so bad tables fail at registration.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(s) = schema else {
        return Err(String::from("schema must be an object"));
    };
    if s.get("type").and_then(Value::as_str) != Some("object") {
        return Err(String::from("schema type must be \"object\""));
    }
    if let Some(p) = s.get("properties")
        && !p.is_object()
    {
        return Err(String::from("properties must be an object"));
    }
    if let Some(r) = s.get("required")
        && !r.as_array().is_some_and(|a| a.iter().all(Value::is_string))
    {
        return Err(String::from("required must be an array of strings"));
    }
    Ok(())
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64()
                    || n.is_u64()
                    || n.as_f64()
                        .is_some_and(|f| f.abs() < 9.0e15 && (f as i64) as f64 == f)
            }
            _ => false,
        },
        _ => true,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(schema: &Value, value: &Value, path: &mut String, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{path}: nested too deeply"));
    }
    let s = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{path}: not allowed")),
        Value::Object(s) => s,
        _ => return Ok(()),
    };
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(t, value),
            Value::Array(ts) => ts
                .iter()
                .any(|t| t.as_str().is_some_and(|t| type_matches(t, value))),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "{path}: expected {}, got {}",
                type_label(t),
                type_name(value)
            ));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.iter().any(|o| o == value)
    {
        return Err(format!("{path}: not one of the allowed values"));
    }
    if let Some(c) = s.get("const")
        && c != value
    {
        return Err(format!("{path}: must equal {c}"));
    }
    match value {
        Value::Number(n) => check_number(s, n.as_f64().unwrap_or(f64::NAN), path)?,
        Value::String(text) => check_string(s, text, path)?,
        Value::Array(items) => {
            check_count(s, "minItems", "maxItems", items.len(), "items", path)?;
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    let mark = path.len();
                    path.push_str(&format!("[{i}]"));
                    check(item_schema, item, path, depth + 1)?;
                    path.truncate(mark);
                }
            }
        }
        Value::Object(obj) => check_object(s, obj, path, depth)?,
        _ => {}
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            check(sub, value, path, depth + 1)?;
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf")
        && !any
            .iter()
            .any(|sub| check(sub, value, &mut path.clone(), depth + 1).is_ok())
    {
        return Err(format!("{path}: matches none of anyOf"));
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let n = one
            .iter()
            .filter(|sub| check(sub, value, &mut path.clone(), depth + 1).is_ok())
            .count();
        if n != 1 {
            return Err(format!(
                "{path}: must match exactly one of oneOf (matches {n})"
            ));
        }
    }
    Ok(())
}

fn type_label(t: &Value) -> String {
    match t {
        Value::String(t) => t.clone(),
        other => format!("{other}"),
    }
}

/// Checks the numeric bounds. Messages show each bound as the schema wrote it (serde_json's
/// own number formatting), so the module needs no float formatting of its own.
fn check_number(s: &Map<String, Value>, n: f64, path: &str) -> Result<(), String> {
    type Rule = (&'static str, fn(f64, f64) -> bool, &'static str);
    const RULES: [Rule; 4] = [
        ("minimum", |n, b| n >= b, ">="),
        ("maximum", |n, b| n <= b, "<="),
        ("exclusiveMinimum", |n, b| n > b, ">"),
        ("exclusiveMaximum", |n, b| n < b, "<"),
    ];
    for (key, holds, op) in RULES {
        if let Some(Value::Number(bound)) = s.get(key)
            && let Some(b) = bound.as_f64()
            && !holds(n, b)
        {
            return Err(format!("{path}: must be {op} {bound}"));
        }
    }
    Ok(())
}

fn check_string(s: &Map<String, Value>, text: &str, path: &str) -> Result<(), String> {
    check_count(
        s,
        "minLength",
        "maxLength",
        text.chars().count(),
        "characters",
        path,
    )
}

fn check_count(
    s: &Map<String, Value>,
    min_key: &str,
    max_key: &str,
    n: usize,
    what: &str,
    path: &str,
) -> Result<(), String> {
    let n = n as u64;
    if let Some(min) = s.get(min_key).and_then(Value::as_u64)
        && n < min
    {
        return Err(format!("{path}: needs at least {min} {what}"));
    }
    if let Some(max) = s.get(max_key).and_then(Value::as_u64)
        && n > max
    {
        return Err(format!("{path}: allows at most {max} {what}"));
    }
    Ok(())
}

fn check_object(
    s: &Map<String, Value>,
    obj: &Map<String, Value>,
    path: &mut String,
    depth: usize,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = s.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                return Err(format!("{path}: missing required property \"{name}\""));
            }
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties");
    for (key, v) in obj {
        let mark = path.len();
        path.push('.');
        path.push_str(key);
        match props.and_then(|p| p.get(key)) {
            Some(sub) => check(sub, v, path, depth + 1)?,
            None => match additional {
                Some(Value::Bool(false)) => return Err(format!("{path}: unknown property")),
                Some(sub @ Value::Object(_)) => check(sub, v, path, depth + 1)?,
                _ => {}
            },
        }
        path.truncate(mark);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let mut v = json!([]);
        for _ in 0..40 {
            v = json!([v]);
        }
        assert!(
            validate(&deep, &v)
                .unwrap_err()
                .contains("nested too deeply")
        );
    }

    #[test]
    fn schema_shape_is_checked() {
        assert!(check_schema(&json!({"type": "object"})).is_ok());
        assert!(check_schema(&json!({"type": "string"})).is_err());
        assert!(check_schema(&json!({"type": "object", "required": [1]})).is_err());
    }
}
