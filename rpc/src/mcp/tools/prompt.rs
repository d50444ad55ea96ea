//! Prompts: the product has none, but `prompts/list` and `prompts/get` exist so clients and
//! the conformance fixtures find a complete server.

use crate::json::ValueRef;
use crate::jsonrpc::{self, RpcError};
use crate::mcp::guard::request::{Cx, Era, arguments, input_unsupported, retry_params};
use crate::mcp::wire::tool::{InputRequired, ToolError};
use alloc::format;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Map, Value};

/// One argument of a prompt.
#[derive(Clone, Copy, Debug)]
pub struct PromptArg {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
}

/// A `prompts/get` request as the prompt sees it.
pub struct PromptCall<'a> {
    /// An object, read where it lies in the request.
    pub args: ValueRef<'a>,
    pub client_capabilities: &'a Value,
    pub input_responses: Option<&'a Map<alloc::string::String, Value>>,
    pub request_state: Option<&'a str>,
}

/// What rendering a prompt gives.
pub enum PromptReply {
    /// The `GetPromptResult` body (`{messages:[…], description?}`).
    Done(Value),
    /// Client input is needed first (2026-07-28 only).
    InputRequired(InputRequired),
}

/// Renders a prompt.
pub type GetFn<C> = fn(&mut C, &PromptCall<'_>) -> Result<PromptReply, ToolError>;

/// One prompt.
pub struct PromptDef<C> {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    pub arguments: &'static [PromptArg],
    pub get: GetFn<C>,
}

copy_for_any_context!(PromptDef);

impl<C> PromptDef<C> {
    pub(crate) fn listing(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::from(self.name));
        if let Some(t) = self.title {
            m.insert("title".into(), Value::from(t));
        }
        m.insert("description".into(), Value::from(self.description));
        let args: Vec<Value> = self
            .arguments
            .iter()
            .map(|a| serde_json::json!({"name": a.name, "description": a.description, "required": a.required}))
            .collect();
        m.insert("arguments".into(), Value::Array(args));
        Value::Object(m)
    }
}

/// `prompts/get`: the prompt's messages, or (2026-07-28) the input it asks for first.
pub(crate) fn get<C>(
    prompts: &[PromptDef<C>],
    ctx: &RefCell<C>,
    cx: &Cx<'_>,
) -> Result<Value, RpcError> {
    let Some(name) = cx.params.get("name").and_then(|n| n.as_str()) else {
        return Err(RpcError::invalid_params("Invalid params: name is required"));
    };
    let Some(def) = prompts.iter().find(|p| p.name == name).copied() else {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: unknown prompt {name}"
        )));
    };
    let args = arguments(cx.params)?;
    if let Some(a) = def
        .arguments
        .iter()
        .find(|a| a.required && !args.contains_key(a.name))
    {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: missing argument {}",
            a.name
        )));
    }
    let (input_responses, request_state) = retry_params(cx.params)?;
    let call = PromptCall {
        args,
        client_capabilities: cx.caps,
        input_responses: input_responses.as_ref(),
        request_state: request_state.as_deref(),
    };
    let Ok(mut ctx) = ctx.try_borrow_mut() else {
        return Err(RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "E_BUSY: server context in use",
        ));
    };
    let internal = |e: &ToolError| {
        RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            alloc::string::ToString::to_string(e),
        )
    };
    match (def.get)(&mut ctx, &call) {
        Ok(PromptReply::Done(v)) => Ok(v),
        Ok(PromptReply::InputRequired(ir)) if cx.era == Era::Modern => Ok(ir.to_json()),
        Ok(PromptReply::InputRequired(_)) => Err(internal(&input_unsupported())),
        Err(e) => Err(internal(&e)),
    }
}
