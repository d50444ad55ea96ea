#![no_std]
pub mod abi;
