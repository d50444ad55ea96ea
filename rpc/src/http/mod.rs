pub mod message;
pub use message::*;
