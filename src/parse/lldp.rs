//! lldpd's neighbours, `lldpcli -f json0 show neighbors`: per local interface, the chassis and
//! the port at the far end of its cable, as that far end announces them. json0 is lldpd's
//! regular JSON: every value sits in a list of objects (`"name": [{"value": "spark-b"}]`),
//! whatever the number of interfaces or neighbours.
//!
//! Judgement calls: `{"lldp": [{}]}` (no neighbour) is a complete reading; an interface without
//! a name is rejected; a port or chassis id of type `mac` that is not six octets is rejected; a
//! document that does not parse is `incomplete` when it starts like lldpd's (nothing kept: its
//! nesting cannot be salvaged safely), else `unrecognized`. lldpcli's `unable to connect to
//! socket` (no lldpd running) is the tool's error, kind `not-running`.

use serde::{Deserialize, Serialize};

use super::neigh::mac;
use super::text::{is_blank, push_capped, reject};
use super::{ErrorKind, MAX_STORED_ROWS, Rejected, Status, ToolError};

/// An identifier with its subtype (`mac`, `ifname`, `local`, `ip`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpId {
    pub kind: String,
    pub value: String,
}

/// The far end one local interface hears.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpNeighbour {
    /// The local interface (netdev) that heard it.
    pub interface: String,
    /// `LLDP` (or `CDPv2`, ... when lldpd runs those too).
    pub via: Option<String>,
    /// The far chassis' system name (a host name, a switch name).
    pub chassis_name: Option<String>,
    pub chassis_id: Option<LldpId>,
    /// The far port's id (a host's netdev MAC, a switch's `swp12`).
    pub port_id: Option<LldpId>,
    /// The far port's description (a host's netdev name, a switch port's alias).
    pub port_descr: Option<String>,
    pub mgmt_ip: Vec<String>,
    pub ttl_s: Option<u32>,
}

impl LldpNeighbour {
    /// The far port's MAC, when its id is one.
    pub fn port_mac(&self) -> Option<&str> {
        self.port_id
            .as_ref()
            .filter(|i| i.kind == "mac")
            .map(|i| i.value.as_str())
    }
}

/// What was read from one `lldpcli -f json0 show neighbors`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LldpReport {
    pub status: Status,
    pub error: Option<ToolError>,
    pub neighbours: Vec<LldpNeighbour>,
    pub rejected: Vec<Rejected>,
    pub not_stored: usize,
}

impl super::Report for LldpReport {
    fn status(&self) -> Status {
        self.status
    }

    fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    fn summary(&self) -> String {
        LldpReport::summary(self)
    }

    /// Beyond its status: every neighbour on a named interface, every id of type `mac` a MAC.
    fn check(&self) -> Result<(), String> {
        let r = self;
        for n in &r.neighbours {
            if n.interface.trim().is_empty() {
                return Err("a neighbour on no interface".into());
            }
            for i in [&n.port_id, &n.chassis_id].into_iter().flatten() {
                if i.kind == "mac" && mac(&i.value).as_deref() != Some(i.value.as_str()) {
                    return Err(format!("mac id `{}` accepted", i.value));
                }
            }
        }
        Ok(())
    }
}

impl LldpReport {
    fn new(status: Status) -> LldpReport {
        LldpReport {
            status,
            error: None,
            neighbours: Vec::new(),
            rejected: Vec::new(),
            not_stored: 0,
        }
    }

    /// What the local interface `netdev` hears.
    pub fn on(&self, netdev: &str) -> impl Iterator<Item = &LldpNeighbour> {
        self.neighbours
            .iter()
            .filter(move |n| n.interface == netdev)
    }

    pub fn summary(&self) -> String {
        match self.status {
            Status::Empty => return "lldpcli: empty input".into(),
            Status::Unrecognized => return "lldpcli: unrecognized: not lldpd's json0".into(),
            _ => {}
        }
        if let Some(e) = &self.error {
            return format!("lldpcli: error: {}", e.message);
        }
        let mut out = format!("lldpcli: {} neighbour(s)", self.neighbours.len());
        for n in self.neighbours.iter().take(20) {
            out.push_str(&format!(
                "\n  {} -> {} {}",
                n.interface,
                n.chassis_name.as_deref().unwrap_or("?"),
                n.port_descr
                    .as_deref()
                    .or(n.port_id.as_ref().map(|i| i.value.as_str()))
                    .unwrap_or("?")
            ));
        }
        out
    }
}

#[derive(Deserialize, Default)]
struct Root {
    #[serde(default)]
    lldp: Vec<Section>,
}

#[derive(Deserialize, Default)]
struct Section {
    #[serde(default)]
    interface: Vec<Interface>,
}

#[derive(Deserialize)]
struct Interface {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    via: Option<String>,
    #[serde(default)]
    chassis: Vec<Chassis>,
    #[serde(default)]
    port: Vec<Port>,
}

#[derive(Deserialize)]
struct Chassis {
    #[serde(default)]
    id: Vec<Typed>,
    #[serde(default)]
    name: Vec<Typed>,
    #[serde(default, rename = "mgmt-ip")]
    mgmt_ip: Vec<Typed>,
}

#[derive(Deserialize)]
struct Port {
    #[serde(default)]
    id: Vec<Typed>,
    #[serde(default)]
    descr: Vec<Typed>,
    #[serde(default)]
    ttl: Vec<Typed>,
}

/// `{"type": "mac", "value": "..."}` or `{"value": "..."}`; a value that is not a string is
/// read as its JSON text.
#[derive(Deserialize)]
struct Typed {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    value: Option<serde_json::Value>,
}

impl Typed {
    fn text(&self) -> Option<String> {
        match self.value.as_ref()? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            v => Some(v.to_string()),
        }
    }
}

fn first(list: &[Typed]) -> Option<String> {
    list.iter().find_map(Typed::text)
}

fn id(list: &[Typed]) -> Option<LldpId> {
    let t = list.first()?;
    Some(LldpId {
        kind: t.kind.clone().unwrap_or_default(),
        value: t.text()?,
    })
}

/// A `mac` id that is not six octets, named; others pass (normalised to lowercase).
fn check_mac(i: Option<LldpId>, what: &str) -> Result<Option<LldpId>, String> {
    match i {
        Some(LldpId { kind, value }) if kind == "mac" => match mac(&value) {
            Some(m) => Ok(Some(LldpId { kind, value: m })),
            None => Err(format!("{what} id `{value}` is not a MAC address")),
        },
        other => Ok(other),
    }
}

fn neighbour(i: Interface) -> Result<LldpNeighbour, String> {
    let name = i
        .name
        .filter(|n| !n.trim().is_empty())
        .ok_or("an interface without a name")?;
    let chassis = i.chassis.first();
    let port = i.port.first();
    Ok(LldpNeighbour {
        interface: name,
        via: i.via,
        chassis_name: chassis.and_then(|c| first(&c.name)),
        chassis_id: check_mac(chassis.and_then(|c| id(&c.id)), "chassis")?,
        port_id: check_mac(port.and_then(|p| id(&p.id)), "port")?,
        port_descr: port.and_then(|p| first(&p.descr)),
        mgmt_ip: chassis
            .map(|c| c.mgmt_ip.iter().filter_map(Typed::text).collect())
            .unwrap_or_default(),
        ttl_s: port
            .and_then(|p| first(&p.ttl))
            .and_then(|t| t.parse().ok()),
    })
}

/// Parse `lldpcli -f json0 show neighbors`.
pub fn parse(text: &str) -> LldpReport {
    if is_blank(text) {
        return LldpReport::new(Status::Empty);
    }
    if let Some(l) = text.lines().find(|l| {
        l.contains("unable to connect to socket") || l.contains("cannot find lldpd control socket")
    }) {
        let mut r = LldpReport::new(Status::Error);
        r.error = Some(ToolError {
            kind: ErrorKind::NotRunning,
            message: l.trim().to_string(),
        });
        return r;
    }
    // the document starts at its first `{` (a warning line may come first on a merged stream)
    let body = text.find('{').map(|i| &text[i..]).unwrap_or("");
    let root: Root = match serde_json::from_str(body.trim_end()) {
        Ok(r) => r,
        Err(_) if body.contains("\"lldp\"") => return LldpReport::new(Status::Incomplete),
        Err(_) => return LldpReport::new(Status::Unrecognized),
    };
    let mut r = LldpReport::new(Status::Ok);
    for (k, i) in root.lldp.into_iter().flat_map(|s| s.interface).enumerate() {
        match neighbour(i) {
            Ok(n) => push_capped(&mut r.neighbours, n, MAX_STORED_ROWS, &mut r.not_stored),
            Err(why) => reject(&mut r.rejected, k + 1, why, &mut r.not_stored),
        }
    }
    if !r.rejected.is_empty() {
        r.status = Status::Incomplete;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"{"lldp":[{"interface":[{"name":"enp1s0f0np0","via":"LLDP","rid":"1","age":"0 day, 00:00:07","chassis":[{"id":[{"type":"mac","value":"C2:2A:1A:17:3C:40"}],"name":[{"value":"spark-b"}],"capability":[{"type":"Bridge","enabled":false}]}],"port":[{"id":[{"type":"mac","value":"c2:2a:1a:17:3c:40"}],"descr":[{"value":"enp1s0f1np1"}],"ttl":[{"value":"120"}]}]},{"name":"enP2p1s0f0np0","via":"LLDP","chassis":[{"id":[{"type":"mac","value":"50:00:00:00:00:01"}],"name":[{"value":"sw-a"}]}],"port":[{"id":[{"type":"ifname","value":"swp12s1"}],"descr":[{"value":"to spark-a f0"}]}]}]}]}"#;

    #[test]
    fn hosts_and_switches() {
        let r = parse(TWO);
        assert_eq!(r.status, Status::Ok);
        let n = r.on("enp1s0f0np0").next().unwrap();
        assert_eq!(n.chassis_name.as_deref(), Some("spark-b"));
        assert_eq!(n.port_descr.as_deref(), Some("enp1s0f1np1"));
        assert_eq!(n.port_mac(), Some("c2:2a:1a:17:3c:40"));
        assert_eq!(n.chassis_id.as_ref().unwrap().value, "c2:2a:1a:17:3c:40");
        assert_eq!(n.ttl_s, Some(120));
        let s = r.on("enP2p1s0f0np0").next().unwrap();
        assert_eq!(s.port_id.as_ref().unwrap().kind, "ifname");
        assert_eq!(s.port_mac(), None);
    }

    #[test]
    fn empty_error_and_broken() {
        let r = parse("{\n  \"lldp\": [\n    {\n      \n    }\n  ]\n}\n");
        assert_eq!(r.status, Status::Ok);
        assert!(r.neighbours.is_empty());
        let r = parse(
            "2026-12-03T13:02:24 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory\n",
        );
        assert_eq!(r.status, Status::Error);
        assert_eq!(r.error.unwrap().kind, ErrorKind::NotRunning);
        assert_eq!(parse(&TWO[..200]).status, Status::Incomplete);
        assert_eq!(parse("Interface: eth0\n").status, Status::Unrecognized);
        let bad = TWO.replace("c2:2a:1a:17:3c:40\"}],\"descr", "c2:2a\"}],\"descr");
        let r = parse(&bad);
        assert_eq!(r.status, Status::Incomplete);
        assert_eq!(r.neighbours.len(), 1);
    }
}
