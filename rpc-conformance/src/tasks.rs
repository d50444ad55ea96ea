//! Fixture tools of the tasks extension's scenarios (`tasks-*`): a sync `greet`, and tools
//! that run long (`slow_compute`), fail as a tool (`failing_job`) or as a protocol
//! (`protocol_error_job`), and ask for input on the task (`confirm_delete`, `multi_input`) or
//! before it (`test_tool_with_task`).

use crate::mrtr::{accepted, elicit};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{
    Annotations, ErrorCode, InputRequired, Started, Step, StepIo, TaskSupport, TaskTool, ToolCall,
    ToolDef, ToolError, ToolOutput, ToolRun,
};
use serde_json::{Value, json};

const NO_ARGS: &str = r#"{"type":"object","properties":{}}"#;

fn def<C>(
    name: &'static str,
    input_schema: &'static str,
    start: rpc::mcp::StartFn<C>,
) -> ToolDef<C> {
    ToolDef {
        name,
        title: None,
        description: "A fixture of the tasks extension's conformance scenarios",
        input_schema,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        requires: &[],
        errors: &[ErrorCode::Client],
        start,
    }
}

pub(crate) fn table<C: 'static>() -> Vec<ToolDef<C>> {
    vec![
        def(
            "greet",
            r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#,
            greet::<C>,
        ),
        def(
            "slow_compute",
            r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":600},"label":{"type":"string"}}}"#,
            slow_compute::<C>,
        ),
        def("failing_job", NO_ARGS, failing_job::<C>),
        def("protocol_error_job", NO_ARGS, protocol_error_job::<C>),
        def(
            "confirm_delete",
            r#"{"type":"object","properties":{"filename":{"type":"string"}}}"#,
            confirm_delete::<C>,
        ),
        def("multi_input", NO_ARGS, multi_input::<C>),
        def("test_tool_with_task", NO_ARGS, tool_with_task::<C>),
    ]
}

/// How the fixtures take part in the extension.
pub(crate) const TASK_TOOLS: &[TaskTool] = &[
    TaskTool {
        name: "slow_compute",
        support: TaskSupport::Optional,
    },
    TaskTool {
        name: "failing_job",
        support: TaskSupport::Required,
    },
    TaskTool {
        name: "protocol_error_job",
        support: TaskSupport::Optional,
    },
    TaskTool {
        name: "confirm_delete",
        support: TaskSupport::InputInTask,
    },
    TaskTool {
        name: "multi_input",
        support: TaskSupport::InputInTask,
    },
    TaskTool {
        name: "test_tool_with_task",
        support: TaskSupport::Optional,
    },
];

fn greet<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let name = call
        .args
        .get("name")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    Ok(Started::Done(ToolOutput::text(format!("Hello, {name}!"))))
}

/// How a [`Timed`] run ends.
enum End {
    Text(String),
    ToolError,
    Protocol,
}

/// Waits until a deadline, then ends.
struct Timed {
    until_ms: Option<u64>,
    wait_ms: u64,
    end: Option<End>,
}

impl<C> ToolRun<C> for Timed {
    fn step(&mut self, _: &mut C, io: &mut StepIo<'_>) -> Step<C> {
        let until = *self
            .until_ms
            .get_or_insert(io.now_ms().saturating_add(self.wait_ms));
        if io.now_ms() < until {
            return Step::Pending;
        }
        match self.end.take() {
            Some(End::Text(t)) => Step::Done(ToolOutput::text(t)),
            Some(End::ToolError) => Step::Failed(ToolError::new(
                ErrorCode::Client,
                "failing_job always fails",
            )),
            _ => Step::Aborted(ToolError::new(
                ErrorCode::Internal,
                "protocol_error_job always faults",
            )),
        }
    }
}

fn timed<C>(wait_ms: u64, end: End) -> Result<Started<C>, ToolError> {
    Ok(Started::Run(Box::new(Timed {
        until_ms: None,
        wait_ms,
        end: Some(end),
    })))
}

fn slow_compute<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let seconds = call
        .args
        .get("seconds")
        .and_then(|v| v.as_f64())
        .unwrap_or(1.0);
    let label = call
        .args
        .get("label")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let text = format!("slow_compute {label}: done after {seconds} s");
    if seconds <= 0.0 {
        return Ok(Started::Done(ToolOutput::text(text)));
    }
    timed((seconds * 1000.0) as u64, End::Text(text))
}

fn failing_job<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    timed(1000, End::ToolError)
}

fn protocol_error_job<C>(_: &mut C, _: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    timed(1000, End::Protocol)
}

fn confirm_delete<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let file = call
        .args
        .get("filename")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    match accepted(call.input_responses, "confirm") {
        Some(_) => Ok(Started::Done(ToolOutput::text(format!("Deleted {file}")))),
        None => Ok(Started::InputRequired(InputRequired {
            input_requests: json!({"confirm": elicit(&format!("Delete {file}?"), "confirm", "boolean")}),
            request_state: None,
        })),
    }
}

fn multi_input<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let name = |k| {
        accepted(call.input_responses, k)
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
    };
    match (name("first"), name("second")) {
        (Some(a), Some(b)) => Ok(Started::Done(ToolOutput::text(format!("Got {a} and {b}")))),
        _ => Ok(Started::InputRequired(InputRequired {
            input_requests: json!({
                "first": elicit("First name?", "name", "string"),
                "second": elicit("Second name?", "name", "string"),
            }),
            request_state: None,
        })),
    }
}

fn tool_with_task<C>(_: &mut C, call: &ToolCall<'_>) -> Result<Started<C>, ToolError> {
    let name = call
        .input_responses
        .and_then(|r| r.values().next())
        .and_then(|r| r.get("content"))
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str);
    match name {
        Some(n) => timed(500, End::Text(format!("Hello, {n}! (from a task)"))),
        None => Ok(Started::InputRequired(InputRequired {
            input_requests: json!({"user_name": elicit("What is your name?", "name", "string")}),
            request_state: None,
        })),
    }
}
