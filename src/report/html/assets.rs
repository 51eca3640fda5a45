//! The page's inline script and style sheet, kept beside the templates and embedded in the
//! binary. They are the page's own text: written as they are, never escaped.

/// The script: errors and policy violations kept from the first moment, layout facts written
/// into `<body data-facts>` once the page is laid out (tests read them from the DOM). The
/// Content-Security-Policy allows exactly this text (its SHA-256).
pub(super) const SCRIPT: &str = include_str!("templates/script.js");

/// The style sheet.
pub(super) const STYLE: &str = include_str!("templates/style.css");
