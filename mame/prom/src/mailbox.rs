//! The RAM mailbox between the PROM stand-in and MAME's Lua script: a console ring the script
//! copies to its output (so the console is visible even where the serial path is not) and a
//! state word that tells the script when to stop MAME. It sits in the top 64 KiB of the 128 MiB
//! MAME's Indy maps at physical 0x0800_0000, clear of everything the stand-in loads.

/// Physical address of the mailbox.
pub const PHYS: u32 = 0x0FFF_0000;
/// `MAGIC` at +0 says the mailbox is live (RAM holds anything before the PROM writes it).
pub const MAGIC: u32 = 0x4937_4D42; // "I7MB"
/// Offset of the state word (`STATE_*`).
pub const STATE: u32 = 0x04;
/// Offset of the count of console bytes ever written; byte n sits at `RING + n % RING_SIZE`.
pub const HEAD: u32 = 0x08;
/// Offsets of Cause, EPC and BadVAddr, written by the exception vector.
pub const CAUSE: u32 = 0x10;
pub const EPC: u32 = 0x14;
pub const BADVADDR: u32 = 0x18;
/// Offset of the delivery word: the stand-in sets [`WANT_IMAGE`]; the script writes the image
/// and the boot environment to `layout::IMAGE` and `layout::ENV`, their lengths at
/// [`IMAGE_LEN`] and [`ENV_LEN`], then sets [`DELIVERED`].
pub const DELIVERY: u32 = 0x20;
pub const IMAGE_LEN: u32 = 0x24;
pub const ENV_LEN: u32 = 0x28;
/// The length of the cell's ELF the script wrote to `layout::CELL_IMAGE` with the image (0: no
/// cell this run).
pub const CELL_LEN: u32 = 0x30;
pub const WANT_IMAGE: u32 = 0x5741_4E54; // "WANT"
pub const DELIVERED: u32 = 0x444F_4E45; // "DONE"
/// Offset and size of the console ring.
pub const RING: u32 = 0x100;
pub const RING_SIZE: u32 = 4096;

/// Still running.
pub const STATE_RUNNING: u32 = 0;
/// Finished its work and halted.
pub const STATE_HALTED: u32 = 1;
/// Found a fault it reports on the console (the RAM check), then halted.
pub const STATE_FAILED: u32 = 2;
/// Took an exception: Cause, EPC and BadVAddr are in the mailbox.
pub const STATE_EXCEPTION: u32 = 3;
/// The module initialised and the stand-in is polling it.
pub const STATE_SERVING: u32 = 4;
/// Offset of the count of polls so far (the script's sign of life).
pub const POLLS: u32 = 0x2C;

// The mailbox is the last 64 KiB of the 128 MiB, its header ends before the ring, and the
// exception vector builds its KSEG1 address with one `lui`.
const _: () = {
    assert!(RING + RING_SIZE <= 0x1_0000);
    assert!(PHYS + 0x1_0000 == indy::map::RAM_PHYS + (128 << 20));
    assert!(BADVADDR < RING);
    assert!(indy::map::kseg1(PHYS) & 0xFFFF == 0);
};
