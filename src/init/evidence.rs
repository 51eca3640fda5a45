//! What `init` reads beyond the discovery probe, per host, in one more read-only script: the
//! machine id (one machine given under two names is one box), and who answers on each RDMA
//! netdev. A ping to the all-nodes group `ff02::1` on the netdev (IPv6 link-local: no address
//! needs to be configured) fills the neighbour table with every box on that layer-2 segment;
//! on a /30 or /31 whose other end is known, one IPv4 ping does the same for IPv4. The
//! neighbour table (`ip neigh show dev NETDEV`) then names the MAC of each box that answered.

use crate::discover::Probe;

/// One neighbour entry on one netdev: the address that answered and its MAC.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Heard {
    pub netdev: String,
    /// The neighbour's address (`fe80::...` or an IPv4 address).
    pub dst: String,
    pub mac: String,
}

impl Heard {
    /// An IPv6 neighbour (heard through the all-nodes ping), not an IPv4 one.
    pub fn ipv6(&self) -> bool {
        self.dst.contains(':')
    }
}

/// What the evidence script found on one host.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Extra {
    /// `/etc/machine-id`, where readable.
    pub machine_id: Option<String>,
    pub heard: Vec<Heard>,
    /// The script ran to its end marker.
    pub complete: bool,
}

/// The RDMA netdevs of a probe, each once, in device order.
pub fn netdevs(probe: &Probe) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in &probe.devices {
        for n in &d.netdevs {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// The other end of a point-to-point subnet (/30: the other usable address; /31: the other
/// address), where a netdev has one.
fn peer_of(net: &ipnet::Ipv4Net) -> Option<std::net::Ipv4Addr> {
    let me = net.addr();
    match net.prefix_len() {
        31 => net.hosts().find(|h| *h != me),
        30 => net.hosts().find(|h| *h != me),
        _ => None,
    }
}

/// The evidence script for a host whose probe is `probe`. POSIX sh; reads, and pings only the
/// link-local all-nodes group and a point-to-point peer; every netdev quoted.
pub fn script(probe: &Probe) -> String {
    let mut s =
        String::from("v=; { read -r v < /etc/machine-id; } 2>/dev/null; echo \"@machine-id $v\"\n");
    let nds: Vec<(String, String)> = netdevs(probe)
        .into_iter()
        .filter_map(|n| crate::render::quote(&n).map(|q| (n, q)))
        .collect();
    // a link-local address still in duplicate address detection answers nothing: wait for those
    // of the netdevs with carrier (at most 3 s; one without carrier stays tentative for ever)
    let up: Vec<String> = nds
        .iter()
        .filter(|(n, _)| probe.interface(n).is_some_and(|i| i.up))
        .map(|(_, q)| format!("ip -6 -o addr show dev {q} tentative 2>/dev/null;"))
        .collect();
    if !up.is_empty() {
        s.push_str(&format!(
            "i=0; while [ $i -lt 30 ]; do case \"$({})\" in '') break ;; esac; sleep 0.1; i=$((i+1)); done\n",
            up.join(" ")
        ));
    }
    for (name, q) in &nds {
        s.push_str(&format!(
            "ping -6 -n -q -c 3 -i 0.5 -w 2 -I {q} ff02::1 >/dev/null 2>&1 &\n"
        ));
        let peers = probe
            .interface(name)
            .map(|i| i.ipv4.iter().filter_map(peer_of).collect::<Vec<_>>())
            .unwrap_or_default();
        for p in peers {
            s.push_str(&format!(
                "ping -4 -n -q -c 1 -w 2 -I {q} {p} >/dev/null 2>&1 &\n"
            ));
        }
    }
    s.push_str("wait\n");
    for (_, q) in &nds {
        s.push_str(&format!(
            "echo \"@neigh \"{q}; ip neigh show dev {q} 2>/dev/null\n"
        ));
    }
    s.push_str("echo @end\n");
    s
}

/// Read the evidence script's output.
pub fn parse(text: &str) -> Extra {
    let mut e = Extra::default();
    let mut netdev: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(id) = line.strip_prefix("@machine-id") {
            e.machine_id = Some(id.trim().to_string()).filter(|s| !s.is_empty());
        } else if let Some(nd) = line.strip_prefix("@neigh ") {
            netdev = Some(nd.trim().to_string());
        } else if line == "@end" {
            e.complete = true;
            netdev = None;
        } else if let Some(nd) = &netdev
            && let Some(h) = entry(nd, line)
            && !e.heard.contains(&h)
        {
            e.heard.push(h);
        }
    }
    e
}

/// `fe80::4ebb:47ff:fe00:103 lladdr 4c:bb:47:00:01:03 STALE`: an entry that answered (one
/// without `lladdr`, `FAILED` or `INCOMPLETE`, did not).
fn entry(netdev: &str, line: &str) -> Option<Heard> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let dst = toks.first()?;
    dst.parse::<std::net::IpAddr>().ok()?;
    let at = toks.iter().position(|t| *t == "lladdr")?;
    let mac = crate::parse::neigh::mac(toks.get(at + 1)?)?;
    if toks.iter().any(|t| *t == "FAILED" || *t == "INCOMPLETE") {
        return None;
    }
    Some(Heard {
        netdev: netdev.to_string(),
        dst: dst.to_string(),
        mac,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_machine_id_and_answered_neighbours() {
        let out = "@machine-id 0f3c9a\n@neigh enp1s0f0np0\nfe80::4ebb:47ff:fe00:103 lladdr 4C:BB:47:00:01:03 STALE\n198.19.1.2 lladdr 4c:bb:47:00:01:03 REACHABLE\nfe80::9 FAILED\n@neigh enp1s0f1np1\n@end\n";
        let e = parse(out);
        assert!(e.complete);
        assert_eq!(e.machine_id.as_deref(), Some("0f3c9a"));
        assert_eq!(e.heard.len(), 2);
        assert!(e.heard[0].ipv6() && !e.heard[1].ipv6());
        assert_eq!(e.heard[0].mac, "4c:bb:47:00:01:03");
        assert!(!parse("@machine-id \n").complete);
        assert_eq!(parse("@machine-id \n").machine_id, None);
    }

    #[test]
    fn the_script_quotes_every_netdev_and_pings_only_link_local_and_a_peer() {
        let probe = crate::discover::probe::parse(
            "@host a\n@dev d0\n@netdev en'x\n@ip\n3: en'x    inet 198.19.1.1/30 brd 198.19.1.3 scope global en'x\n@end\n",
        );
        let s = script(&probe);
        assert!(s.contains("-I \"en'x\" ff02::1"), "{s}");
        assert!(s.contains("198.19.1.2 >/dev/null"), "{s}");
        assert!(s.ends_with("echo @end\n"));
    }
}
