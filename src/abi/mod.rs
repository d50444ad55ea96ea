//! The kernel ABI table's definition, shared with the rig.

pub mod table;
