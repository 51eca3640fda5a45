//! Where a round's time goes: the instants of each attempt on the controller's monotonic clock,
//! the hosts' start marks placed on it, and the arithmetic from them to [`RoundPhases`].

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::results::RoundPhases;

/// One instant of the controller's clock, read both ways: monotonic, for every duration of its
/// own; Unix time, only to place a host's start mark (Unix ms by the host's clock) beside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anchor {
    at: Instant,
    unix_ms: f64,
}

impl Anchor {
    pub(crate) fn now() -> Anchor {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0);
        Anchor {
            at: Instant::now(),
            unix_ms,
        }
    }

    /// Milliseconds from the anchor to `t` (0 for an instant before it).
    pub(crate) fn ms(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.at).as_secs_f64() * 1000.0
    }

    /// A host's start mark (Unix ms, the host's clock) as milliseconds from the anchor.
    pub(crate) fn mark(&self, unix_ms: f64) -> f64 {
        unix_ms - self.unix_ms
    }
}

/// One client's (or MPI launcher's) run, in ms from its attempt's anchor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClientRun {
    /// When the controller sent it: the release for a staged client, later for a job's next one.
    pub(crate) sent: f64,
    /// Its start mark, when the host reported one.
    pub(crate) mark: Option<f64>,
    /// When its exit status reached the controller.
    pub(crate) end: f64,
}

impl ClientRun {
    /// The tool's own run: its start mark (else its sending) to its exit.
    fn tool(&self) -> f64 {
        (self.end - self.mark.unwrap_or(self.sent)).max(0.0)
    }
}

/// One attempt of a round, in ms from its anchor (its start), durations in ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AttemptTimes {
    /// How long the counters before took.
    pub(crate) counters_before: f64,
    /// The last server start answered; `None` without servers.
    pub(crate) servers_answered: Option<f64>,
    /// Every readiness poll over; `None` when no server started.
    pub(crate) servers_ready: Option<f64>,
    /// The longest server's own start-up, its start to listening (its host's clock): 0 without
    /// servers, `None` when a ready server's times are unknown.
    pub(crate) server_tool_start: Option<f64>,
    /// Every client staged.
    pub(crate) armed: f64,
    /// The release decision.
    pub(crate) release: f64,
    pub(crate) clients: Vec<ClientRun>,
    /// How long stopping the servers and collecting their logs took.
    pub(crate) stop_and_logs: f64,
    /// How long the counters after took.
    pub(crate) counters_after: f64,
}

impl AttemptTimes {
    /// This attempt's phases (`prepare_ms`, `judge_ms`, `wall_ms` and `overhead_ms` are the
    /// round's, left at 0).
    fn phases(&self) -> RoundPhases {
        let answered = self.servers_answered.unwrap_or(0.0);
        let readiness = self.servers_ready.map_or(0.0, |r| (r - answered).max(0.0));
        let marks: Option<Vec<f64>> = self.clients.iter().map(|c| c.mark).collect();
        let (first, last) = match marks.filter(|m| !m.is_empty()) {
            Some(m) => {
                let lo = m.iter().copied().fold(f64::MAX, f64::min);
                let hi = m.iter().copied().fold(f64::MIN, f64::max);
                (
                    Some((lo - self.release).max(0.0)),
                    Some((hi - self.release).max(0.0)),
                )
            }
            None => (None, None),
        };
        let source = if self.clients.is_empty() {
            "none"
        } else if self.clients.iter().all(|c| c.mark.is_some()) {
            "remote"
        } else {
            "sent"
        };
        let last_end = self.clients.iter().map(|c| c.end).fold(None, max_opt);
        RoundPhases {
            attempts: 1,
            counters_before_ms: self.counters_before,
            server_start_ms: answered,
            readiness_ms: readiness,
            server_tool_start_ms: self.server_tool_start,
            staging_ms: self.armed,
            setup_ms: self.release,
            release_first_ms: first,
            release_ms: last,
            longest_tool_ms: self.clients.iter().map(ClientRun::tool).fold(0.0, f64::max),
            tool_source: source.to_string(),
            tools_ms: last_end.map_or(0.0, |e| (e - self.release).max(0.0)),
            server_stop_and_logs_ms: self.stop_and_logs,
            counters_after_ms: self.counters_after,
            ..RoundPhases::default()
        }
    }
}

fn max_opt(m: Option<f64>, v: f64) -> Option<f64> {
    Some(m.map_or(v, |m| m.max(v)))
}

/// Two `Option`s summed: `None` when either is.
fn sum_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// Floored to the microsecond, so that parts never sum past their whole.
fn floor_us(ms: f64) -> f64 {
    (ms * 1000.0).floor() / 1000.0
}

/// A round's phases: each attempt's summed, then the round's own (`prepare`, `judge`, `wall`,
/// all ms) and its overhead, `wall` less the summed longest tool runs (never below 0: on real
/// hosts a start mark may stand on a clock ahead of the controller's).
pub(crate) fn round_phases(
    attempts: &[AttemptTimes],
    prepare: f64,
    judge: f64,
    wall: f64,
) -> RoundPhases {
    let mut p = RoundPhases {
        attempts: 0,
        tool_source: "none".to_string(),
        release_first_ms: Some(0.0),
        release_ms: Some(0.0),
        server_tool_start_ms: Some(0.0),
        ..RoundPhases::default()
    };
    for a in attempts.iter().map(AttemptTimes::phases) {
        p.attempts += 1;
        p.counters_before_ms += a.counters_before_ms;
        p.server_start_ms += a.server_start_ms;
        p.readiness_ms += a.readiness_ms;
        p.server_tool_start_ms = sum_opt(p.server_tool_start_ms, a.server_tool_start_ms);
        p.staging_ms += a.staging_ms;
        p.setup_ms += a.setup_ms;
        p.release_first_ms = sum_opt(p.release_first_ms, a.release_first_ms);
        p.release_ms = sum_opt(p.release_ms, a.release_ms);
        p.longest_tool_ms += a.longest_tool_ms;
        p.tools_ms += a.tools_ms;
        p.server_stop_and_logs_ms += a.server_stop_and_logs_ms;
        p.counters_after_ms += a.counters_after_ms;
        p.tool_source = match (p.tool_source.as_str(), a.tool_source.as_str()) {
            (_, "none") => p.tool_source,
            ("none", s) => s.to_string(),
            ("remote", "remote") => "remote".to_string(),
            _ => "sent".to_string(),
        };
    }
    if p.attempts == 0 {
        p.release_first_ms = None;
        p.release_ms = None;
    }
    p.prepare_ms = prepare;
    p.judge_ms = judge;
    p.wall_ms = wall;
    p.overhead_ms = (wall - p.longest_tool_ms).max(0.0);
    p.fabricplan_ms = p
        .server_tool_start_ms
        .map(|s| (wall - p.longest_tool_ms - s).max(0.0));
    for v in [
        &mut p.prepare_ms,
        &mut p.counters_before_ms,
        &mut p.server_start_ms,
        &mut p.readiness_ms,
        &mut p.staging_ms,
        &mut p.setup_ms,
        &mut p.longest_tool_ms,
        &mut p.tools_ms,
        &mut p.server_stop_and_logs_ms,
        &mut p.counters_after_ms,
        &mut p.judge_ms,
        &mut p.wall_ms,
        &mut p.overhead_ms,
    ] {
        *v = floor_us(*v);
    }
    p.release_first_ms = p.release_first_ms.map(floor_us);
    p.server_tool_start_ms = p.server_tool_start_ms.map(floor_us);
    p.fabricplan_ms = p.fabricplan_ms.map(floor_us);
    p.release_ms = p.release_ms.map(floor_us);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> AttemptTimes {
        AttemptTimes {
            counters_before: 12.0,
            servers_answered: Some(140.0),
            servers_ready: Some(175.0),
            server_tool_start: Some(25.0),
            armed: 160.0,
            release: 175.5,
            clients: vec![
                ClientRun {
                    sent: 175.5,
                    mark: Some(178.0),
                    end: 2180.0,
                },
                ClientRun {
                    sent: 175.5,
                    mark: Some(179.5),
                    end: 2190.0,
                },
            ],
            stop_and_logs: 80.0,
            counters_after: 11.0,
        }
    }

    #[test]
    fn one_attempt_splits_into_its_phases() {
        let p = round_phases(&[attempt()], 2.0, 1.0, 2300.0);
        assert_eq!(p.attempts, 1);
        assert_eq!(p.counters_before_ms, 12.0);
        assert_eq!(p.server_start_ms, 140.0);
        assert_eq!(p.readiness_ms, 35.0);
        assert_eq!(p.staging_ms, 160.0);
        assert_eq!(p.setup_ms, 175.5);
        assert_eq!(p.release_first_ms, Some(2.5));
        assert_eq!(p.release_ms, Some(4.0));
        // the longest run is the second client's: 179.5 .. 2190
        assert_eq!(p.longest_tool_ms, 2010.5);
        assert_eq!(p.tool_source, "remote");
        assert_eq!(p.tools_ms, 2014.5);
        assert_eq!(p.server_stop_and_logs_ms, 80.0);
        assert_eq!(p.counters_after_ms, 11.0);
        assert_eq!((p.prepare_ms, p.judge_ms, p.wall_ms), (2.0, 1.0, 2300.0));
        assert_eq!(p.overhead_ms, 2300.0 - 2010.5);
        // the server's own start-up is the tool's too
        assert_eq!(p.server_tool_start_ms, Some(25.0));
        assert_eq!(p.fabricplan_ms, Some(2300.0 - 2010.5 - 25.0));
    }

    #[test]
    fn attempts_are_summed_and_the_overhead_is_the_rest() {
        let p = round_phases(&[attempt(), attempt()], 2.0, 1.0, 4700.0);
        assert_eq!(p.attempts, 2);
        assert_eq!(p.server_start_ms, 280.0);
        assert_eq!(p.release_ms, Some(8.0));
        assert_eq!(p.longest_tool_ms, 4021.0);
        assert_eq!(p.overhead_ms, 4700.0 - 4021.0);
        assert_eq!(p.server_tool_start_ms, Some(50.0));
        assert_eq!(p.fabricplan_ms, Some(4700.0 - 4021.0 - 50.0));
        // one attempt whose server's times are unknown: the sum is unknown
        let mut b = attempt();
        b.server_tool_start = None;
        let p = round_phases(&[attempt(), b], 2.0, 1.0, 4700.0);
        assert_eq!((p.server_tool_start_ms, p.fabricplan_ms), (None, None));
    }

    #[test]
    fn without_start_marks_the_tool_runs_from_its_sending() {
        let mut a = attempt();
        a.clients[1].mark = None;
        let p = round_phases(&[a], 0.0, 0.0, 2300.0);
        assert_eq!(p.release_ms, None);
        assert_eq!(p.release_first_ms, None);
        assert_eq!(p.tool_source, "sent");
        // 175.5 .. 2190, sent at the release
        assert_eq!(p.longest_tool_ms, 2014.5);
        // a second attempt with marks does not make the sum known
        let p = round_phases(&[attempt(), attempt_without_marks()], 0.0, 0.0, 5000.0);
        assert_eq!(p.release_ms, None);
        assert_eq!(p.tool_source, "sent");
    }

    fn attempt_without_marks() -> AttemptTimes {
        let mut a = attempt();
        for c in &mut a.clients {
            c.mark = None;
        }
        a
    }

    #[test]
    fn no_server_no_client() {
        let a = AttemptTimes {
            server_tool_start: Some(0.0),
            counters_before: 5.0,
            armed: 3.0,
            release: 5.0,
            ..AttemptTimes::default()
        };
        let p = round_phases(&[a], 0.0, 0.0, 10.0);
        assert_eq!((p.server_start_ms, p.readiness_ms), (0.0, 0.0));
        assert_eq!((p.longest_tool_ms, p.tools_ms), (0.0, 0.0));
        assert_eq!(p.tool_source, "none");
        assert_eq!(p.release_ms, None);
        assert_eq!(p.overhead_ms, 10.0);
        assert_eq!(p.fabricplan_ms, Some(10.0));
        // a round whose every job was decided before it ran
        let p = round_phases(&[], 1.0, 0.5, 2.0);
        assert_eq!(p.attempts, 0);
        assert_eq!(p.overhead_ms, 2.0);
    }

    #[test]
    fn a_host_clock_out_of_step_never_gives_a_negative_phase() {
        let mut a = attempt();
        // a host whose clock is behind: its mark before the release
        a.clients[0].mark = Some(100.0);
        // and one ahead: its mark after its own exit
        a.clients[1].mark = Some(5000.0);
        let p = round_phases(&[a], 0.0, 0.0, 1000.0);
        assert_eq!(p.release_first_ms, Some(0.0));
        assert!(p.release_ms.unwrap() >= 0.0);
        assert!(p.longest_tool_ms >= 0.0);
        assert!(p.overhead_ms >= 0.0);
    }

    #[test]
    fn values_are_floored_to_the_microsecond() {
        let mut a = attempt();
        a.counters_before = 1.234_567_9;
        let p = round_phases(&[a], 0.000_4, 0.0, 2300.0);
        assert_eq!(p.counters_before_ms, 1.234);
        assert_eq!(p.prepare_ms, 0.0);
    }

    #[test]
    fn the_anchor_places_marks_and_instants() {
        let a = Anchor::now();
        let later = a.at + std::time::Duration::from_millis(250);
        assert_eq!(a.ms(later), 250.0);
        assert_eq!(a.ms(a.at), 0.0);
        assert_eq!(a.mark(a.unix_ms + 3.5), 3.5);
    }
}
