//! The flight record's bytes: what the module writes into the region the kernel keeps across a
//! warm reset, and the parser that reads the previous boot's copy. The record is a header (the
//! module's figures, rewritten at most once a second and by the panic handler) and one slot per
//! call in flight (rewritten in place when its call starts or ends), each with its own CRC, so
//! a call costs a 44-byte write and not the whole record. The previous copy is input like any
//! other (a torn write, a foreign image's layout, a bit flipped in DRAM): the header is believed
//! only when its magic, version, length and CRC hold and every text in it is UTF-8, and a slot
//! whose CRC fails is counted as torn, not read. The layout is in `docs/abi.md` ("The flight
//! record").

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// The first bytes of every record.
pub const MAGIC: [u8; 4] = *b"I7FR";
/// The layout below; another is [`FlightError::Foreign`].
pub const VERSION: u16 = 2;
/// Calls in flight a record holds; more are counted in `dropped`.
pub const MAX_CALLS: usize = 8;
/// Bytes of a tool name as recorded (a longer one is cut at a character boundary).
pub const TOOL_LEN: usize = 24;
/// Bytes of the build id and of the reset request as recorded.
pub const NAME_LEN: usize = 24;
/// Bytes of a panic's message and location as recorded.
pub const PANIC_LEN: usize = 160;

/// The header's fields, as byte ranges of the record (as smoltcp's `wire` modules name theirs).
mod field {
    use super::{NAME_LEN, PANIC_LEN};
    use core::ops::Range;

    pub const MAGIC: Range<usize> = 0..4;
    pub const VERSION: Range<usize> = 4..6;
    /// Bytes of the whole record.
    pub const LEN: Range<usize> = 6..8;
    /// CRC-32 of everything after it in the header.
    pub const CRC: Range<usize> = 8..12;
    pub const SEQ: Range<usize> = 12..16;
    pub const UPTIME: Range<usize> = 16..24;
    pub const HEAP_USED: Range<usize> = 24..28;
    pub const HEAP_SIZE: Range<usize> = 28..32;
    pub const CONNECTIONS: Range<usize> = 32..36;
    pub const REQUESTS: Range<usize> = 36..40;
    pub const SECRET_START: Range<usize> = 40..44;
    pub const SECRET_END: Range<usize> = 44..48;
    /// The number of slots after the header.
    pub const SLOTS: Range<usize> = 48..50;
    pub const DROPPED: Range<usize> = 50..52;
    pub const BUILD: Range<usize> = 52..52 + NAME_LEN;
    pub const RESET_BY: Range<usize> = BUILD.end..BUILD.end + NAME_LEN;
    pub const PANIC: Range<usize> = RESET_BY.end..RESET_BY.end + PANIC_LEN;
}

/// A slot's fields: `crc32` over the rest, `seq` (the call's number this boot), `started_ms`,
/// `client`, `era`, 3 bytes of padding, `tool`. All zero is a free slot.
mod slot_field {
    use super::TOOL_LEN;
    use core::ops::Range;

    pub const CRC: Range<usize> = 0..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const STARTED: Range<usize> = 8..12;
    pub const CLIENT: Range<usize> = 12..16;
    pub const ERA: usize = 16;
    pub const TOOL: Range<usize> = 20..20 + TOOL_LEN;
}

/// Bytes of the header, at the start of the record.
pub const HEADER_LEN: usize = field::PANIC.end;
/// Bytes of a slot.
pub const SLOT_LEN: usize = slot_field::TOOL.end;
/// Bytes of a record: the header and the slots.
pub const RECORD_LEN: usize = HEADER_LEN + MAX_CALLS * SLOT_LEN;
const _: () = assert!(HEADER_LEN == 260 && SLOT_LEN == 44 && RECORD_LEN == 612);
const _: () = assert!(RECORD_LEN <= indy::abi::FLIGHT_REGION_SIZE as usize);

/// Big-endian fields and NUL-padded texts of a byte buffer, read and written by range: the
/// typed view a header and a slot are read and written through.
struct View<T>(T);

impl<T: AsRef<[u8]>> View<T> {
    fn bytes(&self, r: core::ops::Range<usize>) -> &[u8] {
        &self.0.as_ref()[r]
    }
    fn u16(&self, r: core::ops::Range<usize>) -> u16 {
        let b = self.bytes(r);
        u16::from_be_bytes([b[0], b[1]])
    }
    fn u32(&self, r: core::ops::Range<usize>) -> u32 {
        let b = self.bytes(r);
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    fn u64(&self, r: core::ops::Range<usize>) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.bytes(r));
        u64::from_be_bytes(b)
    }
    /// A NUL-padded text: UTF-8 up to the first NUL, or `None`.
    fn text(&self, r: core::ops::Range<usize>) -> Option<String> {
        let field = self.bytes(r);
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        core::str::from_utf8(&field[..end]).ok().map(String::from)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> View<T> {
    fn set_bytes(&mut self, r: core::ops::Range<usize>, v: &[u8]) {
        self.0.as_mut()[r].copy_from_slice(v);
    }
    fn set_u16(&mut self, r: core::ops::Range<usize>, v: u16) {
        self.set_bytes(r, &v.to_be_bytes());
    }
    fn set_u32(&mut self, r: core::ops::Range<usize>, v: u32) {
        self.set_bytes(r, &v.to_be_bytes());
    }
    fn set_u64(&mut self, r: core::ops::Range<usize>, v: u64) {
        self.set_bytes(r, &v.to_be_bytes());
    }
    /// Writes `text` NUL-padded, cut at a character boundary to fit.
    fn set_text(&mut self, r: core::ops::Range<usize>, text: &str) {
        let out = &mut self.0.as_mut()[r];
        out.fill(0);
        let n = text.floor_char_boundary(out.len());
        out[..n].copy_from_slice(&text.as_bytes()[..n]);
    }
}

/// CRC-32 (ISO-HDLC, as zlib and PNG) with the one 1 KiB table: a slot's 40 bytes cost a few
/// hundred guest instructions a call, and the header's 248 at most once a second, so slicing
/// (16 KiB of table for the whole record at every call) no longer pays. It catches every
/// flipped bit and every burst up to 32 bits in a slot or the header; a plain sum would miss
/// two flips that cancel.
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// The era a call came in, as recorded: 0 the stateless 2026-07-28 era, 1 a legacy session.
pub const ERA_MODERN: u8 = 0;
pub const ERA_LEGACY: u8 = 1;

/// One tool call that was in flight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlightCall {
    /// The call's number this boot (calls are listed in this order).
    pub seq: u32,
    /// A name the module registered, or one read back from a previous boot's record.
    pub tool: Cow<'static, str>,
    pub client: [u8; 4],
    /// [`ERA_MODERN`] or [`ERA_LEGACY`].
    pub era: u8,
    /// Milliseconds since boot when it started.
    pub started_ms: u32,
}

/// What a record says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flight {
    /// Headers written before this one in the same boot.
    pub seq: u32,
    pub uptime_ms: u64,
    pub heap_used: u32,
    pub heap_size: u32,
    pub connections: u32,
    pub requests: u32,
    /// Where in this boot's serial ring the module wrote its generated token (absolute
    /// offsets `start..end`), so the next boot masks it in the previous console too.
    pub secret: Option<(u32, u32)>,
    pub build: String,
    /// Who asked for the reset that ended the boot (`system.reset`, `reboot`), if anyone.
    pub reset_by: String,
    /// A panic's message and location, if the module panicked.
    pub panic: String,
    /// The calls in flight, by `seq`.
    pub calls: Vec<FlightCall>,
    /// Calls in flight beyond [`MAX_CALLS`] (as of the last header write).
    pub dropped: u16,
    /// Slots that did not hold (a write cut short, a flipped bit): a call may have been
    /// there, and is not named.
    pub torn: u16,
}

/// Why a region holds no record to believe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlightError {
    /// Nothing was written (all zero, or an empty region: after a power-on).
    Absent,
    /// Not this layout: another magic or version (another module, another version of it).
    Foreign,
    /// This layout, but its header is torn or damaged: a length, CRC or text that does not
    /// hold.
    Corrupt,
}

impl FlightError {
    pub fn as_str(self) -> &'static str {
        match self {
            FlightError::Absent => "absent",
            FlightError::Foreign => "foreign",
            FlightError::Corrupt => "corrupt",
        }
    }
}

fn set_identity(h: &mut View<&mut [u8; HEADER_LEN]>) {
    h.set_bytes(field::MAGIC, &MAGIC);
    h.set_u16(field::VERSION, VERSION);
    h.set_u16(field::LEN, RECORD_LEN as u16);
    h.set_u16(field::SLOTS, MAX_CALLS as u16);
}

/// Whether a header is of this layout (magic, version and length).
fn is_ours(h: &View<&[u8]>) -> bool {
    h.bytes(field::MAGIC) == MAGIC
        && h.u16(field::VERSION) == VERSION
        && usize::from(h.u16(field::LEN)) == RECORD_LEN
}

/// Writes `f`'s figures as a header into `out`, sealed (`f.calls` go in slots).
pub fn encode_header(f: &Flight, out: &mut [u8; HEADER_LEN]) {
    out.fill(0);
    let mut h = View(out);
    set_identity(&mut h);
    h.set_u32(field::SEQ, f.seq);
    h.set_u64(field::UPTIME, f.uptime_ms);
    h.set_u32(field::HEAP_USED, f.heap_used);
    h.set_u32(field::HEAP_SIZE, f.heap_size);
    h.set_u32(field::CONNECTIONS, f.connections);
    h.set_u32(field::REQUESTS, f.requests);
    if let Some((start, end)) = f.secret {
        h.set_u32(field::SECRET_START, start);
        h.set_u32(field::SECRET_END, end);
    }
    h.set_u16(field::DROPPED, f.dropped);
    h.set_text(field::BUILD, &f.build);
    h.set_text(field::RESET_BY, &f.reset_by);
    h.set_text(field::PANIC, &f.panic);
    seal_header(h.0);
}

/// Recomputes the CRC of a header whose fields were changed in place (the panic handler's).
pub fn seal_header(out: &mut [u8; HEADER_LEN]) {
    let crc = CRC32.checksum(&out[field::CRC.end..]);
    View(out).set_u32(field::CRC, crc);
}

/// Writes `c` as a slot into `out`, sealed.
pub fn encode_slot(c: &FlightCall, out: &mut [u8; SLOT_LEN]) {
    let mut s = View(out);
    s.set_u32(slot_field::SEQ, c.seq);
    s.set_u32(slot_field::STARTED, c.started_ms);
    s.set_bytes(slot_field::CLIENT, &c.client);
    s.set_bytes(slot_field::ERA..slot_field::TOOL.start, &[c.era, 0, 0, 0]);
    s.set_text(slot_field::TOOL, &c.tool);
    let crc = CRC32.checksum(&s.0[slot_field::CRC.end..]);
    s.set_u32(slot_field::CRC, crc);
}

/// Where slot `i` starts in the record.
pub const fn slot_at(i: usize) -> usize {
    HEADER_LEN + i * SLOT_LEN
}

/// Writes a whole record: `f`'s header, its calls in the first slots, the rest free. Slots
/// beyond [`MAX_CALLS`] are not written, and `f.torn` slots are written damaged (what a parse
/// reads back as torn), so that what [`parse`] returns encodes to the same record.
#[cfg(any(test, feature = "testing"))]
pub fn encode(f: &Flight, out: &mut [u8; RECORD_LEN]) {
    out.fill(0);
    let (header, slots) = out.split_at_mut(HEADER_LEN);
    if let Ok(header) = <&mut [u8; HEADER_LEN]>::try_from(header) {
        encode_header(f, header);
    }
    let torn = (0..usize::from(f.torn)).map(|_| None);
    let calls = f.calls.iter().map(Some).chain(torn);
    for (slot, c) in slots.chunks_exact_mut(SLOT_LEN).zip(calls) {
        let Ok(slot) = <&mut [u8; SLOT_LEN]>::try_from(slot) else {
            continue;
        };
        match c {
            Some(c) => encode_slot(c, slot),
            None => {
                encode_slot(&FlightCall::default(), slot);
                slot[0] ^= 1;
            }
        }
    }
}

/// What a slot holds.
enum Slot {
    Free,
    Call(FlightCall),
    Torn,
}

fn parse_slot(bytes: &[u8]) -> Slot {
    if bytes.iter().all(|&b| b == 0) {
        return Slot::Free;
    }
    let s = View(bytes);
    let era = bytes[slot_field::ERA];
    if CRC32.checksum(&bytes[slot_field::CRC.end..]) != s.u32(slot_field::CRC) || era > ERA_LEGACY {
        return Slot::Torn;
    }
    let Some(tool) = s.text(slot_field::TOOL) else {
        return Slot::Torn;
    };
    let mut client = [0u8; 4];
    client.copy_from_slice(s.bytes(slot_field::CLIENT));
    Slot::Call(FlightCall {
        seq: s.u32(slot_field::SEQ),
        tool: Cow::Owned(tool),
        client,
        era,
        started_ms: s.u32(slot_field::STARTED),
    })
}

/// Reads a region: the record it holds, or why it holds none to believe.
pub fn parse(region: &[u8]) -> Result<Flight, FlightError> {
    if region.iter().all(|&b| b == 0) {
        return Err(FlightError::Absent);
    }
    if region.len() < field::SEQ.start
        || region[field::MAGIC] != MAGIC
        || View(region).u16(field::VERSION) != VERSION
    {
        return Err(FlightError::Foreign);
    }
    if usize::from(View(region).u16(field::LEN)) != RECORD_LEN || region.len() < RECORD_LEN {
        return Err(FlightError::Corrupt);
    }
    let b = &region[..RECORD_LEN];
    let h = View(b);
    if CRC32.checksum(&b[field::CRC.end..HEADER_LEN]) != h.u32(field::CRC)
        || usize::from(h.u16(field::SLOTS)) != MAX_CALLS
    {
        return Err(FlightError::Corrupt);
    }
    let (start, end) = (h.u32(field::SECRET_START), h.u32(field::SECRET_END));
    if start > end {
        return Err(FlightError::Corrupt);
    }
    let text = |r| h.text(r).ok_or(FlightError::Corrupt);
    let mut calls = Vec::new();
    calls
        .try_reserve_exact(MAX_CALLS)
        .map_err(|_| FlightError::Corrupt)?;
    let mut torn = 0;
    for i in 0..MAX_CALLS {
        match parse_slot(&b[slot_at(i)..slot_at(i + 1)]) {
            Slot::Free => {}
            Slot::Call(c) => calls.push(c),
            Slot::Torn => torn += 1,
        }
    }
    calls.sort_by_key(|c| c.seq);
    Ok(Flight {
        seq: h.u32(field::SEQ),
        uptime_ms: h.u64(field::UPTIME),
        heap_used: h.u32(field::HEAP_USED),
        heap_size: h.u32(field::HEAP_SIZE),
        connections: h.u32(field::CONNECTIONS),
        requests: h.u32(field::REQUESTS),
        secret: (end > start).then_some((start, end)),
        build: text(field::BUILD)?,
        reset_by: text(field::RESET_BY)?,
        panic: text(field::PANIC)?,
        calls,
        dropped: h.u16(field::DROPPED),
        torn,
    })
}

/// Writes a panic's text into a header in place and seals it again: what the panic handler
/// does to the last header it wrote, with no allocation (the slots already name the calls in
/// flight). A header not of this layout yet (a panic before the first write) becomes an empty
/// one carrying just the text.
pub fn stamp_panic(header: &mut [u8; HEADER_LEN], text: &str) {
    let mut h = View(header);
    if !is_ours(&View(&h.0[..])) {
        h.0.fill(0);
        set_identity(&mut h);
    }
    h.set_text(field::PANIC, text);
    seal_header(h.0);
}
