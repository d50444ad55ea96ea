//! The flight record's bytes: what the module writes into the region the kernel keeps across a
//! warm reset, and the parser that reads the previous boot's copy. The previous copy is input
//! like any other (a torn write, a foreign image's layout, a bit flipped in DRAM): a record is
//! believed only when its magic, version, length and CRC-32 all hold, and every text in it is
//! UTF-8. The layout is in `docs/abi.md` ("The flight record").

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// The first bytes of every record.
pub const MAGIC: [u8; 4] = *b"I7FR";
/// The layout below; another is [`FlightError::Foreign`].
pub const VERSION: u16 = 1;
/// Calls in flight a record holds; more are counted in `dropped`.
pub const MAX_CALLS: usize = 8;
/// Bytes of a tool name as recorded (a longer one is cut at a character boundary).
pub const TOOL_LEN: usize = 24;
/// Bytes of the build id and of the reset request as recorded.
pub const NAME_LEN: usize = 24;
/// Bytes of a panic's message and location as recorded.
pub const PANIC_LEN: usize = 160;

const CALL_LEN: usize = TOOL_LEN + 4 + 4 + 4;
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
const OFF_CALLS: usize = 48;
const OFF_DROPPED: usize = 50;
const OFF_BUILD: usize = 52;
const OFF_RESET_BY: usize = OFF_BUILD + NAME_LEN;
/// Where the panic text starts: the panic handler rewrites it in place.
pub const OFF_PANIC: usize = OFF_RESET_BY + NAME_LEN;
const OFF_CALL_TABLE: usize = OFF_PANIC + PANIC_LEN;
/// Bytes of a record.
pub const RECORD_LEN: usize = OFF_CALL_TABLE + MAX_CALLS * CALL_LEN;
const _: () = assert!(RECORD_LEN == 548 && RECORD_LEN <= indy::abi::FLIGHT_REGION_SIZE as usize);

/// CRC-32 (ISO-HDLC, as zlib and PNG), sixteen bytes a step: the record is sealed at every
/// tool call's start, and the one-table loop cost 5,900 guest instructions a seal (8 % of a
/// small `echo`, `cargo xtask bench`); sliced by 16 it costs 3,300, for 16 KiB of table.
const CRC32: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);

/// The era a call came in, as recorded: 0 the stateless 2026-07-28 era, 1 a legacy session.
pub const ERA_MODERN: u8 = 0;
pub const ERA_LEGACY: u8 = 1;

/// One tool call that was in flight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlightCall {
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
    /// Records written before this one in the same boot.
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
    pub calls: Vec<FlightCall>,
    /// Calls in flight beyond [`MAX_CALLS`].
    pub dropped: u16,
}

/// Why a region holds no record to believe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlightError {
    /// Nothing was written (all zero, or an empty region: after a power-on).
    Absent,
    /// Not this layout: another magic or version (another module, another version of it).
    Foreign,
    /// This layout, but torn or damaged: a length, CRC or text that does not hold.
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
    let mut n = text.len().min(out.len());
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
}

fn put_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Writes `f` as a record into `out`, sealing it with its CRC.
pub fn encode(f: &Flight, out: &mut [u8; RECORD_LEN]) {
    out.fill(0);
    out[..4].copy_from_slice(&MAGIC);
    out[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&VERSION.to_be_bytes());
    out[OFF_LEN..OFF_LEN + 2].copy_from_slice(&(RECORD_LEN as u16).to_be_bytes());
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
    let n = f.calls.len().min(MAX_CALLS);
    let dropped = f.dropped.saturating_add((f.calls.len() - n) as u16);
    out[OFF_CALLS..OFF_CALLS + 2].copy_from_slice(&(n as u16).to_be_bytes());
    out[OFF_DROPPED..OFF_DROPPED + 2].copy_from_slice(&dropped.to_be_bytes());
    put_text(&mut out[OFF_BUILD..OFF_RESET_BY], &f.build);
    put_text(&mut out[OFF_RESET_BY..OFF_PANIC], &f.reset_by);
    put_text(&mut out[OFF_PANIC..OFF_CALL_TABLE], &f.panic);
    for (i, c) in f.calls.iter().take(n).enumerate() {
        let at = OFF_CALL_TABLE + i * CALL_LEN;
        put_text(&mut out[at..at + TOOL_LEN], &c.tool);
        out[at + TOOL_LEN..at + TOOL_LEN + 4].copy_from_slice(&c.client);
        out[at + TOOL_LEN + 4] = c.era;
        put_u32(out, at + TOOL_LEN + 8, c.started_ms);
    }
    seal(out);
}

/// Recomputes the CRC of a record whose fields were changed in place (the panic handler's).
pub fn seal(out: &mut [u8; RECORD_LEN]) {
    let crc = CRC32.checksum(&out[OFF_SEQ..]);
    put_u32(out, OFF_CRC, crc);
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A NUL-padded text field: UTF-8 up to the first NUL, or `Corrupt`.
fn text_at(field: &[u8]) -> Result<String, FlightError> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    core::str::from_utf8(&field[..end])
        .map(String::from)
        .map_err(|_| FlightError::Corrupt)
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
    if CRC32.checksum(&b[OFF_SEQ..]) != u32_at(b, OFF_CRC) {
        return Err(FlightError::Corrupt);
    }
    let n = usize::from(u16_at(b, OFF_CALLS));
    if n > MAX_CALLS {
        return Err(FlightError::Corrupt);
    }
    let mut calls = Vec::new();
    calls
        .try_reserve_exact(n)
        .map_err(|_| FlightError::Corrupt)?;
    for i in 0..n {
        let at = OFF_CALL_TABLE + i * CALL_LEN;
        let mut client = [0u8; 4];
        client.copy_from_slice(&b[at + TOOL_LEN..at + TOOL_LEN + 4]);
        let era = b[at + TOOL_LEN + 4];
        if era > ERA_LEGACY {
            return Err(FlightError::Corrupt);
        }
        calls.push(FlightCall {
            tool: Cow::Owned(text_at(&b[at..at + TOOL_LEN])?),
            client,
            era,
            started_ms: u32_at(b, at + TOOL_LEN + 8),
        });
    }
    let (start, end) = (u32_at(b, OFF_SECRET_START), u32_at(b, OFF_SECRET_END));
    if start > end {
        return Err(FlightError::Corrupt);
    }
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
        build: text_at(&b[OFF_BUILD..OFF_RESET_BY])?,
        reset_by: text_at(&b[OFF_RESET_BY..OFF_PANIC])?,
        panic: text_at(&b[OFF_PANIC..OFF_CALL_TABLE])?,
        calls,
        dropped: u16_at(b, OFF_DROPPED),
    })
}

/// Writes a panic's text into a record in place and seals it again: what the panic handler
/// does to the last record it wrote, with no allocation. A region that holds no record of this
/// layout yet (a panic before the first write) gets an empty record carrying just the text.
pub fn stamp_panic(rec: &mut [u8; RECORD_LEN], text: &str) {
    let ours = rec[..4] == MAGIC
        && u16_at(rec, OFF_VERSION) == VERSION
        && usize::from(u16_at(rec, OFF_LEN)) == RECORD_LEN;
    if !ours {
        rec.fill(0);
        rec[..4].copy_from_slice(&MAGIC);
        rec[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&VERSION.to_be_bytes());
        rec[OFF_LEN..OFF_LEN + 2].copy_from_slice(&(RECORD_LEN as u16).to_be_bytes());
    }
    put_text(&mut rec[OFF_PANIC..OFF_CALL_TABLE], text);
    seal(rec);
}
