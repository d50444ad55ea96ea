//! Consent for destructive tools (`mcp.confirm`): with [`crate::mcp::guard::config::Config::confirm`] set, a call of
//! a tool annotated destructive first asks the client, through `elicitation/create`, whether
//! the user allows it; the tool starts only on an explicit yes. A client that cannot be asked
//! (no `elicitation` capability, or a legacy request without SSE) is refused: it fails closed.
//!
//! This is a safeguard for the person behind an agent, not an authentication: a client that
//! answers for itself can always say yes.

use crate::json::ValueRef;
use crate::mcp::guard::arg_summary::summarise_args;
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::tool::{InputRequired, Started, ToolCall, ToolDef, ToolError};
use alloc::format;
use alloc::string::String;
use serde_json::{Map, Value};

/// The key of the consent request among a call's input requests (and of its answer among the
/// `inputResponses`).
pub const KEY: &str = "irix7.confirm";

/// Reads `mcp.confirm`: unset, blank, `off`, `no`, `false` or `0` is off; `on`, `yes`,
/// `true`, `1` or `destructive` is on. Anything else is `None`, which the module treats as on
/// (failing closed: a typo must not drop the safeguard).
pub fn parse(value: Option<&str>) -> Option<bool> {
    match value.map(str::trim).unwrap_or("") {
        "" | "off" | "no" | "false" | "0" => Some(false),
        "on" | "yes" | "true" | "1" | "destructive" => Some(true),
        _ => None,
    }
}

/// What the client answered to the consent request, if it was asked.
enum Consent {
    NotAsked,
    Given,
    Refused,
}

fn consent(responses: Option<&Map<String, Value>>) -> Consent {
    let Some(answer) = responses.and_then(|r| r.get(KEY)) else {
        return Consent::NotAsked;
    };
    let accepted = answer.get("action").and_then(Value::as_str) == Some("accept");
    let yes = answer.get("content").and_then(|c| c.get("confirm")) == Some(&Value::Bool(true));
    if accepted && yes {
        Consent::Given
    } else {
        Consent::Refused
    }
}

/// The consent request, but for its message (`params.message`). Parsed when needed from this
/// text: the JSON parser is in the image anyway, and a `json!` tree this size is not small code.
const REQUEST: &str = r#"{"irix7.confirm":{"method":"elicitation/create","params":{
  "message":"",
  "requestedSchema":{"type":"object","required":["confirm"],
    "properties":{"confirm":{"type":"boolean","title":"Allow","default":false}}}}}}"#;

/// The consent request for a call of `tool` with `args`: what it will do, in the words of the
/// audit trail (no data).
fn request(tool: &str, args: ValueRef<'_>) -> InputRequired {
    let message = format!(
        "Allow the destructive tool {tool} {} on this machine?",
        summarise_args(args)
    );
    let mut input_requests = crate::json::read_value(REQUEST).unwrap_or(Value::Null);
    let message_slot = input_requests
        .get_mut(KEY)
        .and_then(|r| r.get_mut("params"))
        .and_then(|p| p.get_mut("message"));
    if let Some(m) = message_slot {
        *m = Value::from(message);
    }
    InputRequired {
        input_requests,
        request_state: None,
    }
}

/// Starts a call of `def`, asking for consent first when `gated`: without an answer yet the
/// call asks; a refusal is `E_PERM`; consent starts the tool (which ignores the extra input
/// response).
pub(crate) fn start<C>(
    def: &ToolDef<C>,
    gated: bool,
    ctx: &mut C,
    call: &ToolCall<'_>,
) -> Result<Started<C>, ToolError> {
    if gated {
        match consent(call.input_responses) {
            Consent::NotAsked => return Ok(Started::InputRequired(request(def.name, call.args))),
            Consent::Refused => {
                let why = format!("{} was not allowed by the user (mcp.confirm)", def.name);
                return Err(ToolError::new(ErrorCode::Perm, why));
            }
            Consent::Given => {}
        }
    }
    (def.start)(ctx, call)
}

/// The refusal of a gated call from a client that declared no `elicitation` capability.
pub(crate) fn cannot_ask(tool: &str) -> ToolError {
    let why = format!(
        "{tool} needs the user's consent (mcp.confirm) and this client cannot be asked \
         (no elicitation capability)"
    );
    ToolError::new(ErrorCode::Perm, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_parse_and_unknown_ones_are_errors() {
        for off in [
            None,
            Some(""),
            Some(" off "),
            Some("0"),
            Some("no"),
            Some("false"),
        ] {
            assert_eq!(parse(off), Some(false), "{off:?}");
        }
        for on in ["on", "1", "yes", "true", "destructive"] {
            assert_eq!(parse(Some(on)), Some(true), "{on}");
        }
        for bad in ["maybe", "ON", "destructive,write"] {
            assert_eq!(parse(Some(bad)), None, "{bad}");
        }
    }

    #[test]
    fn the_request_is_an_elicitation_with_a_boolean_and_the_message() {
        let mut tape = crate::json::Tape::default();
        let args = tape.read(r#"{"path":"/tmp/x"}"#).unwrap();
        let r = request("fs.remove", args).input_requests;
        let ask = &r[KEY];
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(
            ask["params"]["message"],
            "Allow the destructive tool fs.remove {path=\"/tmp/x\"} on this machine?"
        );
        // A padded path is asked about as the target it names.
        let padded = format!(r#"{{"path":"{}/../boot//unix"}}"#, "/.".repeat(50));
        let args = tape.read(&padded).unwrap();
        let r = request("fs.remove", args).input_requests;
        assert_eq!(
            r[KEY]["params"]["message"],
            "Allow the destructive tool fs.remove {path=\"/boot/unix\"} on this machine?"
        );
        let schema = &ask["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
        assert_eq!(schema["required"], json!(["confirm"]));
    }

    #[test]
    fn only_an_accepted_yes_is_consent() {
        let answer = |v: Value| {
            let mut m = Map::new();
            m.insert(KEY.into(), v);
            m
        };
        assert!(matches!(consent(None), Consent::NotAsked));
        assert!(matches!(consent(Some(&Map::new())), Consent::NotAsked));
        let yes = answer(json!({"action": "accept", "content": {"confirm": true}}));
        assert!(matches!(consent(Some(&yes)), Consent::Given));
        for no in [
            json!({"action": "accept", "content": {"confirm": false}}),
            json!({"action": "accept", "content": {}}),
            json!({"action": "accept", "content": {"confirm": "true"}}),
            json!({"action": "decline"}),
            json!({"action": "cancel", "content": {"confirm": true}}),
            json!({}),
        ] {
            assert!(
                matches!(consent(Some(&answer(no.clone()))), Consent::Refused),
                "{no}"
            );
        }
    }
}
