//! Register maps of the chips the module drives and the rig models, one file per chip. HPC3 and
//! the chips behind it are given as physical addresses; Newport's as offsets in the REX3
//! window ([`crate::map::REX3`]), because its driver and model both address it that way.

pub mod cmap;
pub mod dcb;
pub mod enet_desc;
pub mod hpc3;
pub mod int3;
pub mod mc;
pub mod rex3;
pub mod seeq;
pub mod vc2;
pub mod xmap;
pub mod z85c30;
