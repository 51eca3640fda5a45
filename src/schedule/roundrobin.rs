//! Round-robin pairing (the circle method): every unordered pair of n members exactly once,
//! no member twice in a round, n-1 rounds for even n and n for odd n. Round r is computed
//! directly, so all-pairs schedules never materialise.

/// Rounds needed to pair every member with every other.
pub fn round_count(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        n if n % 2 == 0 => n - 1,
        n => n,
    }
}

/// The (client, server) member indices of round `r`.
pub fn round_pairs(n: usize, r: usize) -> Vec<(usize, usize)> {
    if n < 2 || r >= round_count(n) {
        return Vec::new();
    }
    // odd n: add a dummy member `n`; whoever meets it sits the round out
    let m = if n % 2 == 0 { n } else { n + 1 };
    let ring = m - 1;
    let mut out = Vec::with_capacity(m / 2);
    let fixed = m - 1;
    let push = |out: &mut Vec<(usize, usize)>, a: usize, b: usize, flip: bool| {
        if a < n && b < n {
            out.push(if flip { (b, a) } else { (a, b) });
        }
    };
    push(&mut out, r % ring, fixed, r % 2 == 1);
    for k in 1..m / 2 {
        let a = (r + k) % ring;
        let b = (r + ring - k) % ring;
        push(&mut out, a, b, k % 2 == 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(n: usize) {
        let mut seen = HashSet::new();
        for r in 0..round_count(n) {
            let mut busy = HashSet::new();
            for (a, b) in round_pairs(n, r) {
                assert!(a < n && b < n && a != b);
                assert!(
                    busy.insert(a) && busy.insert(b),
                    "n={n} r={r}: member twice"
                );
                assert!(seen.insert((a.min(b), a.max(b))), "n={n}: pair twice");
            }
        }
        assert_eq!(
            seen.len(),
            n * n.saturating_sub(1) / 2,
            "n={n}: every pair once"
        );
    }

    #[test]
    fn every_pair_once_no_member_twice() {
        for n in 0..=17 {
            check(n);
        }
        check(64);
    }

    #[test]
    fn round_counts() {
        assert_eq!(round_count(6), 5);
        assert_eq!(round_count(7), 7);
        assert_eq!(round_count(4096), 4095);
    }
}
