//! Execution: the only async part of fabricplan. Transports carry commands to hosts; the runner
//! drives rounds (servers, readiness, clients together, collection, cleanup) and turns what
//! came back into results through the pure parse and gate stages.

pub mod capture;
pub mod check;
pub mod evidence;
pub mod fake;
pub mod launch;
pub mod runner;
pub mod service;
pub mod session;
pub mod setup;
pub mod transport;

pub use transport::{BoxFuture, Output, Reopened, Transport, TransportError};
