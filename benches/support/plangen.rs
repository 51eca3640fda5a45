//! Generated switched plans for the scale benchmarks and `tests/scale.rs` (included by path
//! from both). Same shape as `scripts/gen-switched.sh`: `switches` switches in a chain joined
//! by 400G ISLs, node `i` on switch `i * switches / n`, every node's `f0` attached, both halves
//! cabled with subnets sized to fit `n` members, rdma-bw all-pairs (or another schedule) on
//! half `a`, one all_reduce
//! across every node on half `a`.

use std::fmt::Write;

/// The smallest prefix length whose subnet holds `n` host addresses.
pub fn prefix_for(n: usize) -> u8 {
    let mut p = 30u8;
    while (1usize << (32 - p)) - 2 < n {
        p -= 1;
    }
    p
}

/// The TOML text of a generated switched plan of `n` nodes on `switches` switches.
pub fn switched_plan(n: usize, switches: usize) -> String {
    switched_plan_with(n, switches, "all-pairs")
}

/// [`switched_plan`] with rdma-bw's `schedule` (`all-pairs`, `sampled`, ...).
pub fn switched_plan_with(n: usize, switches: usize, schedule: &str) -> String {
    let p = prefix_for(n);
    let mut s = String::with_capacity(64 * n + 1024);
    let _ = write!(
        s,
        "format-version = 1\nname = \"gen-switched-{n}\"\ndescription = \"generated: {n} nodes, {switches} switches\"\n\n"
    );
    for i in 1..=n {
        let _ = write!(s, "[[node]]\nname = \"n{i:05}\"\n");
    }
    for k in 0..switches {
        let _ = write!(s, "\n[[switch]]\nname = \"sw-{k:02}\"\n");
    }
    for k in 1..switches {
        let _ = write!(
            s,
            "\n[[isl]]\nends = [\"sw-{:02}\", \"sw-{k:02}\"]\ncapacity-gbps = 400\n",
            k - 1
        );
    }
    let _ = write!(
        s,
        "\n[[cable]]\nkind = \"switched\"\nname = \"fabric\"\nsubnets = {{ a = \"198.18.0.0/{p}\", b = \"198.20.0.0/{p}\" }}\n[cable.attach]\n"
    );
    for i in 1..=n {
        let _ = writeln!(s, "\"n{i:05}.f0\" = \"sw-{:02}\"", (i - 1) * switches / n);
    }
    let _ = write!(
        s,
        "\n[tests.rdma-bw]\nschedule = \"{schedule}\"\nhalves = [\"a\"]\n"
    );
    s.push_str("\n[[tests.nccl]]\ncollective = \"all_reduce\"\nhalves = [\"a\"]\n");
    s
}

/// A two-node plan whose one direct cable is repeated `n` times: every copy cables the same
/// port halves in the same subnets. Validation reports a handful of problems whatever `n` is
/// (it was O(n^2): 204 copies gave 41,591 errors).
#[allow(dead_code)]
pub fn repeated_cables(n: usize) -> String {
    let mut s = String::from(
        "format-version = 1\nname = \"repeated\"\n\n[[node]]\nname = \"spark-a\"\n[[node]]\nname = \"spark-b\"\n",
    );
    for _ in 0..n {
        s.push_str("\n[[cable]]\nkind = \"direct\"\nends = [\"spark-a.f0\", \"spark-b.f0\"]\nsubnets = { a = \"198.51.100.0/30\", b = \"203.0.113.0/30\" }\n");
    }
    s
}
