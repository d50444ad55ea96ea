use super::*;
use crate::net::access::{Refused, Source};
use crate::net::config::DEFAULT_MAC;
use crate::services::fs::overlay::DEFAULT_OVERLAY_MAX;
use alloc::string::ToString;
use core::net::Ipv4Addr;

/// The settings of an environment holding exactly `pairs`.
fn read(pairs: &[(&str, &str)]) -> Settings {
    read_with(pairs, None)
}

fn read_with(pairs: &[(&str, &str)], build: Option<&str>) -> Settings {
    let env = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    };
    Settings::from_env(env, build)
}

/// The one note of `s`, which must have exactly one.
fn note(s: &Settings) -> &str {
    assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
    &s.notes[0]
}

#[test]
fn an_empty_environment_gives_every_default_and_no_note() {
    let s = read(&[]);
    assert_eq!(s.mac, DEFAULT_MAC);
    assert_eq!(s.ip, IpConfig::Dhcp);
    assert_eq!(s.port, DEFAULT_PORT);
    assert_eq!(s.token, TokenChoice::Generate(None));
    assert!(s.hosts.is_empty() && s.origins.is_empty() && s.tokens.is_empty());
    assert_eq!(s.policy, Policy::parse("").unwrap());
    assert!(!s.confirm);
    assert_eq!(
        s.root,
        RootSettings {
            target: 2,
            overlay_max: DEFAULT_OVERLAY_MAX,
            notes: String::new()
        }
    );
    assert!(s.mdns);
    assert_eq!(s.name, "indy-177701");
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn the_station_address_and_ip_setup() {
    let s = read(&[
        ("eaddr", "08:00:69:0e:07:01"),
        ("netaddr", "10.0.0.5/24"),
        ("netgw", "10.0.0.1"),
    ]);
    assert_eq!(s.mac, [0x08, 0x00, 0x69, 0x0e, 0x07, 0x01]);
    assert_eq!(
        s.name, "indy-0e0701",
        "the default name follows the address"
    );
    match s.ip {
        IpConfig::Static { cidr, gateway } => {
            assert_eq!(cidr.to_string(), "10.0.0.5/24");
            assert_eq!(gateway, Some(Ipv4Addr::new(10, 0, 0, 1)));
        }
        IpConfig::Dhcp => panic!("a static address"),
    }
    assert!(s.notes.is_empty(), "{:?}", s.notes);

    let s = read(&[("eaddr", "08:00:69")]);
    assert_eq!(s.mac, DEFAULT_MAC);
    assert!(note(&s).starts_with("eaddr ignored ("), "{:?}", s.notes);
    let s = read(&[("netaddr", "10.0.0.300")]);
    assert_eq!(s.ip, IpConfig::Dhcp);
    assert!(
        note(&s).starts_with("netaddr/netgw ignored ("),
        "{:?}",
        s.notes
    );
}

#[test]
fn the_port_is_1_to_65535() {
    assert_eq!(read(&[("mcp.port", " 8080 ")]).port, 8080);
    assert_eq!(read(&[("mcp.port", "65535")]).port, 65535);
    for bad in ["0", "65536", "-1", "http", ""] {
        let s = read(&[("mcp.port", bad)]);
        assert_eq!(s.port, DEFAULT_PORT, "{bad}");
        assert_eq!(note(&s), "mcp.port is not a port number; using 7801");
    }
}

#[test]
fn the_token_is_the_environments_then_the_images_then_generated() {
    let given = "a-token-of-16-chars";
    assert_eq!(
        read(&[("mcp.token", given)]).token,
        TokenChoice::Use(given.into(), Source::Environment)
    );
    assert_eq!(
        read_with(&[], Some(given)).token,
        TokenChoice::Use(given.into(), Source::Build)
    );
    assert_eq!(read(&[("mcp.token", "none")]).token, TokenChoice::Open);
    // Fails closed: a short one is refused and a token generated, never the door opened.
    assert_eq!(
        read(&[("mcp.token", "short")]).token,
        TokenChoice::Generate(Some((Source::Environment, Refused::TooShort(5))))
    );
}

#[test]
fn hosts_and_origins_are_bounded_lists() {
    let s = read(&[
        ("mcp.hosts", "indy, indy.lab ,,"),
        ("mcp.origins", "http://indy:7801,https://lab.example"),
    ]);
    assert_eq!(s.hosts, ["indy", "indy.lab"]);
    assert_eq!(s.origins, ["http://indy:7801", "https://lab.example"]);
    assert!(s.notes.is_empty(), "{:?}", s.notes);

    let many: Vec<String> = (0..20).map(|i| alloc::format!("http://h{i}")).collect();
    let s = read(&[
        ("mcp.hosts", &many.join(",")),
        ("mcp.origins", &many.join(",")),
    ]);
    assert_eq!(
        (s.hosts.len(), s.origins.len()),
        (access::HOSTS_MAX, ORIGINS_MAX)
    );
    assert_eq!(
        s.notes,
        [
            "mcp.hosts: 4 names ignored (at most 16 of at most 253 characters)",
            "mcp.origins: 4 origins ignored (at most 16 of at most 272 characters)"
        ]
    );
    let long = alloc::format!("http://{}", "a".repeat(ORIGIN_MAX));
    let s = read(&[("mcp.origins", &long)]);
    assert!(s.origins.is_empty());
    assert_eq!(
        note(&s),
        "mcp.origins: 1 origins ignored (at most 16 of at most 272 characters)"
    );
}

#[test]
fn a_policy_that_does_not_parse_serves_observe_only() {
    let s = read(&[("mcp.policy", "operate")]);
    assert_eq!(s.policy.text(), "operate");
    assert!(s.notes.is_empty());
    let s = read(&[("mcp.policy", "operate,,")]);
    assert_eq!(
        s.policy.text(),
        "observe (the configured \"operate,,\" is invalid)"
    );
    assert_eq!(
        note(&s),
        "mcp.policy refused (an empty item in the list): serving observe only"
    );
}

#[test]
fn lesser_tokens_that_do_not_parse_give_none() {
    let s = read(&[("mcp.tokens", "watcher:observe:watcher-secret-0123456789")]);
    assert_eq!(s.tokens.len(), 1);
    assert_eq!(
        (s.tokens[0].name.as_str(), s.tokens[0].role.text()),
        ("watcher", "observe")
    );
    let s = read(&[("mcp.tokens", "watcher:observe:short")]);
    assert!(s.tokens.is_empty());
    assert!(
        note(&s).starts_with("mcp.tokens refused ("),
        "{:?}",
        s.notes
    );
    assert!(note(&s).ends_with("): no lesser tokens"), "{:?}", s.notes);
}

#[test]
fn a_lesser_token_with_the_administrators_secret_gives_none() {
    let admin = "admin-secret-0123456789";
    let s = read(&[
        ("mcp.token", admin),
        (
            "mcp.tokens",
            &format!("watcher:observe:{admin},ci:operate:ci-secret-0123456789"),
        ),
    ]);
    assert!(s.tokens.is_empty());
    assert_eq!(
        note(&s),
        "mcp.tokens refused (a secret is mcp.token's): no lesser tokens"
    );
    assert!(s.notes.iter().all(|n| !n.contains(admin)), "{:?}", s.notes);
}

#[test]
fn consent_is_on_off_and_on_when_unclear() {
    assert!(read(&[("mcp.confirm", "on")]).confirm);
    assert!(!read(&[("mcp.confirm", "off")]).confirm);
    let s = read(&[("mcp.confirm", "maybe")]);
    assert!(s.confirm);
    assert_eq!(
        note(&s),
        "mcp.confirm is not on/off: destructive tools ask for consent"
    );
}

#[test]
fn the_root_disk_and_its_overlay() {
    let s = read(&[("mcp.disk", "3"), ("mcp.overlay_max", "64K")]);
    assert_eq!((s.root.target, s.root.overlay_max), (3, 65536));
    assert_eq!(s.root.notes, "");
    // The mount's console line carries these notes (services/fs/mount.rs).
    let s = read(&[("mcp.disk", "8"), ("mcp.overlay_max", "lots")]);
    assert_eq!(
        (s.root.target, s.root.overlay_max),
        (2, DEFAULT_OVERLAY_MAX)
    );
    assert!(
        s.root
            .notes
            .contains("mcp.disk is not a SCSI ID 0..7, using 2")
    );
    assert!(
        s.root.notes.contains("mcp.overlay_max \"lots\""),
        "{}",
        s.root.notes
    );
    assert!(s.notes.is_empty());
}

#[test]
fn mdns_and_its_name() {
    assert!(!read(&[("mcp.mdns", " OFF ")]).mdns);
    assert!(read(&[("mcp.mdns", "on")]).mdns);
    let s = read(&[("mcp.name", "lab-indy-1")]);
    assert_eq!(s.name, "lab-indy-1");
    let s = read(&[("mcp.name", "-bad-")]);
    assert_eq!(s.name, "indy-177701");
    assert_eq!(
        note(&s),
        "mcp.name refused (it may not start or end with '-'): announcing indy-177701"
    );
    // No responder, no word about its name.
    let s = read(&[("mcp.name", "-bad-"), ("mcp.mdns", "off")]);
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}
