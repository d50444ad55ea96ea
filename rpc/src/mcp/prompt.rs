//! Prompts: the product has none, but `prompts/list` and `prompts/get` exist so clients and
//! the conformance fixtures find a complete server.

use super::tool::{InputRequired, ToolError};
use crate::json::ValueRef;
use alloc::vec::Vec;
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
