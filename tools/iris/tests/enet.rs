//! The module's Seeq driver against the rig's HPC3/Seeq model: probe, init, TX padding and
//! reclaim, RX status handling, ring-end restarts and overflow storms (harness in `support/enet.rs`).

mod support;

use indy::regs::enet_desc::{DESC_BCNT, DESC_EOX, DESC_OWN};
use indy::regs::hpc3::{DMA_CFG_VALUE, EDMA_CFG, EPIO_CFG, ERX_NDBP, ETX_NDBP, PIO_CFG_VALUE};
use iris::devices::hpc3_enet::{Hpc3Enet, SeeqChip};
use iris::memory::{GuestMemory, VecMemory};
use iris::net::wire::wire;
use irix7_mcp::drivers::seeq::{Chip, Config, Seeq};
use std::cell::RefCell;
use std::rc::Rc;
use support::enet::*;

#[test]
fn probe_and_init_program_the_chip() {
    let r = driver_bench(8, 4);
    assert_eq!(r.drv.chip(), Chip::Seeq80C03);
    let mut g = r.m.borrow_mut();
    assert_eq!(g.nic.station(), MAC);
    assert_eq!(g.nic.control_80c03(), 0x37);
    assert!(g.nic.rx_active());
    assert!(!g.nic.tx_active());
    assert_eq!(g.nic.read_reg(EDMA_CFG, 4), DMA_CFG_VALUE);
    assert_eq!(g.nic.read_reg(EPIO_CFG, 4), PIO_CFG_VALUE);
    assert_eq!(g.nic.read_reg(ERX_NDBP, 4), DMA_AT);
    assert_eq!(g.nic.read_reg(ETX_NDBP, 4), DMA_AT + 8 * 16);
    // The last RX descriptor carries EOR, the others do not; all are owned by the HPC.
    for i in 0..8u64 {
        let cnt = g.mem.read_u32(u64::from(DMA_AT) + 16 * i + 4).unwrap();
        assert_eq!(cnt & DESC_OWN, DESC_OWN);
        assert_eq!(cnt & DESC_EOX != 0, i == 7, "descriptor {i}");
        assert_eq!(cnt & DESC_BCNT, 1584);
    }
    drop(g);

    let old = driver_bench_with(
        SeeqChip::S8003,
        Config {
            rx_ring: 4,
            tx_ring: 4,
        },
    );
    assert_eq!(old.drv.chip(), Chip::Seeq8003);
    assert_eq!(old.m.borrow().nic.station(), MAC);
}

#[test]
fn bad_ring_sizes_are_refused() {
    let (guest, _host) = wire(4);
    let m = Rc::new(RefCell::new(Machine {
        nic: Hpc3Enet::new(guest, SeeqChip::C80C03),
        mem: VecMemory::new(u64::from(RAM), RAM_LEN),
    }));
    let bus = |len| TestBus {
        m: m.clone(),
        cache: vec![0; len],
    };
    let one = Config {
        rx_ring: 1,
        tx_ring: 4,
    };
    assert!(matches!(
        Seeq::new(bus(1 << 16), MAC, one),
        Err(irix7_mcp::drivers::seeq::Error::BadRingSize)
    ));
    let c = Config {
        rx_ring: 8,
        tx_ring: 8,
    };
    let short = Seeq::<TestBus>::dma_len(&c) - 1;
    assert!(matches!(
        Seeq::new(bus(short), MAC, c),
        Err(irix7_mcp::drivers::seeq::Error::DmaAreaTooSmall)
    ));
}

#[test]
fn tx_pads_short_frames_and_sends_full_ones_whole() {
    let mut r = driver_bench(8, 4);
    let short = frame(PEER, MAC, 42, 1);
    let full = frame(PEER, MAC, 1514, 2);
    assert!(r.send(&short));
    assert!(r.send(&full));
    r.step();
    let got = r.host.recv().unwrap();
    assert_eq!(got.len(), 60);
    assert_eq!(&got[..42], &short[..]);
    assert!(got[42..].iter().all(|&b| b == 0), "padding is zeros");
    assert_eq!(r.host.recv(), Some(full));
    assert_eq!(r.host.recv(), None);
    assert_eq!(r.stats().tx_runts, 0);
    r.drv.service();
    assert_eq!(r.drv.tx_in_flight(), 0);
    assert_eq!(r.counters().tx_frames, 2);
    // The first send found the channel idle and started it; the second was chained behind it
    // while the channel was still ACTIVE.
    assert_eq!(r.counters().tx_kicks, 1);
}

#[test]
fn rx_delivers_good_frames_and_drops_bad_and_own() {
    let mut r = driver_bench(8, 4);
    let a = frame(MAC, PEER, 64, 1);
    let own = frame([0xFF; 6], MAC, 64, 2);
    let b = frame([0xFF; 6], PEER, 1514, 3);
    let c = frame(MAC, PEER, 100, 4);
    let d = frame(MAC, PEER, 200, 5);
    for f in [&a, &own, &b, &c, &d] {
        r.host.send(f.clone());
    }
    r.step();
    // Frame c (descriptor 3) gets a CRC-error status; frame d (descriptor 4) an impossible
    // length (more bytes left than the buffer had).
    // 12 descriptors of 16 bytes, rounded up to a 128-byte line, then 1664-byte buffers.
    let rx_buf = |i: u32| DMA_AT + 256 + i * 1664;
    r.poke(rx_buf(3) + 2 + 100, &[0x02]);
    r.poke(DMA_AT + 4 * 16 + 6, &[0x3F, 0xFF]);
    let got = r.recv_all();
    assert_frames(&got, &[a, b]);
    let c = r.counters();
    assert_eq!(
        (c.rx_frames, c.rx_own, c.rx_errors, c.rx_bad_length),
        (2, 1, 1, 1)
    );
    assert_eq!(c.rx_bytes, 64 + 1514);
    // Frames to someone else never reach the ring.
    r.host.send(frame([2, 9, 9, 9, 9, 9], PEER, 64, 6));
    r.step();
    assert_eq!(r.recv(), None);
    assert_eq!(r.stats().rx_filtered, 1);
}

#[test]
fn rx_takes_multicast_frames_for_mdns() {
    // The driver puts the Seeq in station + broadcast + multicast mode: mDNS (01:00:5e:00:00:fb)
    // reaches smoltcp, which keeps the groups it joined; unicast to others is still filtered.
    let mut r = driver_bench(8, 4);
    let mdns = frame([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb], PEER, 80, 1);
    r.host.send(mdns.clone());
    r.host.send(frame([2, 9, 9, 9, 9, 9], PEER, 64, 2));
    r.step();
    assert_frames(&r.recv_all(), &[mdns]);
    assert_eq!(r.stats().rx_filtered, 1);
}

#[test]
fn rx_restarts_at_the_end_of_the_ring_without_losing_frames() {
    let mut r = driver_bench(4, 4);
    let sent: Vec<Vec<u8>> = (0..30).map(|i| frame(MAC, PEER, 60 + i, i as u8)).collect();
    for f in &sent {
        r.host.send(f.clone());
    }
    let mut got = Vec::new();
    for _ in 0..100 {
        r.step();
        got.extend(r.recv_all());
        if got.len() == sent.len() {
            break;
        }
    }
    assert_frames(&got, &sent);
    let c = r.counters();
    assert!(
        c.rx_restarts >= 7,
        "ring of 4 refilled {} times",
        c.rx_restarts
    );
    assert_eq!(c.rx_overflows, 0);
    assert_eq!(r.stats().rx_overflow_drops, 0);
}

#[test]
fn rx_survives_an_overflow_storm() {
    let mut r = driver_bench(8, 4);
    let storm: Vec<Vec<u8>> = (0..64).map(|i| frame(MAC, PEER, 300, i)).collect();
    let res = {
        let mut g = r.m.borrow_mut();
        let Machine { nic, mem } = &mut *g;
        nic.inject_rx_storm(mem, storm.clone())
    };
    assert_eq!((res.stored, res.lost), (8, 56));
    let got = r.recv_all();
    assert_frames(&got, &storm[..8]);
    let c = r.counters();
    assert_eq!(c.rx_overflows, 1);
    assert_eq!(c.rx_restarts, 1);
    assert!(r.m.borrow().nic.rx_active());
    // Later frames arrive normally, across several more trips round the ring.
    let later: Vec<Vec<u8>> = (0..20).map(|i| frame(MAC, PEER, 90, 100 + i)).collect();
    let mut got = Vec::new();
    for f in &later {
        r.host.send(f.clone());
        r.step();
        got.extend(r.recv_all());
    }
    assert_frames(&got, &later);
    // A second storm while frames are still unread: the driver reads them first, then restarts.
    let res = {
        let mut g = r.m.borrow_mut();
        let Machine { nic, mem } = &mut *g;
        nic.inject_rx_storm(mem, storm.clone())
    };
    assert_eq!(res.stored, 8);
    assert_eq!(r.recv_all().len(), 8);
    assert_eq!(r.counters().rx_overflows, 2);
    r.host.send(frame(MAC, PEER, 64, 7));
    r.step();
    assert_eq!(r.recv_all().len(), 1);
}

#[test]
fn tx_reclaims_across_many_wraps() {
    let mut r = driver_bench(4, 4);
    let sent: Vec<Vec<u8>> = (0..200)
        .map(|i| frame(PEER, MAC, 60 + (i * 13) % 1400, i as u8))
        .collect();
    let mut next = 0;
    let mut got = Vec::new();
    let mut full = 0;
    while got.len() < sent.len() {
        // Queue as many as fit, then let the HPC run.
        while next < sent.len() && r.send(&sent[next]) {
            next += 1;
        }
        if next < sent.len() {
            full += 1;
        }
        r.step();
        got.extend(std::iter::from_fn(|| r.host.recv()));
        assert!(full < 1000, "no progress");
    }
    assert_frames(&got, &sent);
    r.drv.service();
    let c = r.counters();
    assert_eq!(c.tx_frames, 200);
    assert_eq!(c.tx_ring_full, 0, "transmit() said no instead of dropping");
    assert!(full >= 40, "the ring of 4 filled up ({full} times)");
    assert_eq!(r.drv.tx_in_flight(), 0);
}

#[test]
fn tx_restarts_a_channel_that_stopped_before_the_chain_grew() {
    let mut r = driver_bench(4, 4);
    let (f1, f2) = (frame(PEER, MAC, 60, 1), frame(PEER, MAC, 60, 2));
    assert!(r.send(&f1));
    assert!(r.send(&f2));
    // The race: the HPC had already read frame 1's cntinfo with EOX still set, so it stops
    // after frame 1 although the driver chained frame 2 (and saw ACTIVE, so did not kick).
    let tx0 = DMA_AT + 4 * 16 + 4;
    let cnt = r.m.borrow_mut().mem.read_u32(u64::from(tx0)).unwrap();
    r.poke(tx0, &(cnt | DESC_EOX).to_be_bytes());
    r.step();
    assert_eq!(r.host.recv(), Some(f1));
    assert_eq!(r.host.recv(), None);
    assert_eq!(r.counters().tx_kicks, 1);
    // Reclaim finds frame 2 unsent on an idle channel and restarts it there.
    r.drv.service();
    assert_eq!(r.counters().tx_kicks, 2);
    r.step();
    assert_eq!(r.host.recv(), Some(f2));
    r.drv.service();
    assert_eq!(r.drv.tx_in_flight(), 0);
    assert_eq!(r.counters().tx_frames, 2);
}
