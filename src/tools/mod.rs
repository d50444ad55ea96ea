//! The MCP surface: one file per tool family, each a table of `ToolDef`s with schemas and
//! handlers that call the services through the [`Ctx`]. Arguments, JSON and error codes live
//! here; what the tools do lives in `services`.

pub mod args;
pub mod block;
#[cfg(test)]
pub mod catalogue;
pub mod console;
pub mod context;
pub mod debug;
pub mod devices;
pub mod fs;
pub mod proc;
pub mod screen;
pub mod serial;
pub mod shell;
pub mod system;
#[cfg(test)]
pub(crate) mod testing;

pub use context::Ctx;

use rpc::mcp::{McpServer, RegistryError};

/// Registers every tool family and resource in a stable order.
pub fn register(server: &mut McpServer<Ctx>) -> Result<(), RegistryError> {
    server.register_tools(system::TOOLS)?;
    server.register_tools(serial::TOOLS)?;
    server.register_tools(console::TOOLS)?;
    server.register_tools(shell::TOOLS)?;
    server.register_tools(proc::TOOLS)?;
    server.register_tools(fs::TOOLS)?;
    server.register_tools(block::TOOLS)?;
    server.register_tools(screen::TOOLS)?;
    server.register_tools(devices::TOOLS)?;
    server.reserve_tools(debug::RESERVED)?;
    server.register_resources(system::RESOURCES);
    server.register_resources(serial::RESOURCES);
    server.register_resources(screen::RESOURCES);
    Ok(())
}
