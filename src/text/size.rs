//! Byte sizes: one formatter for what fabricplan writes (`16 KiB`) and one parser for what a
//! plan and the tools read (`64K`). Both binary: nccl-tests and perftest read `K` as 1024.

/// `16 KiB`, `128 MiB`, `8 B`, `1000 B`: the largest binary unit that divides the size exactly.
/// A size is never rounded, so two sizes never share a name (a measurement is keyed by it).
pub fn format(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024 && v % 1024 == 0 && u + 1 < UNITS.len() {
        v /= 1024;
        u += 1;
    }
    format!("{v} {}", UNITS[u])
}

/// `8`, `64K`, `128M`, `1G` (or `k`, `m`, `g`) -> bytes, as nccl-tests reads `-b` and `-e` and
/// perftest `-s`: a whole number with an optional binary suffix, surrounding blanks ignored.
/// `None` for anything else (a fraction, another suffix, a sign other than `+`) or an overflow.
pub fn parse(text: &str) -> Option<u64> {
    let s = text.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_exactly_in_the_largest_unit_that_divides_them() {
        for (bytes, text) in [
            (0, "0 B"),
            (8, "8 B"),
            (1000, "1000 B"),
            (1536, "1536 B"),
            (16384, "16 KiB"),
            (128 << 20, "128 MiB"),
            (3 << 30, "3 GiB"),
            (1 << 40, "1 TiB"),
            (1 << 50, "1024 TiB"),
        ] {
            assert_eq!(format(bytes), text);
        }
    }

    #[test]
    fn sizes_are_read_as_nccl_tests_reads_them() {
        for (text, bytes) in [
            ("8", Some(8)),
            (" 64K ", Some(64 << 10)),
            ("64k", Some(64 << 10)),
            ("128M", Some(128 << 20)),
            ("1g", Some(1 << 30)),
            ("+8", Some(8)),
            ("0", Some(0)),
        ] {
            assert_eq!(parse(text), bytes, "{text:?}");
        }
        for bad in [
            "",
            "K",
            "1.5K",
            "1T",
            "-1",
            "8 B",
            "64KiB",
            "1e3",
            "x",
            "17179869184G",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn what_is_written_in_whole_units_reads_back() {
        for bytes in [8u64, 16 << 10, 128 << 20, 4 << 30] {
            let shown = format(bytes).replace(' ', "").replace("iB", "");
            assert_eq!(parse(shown.trim_end_matches('B')), Some(bytes));
        }
    }
}
