//! Host tests of the filesystem layer against the real fixture images (built with the same code
//! `cargo xtask` uses) and against small hand-built images for what mkfs.erofs 1.5 cannot make.

mod allocs;
mod corrupt;
pub(crate) mod fixture;
mod image;
mod overlay;
mod paths;
mod synth;
mod walk;
