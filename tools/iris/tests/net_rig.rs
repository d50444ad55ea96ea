//! The real module image on the emulated Indy, reached through port forwarding: HTTP works, an
//! RX overflow storm at the NIC overruns the guest's ring, and the module's driver recovers
//! (restarts the channel) so HTTP works again. Skipped, with the reason printed, when the image
//! has not been built (`cargo xtask image`); `IRIX7_IMAGE` names another image.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use iris::{Rig, RunEnd};
use support::guest::guest_options;
use support::image::ProductImage;

const EADDR: [u8; 6] = [0x08, 0x00, 0x69, 0x0e, 0x07, 0x02];

/// `GET /` on a client thread while the rig runs on this one; the status line.
fn get_status_line(rig: &mut Rig, addr: SocketAddr) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = (|| -> std::io::Result<String> {
            let mut s = TcpStream::connect(addr)?;
            s.set_read_timeout(Some(Duration::from_secs(30)))?;
            s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
            let mut body = Vec::new();
            s.read_to_end(&mut body)?;
            let text = String::from_utf8_lossy(&body).into_owned();
            Ok(text.lines().next().unwrap_or("").to_string())
        })();
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    let mut got = None;
    let end = rig
        .run_until(Duration::from_secs(60), |_| {
            got = got.take().or_else(|| rx.try_recv().ok());
            got.is_some()
        })
        .unwrap();
    assert_eq!(end, RunEnd::Predicate, "no HTTP answer within 60 s");
    got.unwrap().unwrap()
}

#[test]
fn http_survives_an_rx_overflow_storm() {
    let Some(image) = ProductImage::find_or_skip() else {
        return;
    };
    let eaddr = EADDR.map(|b| format!("{b:02x}")).join(":");
    let eaddr_env = format!("eaddr={eaddr}");
    let opts = guest_options(&image.path, &image, &[&eaddr_env], &[80]);
    let mut rig = Rig::new(opts).unwrap();
    rig.boot().unwrap();
    let addr = rig.net().forward_addrs()[0];
    assert_eq!(get_status_line(&mut rig, addr), "HTTP/1.1 200 OK");

    // 300 frames for the guest's address at once: more than its RX ring holds.
    let frames: Vec<Vec<u8>> = (0..300u32)
        .map(|i| {
            let mut f = vec![0u8; 600];
            f[..6].copy_from_slice(&EADDR);
            f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 9]);
            f[12..14].copy_from_slice(&[0x88, 0xB5]);
            f[14..18].copy_from_slice(&i.to_be_bytes());
            f
        })
        .collect();
    rig.net().storm().inject(frames);
    let end = rig
        .run_until(Duration::from_secs(10), |r| {
            !r.net().storm().results().is_empty()
        })
        .unwrap();
    assert_eq!(end, RunEnd::Predicate);
    let storm = rig.net().storm().results()[0];
    assert!(
        storm.stored > 0 && storm.lost > 0,
        "the ring overran: {storm:?}"
    );
    assert_eq!(storm.stored + storm.lost, 300);

    // The driver drains the ring, sees the stopped channel (RBO) and restarts it.
    assert_eq!(get_status_line(&mut rig, addr), "HTTP/1.1 200 OK");
    assert_eq!(get_status_line(&mut rig, addr), "HTTP/1.1 200 OK");
    rig.stop().unwrap();
}
