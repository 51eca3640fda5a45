//! An output stream held in bounded memory: its first and its last [`KEPT`] bytes, the bytes
//! between them counted and said on a line of their own ([`TRUNCATED_MARK`]). Every output
//! that comes back from a host (a job's streams, a Slurm step's) is read through one, so what a
//! tool prints, however much, costs the controller a small constant.

use std::collections::VecDeque;

/// How much of each output stream is held: its first and its last `KEPT` bytes.
pub const KEPT: usize = 1 << 20;
/// The line put where the middle of a longer output was left out:
/// `@fabricplan-truncated N bytes omitted ...`.
pub const TRUNCATED_MARK: &str = "@fabricplan-truncated";

/// One output stream as it arrives: its first and its last [`KEPT`] bytes held, the bytes
/// between them counted.
#[derive(Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    /// Every byte pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < KEPT {
            let n = bytes.len().min(KEPT - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= KEPT {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - KEPT..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(KEPT);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// The text (invalid UTF-8 replaced), the middle left out said on a line of its own, and
    /// how many bytes were left out.
    pub fn finish(self) -> (String, u64) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let omitted = self.total - kept;
        let mut bytes = self.head;
        if omitted > 0 {
            if bytes.last() != Some(&b'\n') {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(
                format!(
                    "{TRUNCATED_MARK} {omitted} bytes omitted (the first and the last {} MiB of {} bytes are kept)\n",
                    KEPT >> 20,
                    self.total
                )
                .as_bytes(),
            );
        }
        bytes.extend(self.tail);
        (String::from_utf8_lossy(&bytes).into_owned(), omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_output_is_whole_and_a_long_one_keeps_its_ends() {
        let mut c = Capture::default();
        c.push(b"hello ");
        c.push(b"world\n");
        assert_eq!(c.finish(), ("hello world\n".to_string(), 0));

        let mut c = Capture::default();
        c.push(b"first line\n");
        for _ in 0..300 {
            c.push(&[b'x'; 10_000]);
        }
        c.push(b"\nlast line\n");
        let total = 11 + 3_000_000 + 11;
        let (text, omitted) = c.finish();
        assert_eq!(omitted, (total - 2 * KEPT) as u64);
        assert!(text.starts_with("first line\n"));
        assert!(text.ends_with("\nlast line\n"));
        assert!(text.contains(&format!("{TRUNCATED_MARK} {omitted} bytes omitted")));
        assert!(text.len() < 2 * KEPT + 200);
    }

    #[test]
    fn one_huge_chunk_is_held_by_its_ends() {
        let mut c = Capture::default();
        let mut big = vec![b'a'; 5 * KEPT];
        big[5 * KEPT - 1] = b'z';
        c.push(&big);
        let (text, omitted) = c.finish();
        assert_eq!(omitted, (3 * KEPT) as u64);
        assert!(text.ends_with('z'));
    }
}
