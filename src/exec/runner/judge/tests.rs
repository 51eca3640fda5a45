//! The runner's judging: repeats that follow their first cause, and what each job's verdicts carry.

use super::*;

fn job(id: &str, verdicts: Vec<Verdict>) -> JobResult {
    JobResult {
        format_version: RESULTS_FORMAT_VERSION,
        job: id.into(),
        kind: id.split("-r").next().unwrap_or(id).into(),
        round: 0,
        round_name: String::new(),
        label: String::new(),
        hosts: Vec::new(),
        expected_gbps: None,
        status: JobStatus::Measured,
        reason: None,
        steps: Vec::new(),
        parsed: None,
        counters: Vec::new(),
        verdicts,
        tool_seconds: None,
        attempts: Vec::new(),
        digests: Vec::new(),
    }
}

/// A verdict on `gate` carrying the flow the runner gives a job that measured it (none
/// for a gate about no flow).
fn on(gate: &str, outcome: Outcome, trap: Trap) -> Verdict {
    let nodes: Vec<String> = ["spark-a", "spark-b", "spark-c", "spark-d"]
        .into_iter()
        .map(String::from)
        .chain((1..=6).map(|i| format!("gb10-{i:02}")))
        .collect();
    Verdict::check(gate, outcome, "", Some(trap)).on_flow(crate::results::flow_of(gate, &nodes))
}

fn fail(gate: &str, trap: Trap) -> Verdict {
    on(gate, Outcome::Fail, trap)
}

const HALF: &str = "spark-b.f0.a -> spark-a.f0.a";

#[test]
fn a_half_failing_again_in_another_test_follows_the_first() {
    let earlier = [job(
        "rdma-bw-r001-j01",
        vec![fail(&format!("rdma-bw {HALF}"), Trap::FirmwareThrottle)],
    )];
    let mut round = [job(
        "rdma-bw-both-r005-j01",
        vec![fail(
            &format!("rdma-bw-both {HALF}"),
            Trap::FirmwareThrottle,
        )],
    )];
    follow_repeats(&earlier, &mut round);
    assert_eq!(
        round[0].verdicts[0].follows.as_deref(),
        Some(format!("rdma-bw {HALF}").as_str())
    );
    // the same half the other way: the same half, the same cause
    let mut reverse = [job(
        "rdma-bw-r002-j01",
        vec![fail(
            "rdma-bw spark-a.f0.a -> spark-b.f0.a",
            Trap::FirmwareThrottle,
        )],
    )];
    follow_repeats(&earlier, &mut reverse);
    assert_eq!(
        reverse[0].verdicts[0].follows.as_deref(),
        Some(format!("rdma-bw {HALF}").as_str())
    );
}

#[test]
fn other_halves_and_traps_are_their_own_causes() {
    let earlier = [job(
        "rdma-bw-r001-j01",
        vec![fail(&format!("rdma-bw {HALF}"), Trap::FirmwareThrottle)],
    )];
    let mut round = [
        job(
            "rdma-bw-r003-j01",
            vec![fail(
                "rdma-bw spark-b.f0.b -> spark-a.f0.b",
                Trap::FirmwareThrottle,
            )],
        ),
        job(
            "rdma-lat-r007-j01",
            vec![fail(&format!("rdma-lat {HALF}"), Trap::Timeout)],
        ),
        job(
            "rdma-bw-both-r005-j01",
            vec![Verdict::check(
                format!("rdma-bw-both {HALF}"),
                Outcome::Warn,
                "",
                Some(Trap::FirmwareThrottle),
            )],
        ),
    ];
    follow_repeats(&earlier, &mut round);
    assert!(round.iter().all(|j| j.verdicts[0].follows.is_none()));
}

/// A throttled half on a switch fails its flow to every peer: one cause. A flow that
/// only follows (it shares no half with a counted one) is counted again, and a follower's
/// other end is not made a cause by it.
#[test]
fn flows_sharing_a_failing_half_follow_the_first() {
    let first = "rdma-bw R1 gb10-02.f0.a -> gb10-01.f0.a";
    let earlier = [job(
        "rdma-bw-r001-j01",
        vec![fail(first, Trap::FirmwareThrottle)],
    )];
    let mut round = [
        // into the same half, from another peer, in a declared round
        job(
            "rdma-bw-r003-j02",
            vec![fail(
                "rdma-bw R2b gb10-06.f0.a -> gb10-02.f0.a",
                Trap::FirmwareThrottle,
            )],
        ),
        // out of the follower's other end: not a cause yet, so counted
        job(
            "rdma-bw-r004-j01",
            vec![fail(
                "rdma-bw R3 gb10-06.f0.a -> gb10-05.f0.a",
                Trap::FirmwareThrottle,
            )],
        ),
        // the same half, another trap: its own cause
        job(
            "rdma-bw-r004-j02",
            vec![fail(
                "rdma-bw R3 gb10-02.f0.a -> gb10-03.f0.a",
                Trap::Timeout,
            )],
        ),
        // the other half of the same port: its own cause
        job(
            "rdma-bw-r004-j03",
            vec![fail(
                "rdma-bw R3 gb10-02.f0.b -> gb10-04.f0.b",
                Trap::FirmwareThrottle,
            )],
        ),
    ];
    follow_repeats(&earlier, &mut round);
    let follows: Vec<Option<&str>> = round
        .iter()
        .map(|j| j.verdicts[0].follows.as_deref())
        .collect();
    assert_eq!(follows, [Some(first), None, None, None]);
}

#[test]
fn within_a_round_the_first_job_counts_and_the_next_follows() {
    let mut round = [
        job(
            "a-r001-j01",
            vec![fail(&format!("a {HALF}"), Trap::Timeout)],
        ),
        job(
            "b-r001-j02",
            vec![fail(&format!("b {HALF}"), Trap::Timeout)],
        ),
    ];
    follow_repeats(&[], &mut round);
    assert_eq!(round[0].verdicts[0].follows, None);
    assert_eq!(
        round[1].verdicts[0].follows.as_deref(),
        Some(format!("a {HALF}").as_str())
    );
}

#[test]
fn a_collective_over_a_failing_half_follows_it_and_only_for_its_performance() {
    let cause = format!("rdma-bw R1 {}", "gb10-02.f0.a -> gb10-01.f0.a");
    let mut causes = Causes::default();
    causes.count(&[job(
        "rdma-bw-r001-j01",
        vec![fail(&cause, Trap::FirmwareThrottle)],
    )]);
    let nccl = |hosts: &[&str]| {
        let mut j = job(
            "nccl-r005-all_reduce",
            vec![
                fail(
                    "nccl all_reduce busbw at 32 MiB-128 MiB",
                    Trap::SlowBusBandwidth,
                ),
                Verdict::check(
                    "nccl all_reduce 16 KiB time",
                    Outcome::Warn,
                    "",
                    Some(Trap::SlowCollective),
                ),
                fail("nccl all_reduce transport", Trap::TcpFallback),
            ],
        );
        j.hosts = hosts.iter().map(|h| h.to_string()).collect();
        j
    };
    // ranks on the throttled half's node: bandwidth and time follow it, the transport not
    let mut over = [nccl(&["gb10-01", "gb10-02", "gb10-03"])];
    causes.follow(&mut over);
    let follows: Vec<Option<&str>> = over[0]
        .verdicts
        .iter()
        .map(|v| v.follows.as_deref())
        .collect();
    assert_eq!(follows, [Some(cause.as_str()), Some(cause.as_str()), None]);
    // ranks elsewhere: nothing follows
    let mut elsewhere = [nccl(&["gb10-05", "gb10-06"])];
    causes.follow(&mut elsewhere);
    assert!(elsewhere[0].verdicts.iter().all(|v| v.follows.is_none()));
    // localisation names a suspect for that flow: the collective follows the suspect
    let mut causes2 = Causes::default();
    causes2.count(&[job(
        "rdma-bw-r001-j01",
        vec![fail(&cause, Trap::FirmwareThrottle)],
    )]);
    causes2.explained_by(&HashMap::from([(
        cause.clone(),
        "rdma-bw suspect gb10-02.f0.a".to_string(),
    )]));
    let mut after = [nccl(&["gb10-02"])];
    causes2.follow(&mut after);
    assert_eq!(
        after[0].verdicts[0].follows.as_deref(),
        Some("rdma-bw suspect gb10-02.f0.a")
    );
}

#[test]
fn a_port_summed_short_follows_the_half_counted_before() {
    let cause = format!("rdma-bw {HALF}");
    let mut causes = Causes::default();
    causes.count(&[job(
        "rdma-bw-r001-j01",
        vec![fail(&cause, Trap::FirmwareThrottle)],
    )]);
    let sum = |gate: &str| {
        job(
            "rdma-bw-both-r005-j01",
            vec![on(gate, Outcome::Warn, Trap::HalfDeadOrThrottled)],
        )
    };
    let mut round = [
        sum("rdma-bw-both spark-b.f0 -> spark-a.f0"),
        sum("rdma-bw-both R9 spark-a.f0 -> spark-b.f0"),
        sum("rdma-bw-both spark-c.f1 -> spark-d.f1"),
    ];
    causes.follow(&mut round);
    let follows: Vec<Option<&str>> = round
        .iter()
        .map(|j| j.verdicts[0].follows.as_deref())
        .collect();
    assert_eq!(follows, [Some(cause.as_str()), Some(cause.as_str()), None]);
    let half = fail(
        "rdma-bw-both spark-a.f0.a -> spark-b.f0.a",
        Trap::FirmwareThrottle,
    );
    assert_eq!(port_ends(&half), None);
}
