//! Snapshot tests for the parsers that prove the cabling: iproute2's neighbour table
//! (`ip -j neigh show`) and lldpd's neighbours (`lldpcli -f json0 show neighbors`).

use fabricplan::parse::{self, ErrorKind, Status, Tool};

#[test]
fn ip_neigh_fixture_snapshots() {
    insta::glob!("fixtures/parse/ip-neigh/*", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let parsed = parse::parse(Tool::IP_NEIGH, &text);
        insta::assert_json_snapshot!(parsed.to_json());
        insta::assert_snapshot!("ip_neigh_summary", parsed.summary());
    });
}

#[test]
fn lldpcli_fixture_snapshots() {
    insta::glob!("fixtures/parse/lldpcli/*", |path| {
        let text = std::fs::read_to_string(path).expect("fixture readable");
        let parsed = parse::parse(Tool::LLDPCLI, &text);
        insta::assert_json_snapshot!(parsed.to_json());
        insta::assert_snapshot!("lldpcli_summary", parsed.summary());
    });
}

fn fixture(rel: &str) -> String {
    let path = format!("{}/tests/fixtures/parse/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("fixture readable")
}

#[test]
fn a_switch_breakout_is_read_per_half() {
    let r = parse::lldp::parse(&fixture("lldpcli/json0-gb10-pair-and-switch-breakout.json"));
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.neighbours.len(), 4);
    let sw = r.on("enP2p1s0f1np1").next().unwrap();
    assert_eq!(sw.chassis_name.as_deref(), Some("sw-a"));
    assert_eq!(
        sw.port_id.as_ref().map(|i| i.value.as_str()),
        Some("swp12s1")
    );
    let host = r.on("enp1s0f0np0").next().unwrap();
    assert_eq!(host.port_mac(), Some("4c:bb:47:00:01:03"));
}

#[test]
fn errors_are_the_tools() {
    let r = parse::lldp::parse(&fixture("lldpcli/not-running-lldpd-1.0.16.txt"));
    assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::NotRunning));
    let r = parse::neigh::parse(&fixture("ip-neigh/text-old-iproute2-no-json.txt"));
    assert_eq!(r.status, Status::Error);
    let r = parse::neigh::parse(&fixture("ip-neigh/json-stale-ipv6-router-failed.json"));
    assert_eq!(r.status, Status::Ok);
    assert!(r.entries[1].router);
    assert!(r.entries[2].lladdr.is_none());
}
