//! Reports: consumers of plans and results that produce text or bytes. The run's sinks (the
//! run directory's files) consume its events; only the terminal reporter prints.

pub mod detect;
pub mod html;
pub mod phases;
pub mod plan_view;
pub mod service;
pub mod sink;
pub mod terminal;

pub use sink::{junit, summary as markdown};
