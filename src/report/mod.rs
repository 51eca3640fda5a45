//! Reports: consumers of plans and results that produce text or bytes. They never print;
//! they write to what the caller gives them.

pub mod plan_view;
