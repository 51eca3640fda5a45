//! Seeded, content-keyed noise: the same seed and the same command give the same numbers, in
//! whatever order concurrent commands arrive. No global counter, no clock.

/// A tiny deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator keyed by the seed and some text (host, command line, round...).
    pub(crate) fn keyed(seed: u64, parts: &[&str]) -> Rng {
        // FNV-1a over the seed and the parts, separated so ("ab","c") != ("a","bc")
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |b: u8| {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        for b in seed.to_le_bytes() {
            eat(b);
        }
        for p in parts {
            for b in p.bytes() {
                eat(b);
            }
            eat(0xff);
        }
        Rng(h)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [-1, 1).
    pub(crate) fn sym(&mut self) -> f64 {
        self.unit() * 2.0 - 1.0
    }

    /// `v` times (1 ± frac), uniformly.
    pub(crate) fn jitter(&mut self, v: f64, frac: f64) -> f64 {
        v * (1.0 + frac * self.sym())
    }

    /// Uniform integer in [lo, hi).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo)
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_key_same_numbers_other_key_other_numbers() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(1, &["x", "y"]), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(1, &["x", "y"]), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(2, &["x", "y"]), |r, _| Some(r.next_u64()))
            .collect();
        let d: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(1, &["xy", ""]), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let mut r = Rng::keyed(7, &[]);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            let j = r.jitter(100.0, 0.01);
            assert!((99.0..=101.0).contains(&j));
        }
    }
}
