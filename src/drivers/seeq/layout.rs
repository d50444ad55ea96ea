//! Where descriptors and buffers sit in the DMA area: all descriptors first (16 bytes each, RX
//! then TX), then the packet buffers on 128-byte boundaries so that invalidating one buffer's
//! cache lines never discards anything else.

/// Bytes per descriptor: pbuf, cntinfo, pnext and one pad word (NetBSD pads to 16).
pub const DESC_SIZE: usize = 16;
/// Buffer size the driver writes into RX descriptors (Linux's PKT_BUF_SZ).
pub const RX_BUF_SIZE: usize = 1584;
/// Distance between buffers: `RX_BUF_SIZE` rounded up to the 128-byte cache line.
pub const BUF_STRIDE: usize = 1664;
/// Alignment of the DMA area and of the first buffer.
pub const DMA_ALIGN: usize = 128;
/// Where a frame to send starts in its TX buffer (the address its descriptor gives the HPC):
/// two bytes in, like a received frame, so that the IPv4 header and a TCP segment's payload
/// sit on word boundaries. smoltcp copies each payload in from its socket buffer, where an
/// answer starts at the (word-aligned) start and full segments (1460 or 1448 bytes) keep the
/// next ones on word boundaries; a copy between mutually aligned ends takes the word loop
/// (about 0.56 instructions a byte against 0.81 with `lwl`/`lwr`). The HPC3 reads a TX buffer
/// from any byte address (NetBSD's `sq` hands it mbuf data, wherever that starts).
pub const TX_LEAD: usize = 2;

const _: () = assert!(BUF_STRIDE.is_multiple_of(DMA_ALIGN) && BUF_STRIDE >= RX_BUF_SIZE);

/// The index after `i` in a ring of `n`. A compare, not `%`: a division by a ring size the
/// compiler cannot see is a `divu` (tens of cycles on the R4400), and a frame took several.
pub fn after(i: usize, n: usize) -> usize {
    if i + 1 >= n { 0 } else { i + 1 }
}

/// The index before `i` in a ring of `n` (as [`after`]).
pub fn before(i: usize, n: usize) -> usize {
    if i == 0 { n - 1 } else { i - 1 }
}

/// Byte offsets of every descriptor and buffer for one ring geometry.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub rx_n: usize,
    pub tx_n: usize,
}

impl Layout {
    /// Offset of RX descriptor `i`.
    pub fn rx_desc(&self, i: usize) -> usize {
        i * DESC_SIZE
    }

    /// Offset of TX descriptor `i`.
    pub fn tx_desc(&self, i: usize) -> usize {
        (self.rx_n + i) * DESC_SIZE
    }

    fn buffers(&self) -> usize {
        ((self.rx_n + self.tx_n) * DESC_SIZE).next_multiple_of(DMA_ALIGN)
    }

    /// Offset of RX buffer `i`.
    pub fn rx_buf(&self, i: usize) -> usize {
        self.buffers() + i * BUF_STRIDE
    }

    /// Offset of TX buffer `i`.
    pub fn tx_buf(&self, i: usize) -> usize {
        self.buffers() + (self.rx_n + i) * BUF_STRIDE
    }

    /// Offset of the frame in TX buffer `i` ([`TX_LEAD`] into it).
    pub fn tx_frame(&self, i: usize) -> usize {
        self.tx_buf(i) + TX_LEAD
    }

    /// Bytes of DMA area the geometry needs.
    pub fn total(&self) -> usize {
        self.buffers() + (self.rx_n + self.tx_n) * BUF_STRIDE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_follow_descriptors_on_cache_lines() {
        let l = Layout { rx_n: 5, tx_n: 3 };
        assert_eq!(l.tx_desc(0), 80);
        assert_eq!(l.rx_buf(0), 128);
        assert_eq!(l.tx_buf(0), 128 + 5 * BUF_STRIDE);
        assert_eq!(l.total(), 128 + 8 * BUF_STRIDE);
        assert_eq!(
            l.tx_frame(1) % 4,
            2,
            "the frame's IPv4 header on a word boundary"
        );
    }

    #[test]
    fn ring_indices_wrap_both_ways() {
        for n in [2, 3, 16] {
            for i in 0..n {
                assert_eq!(after(i, n), (i + 1) % n);
                assert_eq!(before(i, n), (i + n - 1) % n);
                assert_eq!(before(after(i, n), n), i);
            }
        }
    }
}
