//! The MCP "everything server" fixtures the official conformance suites call (tools
//! `test_*`, resources `test://…`, prompts `test_*`). Test images only: the module's
//! `conformance` feature links this crate, the product image never does. The fixtures are
//! ordinary tables over `rpc`'s registry, so they live beside the protocol crate, not in it.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

use rpc::mcp::{McpServer, RegistryError};

/// Registers every fixture on `server`.
pub fn register<C: 'static>(server: &mut McpServer<C>) -> Result<(), RegistryError> {
    server.register_tools(&tools::table::<C>())?;
    server.register_tools(&mrtr::table::<C>())?;
    server.register_tools(&mrtr::legacy_table::<C>())?;
    server.register_tools(&tasks::table::<C>())?;
    server.add_task_tools(tasks::TASK_TOOLS);
    server.register_resources(&resources::table::<C>());
    server.register_templates(&resources::templates::<C>());
    server.register_watches(&resources::watches::<C>());
    server.register_prompts(&prompts::table::<C>());
    Ok(())
}

/// A 1×1 red PNG.
pub(crate) const PNG: [u8; 69] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xf7, 0x03, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

#[cfg(test)]
mod tests;
