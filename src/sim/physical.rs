//! What the simulated boxes say about the physical layer, from where each cable really lands
//! (crossed and swapped cables included): lldpd's neighbours (`lldpcli -f json0 show
//! neighbors`, every box runs it) and the neighbour table (`ip -j neigh show`) with the entries
//! the box's pings left: the MAC that answered, or `FAILED`.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::world::{Dev, World, mac};
use crate::plan::NodeId;

fn value(v: &str) -> Value {
    json!([{ "value": v }])
}

fn neighbour(
    local: &str,
    chassis: &str,
    chassis_mac: &str,
    id: (&str, &str),
    descr: &str,
) -> Value {
    json!({
        "name": local,
        "via": "LLDP",
        "rid": "1",
        "age": "0 day, 00:00:42",
        "chassis": [{
            "id": [{ "type": "mac", "value": chassis_mac }],
            "name": value(chassis),
            "descr": value("simulated"),
        }],
        "port": [{
            "id": [{ "type": id.0, "value": id.1 }],
            "descr": value(descr),
            "ttl": value("120"),
        }]
    })
}

/// What `d`'s lldpd hears: the switch port its cable lands on (a switched segment: the plan's
/// `switch-port`, a breakout's `sN` per half, else `swpK` by attachment order), or the far
/// device(s) of a direct or ring cable; nothing without a cable or from a dead box.
fn heard(w: &World, d: &Dev) -> Vec<Value> {
    let Some((planned, seg)) = &d.wired else {
        return Vec::new();
    };
    let segment = w.plan.segment(*seg);
    let Some((k, m)) = segment
        .members
        .iter()
        .enumerate()
        .find(|(_, m)| &m.endpoint == planned)
    else {
        return Vec::new();
    };
    if let Some(sw) = m.switch {
        let port = w.plan.profile_of(planned.node).port(&planned.port);
        let halves = port.map(|p| p.halves.len()).unwrap_or(1);
        let at = port
            .and_then(|p| p.halves.iter().position(|h| h.name == planned.half))
            .unwrap_or(0);
        let base = m
            .switch_port
            .clone()
            .unwrap_or_else(|| format!("swp{}", k + 1));
        let name = if halves > 1 {
            format!("{base}s{at}")
        } else {
            base
        };
        let chassis = format!("1c:34:da:00:{:02x}:00", sw.0 % 256);
        let sw_name = &w.plan.switches[sw.0].name;
        return vec![neighbour(
            &d.netdev,
            sw_name,
            &chassis,
            ("ifname", &name),
            &name,
        )];
    }
    w.wired_to(*seg)
        .filter(|far| (far.node, far.ifindex) != (d.node, d.ifindex) && !w.dead(far.node))
        .map(|far| {
            neighbour(
                &d.netdev,
                w.name(far.node),
                &mac(far.node, 2),
                ("mac", &mac(far.node, far.ifindex)),
                &far.netdev,
            )
        })
        .collect()
}

/// `lldpcli -f json0 show neighbors` on node `n`.
pub(crate) fn lldp_json(w: &World, n: NodeId) -> String {
    let heard: Vec<Value> = w.devs_of(n).flat_map(|d| heard(w, d)).collect();
    let doc = if heard.is_empty() {
        json!({ "lldp": [{}] })
    } else {
        json!({ "lldp": [{ "interface": heard }] })
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// `ip -j neigh show` on node `n`, for the (netdev, address) pairs its pings asked about.
pub(crate) fn neigh_json(w: &World, n: NodeId, asked: &[(String, Ipv4Addr)]) -> String {
    let entries: Vec<Value> = asked
        .iter()
        .map(|(netdev, dst)| {
            let from = w.dev_by_netdev(n, netdev);
            let answered = from
                .filter(|f| w.reaches(f, *dst))
                .and_then(|_| w.dev_by_ip(*dst));
            match answered {
                Some(far) => json!({
                    "dst": dst.to_string(), "dev": netdev,
                    "lladdr": mac(far.node, far.ifindex), "state": ["REACHABLE"],
                }),
                None => json!({ "dst": dst.to_string(), "dev": netdev, "state": ["FAILED"] }),
            }
        })
        .collect();
    Value::Array(entries).to_string()
}

/// The IPv6 link-local address of a MAC (EUI-64).
fn link_local(mac: &str) -> String {
    let b: Vec<u8> = mac
        .split(':')
        .filter_map(|x| u8::from_str_radix(x, 16).ok())
        .collect();
    let Ok([b0, b1, b2, b3, b4, b5]) = <[u8; 6]>::try_from(b) else {
        return "fe80::1".into();
    };
    let w = |a: u8, c: u8| (u16::from(a) << 8) | u16::from(c);
    format!(
        "fe80::{:x}:{:x}:{:x}:{:x}",
        w(b0 ^ 0x02, b1),
        w(b2, 0xff),
        w(0xfe, b3),
        w(b4, b5)
    )
}

/// What `fabricplan init`'s evidence script prints on node `n`: a machine id of its own, and per
/// RDMA netdev the neighbour table after a ping to the all-nodes group: every other live device
/// on the segment its cable really lands in, by link-local address and MAC.
pub(crate) fn init_evidence(w: &World, n: NodeId) -> String {
    let mut s = format!("@machine-id {:032x}\n", 0x5eed_0000_u128 + n.0 as u128);
    for d in w.devs_of(n) {
        s.push_str(&format!("@neigh {}\n", d.netdev));
        let Some(seg) = d.segment() else { continue };
        for far in w
            .wired_to(seg)
            .filter(|f| (f.node, f.ifindex) != (d.node, d.ifindex) && !w.dead(f.node))
        {
            let m = mac(far.node, far.ifindex);
            s.push_str(&format!("{} lladdr {m} STALE\n", link_local(&m)));
        }
    }
    s.push_str("@end\n");
    s
}
