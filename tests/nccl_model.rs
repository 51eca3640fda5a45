//! The NCCL capacity model against the field figures it is calibrated on.

mod support;

use fabricplan::kinds::nccl::capacity::*;
use fabricplan::kinds::nccl::section::Collective;
use fabricplan::plan::Plan;
use fabricplan::topology::Fabric;

fn plan(name: &str) -> Plan {
    support::load_plan(support::plan_path(name))
}

#[test]
fn calibrated_on_the_field_figures() {
    let p = plan("two-spark");
    let f = Fabric::build(&p);
    let mut t = (*fabricplan::kinds::nccl_tests(&p)[0]).clone();
    t.collective = Collective::AllGather;
    let e = expected(&p, &f, &t);
    assert!((e.peak_gbs - 23.75).abs() < 0.1, "{e:?}");
    // the field's pair listed one half in NCCL_IB_HCA
    let mut one = t.clone();
    one.halves = vec!["a".into()];
    one.collective = Collective::Sendrecv;
    let e = expected(&p, &f, &one);
    assert!((e.peak_gbs - 9.0).abs() < 0.2, "{e:?}");
    one.collective = Collective::AllReduce;
    let e = expected(&p, &f, &one);
    let sizes: Vec<u64> = (23..=32).map(|k| 1u64 << k).collect();
    let avg = sizes.iter().map(|s| e.busbw_gbs(*s)).sum::<f64>() / sizes.len() as f64;
    assert!((avg - 10.2).abs() < 0.3, "{avg} {e:?}");
    t.collective = Collective::AllReduce;
    let e = expected(&p, &f, &t);
    assert!(
        (e.time_us(16384) - 29.7).abs() < 1.0,
        "{}",
        e.time_us(16384)
    );
    let ring = plan("ring3");
    let f = Fabric::build(&ring);
    let mut t = (*fabricplan::kinds::nccl_tests(&ring)[0]).clone();
    t.collective = Collective::AllGather;
    let e = expected(&ring, &f, &t);
    let at_16g = e.busbw_gbs(16 << 30);
    assert!((20.9..=22.2).contains(&at_16g), "{at_16g} {e:?}");
}

#[test]
fn small_message_time_grows_with_the_ranks() {
    let e = |n| NcclExpected {
        peak_gbs: 23.75,
        t0_us: base_latency_us(Collective::AllReduce, n),
        factor: bus_factor(Collective::AllReduce, n),
    };
    assert!(e(64).time_us(16384) > 240.0);
    assert!(e(2).time_us(16384) < 31.0);
}
