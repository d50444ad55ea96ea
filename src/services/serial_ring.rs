//! Reads the kernel's serial ring by absolute byte offset.
//!
//! The kernel appends everything written to the console to a ring of `size` bytes and counts
//! the bytes ever written (`head`); byte `n` lives at `n % size`. A reader remembers the offset
//! it has read up to and asks again from there: bytes older than `head - size` are gone (it is
//! told how many), an offset past `head` has not been written yet (an error). The counter is the
//! ABI's 32-bit word, so offsets are `u32`; after 4 GiB of console output it wraps and older
//! offsets read as "in the future" (the error tells the current head to restart from).
//!
//! Secrets: the module writes its generated token on the console at boot, so the ring holds it.
//! It records where ([`Span`]), and a read for someone who may not see it ([`Secrets::Mask`])
//! shows `*` for each of those bytes, whatever window the read takes. After 4 GiB of output
//! the counter wraps and the span's offsets come round again: later bytes there are masked
//! too (never shown more, only less).
//!
//! Pure: works on a [`Ring`] (a byte slice, or the kernel's ring through the platform) and a
//! head value, so the wrap-around logic is tested on the host.

use alloc::vec::Vec;

/// One read of the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Absolute offset of `data[0]`.
    pub offset: u32,
    /// The bytes read, in order.
    pub data: Vec<u8>,
    /// Bytes between the requested offset and `offset` that the ring no longer holds.
    pub lost: u32,
    /// The oldest offset the ring held when read.
    pub oldest: u32,
    /// The head (total bytes written) when read.
    pub head: u32,
}

impl Chunk {
    /// The offset to ask for next.
    pub fn next_offset(&self) -> u32 {
        self.offset.saturating_add(self.data.len() as u32)
    }

    /// Whether the read reached the head.
    pub fn eof(&self) -> bool {
        self.next_offset() >= self.head
    }

    /// The kernel may write while the bytes are copied: once the head has moved to `head_after`,
    /// every byte older than `head_after - size` may have been overwritten during the copy. Drops
    /// those from the front and counts them as lost, so no corrupted byte is ever returned, and
    /// reports the newer head and oldest offset (so `eof` is false when more has arrived).
    pub fn discard_overwritten(&mut self, head_after: u32, size: usize) {
        if head_after <= self.head {
            return;
        }
        self.head = head_after;
        let oldest_after = oldest(size, head_after);
        self.oldest = self.oldest.max(oldest_after);
        if oldest_after <= self.offset {
            return;
        }
        let gone = (oldest_after - self.offset).min(self.data.len() as u32);
        self.data.drain(..gone as usize);
        self.offset += gone;
        self.lost = self.lost.saturating_add(gone);
    }
}

/// Whether a read shows the console's secrets or masks them: who is asking decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secrets {
    Reveal,
    Mask,
}

/// The absolute offsets `start..end` where the module wrote a secret into the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

/// What a masked read shows for each byte of a secret.
pub const MASK_BYTE: u8 = b'*';

impl Chunk {
    /// Hides the bytes of `span` this chunk holds, when `secrets` says to; nothing moves, so
    /// offsets, lengths and every later window stay as they were.
    pub fn hide(&mut self, secrets: Secrets, span: Option<Span>) {
        let (Secrets::Mask, Some(span)) = (secrets, span) else {
            return;
        };
        let from = span.start.max(self.offset);
        let to = span.end.min(self.next_offset());
        if from >= to {
            return;
        }
        let at = (from - self.offset) as usize;
        if let Some(bytes) = self.data.get_mut(at..at + (to - from) as usize) {
            bytes.fill(MASK_BYTE);
        }
    }
}

/// Why a read was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The requested offset has not been written yet.
    Future { offset: u64, head: u32 },
    /// No room on the heap for the bytes asked for.
    NoMemory,
}

/// Where a read takes its bytes from: a slice (a previous boot's console), or the kernel's
/// live ring, of which only the bytes a read returns are copied.
pub trait Ring {
    /// The ring's size in bytes.
    fn size(&self) -> usize;
    /// Copies the ring's bytes from index `at` into `out`, going on at index 0 past the end
    /// (`at < size`, `out.len() <= size`).
    fn copy(&self, at: usize, out: &mut [u8]);
}

impl Ring for [u8] {
    fn size(&self) -> usize {
        self.len()
    }

    fn copy(&self, at: usize, out: &mut [u8]) {
        let (before, from_at) = self.split_at(at.min(self.len()));
        let (first, rest) = out.split_at_mut(from_at.len().min(out.len()));
        if let Some(bytes) = from_at.get(..first.len()) {
            first.copy_from_slice(bytes);
        }
        if let Some(bytes) = before.get(..rest.len()) {
            rest.copy_from_slice(bytes);
        }
    }
}

/// The oldest offset a ring of `size` bytes still holds at `head`.
pub fn oldest(size: usize, head: u32) -> u32 {
    head.saturating_sub(u32::try_from(size).unwrap_or(u32::MAX))
}

/// Copies at most `max` bytes of `ring` from absolute `offset` (default: the oldest byte held).
/// An offset older than the ring starts at the oldest byte and reports the gap as `lost`.
pub fn read(
    ring: &(impl Ring + ?Sized),
    head: u32,
    offset: Option<u64>,
    max: usize,
) -> Result<Chunk, RingError> {
    let size = ring.size();
    let oldest = oldest(size, head);
    let want = offset.unwrap_or(u64::from(oldest));
    if want > u64::from(head) {
        return Err(RingError::Future { offset: want, head });
    }
    // `want <= head`, so it fits in u32.
    let want = want as u32;
    let start = want.max(oldest);
    let lost = start - want;
    let len = ((head - start) as usize).min(max);
    let mut data = Vec::new();
    if len > 0 {
        // `size > 0` here: `head - start <= size` because `start >= oldest`.
        data.try_reserve_exact(len)
            .map_err(|_| RingError::NoMemory)?;
        data.resize(len, 0);
        ring.copy(start as usize % size, &mut data);
    }
    Ok(Chunk {
        offset: start,
        data,
        lost,
        oldest,
        head,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `size` bytes after writing `written` bytes, byte `n` being `n as u8`.
    fn ring_after(size: usize, written: u32) -> (Vec<u8>, u32) {
        let mut ring = alloc::vec![0u8; size];
        for n in 0..written {
            ring[n as usize % size] = n as u8;
        }
        (ring, written)
    }

    fn expected(from: u32, to: u32) -> Vec<u8> {
        (from..to).map(|n| n as u8).collect()
    }

    #[test]
    fn reads_from_the_oldest_byte_by_default() {
        let (ring, head) = ring_after(16, 10);
        let c = read(&ring[..], head, None, 100).unwrap();
        assert_eq!((c.offset, c.lost, c.oldest, c.head), (0, 0, 0, 10));
        assert_eq!(c.data, expected(0, 10));
        assert_eq!(c.next_offset(), 10);
        assert!(c.eof());
    }

    #[test]
    fn reads_across_the_wrap() {
        let (ring, head) = ring_after(16, 40);
        // Oldest is 24 (at index 8); 24..40 spans indices 8..16 and 0..8.
        let c = read(&ring[..], head, Some(30), 100).unwrap();
        assert_eq!((c.offset, c.lost, c.oldest), (30, 0, 24));
        assert_eq!(c.data, expected(30, 40));
        let c = read(&ring[..], head, None, 100).unwrap();
        assert_eq!(c.data, expected(24, 40));
        assert!(c.eof());
    }

    #[test]
    fn an_offset_older_than_the_ring_reports_lost_bytes() {
        let (ring, head) = ring_after(16, 40);
        let c = read(&ring[..], head, Some(5), 100).unwrap();
        assert_eq!((c.offset, c.lost, c.oldest), (24, 19, 24));
        assert_eq!(c.data, expected(24, 40));
    }

    #[test]
    fn max_limits_the_read_and_next_offset_continues() {
        let (ring, head) = ring_after(16, 40);
        let c = read(&ring[..], head, Some(26), 4).unwrap();
        assert_eq!(c.data, expected(26, 30));
        assert!(!c.eof());
        let c = read(&ring[..], head, Some(u64::from(c.next_offset())), 100).unwrap();
        assert_eq!(c.data, expected(30, 40));
        assert!(c.eof());
    }

    #[test]
    fn reading_at_the_head_is_empty_and_eof() {
        let (ring, head) = ring_after(16, 40);
        let c = read(&ring[..], head, Some(40), 100).unwrap();
        assert!(c.data.is_empty() && c.eof());
        assert_eq!(c.next_offset(), 40);
    }

    #[test]
    fn a_future_offset_is_an_error() {
        let (ring, head) = ring_after(16, 40);
        assert_eq!(
            read(&ring[..], head, Some(41), 10),
            Err(RingError::Future {
                offset: 41,
                head: 40
            })
        );
        assert!(read(&ring[..], head, Some(u64::MAX), 10).is_err());
    }

    #[test]
    fn an_empty_ring_reads_nothing() {
        let c = read(&[][..], 0, None, 10).unwrap();
        assert!(c.data.is_empty() && c.eof());
        // A zero-sized ring that claims bytes were written holds none of them.
        let c = read(&[][..], 7, Some(2), 10).unwrap();
        assert_eq!((c.offset, c.lost, c.data.len()), (7, 5, 0));
    }

    #[test]
    fn bytes_overwritten_during_the_copy_are_dropped_as_lost() {
        let (ring, head) = ring_after(16, 40);
        let mut c = read(&ring[..], head, Some(24), 100).unwrap();
        // The kernel wrote 5 more bytes meanwhile: 24..29 may have been overwritten.
        c.discard_overwritten(45, 16);
        assert_eq!((c.offset, c.lost, c.oldest, c.head), (29, 5, 29, 45));
        assert_eq!(c.data, expected(29, 40));
        assert!(!c.eof(), "more was written meanwhile");
        // A head that did not move past the data keeps it all.
        let mut c = read(&ring[..], head, Some(30), 100).unwrap();
        c.discard_overwritten(46, 16);
        assert_eq!((c.offset, c.lost, c.oldest, c.head), (30, 0, 30, 46));
        // A head that did not move changes nothing.
        let mut c = read(&ring[..], head, Some(30), 100).unwrap();
        c.discard_overwritten(40, 16);
        assert_eq!((c.offset, c.lost, c.oldest, c.head), (30, 0, 24, 40));
        assert!(c.eof());
        // Everything overwritten: nothing returned, next offset at the new oldest.
        let mut c = read(&ring[..], head, Some(24), 100).unwrap();
        c.discard_overwritten(100, 16);
        assert!(c.data.is_empty());
        assert_eq!((c.offset, c.lost), (40, 16));
    }

    /// Every window over a ring whose bytes 20..28 are a secret, masked, is the same window of
    /// the ring with those bytes as `*`: inside, across either edge, around, beside.
    #[test]
    fn a_masked_read_hides_the_span_in_every_window() {
        let (ring, head) = ring_after(16, 34);
        let span = Span { start: 20, end: 28 };
        let masked = |n: u32| {
            if (20..28).contains(&n) {
                MASK_BYTE
            } else {
                n as u8
            }
        };
        for from in 18..=34u32 {
            for max in 0..=16usize {
                let mut c = read(&ring[..], head, Some(u64::from(from)), max).unwrap();
                let plain = c.clone();
                c.hide(Secrets::Mask, Some(span));
                let want: Vec<u8> = (c.offset..c.next_offset()).map(masked).collect();
                assert_eq!(c.data, want, "from {from} max {max}");
                assert_eq!(
                    (c.offset, c.lost, c.next_offset(), c.eof()),
                    (plain.offset, plain.lost, plain.next_offset(), plain.eof())
                );
                let mut shown = plain.clone();
                shown.hide(Secrets::Reveal, Some(span));
                assert_eq!(shown, plain, "Reveal changes nothing");
            }
        }
    }

    #[test]
    fn a_span_the_ring_no_longer_holds_hides_nothing() {
        let (ring, head) = ring_after(16, 60);
        let mut c = read(&ring[..], head, Some(0), 100).unwrap();
        c.hide(Secrets::Mask, Some(Span { start: 20, end: 28 }));
        assert_eq!(c.data, expected(44, 60));
        // Overwritten during the copy: the dropped bytes are gone, the rest still masked.
        let (ring, head) = ring_after(16, 34);
        let mut c = read(&ring[..], head, None, 100).unwrap();
        c.discard_overwritten(40, 16);
        c.hide(Secrets::Mask, Some(Span { start: 20, end: 28 }));
        assert_eq!(c.offset, 24);
        assert_eq!(&c.data[..4], b"****");
        assert_eq!(&c.data[4..], &expected(28, 34)[..]);
        // No span: nothing to hide.
        let mut c = read(&ring[..], head, None, 100).unwrap();
        c.hide(Secrets::Mask, None);
        assert_eq!(c.data, expected(18, 34));
    }

    #[test]
    fn wraps_at_the_full_size_of_a_real_ring() {
        let size = 8192;
        let (ring, head) = ring_after(size, 3 * 8192 + 100);
        let c = read(&ring[..], head, Some(0), usize::MAX).unwrap();
        assert_eq!(c.lost, 2 * 8192 + 100);
        assert_eq!(c.data.len(), size);
        assert_eq!(c.data, expected(2 * 8192 + 100, 3 * 8192 + 100));
    }
}
