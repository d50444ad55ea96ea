//! `resources/read`: a resource read whole, or one whose reader streams, spliced into the
//! answer a bounded piece per poll (`stream`).

use crate::http::Response;
use crate::jsonrpc::{self, RpcError};
use crate::mcp::guard::authority::forbidden;
use crate::mcp::guard::config::Config;
use crate::mcp::guard::request::{Cx, Era};
use crate::mcp::resources::catalog::{ResourceCatalog, ResourceContents, Streamed};
use crate::mcp::resources::stream::SplicedStream;
use crate::mcp::tools::result::{fail, finish};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::reply;
use crate::mcp::wire::tool::ToolError;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Value, json};

/// `resources/read`: a resource with a streamed reader answers with its item's data
/// streamed into the result, a bounded piece per poll; any other is read whole.
pub(crate) fn read<C: 'static>(
    resources: &ResourceCatalog<C>,
    ctx: &Rc<RefCell<C>>,
    config: &Config,
    cx: &Cx<'_>,
) -> Response {
    let uri = cx.params.get("uri").and_then(|u| u.as_str());
    let uri = uri.as_deref();
    // A resource the caller may not use is refused before it is opened.
    if let Some(door) = uri.and_then(|u| resources.door_of(u))
        && let Err(denied) = cx.authority.check_door(door)
    {
        return fail(cx, forbidden(&denied));
    }
    if let Some((uri, open)) = uri.and_then(|u| Some((u, resources.stream_for(u)?))) {
        let opened = match ctx.try_borrow_mut() {
            Ok(mut ctx) => open(&mut ctx, uri),
            Err(_) => Err(ToolError::new(ErrorCode::Busy, "server context in use")),
        };
        let item = match opened.map(Streamed::of) {
            Ok(Some(item)) => item,
            Ok(None) => {
                let e = ToolError::new(ErrorCode::Internal, "not a streamed resource item");
                return fail(
                    cx,
                    RpcError::new(
                        jsonrpc::INTERNAL_ERROR,
                        alloc::string::ToString::to_string(&e),
                    ),
                );
            }
            Err(e) if e.code == ErrorCode::NotFound => {
                let err = resource_not_found(cx.era, uri);
                return fail(cx, err);
            }
            Err(e) => {
                return fail(
                    cx,
                    RpcError::new(
                        jsonrpc::INTERNAL_ERROR,
                        alloc::string::ToString::to_string(&e),
                    ),
                );
            }
        };
        let result = json!({"contents": [item.item.clone()]});
        let resp = finish(config, cx, "resources/read", result);
        return SplicedStream::response(ctx.clone(), resp, item, config.limits.stream_chunk);
    }
    match whole(resources, ctx, cx) {
        Ok(v) => finish(config, cx, "resources/read", v),
        Err(e) => fail(cx, e),
    }
}

/// A resource read whole by its reader, or by the reader of the template it matches.
fn whole<C>(
    resources: &ResourceCatalog<C>,
    ctx: &RefCell<C>,
    cx: &Cx<'_>,
) -> Result<Value, RpcError> {
    let Some(uri) = cx.params.get("uri").and_then(|u| u.as_str()) else {
        return Err(RpcError::invalid_params("Invalid params: uri is required"));
    };
    let uri = &*uri;
    let result = {
        let Ok(mut ctx) = ctx.try_borrow_mut() else {
            return Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "E_BUSY: server context in use",
            ));
        };
        if let Some(def) = resources.resources.iter().find(|r| r.uri == uri) {
            Some((def.read)(&mut ctx, uri))
        } else {
            resources
                .templates
                .iter()
                .find_map(|t| t.matches(uri).map(|vars| (t.read)(&mut ctx, uri, &vars)))
        }
    };
    let not_found = || resource_not_found(cx.era, uri);
    match result {
        None => Err(not_found()),
        Some(Err(e)) if e.code == ErrorCode::NotFound => Err(not_found()),
        Some(Err(e)) => Err(RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            alloc::string::ToString::to_string(&e),
        )),
        Some(Ok(contents)) if contents.is_empty() => Err(not_found()),
        Some(Ok(contents)) => {
            let list: Vec<Value> = contents.iter().map(ResourceContents::to_json).collect();
            Ok(json!({"contents": list}))
        }
    }
}

/// The protocol's answer to a read of a resource that does not exist, in each era.
fn resource_not_found(era: Era, uri: &str) -> RpcError {
    match era {
        Era::Modern => RpcError::with_data(
            jsonrpc::INVALID_PARAMS,
            "Resource not found",
            json!({"uri": uri}),
        ),
        Era::Legacy(_) => RpcError::with_data(
            reply::RESOURCE_NOT_FOUND_LEGACY,
            "Resource not found",
            json!({"uri": uri}),
        ),
    }
}
