//! The module's network side: the smoltcp stack over the NIC driver, the TCP server that feeds
//! HTTP connections, and the router that sends each request to its handler.

pub mod router;
pub mod server;
pub mod stack;
pub mod status_page;
