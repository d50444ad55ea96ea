//! Path resolution over the bare image: the [`Namespace`] the shared resolver walks.

use alloc::string::String;

use super::{Erofs, Inode};
use crate::hil::block::BlockDevice;
use crate::services::fs::error::FsResult;
use crate::services::fs::path::Namespace;
use crate::services::fs::stat::FileType;

impl<D: BlockDevice> Namespace for Erofs<D> {
    type Node = Inode;

    fn root(&mut self) -> FsResult<Inode> {
        Ok(self.root.clone())
    }

    fn file_type(&self, node: &Inode) -> FileType {
        node.file_type
    }

    fn lookup(&mut self, dir: &Inode, _path: &str, name: &str) -> FsResult<Option<Inode>> {
        Erofs::lookup(self, dir, name)
    }

    fn read_link(&mut self, node: &Inode) -> FsResult<String> {
        Erofs::read_link(self, node)
    }
}
