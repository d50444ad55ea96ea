//! Fixture resources and the resource template.

use super::PNG;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use rpc::mcp::{ResourceContents, ResourceDef, TemplateDef, ToolError, WatchDef};

pub(crate) fn table<C: 'static>() -> Vec<ResourceDef<C>> {
    vec![
        ResourceDef {
            uri: "test://static-text",
            name: "static-text",
            title: None,
            description: "A static text resource",
            mime_type: Some("text/plain"),
            read: static_text::<C>,
        },
        ResourceDef {
            uri: "test://static-binary",
            name: "static-binary",
            title: None,
            description: "A static binary resource (PNG)",
            mime_type: Some("image/png"),
            read: static_binary::<C>,
        },
    ]
}

/// The resource the subscription scenarios subscribe to. It never changes: the scenarios
/// check that subscribing and unsubscribing are accepted, not that updates arrive.
pub(crate) fn watches<C: 'static>() -> Vec<WatchDef<C>> {
    vec![WatchDef {
        uri: "test://watched-resource",
        interval_ms: 1000,
        version: unchanging::<C>,
    }]
}

fn unchanging<C>(_: &mut C) -> u64 {
    0
}

pub(crate) fn templates<C: 'static>() -> Vec<TemplateDef<C>> {
    vec![TemplateDef {
        uri_template: "test://template/{id}/data",
        name: "template-data",
        title: None,
        description: "Data for an id",
        mime_type: Some("application/json"),
        read: template_data::<C>,
    }]
}

fn static_text<C>(_: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Text {
        uri: uri.into(),
        mime_type: Some("text/plain".into()),
        text: "This is the content of the static text resource.".into(),
    }])
}

fn static_binary<C>(_: &mut C, uri: &str) -> Result<Vec<ResourceContents>, ToolError> {
    Ok(vec![ResourceContents::Blob {
        uri: uri.into(),
        mime_type: Some("image/png".into()),
        data: PNG.to_vec(),
    }])
}

fn template_data<C>(
    _: &mut C,
    uri: &str,
    vars: &[(&str, &str)],
) -> Result<Vec<ResourceContents>, ToolError> {
    let id = vars
        .iter()
        .find(|(k, _)| *k == "id")
        .map(|(_, v)| *v)
        .unwrap_or("");
    let text =
        serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
    Ok(vec![ResourceContents::Text {
        uri: String::from(uri),
        mime_type: Some("application/json".into()),
        text: text.to_string(),
    }])
}
