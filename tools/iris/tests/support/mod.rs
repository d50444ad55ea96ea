//! The one harness of the iris integration tests, one concern per file:
//! - `image`: find the product image and the demo cell (or skip the test) and give a rig a private
//!   copy of the image;
//! - `guest`: boot a rig with the real image and its server ports forwarded to the host;
//! - `http`: a plain TCP/HTTP client (responses, chunked bodies, SSE streams);
//! - `mcp`: MCP requests and tool calls over that client;
//! - `picture`: PNG and BMP pictures of the screen, and the text on them;
//! - `reset`: take a guest through a reset and read what survived of the previous boot;
//! - `synthetic`: tiny hand-assembled ELF modules and a rig in a temporary root to load them;
//! - `enet`: the module's Seeq driver on the host against the rig's HPC3/Seeq model;
//! - `hostile`: attackers, the well-behaved client and the findings of the hostile-load suite;
//! - `tls`: a local HTTPS image server with a self-signed certificate.

// Every test binary compiles the whole harness but uses only part of it, so what one binary
// leaves unused is not dead code.
#[allow(dead_code)]
pub mod enet;
#[allow(dead_code)]
pub mod guest;
#[allow(dead_code)]
pub mod hostile;
#[allow(dead_code)]
pub mod http;
#[allow(dead_code)]
pub mod image;
#[allow(dead_code)]
pub mod mcp;
#[allow(dead_code)]
pub mod picture;
#[allow(dead_code)]
pub mod reset;
#[allow(dead_code)]
pub mod synthetic;
#[allow(dead_code)]
pub mod tls;
