//! The control loop and its protocol against a local `/bin/sh` (no SSH): framing, outputs that
//! hold the protocol's own markers, binary output, commands that never end or die by a signal,
//! many at once, staging, a loop that is killed, and what is left after each.

use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};

use super::*;

const LIMIT: Duration = Duration::from_secs(20);

/// A session whose carrier is the loop itself, started here.
async fn local() -> (Session, process::Child, String) {
    local_watched(None).await
}

/// The same, its watchdog's window `window` s (default 10).
async fn local_watched(window: Option<u32>) -> (Session, process::Child, String) {
    let token = wire::random_word();
    let mut argv = wire::argv(&token);
    argv.extend(window.map(|w| w.to_string()));
    let (sink, source, child) = process::spawn(&argv, &[]).expect("sh starts");
    let s = Session::attach("here", &token, sink, source, LIMIT)
        .await
        .expect("the session starts");
    (s, child, token)
}

/// Poll `cond` every 10 ms until it holds or `limit` passes.
async fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

/// Processes of this machine whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        if cmd.contains(needle) && !zombie {
            out.push(format!("{pid}: {cmd}"));
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
}

#[tokio::test]
async fn each_command_keeps_its_own_stdout_stderr_and_status() {
    let (s, _child, _) = local().await;
    let o = s
        .run("echo out; echo err >&2; printf 'no newline'; exit 3", LIMIT)
        .await
        .unwrap();
    assert_eq!(
        (o.status, o.stdout.as_str(), o.stderr.as_str()),
        (3, "out\nno newline", "err\n")
    );
    let o = s.run("true", LIMIT).await.unwrap();
    assert_eq!(
        (o.status, o.stdout.as_str(), o.stderr.as_str()),
        (0, "", "")
    );
    // its own process group and session: setsid, the group is the shell's own pid
    let o = s.run("ps -o pid=,pgid=,sid= -p $$", LIMIT).await.unwrap();
    let ids: Vec<&str> = o.stdout.split_whitespace().collect();
    assert_eq!(ids.len(), 3, "{o:?}");
    assert!(ids[0] == ids[1] && ids[1] == ids[2], "{o:?}");
    // a script without a trailing newline, a long one, and lines that look like requests
    let long = format!("x='{}'\necho ${{#x}}", "y".repeat(100_000));
    assert_eq!(s.run(&long, LIMIT).await.unwrap().stdout, "100000\n");
    let tricky = "echo start\nx=1 # r 9 END\n: <<'EOF'\nx\ng 1\nr 2 @fp-end-0\nEOF\necho done";
    let o = s.run(tricky, LIMIT).await.unwrap();
    assert_eq!(o.stdout, "start\ndone\n");
    s.close().await;
}

#[tokio::test]
async fn output_holding_the_protocols_markers_comes_back_as_data() {
    let (s, _child, _) = local().await;
    let hostile = "@fp D 1 0\n.\n@fp Q\n@fp H x 1 /\n@fp-end-0000000000000000\n.\n";
    let script = format!(
        "printf '%s' '{h}'; printf '%s' '{h}' >&2; printf '@fp P 99 1'",
        h = hostile
    );
    let (a, b) = tokio::join!(s.run(&script, LIMIT), s.run("echo second", LIMIT));
    let a = a.unwrap();
    assert_eq!(a.stdout, format!("{hostile}@fp P 99 1"));
    assert_eq!(a.stderr, hostile);
    assert_eq!(b.unwrap().stdout, "second\n");
    // still answering
    assert_eq!(s.run("echo ok", LIMIT).await.unwrap().stdout, "ok\n");
    s.close().await;
}

#[tokio::test]
async fn binary_output_comes_back_whole() {
    let (s, _child, _) = local().await;
    // every byte value, twice, then a large output without a newline
    let o = s
        .run(
            "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done; \
             i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\" >&2; i=$((i+1)); done; \
             head -c 300000 /dev/zero | tr '\\0' 'z'",
            LIMIT,
        )
        .await
        .unwrap();
    let all: Vec<u8> = (0..=255u8).collect();
    let mut expected = String::from_utf8_lossy(&all).into_owned();
    assert_eq!(o.stderr, expected);
    expected.push_str(&"z".repeat(300_000));
    assert_eq!(o.stdout, expected);
    s.close().await;
}

#[tokio::test]
async fn a_command_that_never_ends_is_stopped_by_its_group_and_the_session_goes_on() {
    let (s, _child, _) = local().await;
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // the job and a child of it in its group, both forever
    let script = format!(
        "sleep 1000 & echo $! >> {p}; echo $$ >> {p}; wait",
        p = pids.display()
    );
    let t = Instant::now();
    let r = s.run(&script, Duration::from_millis(700)).await;
    assert!(
        matches!(r, Err(TransportError::Timeout { secs: 0, .. })),
        "{r:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(
        until(LIMIT, || pids.iter().all(|p| !alive(*p))).await,
        "still running: {pids:?}"
    );
    assert!(s.ended().is_none());
    assert_eq!(s.run("echo ok", LIMIT).await.unwrap().stdout, "ok\n");
    s.close().await;
}

#[tokio::test]
async fn a_command_killed_by_a_signal_reports_128_plus_its_number() {
    let (s, _child, _) = local().await;
    // (SIGINT and SIGQUIT are ignored by every job, as by any background command of a
    // non-interactive shell; stops use TERM and KILL)
    for (sig, n) in [("TERM", 15), ("KILL", 9), ("SEGV", 11), ("USR1", 10)] {
        let o = s.run(&format!("kill -{sig} $$"), LIMIT).await.unwrap();
        assert_eq!(o.status, 128 + n, "{sig}: {o:?}");
    }
    // a tool killed by a signal under `sh -c`: the shell reports it the same way
    let o = s
        .run("/bin/sh -c 'kill -USR1 $$'; echo $?", LIMIT)
        .await
        .unwrap();
    assert_eq!(o.stdout, "138\n");
    s.close().await;
}

#[tokio::test]
async fn many_commands_run_at_once() {
    let (s, _child, _) = local().await;
    let t = Instant::now();
    let runs = (0..48).map(|i| {
        let s = s.clone();
        async move {
            // each sleeps a little, so they overlap
            let script = format!(
                "sleep 0.{d}; echo job-{i}; echo err-{i} >&2; exit {c}",
                d = i % 5 + 1,
                c = i % 7
            );
            (i, s.run(&script, LIMIT).await)
        }
    });
    for (i, r) in futures::future::join_all(runs).await {
        let o = r.unwrap_or_else(|e| panic!("job {i}: {e}"));
        assert_eq!(o.stdout, format!("job-{i}\n"));
        assert_eq!(o.stderr, format!("err-{i}\n"));
        assert_eq!(o.status, i % 7);
    }
    // at once: far less than the 48 sleeps one after the other (14.4 s)
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    s.close().await;
}

#[tokio::test]
async fn a_staged_command_runs_on_its_release_and_a_withdrawn_one_never() {
    let (s, _child, _) = local().await;
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let prepared = dir.path().join("prepared");
    // its preparation runs before the gate, the command after it
    let script = format!(
        ": > {p}; printf '@fabricplan-start 1\\n' >&2 && echo released && : > {r}",
        p = prepared.display(),
        r = ran.display()
    );
    let (armed_tx, armed_rx) = oneshot::channel();
    let (go_tx, go) = watch::channel(false);
    let staged = {
        let s = s.clone();
        let script = script.clone();
        tokio::spawn(async move { s.run_released(&script, LIMIT, armed_tx, go).await })
    };
    armed_rx.await.expect("armed");
    assert!(prepared.exists() && !ran.exists());
    go_tx.send(true).unwrap();
    let o = staged.await.unwrap().unwrap();
    assert_eq!(o.stdout, "released\n");
    assert!(ran.exists());
    // withdrawn: dropped unset; the command never runs
    std::fs::remove_file(&ran).unwrap();
    let (armed_tx, armed_rx) = oneshot::channel();
    let (go_tx, go) = watch::channel(false);
    let staged = {
        let s = s.clone();
        tokio::spawn(async move { s.run_released(&script, LIMIT, armed_tx, go).await })
    };
    armed_rx.await.expect("armed");
    drop(go_tx);
    let r = staged.await.unwrap();
    assert!(matches!(r, Err(TransportError::Withdrawn { .. })), "{r:?}");
    assert!(!ran.exists());
    // a staged command whose preparation fails answers at once, never armed
    let (armed_tx, armed_rx) = oneshot::channel();
    let (_go_tx, go) = watch::channel(false);
    let o = s
        .run_released(
            "cd /nonexistent/fabricplan && printf '@fabricplan-start 1\\n' >&2 && echo ran",
            LIMIT,
            armed_tx,
            go,
        )
        .await
        .unwrap();
    assert!(o.status != 0 && o.stdout.is_empty(), "{o:?}");
    assert!(
        armed_rx.await.is_err(),
        "armed although it never reached its gate"
    );
    s.close().await;
}

#[tokio::test]
async fn a_killed_loop_ends_the_session_with_why_and_its_watchdog_stops_its_jobs() {
    let (s, child, token) = local_watched(Some(1)).await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let running = {
        let s = s.clone();
        let script = format!("echo $$ > {}; exec sleep 1000", pid_file.display());
        tokio::spawn(async move { s.run(&script, LIMIT).await })
    };
    assert!(until(LIMIT, || pid_file.exists()).await);
    let job: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // the job's start was recorded before anything else happens to the loop
    assert!(
        until(LIMIT, || s
            .inner
            .slots()
            .values()
            .any(|sl| sl.pgid == Some(job)))
        .await
    );
    unsafe {
        libc::kill(s.pid() as i32, libc::SIGKILL);
    }
    let r = running.await.unwrap();
    let Err(TransportError::Lost { reason, .. }) = r else {
        panic!("{r:?}")
    };
    assert!(reason.contains("killed by signal 9"), "{reason}");
    assert_eq!(s.orphans(), [job]);
    assert!(matches!(
        s.run("true", LIMIT).await,
        Err(TransportError::Lost { .. })
    ));
    assert_eq!(child.exited_within(LIMIT).await, Some(137));
    // the loop's writer went with it; its watchdog finds it gone and stops the job by the
    // process group it recorded (the transport would too, once the host is reached again)
    assert!(
        until(LIMIT, || !alive(job)).await,
        "the job outlived its loop"
    );
    let dir = std::path::PathBuf::from(s.dir());
    assert!(
        until(LIMIT, || !dir.exists()).await,
        "{} left",
        dir.display()
    );
    assert!(
        until(LIMIT, || processes_with(&token).is_empty()).await,
        "{:?}",
        processes_with(&token)
    );
}

#[tokio::test]
async fn closing_stops_what_still_runs_and_leaves_nothing() {
    let (s, child, token) = local().await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let running = {
        let s = s.clone();
        let script = format!(
            "trap '' TERM; echo $$ > {}; sleep 1000 & wait",
            pid_file.display()
        );
        tokio::spawn(async move { s.run(&script, LIMIT).await })
    };
    assert!(until(LIMIT, || pid_file.exists()).await);
    let job: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let session_dir = std::path::PathBuf::from(s.dir());
    assert!(session_dir.is_dir());
    s.close().await;
    assert!(running.await.unwrap().is_err());
    assert_eq!(child.exited_within(LIMIT).await, Some(0));
    assert!(!alive(job), "the job survived the session's end");
    assert!(!session_dir.exists());
    assert!(
        until(LIMIT, || processes_with(&token).is_empty()).await,
        "{:?}",
        processes_with(&token)
    );
}

#[tokio::test]
async fn what_a_login_shell_prints_first_is_skipped_and_a_failed_start_is_said() {
    let token = wire::random_word();
    let loop_line = wire::command(&token);
    let noisy = format!("echo 'Welcome'; echo '@fp D 1 0'; echo '@fp H other 1 /'; {loop_line}");
    let argv = ["/bin/sh".to_string(), "-c".to_string(), noisy];
    let (sink, source, _child) = process::spawn(&argv, &[]).unwrap();
    let s = Session::attach("here", &token, sink, source, LIMIT)
        .await
        .unwrap();
    assert_eq!(s.run("echo ok", LIMIT).await.unwrap().stdout, "ok\n");
    s.close().await;
    let argv = [
        "/bin/sh".to_string(),
        "-c".to_string(),
        "echo '@fp F base64 is not installed'".to_string(),
    ];
    let (sink, source, _child) = process::spawn(&argv, &[]).unwrap();
    let e = Session::attach("here", &token, sink, source, LIMIT)
        .await
        .err()
        .unwrap();
    assert!(e.contains("base64 is not installed"), "{e}");
    let argv = [
        "/bin/sh".to_string(),
        "-c".to_string(),
        "exit 5".to_string(),
    ];
    let (sink, source, _child) = process::spawn(&argv, &[]).unwrap();
    let e = Session::attach("here", &token, sink, source, LIMIT)
        .await
        .err()
        .unwrap();
    assert!(e.contains("exited 5"), "{e}");
}

#[tokio::test]
async fn a_loop_that_stops_answering_ends_its_session() {
    let (s, child, token) = local().await;
    s.set_stop_limit(Duration::from_millis(500));
    // the loop and its writer stop (a host that froze); its jobs are in groups of their own
    let pid = child.pid().unwrap() as i32;
    assert_eq!(s.run("echo up", LIMIT).await.unwrap().stdout, "up\n");
    unsafe {
        libc::kill(-pid, libc::SIGSTOP);
    }
    let r = s.run("echo never", Duration::from_millis(300)).await;
    assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
    let why = s.ended().expect("a session that does not answer has ended");
    assert!(
        why.contains("never said") || why.contains("did not answer"),
        "{why}"
    );
    assert!(matches!(
        s.run("true", LIMIT).await,
        Err(TransportError::Lost { .. })
    ));
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    assert!(child.exited_within(LIMIT).await.is_some());
    assert!(
        until(LIMIT, || processes_with(&token).is_empty()).await,
        "{:?}",
        processes_with(&token)
    );
}

#[test]
fn a_loop_whose_controller_falls_silent_ends_itself_and_its_jobs() {
    use std::io::{BufRead, BufReader, Write};
    // the loop alone, its watchdog's window 1 s: nobody beats
    let token = wire::random_word();
    let mut argv = wire::argv(&token);
    argv.push("1".into());
    /// Killed and reaped however the test ends.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Reaped(
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let mut input = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let Some(wire::Answer::Hello { dir, .. }) = wire::answer(&line) else {
        panic!("{line}")
    };
    input
        .write_all(&wire::run_request(1, "exec sleep 1000", false))
        .unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let Some(wire::Answer::Started { pgid, .. }) = wire::answer(&line) else {
        panic!("{line}")
    };
    // silence (its input stays open): the job is stopped, the loop ends, its directory goes
    let t = Instant::now();
    let mut status = None;
    while t.elapsed() < LIMIT && status.is_none() {
        status = child.try_wait().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(status.is_some(), "the loop outlived its silent controller");
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    let t = Instant::now();
    while t.elapsed() < LIMIT && (alive(pgid) || std::path::Path::new(&dir).exists()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pgid), "its job survived");
    assert!(!std::path::Path::new(&dir).exists(), "{dir} left");
    let t = Instant::now();
    while t.elapsed() < LIMIT && !processes_with(&token).is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        processes_with(&token).is_empty(),
        "{:?}",
        processes_with(&token)
    );
    drop(input);
}
