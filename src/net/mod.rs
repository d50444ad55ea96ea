//! Networking: the IP configuration from the PROM environment, the smoltcp stack over the NIC
//! (with the TCP checksum the Seeq cannot compute), the HTTP server over its sockets and the
//! router that sends each request to the status page, the MCP server or the screen.

pub mod access;
pub mod budget;
pub mod checksum;
pub mod config;
pub mod debug_rsp;
pub mod frame;
pub mod mdns;
pub mod router;
pub mod server;
pub mod settings;
pub mod stack;
pub mod status_page;
pub mod tcp_wire;
pub mod web_console;
