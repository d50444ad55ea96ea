//! Fixture tools for 2026-07-28 `InputRequiredResult` flows. All state travels in
//! `requestState`, tagged with a keyed FNV-1a checksum so that a tampered state is refused.
//! (A test fixture: the tag stops accidental and naive tampering, it is not cryptography.)

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{
    Annotations, ErrorCode, InputRequired, Started, ToolCall, ToolDef, ToolError, ToolOutput,
};
use serde_json::{Map, Value, json};

const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;
const KEY: &[u8] = b"irix7-conformance-fixture";

fn tag(payload: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in KEY.iter().chain(payload.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

pub(crate) fn sign(payload: &str) -> String {
    format!("{payload}.{:016x}", tag(payload))
}

/// The payload of a state whose tag checks out.
pub(crate) fn verify(state: &str) -> Option<&str> {
    let (payload, t) = state.rsplit_once('.')?;
    (format!("{:016x}", tag(payload)) == t).then_some(payload)
}

fn tampered() -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        "requestState failed its integrity check",
    )
}

fn def<C>(name: &'static str, start: rpc::mcp::StartFn<C>) -> ToolDef<C> {
    ToolDef {
        name,
        title: None,
        description: "Asks the client for input before answering (InputRequiredResult)",
        input_schema: NO_ARGS,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::NotSup, ErrorCode::Client],
        start,
    }
}

pub(crate) fn table<C: 'static>() -> Vec<ToolDef<C>> {
    vec![
        def("test_input_required_result_elicitation", elicitation::<C>),
        def("test_input_required_result_sampling", sampling::<C>),
        def("test_input_required_result_list_roots", list_roots::<C>),
        def(
            "test_input_required_result_request_state",
            request_state::<C>,
        ),
        def("test_input_required_result_multiple_inputs", multiple::<C>),
        def("test_input_required_result_multi_round", multi_round::<C>),
        def(
            "test_input_required_result_tampered_state",
            tampered_state::<C>,
        ),
        def("test_input_required_result_capabilities", capabilities::<C>),
    ]
}

pub(crate) fn elicit(message: &str, field: &str, ty: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}
    }})
}

fn sample(text: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    }})
}

fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

fn ask<C>(requests: Value, state: Option<&str>) -> Result<Started<C>, ToolError> {
    Ok(Started::InputRequired(InputRequired {
        input_requests: requests,
        request_state: state.map(sign),
    }))
}

fn done<C>(text: String) -> Result<Started<C>, ToolError> {
    Ok(Started::Done(ToolOutput::text(text)))
}

/// The accepted content of an elicitation answer.
pub(crate) fn accepted<'a>(
    responses: Option<&'a Map<String, Value>>,
    key: &str,
) -> Option<&'a Value> {
    let r = responses?.get(key)?;
    (r.get("action")?.as_str()? == "accept")
        .then(|| r.get("content"))
        .flatten()
}

/// The state's payload: `Ok(None)` when absent, an error when present but tampered.
fn state_payload<'a>(call: &'a ToolCall<'_>) -> Result<Option<&'a str>, ToolError> {
    match call.request_state {
        None => Ok(None),
        Some(s) => verify(s).map(Some).ok_or_else(tampered),
    }
}

fn elicitation<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    match accepted(call.input_responses, "user_name")
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
    {
        Some(name) => done(format!("Hello, {name}!")),
        None => ask(
            json!({"user_name": elicit("What is your name?", "name", "string")}),
            None,
        ),
    }
}

fn sampling<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let answer = call.input_responses.and_then(|r| r.get("capital_question"));
    match answer
        .and_then(|a| a.get("content"))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
    {
        Some(text) => done(format!("Sampling response: {text}")),
        None => ask(
            json!({"capital_question": sample("What is the capital of France?", 100)}),
            None,
        ),
    }
}

fn list_roots<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let answer = call.input_responses.and_then(|r| r.get("client_roots"));
    match answer
        .and_then(|a| a.get("roots"))
        .and_then(Value::as_array)
    {
        Some(list) => {
            let uris: Vec<&str> = list.iter().filter_map(|r| r.get("uri")?.as_str()).collect();
            done(format!("Client roots: {}", uris.join(", ")))
        }
        None => ask(json!({"client_roots": roots()}), None),
    }
}

fn request_state<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let payload = state_payload(call)?;
    let answered = call
        .input_responses
        .is_some_and(|r| r.contains_key("confirm"));
    if answered && payload == Some("confirm") {
        return done(String::from("state-ok: requestState verified"));
    }
    ask(
        json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
        Some("confirm"),
    )
}

fn multiple<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let payload = state_payload(call)?;
    let keys = ["user_name", "greeting", "client_roots"];
    let all = call
        .input_responses
        .is_some_and(|r| keys.iter().all(|k| r.contains_key(*k)));
    if all && payload == Some("multiple") {
        return done(String::from("Received all three inputs"));
    }
    let requests = json!({
        "user_name": elicit("What is your name?", "name", "string"),
        "greeting": sample("Generate a greeting", 50),
        "client_roots": roots(),
    });
    ask(requests, Some("multiple"))
}

fn multi_round<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let payload = state_payload(call)?;
    let step1 = || {
        ask(
            json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
            Some("round1"),
        )
    };
    match payload {
        Some("round1") => match accepted(call.input_responses, "step1")
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
        {
            Some(name) => {
                let next = format!("round2:{name}");
                ask(
                    json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                    Some(&next),
                )
            }
            None => step1(),
        },
        Some(p) if p.starts_with("round2:") => {
            let name = p.trim_start_matches("round2:");
            match accepted(call.input_responses, "step2")
                .and_then(|c| c.get("color"))
                .and_then(Value::as_str)
            {
                Some(color) => done(format!("{name} likes {color}")),
                None => ask(
                    json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                    Some(p),
                ),
            }
        }
        _ => step1(),
    }
}

fn tampered_state<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    match state_payload(call)? {
        Some("tamper-check") if call.input_responses.is_some() => {
            done(String::from("state verified"))
        }
        _ => ask(
            json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
            Some("tamper-check"),
        ),
    }
}

fn capabilities<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    if call.input_responses.is_some_and(|r| !r.is_empty()) {
        return done(String::from("Thanks for the input"));
    }
    let caps = call.client_capabilities;
    let mut requests = Map::new();
    if caps.get("elicitation").is_some() {
        requests.insert(
            "user_name".into(),
            elicit("What is your name?", "name", "string"),
        );
    }
    if caps.get("sampling").is_some() {
        requests.insert("greeting".into(), sample("Generate a greeting", 50));
    }
    if caps.get("roots").is_some() {
        requests.insert("client_roots".into(), roots());
    }
    if requests.is_empty() {
        return done(String::from(
            "The client declared no capability to ask through",
        ));
    }
    ask(Value::Object(requests), None)
}

/// The legacy suite's client-input tools; in a legacy session the server bridges their
/// input requests to server-initiated requests on the SSE stream.
pub(crate) fn legacy_table<C: 'static>() -> Vec<ToolDef<C>> {
    let mut t = vec![
        def("test_sampling", sampling_prompt::<C>),
        def("test_elicitation", elicitation_message::<C>),
        def("test_elicitation_sep1034_defaults", defaults::<C>),
        def("test_elicitation_sep1330_enums", enums::<C>),
    ];
    for d in t.iter_mut() {
        d.input_schema = match d.name {
            "test_sampling" => {
                r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#
            }
            "test_elicitation" => {
                r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#
            }
            _ => NO_ARGS,
        };
    }
    t
}

fn need(call: &ToolCall<'_>, capability: &str) -> Result<(), ToolError> {
    match call.client_capabilities.get(capability) {
        Some(_) => Ok(()),
        None => Err(ToolError::new(
            ErrorCode::NotSup,
            format!("the client has no {capability} capability"),
        )),
    }
}

fn sampling_prompt<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    need(call, "sampling")?;
    let answer = call.input_responses.and_then(|r| r.get("llm"));
    if let Some(a) = answer {
        let text = a
            .get("content")
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return done(format!("LLM response: {text}"));
    }
    let prompt = call
        .args
        .get("prompt")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    ask(json!({"llm": sample(&prompt, 100)}), None)
}

fn elicitation_result<C>(call: &ToolCall<'_>) -> Option<Result<Started<C>, ToolError>> {
    let a = call.input_responses?.get("user")?;
    let action = a.get("action").and_then(Value::as_str).unwrap_or("cancel");
    let content = a.get("content").cloned().unwrap_or(Value::Null);
    Some(done(format!(
        "Elicitation completed: action={action}, content={content}"
    )))
}

fn elicitation_message<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    need(call, "elicitation")?;
    if let Some(a) = call.input_responses.and_then(|r| r.get("user")) {
        let action = a.get("action").and_then(Value::as_str).unwrap_or("cancel");
        let content = a.get("content").cloned().unwrap_or(Value::Null);
        return done(format!("User response: action={action}, content={content}"));
    }
    let message = call
        .args
        .get("message")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let schema = json!({"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}
    }, "required": ["username", "email"]});
    ask(
        json!({"user": {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}}),
        None,
    )
}

fn defaults<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    need(call, "elicitation")?;
    if let Some(r) = elicitation_result(call) {
        return r;
    }
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}
    }});
    ask(
        json!({"user": {"method": "elicitation/create", "params": {"message": "Defaults for every primitive type", "requestedSchema": schema}}}),
        None,
    )
}

fn enums<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    need(call, "elicitation")?;
    if let Some(r) = elicitation_result(call) {
        return r;
    }
    let schema = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}}
    }});
    ask(
        json!({"user": {"method": "elicitation/create", "params": {"message": "Every enum variant", "requestedSchema": schema}}}),
        None,
    )
}
