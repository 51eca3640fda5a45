//! When a node whose connection failed is tried again, and how many nodes are being connected
//! at once: the plan's `[ssh]` `connect-attempts`, `retry-backoff-ms` and `max-connections`.

use std::time::Duration;

use tokio::sync::Semaphore;

use crate::plan::SshDefaults;

/// How often and after how long a node whose connection failed is tried again: `attempts` in
/// all; before attempt k+1 (k >= 1) a wait of `backoff * 2^(k-1)`, capped at [`Retry::CAP`],
/// of which a random part is taken off (equal jitter: between half and all of it). The jitter
/// is drawn from the node's name and a seed of this process, so nodes that failed together (a
/// switch rebooting, a rack's sshds restarting) do not come back in step, and neither do two
/// runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub attempts: u32,
    pub backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: SshDefaults::CONNECT_ATTEMPTS,
            backoff: Duration::from_millis(u64::from(SshDefaults::RETRY_BACKOFF_MS)),
        }
    }
}

impl Retry {
    /// No single wait is longer.
    pub const CAP: Duration = Duration::from_secs(30);

    /// The wait before the wait's ceiling is jittered: `backoff * 2^(failed-1)`, capped.
    pub fn ceiling(&self, failed: u32) -> Duration {
        let doubled = 1u32
            .checked_shl(failed.saturating_sub(1))
            .map_or(Self::CAP, |m| self.backoff.saturating_mul(m));
        doubled.min(Self::CAP)
    }

    /// The wait after `failed` failed attempts of the node whose jitter seed is `seed`: between
    /// half and all of [`Retry::ceiling`].
    pub fn wait(&self, failed: u32, seed: u64) -> Duration {
        let c = self.ceiling(failed);
        let half = c / 2;
        let x = splitmix(seed ^ u64::from(failed).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let span = (c - half).as_micros() as u64;
        half + Duration::from_micros(if span == 0 { 0 } else { x % (span + 1) })
    }

    /// A node's jitter seed: its name hashed with this process's random seed.
    pub fn seed(node: &str) -> u64 {
        use std::hash::BuildHasher;
        static PROCESS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        PROCESS
            .get_or_init(std::collections::hash_map::RandomState::new)
            .hash_one(node)
    }
}

/// A 64-bit mixer (SplitMix64's finaliser): neighbouring seeds give unrelated values.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Why a connection attempt failed.
pub(super) enum Failure {
    /// No connection or no handshake: worth another try.
    Connect(String),
    /// The server's key was refused: never retried.
    HostKey(String),
    /// Authentication failed: retrying would only trip sshd's penalties.
    Auth(String),
}

/// One node's connect attempts under `retry`: each attempt holds a permit of `permits` (the
/// connections being set up at once, all nodes together) and gives it back when it ends, so a
/// node waiting out its backoff holds up no other node. A refused host key or failed
/// authentication ends the attempts at once (retrying would only trip sshd's penalties); a
/// failed connect is tried again until `retry.attempts`, and the last failure is returned.
pub(super) async fn with_retries<T, F, Fut>(
    permits: &Semaphore,
    retry: Retry,
    seed: u64,
    mut attempt: F,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let attempts = retry.attempts.max(1);
    let mut failed = 0;
    loop {
        let result = {
            let _permit = permits.acquire().await;
            attempt().await
        };
        match result {
            Ok(t) => return Ok(t),
            Err(f @ (Failure::HostKey(_) | Failure::Auth(_))) => return Err(f),
            Err(f @ Failure::Connect(_)) => {
                failed += 1;
                if failed >= attempts {
                    return Err(f);
                }
            }
        }
        tokio::time::sleep(retry.wait(failed, seed)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn retry(attempts: u32, ms: u64) -> Retry {
        Retry {
            attempts,
            backoff: Duration::from_millis(ms),
        }
    }

    #[test]
    fn backoff_doubles_from_the_base_and_is_capped() {
        let r = retry(10, 250);
        let ceilings: Vec<u64> = (1..=10).map(|k| r.ceiling(k).as_millis() as u64).collect();
        assert_eq!(
            ceilings,
            [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        // no overflow however many failures
        assert_eq!(r.ceiling(64), Retry::CAP);
        assert_eq!(r.ceiling(u32::MAX), Retry::CAP);
        assert_eq!(retry(3, 10_000).ceiling(3), Retry::CAP);
        assert_eq!(retry(3, 10).ceiling(1), Duration::from_millis(10));
    }

    #[test]
    fn each_wait_is_between_half_and_all_of_its_ceiling() {
        let r = retry(10, 250);
        for node in 0..200 {
            let seed = Retry::seed(&format!("n{node:03}"));
            for k in 1..=10 {
                let (w, c) = (r.wait(k, seed), r.ceiling(k));
                assert!(w >= c / 2 && w <= c, "n{node:03} after {k}: {w:?} of {c:?}");
            }
            // the same node and failure: the same wait (within one process)
            assert_eq!(
                r.wait(2, seed),
                r.wait(2, Retry::seed(&format!("n{node:03}")))
            );
        }
    }

    #[test]
    fn the_jitter_differs_per_host() {
        let r = retry(3, 1000);
        let waits: std::collections::BTreeSet<Duration> = (0..64)
            .map(|i| r.wait(1, Retry::seed(&format!("n{i:02}"))))
            .collect();
        // 64 nodes failing together come back spread over 500..1000 ms, not in step
        assert!(
            waits.len() >= 60,
            "{} distinct waits: {waits:?}",
            waits.len()
        );
        let spread = *waits.last().unwrap() - *waits.first().unwrap();
        assert!(spread >= Duration::from_millis(300), "{spread:?}");
        // and one node's successive waits are not one fixed fraction of their ceilings
        let seed = Retry::seed("n00");
        let fractions: std::collections::BTreeSet<u64> = (1..=6)
            .map(|k| r.wait(k, seed).as_micros() as u64 * 1000 / r.ceiling(k).as_micros() as u64)
            .collect();
        assert!(fractions.len() >= 4, "{fractions:?}");
    }

    /// A fake connector over many nodes: some refuse (connect failures), one fails
    /// authentication, one has a refused host key, the rest connect after 10 ms of handshake.
    #[tokio::test(start_paused = true)]
    async fn connections_in_flight_never_exceed_the_cap_and_refusing_nodes_are_retried() {
        let cap = 4;
        let permits = Arc::new(Semaphore::new(cap));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let calls: Arc<std::sync::Mutex<HashMap<String, Vec<tokio::time::Instant>>>> =
            Arc::default();
        let r = retry(3, 100);
        let mut set = tokio::task::JoinSet::new();
        for i in 0..64 {
            let node = format!("n{i:02}");
            let (permits, in_flight, peak, calls) = (
                permits.clone(),
                in_flight.clone(),
                peak.clone(),
                calls.clone(),
            );
            set.spawn(async move {
                let attempt = || {
                    let (node, in_flight, peak, calls) =
                        (node.clone(), in_flight.clone(), peak.clone(), calls.clone());
                    async move {
                        calls
                            .lock()
                            .unwrap()
                            .entry(node.clone())
                            .or_default()
                            .push(tokio::time::Instant::now());
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        match node.as_str() {
                            "n05" | "n20" | "n41" => {
                                Err(Failure::Connect("Connection refused".into()))
                            }
                            "n07" => Err(Failure::Auth("key authentication failed".into())),
                            "n08" => Err(Failure::HostKey("HOST KEY CHANGED".into())),
                            _ => Ok(node.clone()),
                        }
                    }
                };
                let out = with_retries(&permits, r, Retry::seed(&node), attempt).await;
                (node, out)
            });
        }
        let mut ok = 0;
        while let Some(j) = set.join_next().await {
            let (node, out) = j.unwrap();
            match (node.as_str(), out) {
                ("n05" | "n20" | "n41", Err(Failure::Connect(m))) => {
                    assert_eq!(m, "Connection refused")
                }
                ("n07", Err(Failure::Auth(_))) | ("n08", Err(Failure::HostKey(_))) => {}
                (_, Ok(n)) => {
                    assert_eq!(n, node);
                    ok += 1
                }
                (n, Err(_)) => panic!("{n}: unexpected failure"),
            }
        }
        assert_eq!(ok, 64 - 5);
        assert_eq!(
            peak.load(Ordering::SeqCst),
            cap,
            "the cap is reached, never passed"
        );
        let calls = calls.lock().unwrap();
        for (node, times) in calls.iter() {
            let expected = match node.as_str() {
                "n05" | "n20" | "n41" => 3,
                _ => 1, // connected, or auth / host key: never retried
            };
            assert_eq!(times.len(), expected, "{node}: {times:?}");
            // between attempts: at least the jittered backoff (half the ceiling)
            for (k, w) in times.windows(2).enumerate() {
                let gap = w[1] - w[0];
                let floor = r.ceiling(k as u32 + 1) / 2 + Duration::from_millis(10);
                assert!(gap >= floor, "{node}: attempt {} after {gap:?}", k + 2);
            }
        }
    }

    /// A node waiting out its backoff holds no permit: with one permit, a refusing node's
    /// retry does not keep a healthy node from connecting.
    #[tokio::test(start_paused = true)]
    async fn a_node_backing_off_holds_no_permit() {
        let permits = Semaphore::new(1);
        let t0 = tokio::time::Instant::now();
        let slow = retry(2, 2000);
        let refusing = with_retries(&permits, slow, 1, || async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Err::<(), _>(Failure::Connect("refused".into()))
        });
        let healthy = async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let r = with_retries(&permits, slow, 2, || async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<_, Failure>(())
            })
            .await;
            (r.is_ok(), t0.elapsed())
        };
        let (refused, (healthy_ok, healthy_at)) = tokio::join!(refusing, healthy);
        assert!(matches!(refused, Err(Failure::Connect(_))));
        assert!(healthy_ok);
        assert!(healthy_at < Duration::from_millis(100), "{healthy_at:?}");
        assert!(
            t0.elapsed() >= Duration::from_millis(1000),
            "{:?}",
            t0.elapsed()
        );
    }
}
