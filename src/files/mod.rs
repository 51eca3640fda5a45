//! The file system at fabricplan's edges: what it writes ([`output`]) never replaces anything
//! but a regular file, takes the mode the umask gives and appears whole; what it reads back
//! ([`input`]) is a regular file (or, for a plan or a tool's output, a pipe), read within a size
//! limit, never a device read forever nor a FIFO that blocks.
//!
//! Every sink and command writes through [`output`] and reads through [`input`]: a new sink or
//! command gets both for free.

pub mod input;
pub mod output;

use std::fs::Metadata;

/// What is at a path, in words: `a directory`, `a FIFO`, `a character device`...
pub fn kind_of(m: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// `64 KiB`, `1 GiB`, `1000 B`: a size as the messages and the help show it.
pub fn size_text(bytes: u64) -> String {
    crate::text::size::format(bytes)
}

/// A size as given on the command line: bytes, or with a binary unit as [`crate::text::size`]
/// reads it (`64K`, `200M`, `1G`), or as fabricplan writes it (`64KiB`, `1GiB`); more than 0.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("ib"))
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    crate::text::size::parse(t)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a size (bytes, or with K, M or G: `64KiB`, `1GiB`)"))
}

#[cfg(test)]
mod tests {
    use super::{parse_size, size_text};

    #[test]
    fn sizes_read_and_shown() {
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("200MB"), Ok(200 << 20));
        assert_eq!(parse_size("12345"), Ok(12345));
        for bad in [
            "",
            "0",
            "-1",
            "1.5G",
            "GiB",
            "99999999999999999999",
            "16777216T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(size_text(64 << 10), "64 KiB");
        assert_eq!(size_text(1 << 30), "1 GiB");
        assert_eq!(size_text(1000), "1000 B");
    }
}
