//! The arguments of the tools this peer runs, deserialised as rmcp's `#[tool]` handlers take
//! them (`Parameters<T>` is `serde_json::from_value` into `T`) and checked against the bounds of
//! the module's input schemas (`docs/tools.json`): unknown members refused, as the schemas'
//! `additionalProperties: false` does, types and required members by serde, ranges and lengths
//! by hand (rmcp leaves those to the handler).

use serde::Deserialize;
use serde_json::{Map, Value};

/// What a call may go on to answer.
#[derive(Debug, PartialEq)]
pub enum Checked {
    /// `echo`'s text.
    Echo(String),
    /// One of the tools answering its fixed result.
    Fixed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Echo {
    text: String,
}

/// `status` and `proc.list`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FsStat {
    #[allow(dead_code)] // checked, not used: the result is the fixture's
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // checked, not used: the result is the fixture's
struct FsList {
    path: String,
    limit: Option<u64>,
    offset: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Boot {
    Current,
    Previous,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Encoding {
    Text,
    Base64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // checked, not used: the result is the fixture's
struct SerialRead {
    boot: Option<Boot>,
    encoding: Option<Encoding>,
    max_bytes: Option<u64>,
    offset: Option<u64>,
    until: Option<String>,
    wait_ms: Option<u64>,
}

fn parse<T: for<'de> Deserialize<'de>>(name: &str, args: Map<String, Value>) -> Result<T, String> {
    serde_json::from_value(Value::Object(args)).map_err(|e| format!("E_INVAL: {name}: {e}"))
}

fn within(name: &str, what: &str, v: Option<u64>, min: u64, max: u64) -> Result<(), String> {
    match v {
        Some(v) if !(min..=max).contains(&v) => Err(format!(
            "E_INVAL: {name}: `{what}` must be within {min}..={max}"
        )),
        _ => Ok(()),
    }
}

/// Checks `args` of tool `name` against its input schema.
pub fn check(name: &str, args: Map<String, Value>) -> Result<Checked, String> {
    match name {
        "echo" => {
            let a: Echo = parse(name, args)?;
            if a.text.chars().count() > 65_536 {
                return Err("E_INVAL: echo: `text` is longer than 65536 characters".into());
            }
            Ok(Checked::Echo(a.text))
        }
        "status" | "proc.list" => parse::<NoArguments>(name, args).map(|_| Checked::Fixed),
        "fs.stat" => parse::<FsStat>(name, args).map(|_| Checked::Fixed),
        "fs.list" => {
            let a: FsList = parse(name, args)?;
            within(name, "limit", a.limit, 1, 512)?;
            Ok(Checked::Fixed)
        }
        "serial.read" => {
            let a: SerialRead = parse(name, args)?;
            within(name, "max_bytes", a.max_bytes, 1, 65_536)?;
            within(name, "offset", a.offset, 0, u32::MAX.into())?;
            within(name, "wait_ms", a.wait_ms, 0, 300_000)?;
            let until = a.until.as_ref().map(|u| u.chars().count() as u64);
            within(name, "until", until, 1, 256)?;
            Ok(Checked::Fixed)
        }
        _ => Err(format!("E_NOTSUP: {name} is only listed by this peer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> Result<Checked, String> {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        check(name, args)
    }

    #[test]
    fn the_bench_calls_pass() {
        assert_eq!(
            call("echo", json!({"text": "hello"})),
            Ok(Checked::Echo("hello".into()))
        );
        assert_eq!(call("status", json!({})), Ok(Checked::Fixed));
        assert_eq!(call("proc.list", json!({})), Ok(Checked::Fixed));
        assert_eq!(
            call("fs.stat", json!({"path": "/etc/motd"})),
            Ok(Checked::Fixed)
        );
        assert_eq!(call("fs.list", json!({"path": "/"})), Ok(Checked::Fixed));
        assert_eq!(
            call("serial.read", json!({"offset": 4096, "max_bytes": 1024})),
            Ok(Checked::Fixed)
        );
    }

    #[test]
    fn what_the_schemas_refuse_is_refused() {
        assert!(call("echo", json!({})).is_err());
        assert!(call("echo", json!({"text": 1})).is_err());
        assert!(call("echo", json!({"text": "x".repeat(65_537)})).is_err());
        assert!(call("status", json!({"verbose": true})).is_err());
        assert!(call("fs.stat", json!({})).is_err());
        assert!(call("fs.list", json!({"path": "/", "limit": 0})).is_err());
        assert!(call("fs.list", json!({"path": "/", "limit": 513})).is_err());
        assert!(call("serial.read", json!({"max_bytes": 0})).is_err());
        assert!(call("serial.read", json!({"max_bytes": 65_537})).is_err());
        assert!(call("serial.read", json!({"offset": -1})).is_err());
        assert!(call("serial.read", json!({"offset": 1u64 << 32})).is_err());
        assert!(call("serial.read", json!({"until": ""})).is_err());
        assert!(call("serial.read", json!({"encoding": "hex"})).is_err());
        assert!(call("serial.read", json!({"boot": "next"})).is_err());
        assert!(call("screen.capture", json!({})).is_err());
    }
}
