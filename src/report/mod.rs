//! Reports: consumers of plans and results that produce text or bytes. Only the terminal
//! reporter prints; the others return what the caller writes.

pub mod detect;
pub mod junit;
pub mod markdown;
pub mod plan_view;
pub mod terminal;
