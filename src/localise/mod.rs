//! Localisation: from failing flows, which name a pair, to the end or ISL at fault.
//!
//! A flow depends on a few parts of the fabric: its client's half sending, its server's half
//! receiving, and each ISL direction on its path ([`Element`]). A flow that passed vouches for
//! every part it used, up to the rate it carried (a throttled half passes a flow whose share
//! of a crowded ISL is below its throttle, which clears it of nothing faster); a flow that
//! failed says one of its parts is bad. After a sampled
//! schedule's rounds, [`full_rate`] measures again every half no flow measured where a
//! throttle would show (at scale most flows' share of a crowded ISL is below its band), on its
//! own switch; then [`retests`] plans a bounded number of extra rounds: each end of a
//! failing flow against peers that passed, in the role it failed in (a peer on its own switch
//! first, so no ISL is in the way), and a flow between passing peers across each ISL direction
//! a failing flow crossed. Both together add at most [`extra_round_budget`] rounds (log2 of the
//! nodes, plus 2). [`decide`] then names a part at fault when a failing flow has it as
//! the only part no passing flow vouched for, with the flows that prove it.
//!
//! Pure and synchronous: the runner runs the rounds and applies what is decided.

mod decide;
mod evidence;
mod full_rate;
mod loopback;
mod retest;

pub use decide::{Decision, decide};
pub use evidence::{Element, Observed, Seen, elements};
pub use full_rate::{FullRate, extra_round_budget, full_rate, nodes_of, seen_at_full_rate, unseen};
pub use loopback::{MAX_LOOPBACKS, loopbacks};
pub use retest::{MAX_RETEST_ROUNDS, retests};
