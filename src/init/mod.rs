//! `fabricplan init`: a plan drafted from what the hosts show. Pure: the CLI gathers each
//! host's discovery probe and its evidence ([`evidence`]: machine id, who answers on each RDMA
//! netdev); this module tells the boxes apart ([`boxes`]: one machine under two names, a host
//! with no RDMA device, a profile per kind of box with each port's halves), finds who each
//! netdev reaches ([`links`]: LLDP, else IPv6 link-local neighbours, else IPv4 neighbours),
//! draws the cables from that ([`cabling`]: direct, switched, a ring recognised), gives every
//! segment its subnet ([`addresses`]: in use, or proposed from a pool), and writes the plan
//! with a comment on every fact saying where it came from ([`write`]). What it cannot decide
//! is a `TODO` comment at its line, never a guess written as a fact. [`against`] compares a
//! plan with the fabric as found (`detect --against`).

pub mod addresses;
pub mod against;
pub mod boxes;
pub mod cabling;
pub mod evidence;
pub mod links;
pub mod ring;
pub mod switch;
pub mod write;

use crate::discover::Probe;

pub use evidence::Extra;

/// A documentation range (RFC 5737 TEST-NET-2): the default pool subnets are proposed from.
pub const DEFAULT_POOL: &str = "198.51.100.0/24";

/// One host as given on the command line, and what reading it gave.
#[derive(Debug, Clone)]
pub struct Host {
    /// As given (an ssh_config alias, a host name).
    pub name: String,
    /// Its probe, or why there is none (it did not answer).
    pub probe: Result<Probe, String>,
    /// The evidence script's findings (empty when it did not run).
    pub extra: Extra,
}

/// What `init` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Subnets are proposed from this pool where halves have no address.
    pub pool: ipnet::Ipv4Net,
    /// The pool was given (else it is [`DEFAULT_POOL`], and the plan says so).
    pub pool_given: bool,
    /// The plan's `name`.
    pub name: String,
    /// Drafted from the fabric simulated from this plan (`--sim`): the plan says so.
    pub simulated: Option<String>,
}

/// The drafted plan.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The plan text.
    pub text: String,
    /// TODO comments in it: what could not be decided.
    pub todos: Vec<String>,
    /// The commands to run per host to configure the proposed addresses (host, command).
    pub commands: Vec<(String, String)>,
    /// Lines for stderr: hosts left out and why.
    pub notes: Vec<String>,
}

/// Draft the plan from the hosts' readings. `Err` only when the draft would not validate (a
/// defect of the drafting, said as one) or no host could be read.
pub fn draft(hosts: &[Host], opts: &Options) -> Result<Draft, String> {
    let boxes = boxes::read(hosts);
    let notes: Vec<String> = boxes.left_out.iter().map(|l| l.line()).collect();
    if boxes.boxes.is_empty() {
        return Err(format!(
            "no host could be read, nothing to draft:\n  {}",
            notes.join("\n  ")
        ));
    }
    let links = links::find(&boxes);
    let mut cabling = cabling::draw(&boxes, &links);
    addresses::assign(&boxes, &mut cabling, opts);
    let mut d = write::plan(&boxes, &cabling, opts);
    d.notes = notes;
    let plan = write::load(&d.text)
        .map_err(|e| format!("the drafted plan does not validate (a defect of init):\n{e}"))?;
    d.text.push_str(&write::gates(&plan));
    d.commands = commands(&boxes, &plan);
    if !d.commands.is_empty() {
        d.text.push_str(
            "# To apply the proposed addresses (fabricplan changes nothing on a host), run:\n",
        );
        for (host, cmd) in &d.commands {
            d.text.push_str(&format!("#   on {host}: {cmd}\n"));
        }
    }
    write::load(&d.text)
        .map_err(|e| format!("the drafted plan does not validate (a defect of init):\n{e}"))?;
    Ok(d)
}

/// Per host, the command that configures each half whose planned address it does not have yet
/// (discovery's own fix, as `detect` prints it), and the MTU of a half below 9000.
fn commands(boxes: &boxes::Boxes, plan: &crate::plan::Plan) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in &boxes.boxes {
        let Some(node) = plan.node_by_name(&b.name) else {
            continue;
        };
        for h in crate::discover::resolve_node(plan, node.id, &b.probe) {
            if let Some(cmd) = h.fix_command {
                out.push((b.name.clone(), cmd));
            } else if let (Some(m), Some(nd)) = (h.mtu, &h.netdev)
                && m < 9000
                && let Some(q) = crate::render::quote(nd)
            {
                out.push((b.name.clone(), format!("sudo ip link set {q} mtu 9000")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
