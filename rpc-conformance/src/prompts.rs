//! Fixture prompts.

use super::PNG;
use super::mrtr::{accepted, elicit};
use alloc::borrow::Cow;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use base64::Engine;
use rpc::mcp::{InputRequired, PromptArg, PromptCall, PromptDef, PromptReply, ToolError};
use serde_json::{Value, json};

pub(crate) fn table<C: 'static>() -> Vec<PromptDef<C>> {
    vec![
        PromptDef {
            name: "test_simple_prompt",
            title: None,
            description: "A prompt without arguments",
            arguments: &[],
            get: simple::<C>,
        },
        PromptDef {
            name: "test_prompt_with_arguments",
            title: None,
            description: "A prompt with two arguments",
            arguments: &[
                PromptArg {
                    name: "arg1",
                    description: "First test argument",
                    required: true,
                },
                PromptArg {
                    name: "arg2",
                    description: "Second test argument",
                    required: true,
                },
            ],
            get: with_arguments::<C>,
        },
        PromptDef {
            name: "test_prompt_with_embedded_resource",
            title: None,
            description: "A prompt embedding a resource",
            arguments: &[PromptArg {
                name: "resourceUri",
                description: "URI of the resource to embed",
                required: true,
            }],
            get: embedded::<C>,
        },
        PromptDef {
            name: "test_prompt_with_image",
            title: None,
            description: "A prompt with an image",
            arguments: &[],
            get: image::<C>,
        },
        PromptDef {
            name: "test_input_required_result_prompt",
            title: None,
            description: "A prompt that asks the client for context first",
            arguments: &[],
            get: input_required::<C>,
        },
    ]
}

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn arg<'a>(call: &PromptCall<'a>, name: &str) -> Cow<'a, str> {
    call.args
        .get(name)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
}

fn simple<C>(_: &mut C, _: &PromptCall<'_>) -> Result<PromptReply, ToolError> {
    Ok(PromptReply::Done(
        json!({"messages": [user(text("This is a simple prompt for testing."))]}),
    ))
}

fn with_arguments<C>(_: &mut C, call: &PromptCall<'_>) -> Result<PromptReply, ToolError> {
    let t = format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        arg(call, "arg1"),
        arg(call, "arg2")
    );
    Ok(PromptReply::Done(json!({"messages": [user(text(&t))]})))
}

fn embedded<C>(_: &mut C, call: &PromptCall<'_>) -> Result<PromptReply, ToolError> {
    let resource = json!({"type": "resource", "resource": {
        "uri": arg(call, "resourceUri"), "mimeType": "text/plain",
        "text": "Embedded resource content for testing."}});
    Ok(PromptReply::Done(json!({"messages": [
        user(resource),
        user(text("Please process the embedded resource above."))
    ]})))
}

fn image<C>(_: &mut C, _: &PromptCall<'_>) -> Result<PromptReply, ToolError> {
    let data = base64::engine::general_purpose::STANDARD.encode(PNG);
    Ok(PromptReply::Done(json!({"messages": [
        user(json!({"type": "image", "data": data, "mimeType": "image/png"})),
        user(text("Please analyze the image above."))
    ]})))
}

fn input_required<C>(_: &mut C, call: &PromptCall<'_>) -> Result<PromptReply, ToolError> {
    match accepted(call.input_responses, "user_context")
        .and_then(|c| c.get("context"))
        .and_then(Value::as_str)
    {
        Some(ctx) => Ok(PromptReply::Done(
            json!({"messages": [user(text(&format!("Context: {ctx}")))]}),
        )),
        None => Ok(PromptReply::InputRequired(InputRequired {
            input_requests: json!({"user_context": elicit("What context should the prompt use?", "context", "string")}),
            request_state: None,
        })),
    }
}
