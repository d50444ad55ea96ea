//! Fixture tools with fixed answers, progress, logging and header bindings.

use super::PNG;
use alloc::boxed::Box;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{
    Annotations, Content, ErrorCode, InputRequired, LogLevel, Started, Step, StepIo, ToolCall,
    ToolDef, ToolError, ToolOutput, ToolRun,
};
use serde_json::json;

const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;

/// The suite's JSON Schema 2020-12 tool: the keywords must survive listing unchanged.
const SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;

/// A tool whose `region` argument is mirrored in the `Mcp-Param-Region` header.
const X_MCP_HEADER: &str =
    r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}"#;

fn def<C>(
    name: &'static str,
    description: &'static str,
    start: rpc::mcp::StartFn<C>,
) -> ToolDef<C> {
    ToolDef {
        name,
        title: None,
        description,
        input_schema: NO_ARGS,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[],
        start,
    }
}

pub(crate) fn table<C: 'static>() -> Vec<ToolDef<C>> {
    let mut t = vec![
        def(
            "test_simple_text",
            "Returns a simple text response",
            simple_text::<C>,
        ),
        def("test_image_content", "Returns an image", image::<C>),
        def("test_audio_content", "Returns audio", audio::<C>),
        def(
            "test_embedded_resource",
            "Returns an embedded resource",
            embedded::<C>,
        ),
        def(
            "test_multiple_content_types",
            "Returns text, image and resource",
            mixed::<C>,
        ),
        def(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100",
            progress::<C>,
        ),
        def(
            "test_tool_with_logging",
            "Logs three info messages",
            logging::<C>,
        ),
        def(
            "test_logging_tool",
            "Logs three info messages",
            logging::<C>,
        ),
        def("test_error_handling", "Always fails", error::<C>),
        def(
            "test_missing_capability",
            "Needs the sampling capability",
            simple_text::<C>,
        ),
        def(
            "test_streaming_elicitation",
            "Asks the client for input",
            streaming_elicitation::<C>,
        ),
        def(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            simple_text::<C>,
        ),
        def(
            "test_x_mcp_header",
            "Echoes an argument bound to the Mcp-Param-Region header",
            x_header::<C>,
        ),
    ];
    for d in t.iter_mut() {
        match d.name {
            "test_missing_capability" => d.requires = &["sampling"],
            "test_streaming_elicitation" => {
                d.requires = &["elicitation"];
                d.errors = &[ErrorCode::NotSup, ErrorCode::Client];
            }
            "json_schema_2020_12_tool" => d.input_schema = SCHEMA_2020_12,
            "test_x_mcp_header" => d.input_schema = X_MCP_HEADER,
            _ => {}
        }
    }
    t
}

fn simple_text<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Done(ToolOutput::text(
        "This is a simple text response for testing.",
    )))
}

fn image<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Done(ToolOutput::content(vec![Content::image(
        &PNG,
        "image/png",
    )])))
}

/// A short silent 8 kHz mono 8-bit WAV.
fn wav() -> Vec<u8> {
    let samples = 80u32;
    let mut w = Vec::with_capacity(44 + samples as usize);
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&8000u32.to_le_bytes());
    w.extend_from_slice(&1u16.to_le_bytes());
    w.extend_from_slice(&8u16.to_le_bytes());
    w.extend_from_slice(b"data");
    w.extend_from_slice(&samples.to_le_bytes());
    w.resize(44 + samples as usize, 0x80);
    w
}

fn audio<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Done(ToolOutput::content(vec![Content::audio(
        &wav(),
        "audio/wav",
    )])))
}

fn embedded<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let c = Content::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    );
    Ok(Started::Done(ToolOutput::content(vec![c])))
}

fn mixed<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Done(ToolOutput::content(vec![
        Content::text("Multiple content types test:"),
        Content::image(&PNG, "image/png"),
        Content::resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ])))
}

fn error<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let mut out = ToolOutput::text("This tool intentionally returns an error for testing");
    out.is_error = true;
    Ok(Started::Done(out))
}

fn x_header<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let region = call
        .args
        .get("region")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    Ok(Started::Done(ToolOutput::text(format!("region: {region}"))))
}

fn streaming_elicitation<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    if let Some(r) = call.input_responses.and_then(|r| r.get("confirm")) {
        return Ok(Started::Done(ToolOutput::text(format!("confirmed: {r}"))));
    }
    Ok(Started::InputRequired(InputRequired {
        input_requests: json!({"confirm": {"method": "elicitation/create", "params": {
            "message": "Continue?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        }}}),
        request_state: None,
    }))
}

/// Emits its notices `GAP_MS` apart, then answers.
struct Paced {
    next: u32,
    due_ms: u64,
    logging: bool,
}

const GAP_MS: u64 = 50;

impl<C> ToolRun<C> for Paced {
    fn step(&mut self, _: &mut C, io: &mut StepIo<'_>) -> Step<C> {
        if io.now_ms() < self.due_ms {
            return Step::Pending;
        }
        if self.next == 3 {
            let text = if self.logging {
                "Logging tool finished"
            } else {
                "Progress tool finished"
            };
            return Step::Done(ToolOutput::text(text));
        }
        if self.logging {
            let msg = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            let text = msg.get(self.next as usize).copied().unwrap_or("");
            io.log(LogLevel::Info, json!(text));
        } else {
            io.progress(f64::from(self.next * 50), Some(100.0), None);
        }
        self.next += 1;
        self.due_ms = io.now_ms() + GAP_MS;
        Step::Pending
    }
}

fn progress<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Run(Box::new(Paced {
        next: 0,
        due_ms: call.now_ms,
        logging: false,
    })))
}

fn logging<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    Ok(Started::Run(Box::new(Paced {
        next: 0,
        due_ms: call.now_ms,
        logging: true,
    })))
}
