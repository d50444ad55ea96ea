//! What a network interface reports about itself beyond moving frames (which is smoltcp's
//! `phy::Device`): where its DMA rings stand, for `dma.list` and the status figures.

/// Where the driver stands in its rings (`dma.list`): indices and the rings' physical bases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingPositions {
    /// The next RX descriptor the CPU looks at.
    pub rx_next: u32,
    pub rx_size: u32,
    /// The next free TX slot.
    pub tx_next: u32,
    /// The oldest TX frame not yet reclaimed.
    pub tx_oldest: u32,
    pub tx_in_flight: u32,
    pub tx_size: u32,
    /// Physical address of RX descriptor 0 and TX descriptor 0.
    pub rx_ring_phys: u32,
    pub tx_ring_phys: u32,
}

/// A received frame the NIC can hand out writable, because it is already the driver's own copy
/// (the Seeq's RX token copies each frame out of its DMA buffer). A `phy` decorator that
/// rewrites received headers (`net::tcp_wire`) then edits it in place instead of copying it again.
pub trait WritableRx {
    /// Like `smoltcp::phy::RxToken::consume`, with the frame writable.
    fn consume_mut<R, F: FnOnce(&mut [u8]) -> R>(self, f: F) -> R;
}
