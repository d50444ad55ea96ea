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

const OFF_VERSION: usize = 4;
const OFF_LEN: usize = 6;
const OFF_CRC: usize = 8;
const OFF_SEQ: usize = 12;
const OFF_UPTIME: usize = 16;
const OFF_HEAP_USED: usize = 24;
const OFF_HEAP_SIZE: usize = 28;
const OFF_CONNECTIONS: usize = 32;
const OFF_REQUESTS: usize = 36;
const OFF_SECRET_START: usize = 40;
const OFF_SECRET_END: usize = 44;
const OFF_SLOTS: usize = 48;
const OFF_DROPPED: usize = 50;
const OFF_BUILD: usize = 52;
const OFF_RESET_BY: usize = OFF_BUILD + NAME_LEN;
const OFF_PANIC: usize = OFF_RESET_BY + NAME_LEN;
/// Bytes of the header, at the start of the record.
pub const HEADER_LEN: usize = OFF_PANIC + PANIC_LEN;

/// A slot: `crc32` over the rest, `seq` (the call's number this boot), `started_ms`,
/// `client`, `era`, 3 bytes of padding, `tool`. All zero is a free slot.
const SLOT_SEQ: usize = 4;
const SLOT_STARTED: usize = 8;
const SLOT_CLIENT: usize = 12;
const SLOT_ERA: usize = 16;
const SLOT_TOOL: usize = 20;
/// Bytes of a slot.
pub const SLOT_LEN: usize = SLOT_TOOL + TOOL_LEN;
/// Bytes of a record: the header and the slots.
pub const RECORD_LEN: usize = HEADER_LEN + MAX_CALLS * SLOT_LEN;
const _: () = assert!(HEADER_LEN == 260 && SLOT_LEN == 44 && RECORD_LEN == 612);
const _: () = assert!(RECORD_LEN <= indy::abi::FLIGHT_REGION_SIZE as usize);

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

fn put_text(out: &mut [u8], text: &str) {
    out.fill(0);
    let n = text.floor_char_boundary(out.len());
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
}

fn put_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn put_identity(out: &mut [u8; HEADER_LEN]) {
    out[..4].copy_from_slice(&MAGIC);
    out[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&VERSION.to_be_bytes());
    out[OFF_LEN..OFF_LEN + 2].copy_from_slice(&(RECORD_LEN as u16).to_be_bytes());
    out[OFF_SLOTS..OFF_SLOTS + 2].copy_from_slice(&(MAX_CALLS as u16).to_be_bytes());
}

/// Writes `f`'s figures as a header into `out`, sealed (`f.calls` go in slots).
pub fn encode_header(f: &Flight, out: &mut [u8; HEADER_LEN]) {
    out.fill(0);
    put_identity(out);
    put_u32(out, OFF_SEQ, f.seq);
    out[OFF_UPTIME..OFF_UPTIME + 8].copy_from_slice(&f.uptime_ms.to_be_bytes());
    put_u32(out, OFF_HEAP_USED, f.heap_used);
    put_u32(out, OFF_HEAP_SIZE, f.heap_size);
    put_u32(out, OFF_CONNECTIONS, f.connections);
    put_u32(out, OFF_REQUESTS, f.requests);
    if let Some((start, end)) = f.secret {
        put_u32(out, OFF_SECRET_START, start);
        put_u32(out, OFF_SECRET_END, end);
    }
    out[OFF_DROPPED..OFF_DROPPED + 2].copy_from_slice(&f.dropped.to_be_bytes());
    put_text(&mut out[OFF_BUILD..OFF_RESET_BY], &f.build);
    put_text(&mut out[OFF_RESET_BY..OFF_PANIC], &f.reset_by);
    put_text(&mut out[OFF_PANIC..HEADER_LEN], &f.panic);
    seal_header(out);
}

/// Recomputes the CRC of a header whose fields were changed in place (the panic handler's).
pub fn seal_header(out: &mut [u8; HEADER_LEN]) {
    let crc = CRC32.checksum(&out[OFF_SEQ..]);
    put_u32(out, OFF_CRC, crc);
}

/// Writes `c` as a slot into `out`, sealed.
pub fn encode_slot(c: &FlightCall, out: &mut [u8; SLOT_LEN]) {
    put_u32(out, SLOT_SEQ, c.seq);
    put_u32(out, SLOT_STARTED, c.started_ms);
    out[SLOT_CLIENT..SLOT_CLIENT + 4].copy_from_slice(&c.client);
    out[SLOT_ERA..SLOT_TOOL].copy_from_slice(&[c.era, 0, 0, 0]);
    put_text(&mut out[SLOT_TOOL..], &c.tool);
    let crc = CRC32.checksum(&out[SLOT_SEQ..]);
    put_u32(out, 0, crc);
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

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A NUL-padded text field: UTF-8 up to the first NUL, or `None`.
fn text_at(field: &[u8]) -> Option<String> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    core::str::from_utf8(&field[..end]).ok().map(String::from)
}

/// What a slot holds.
enum Slot {
    Free,
    Call(FlightCall),
    Torn,
}

fn parse_slot(s: &[u8]) -> Slot {
    if s.iter().all(|&b| b == 0) {
        return Slot::Free;
    }
    if CRC32.checksum(&s[SLOT_SEQ..]) != u32_at(s, 0) || s[SLOT_ERA] > ERA_LEGACY {
        return Slot::Torn;
    }
    let Some(tool) = text_at(&s[SLOT_TOOL..]) else {
        return Slot::Torn;
    };
    let mut client = [0u8; 4];
    client.copy_from_slice(&s[SLOT_CLIENT..SLOT_CLIENT + 4]);
    Slot::Call(FlightCall {
        seq: u32_at(s, SLOT_SEQ),
        tool: Cow::Owned(tool),
        client,
        era: s[SLOT_ERA],
        started_ms: u32_at(s, SLOT_STARTED),
    })
}

/// Reads a region: the record it holds, or why it holds none to believe.
pub fn parse(region: &[u8]) -> Result<Flight, FlightError> {
    if region.iter().all(|&b| b == 0) {
        return Err(FlightError::Absent);
    }
    if region.len() < OFF_SEQ || region[..4] != MAGIC || u16_at(region, OFF_VERSION) != VERSION {
        return Err(FlightError::Foreign);
    }
    if usize::from(u16_at(region, OFF_LEN)) != RECORD_LEN || region.len() < RECORD_LEN {
        return Err(FlightError::Corrupt);
    }
    let b = &region[..RECORD_LEN];
    if CRC32.checksum(&b[OFF_SEQ..HEADER_LEN]) != u32_at(b, OFF_CRC)
        || usize::from(u16_at(b, OFF_SLOTS)) != MAX_CALLS
    {
        return Err(FlightError::Corrupt);
    }
    let (start, end) = (u32_at(b, OFF_SECRET_START), u32_at(b, OFF_SECRET_END));
    if start > end {
        return Err(FlightError::Corrupt);
    }
    let text = |from, to| text_at(&b[from..to]).ok_or(FlightError::Corrupt);
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
    let mut up = [0u8; 8];
    up.copy_from_slice(&b[OFF_UPTIME..OFF_UPTIME + 8]);
    Ok(Flight {
        seq: u32_at(b, OFF_SEQ),
        uptime_ms: u64::from_be_bytes(up),
        heap_used: u32_at(b, OFF_HEAP_USED),
        heap_size: u32_at(b, OFF_HEAP_SIZE),
        connections: u32_at(b, OFF_CONNECTIONS),
        requests: u32_at(b, OFF_REQUESTS),
        secret: (end > start).then_some((start, end)),
        build: text(OFF_BUILD, OFF_RESET_BY)?,
        reset_by: text(OFF_RESET_BY, OFF_PANIC)?,
        panic: text(OFF_PANIC, HEADER_LEN)?,
        calls,
        dropped: u16_at(b, OFF_DROPPED),
        torn,
    })
}

/// Writes a panic's text into a header in place and seals it again: what the panic handler
/// does to the last header it wrote, with no allocation (the slots already name the calls in
/// flight). A header not of this layout yet (a panic before the first write) becomes an empty
/// one carrying just the text.
pub fn stamp_panic(header: &mut [u8; HEADER_LEN], text: &str) {
    let ours = header[..4] == MAGIC
        && u16_at(header, OFF_VERSION) == VERSION
        && usize::from(u16_at(header, OFF_LEN)) == RECORD_LEN;
    if !ours {
        header.fill(0);
        put_identity(header);
    }
    put_text(&mut header[OFF_PANIC..HEADER_LEN], text);
    seal_header(header);
}
