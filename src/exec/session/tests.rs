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

/// The pid a job wrote to `path`, once it is written whole (the file exists as soon as the
/// job's shell opened it, before its number is in it).
async fn written_pid(path: &std::path::Path) -> u32 {
    let read = || {
        std::fs::read_to_string(path)
            .ok()
            .filter(|t| t.ends_with('\n'))
            .and_then(|t| t.trim().parse::<u32>().ok())
    };
    assert!(
        until(LIMIT, || read().is_some()).await,
        "no pid in {}",
        path.display()
    );
    read().unwrap()
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
    let job = written_pid(&pid_file).await;
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
    let job = written_pid(&pid_file).await;
    let session_dir = std::path::PathBuf::from(s.dir());
    assert!(session_dir.is_dir());
    s.close().await;
    // it was stopped, or its session ended first: either way it did not end by itself
    if let Ok(o) = running.await.unwrap() {
        assert!(o.status > 128, "{o:?}");
    }
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
    assert!(
        matches!(&e, AttachError::Refused(why) if why.contains("base64 is not installed")),
        "{e}"
    );
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
    assert!(
        matches!(&e, AttachError::NoHello(why) if why.contains("exited 5")),
        "{e}"
    );
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
        .write_all(&wire::run_request(1, "exec sleep 1000", wire::Verb::Run))
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

/// A session whose loop is started with `window` and `limit` (blocks of 512 bytes per output
/// stream).
async fn local_limited(window: u32, limit: u32) -> (Session, process::Child, String) {
    let token = wire::random_word();
    let mut argv = wire::argv(&token);
    argv.extend([window.to_string(), limit.to_string()]);
    let (sink, source, child) = process::spawn(&argv, &[]).expect("sh starts");
    let s = Session::attach("here", &token, sink, source, LIMIT)
        .await
        .expect("the session starts");
    (s, child, token)
}

fn mode_and_owner(p: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.mode() & 0o7777, m.uid())
}

#[tokio::test]
async fn each_job_runs_in_a_private_directory_of_its_own_that_goes_with_it() {
    let (s, _child, _) = local().await;
    let dir = std::path::PathBuf::from(s.dir());
    let me = unsafe { libc::geteuid() };
    assert_eq!(mode_and_owner(&dir), (0o700, me), "{}", dir.display());
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("fabricplan-session.")
    );
    // its working directory: inside the session's, a new one per job, made with umask 077
    let o = s
        .run("pwd; touch made; ls -ld . made | cut -c1-10", LIMIT)
        .await
        .unwrap();
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{o:?}");
    let cwd = std::path::PathBuf::from(lines[0]);
    assert_eq!(cwd.parent(), Some(dir.as_path()), "{o:?}");
    assert_eq!(&lines[1..], ["drwx------", "-rw-------"], "{o:?}");
    let second = s.run("pwd", LIMIT).await.unwrap();
    assert_ne!(
        second.stdout.trim(),
        lines[0],
        "two jobs shared a directory"
    );
    // gone once the job ended
    assert!(
        until(LIMIT, || !cwd.exists()).await,
        "{} left",
        cwd.display()
    );
    // every job's processes carry the session's mark
    let o = s.run("echo \"$FABRICPLAN_JOB\"", LIMIT).await.unwrap();
    assert!(o.stdout.trim().ends_with('.'), "{o:?}");
    s.close().await;
    assert!(!dir.exists());
}

#[tokio::test]
async fn a_server_runs_until_stopped_by_its_recorded_group_and_gives_its_output() {
    let (s, _child, _) = local().await;
    let up = tempfile::NamedTempFile::new().unwrap();
    std::fs::remove_file(up.path()).unwrap();
    let job = s
        .spawn(&format!(
            "echo listening; echo warm >&2; touch {}; exec sleep 1000",
            up.path().display()
        ))
        .await
        .unwrap();
    assert!(job.pgid > 1);
    assert!(job.started_unix_ms.is_some_and(|t| t > 1.0e12), "{job:?}");
    assert!(until(LIMIT, || up.path().exists()).await);
    assert!(alive(job.pgid));
    let out = s.stop_spawned(job.id).await.unwrap();
    assert_eq!(out.status, 143, "{out:?}");
    assert_eq!(out.stdout, "listening\n");
    assert_eq!(out.stderr, "warm\n");
    assert!(out.left.is_empty(), "{out:?}");
    assert!(!alive(job.pgid));
    // one that ended by itself first: its end is there to take
    let quick = s.spawn("echo bye; exit 3").await.unwrap();
    assert!(until(LIMIT, || !alive(quick.pgid)).await);
    // its end may or may not have arrived yet: either way the stop gives it, signalling nothing
    let out = s.stop_spawned(quick.id).await.unwrap();
    assert_eq!((out.status, out.stdout.as_str()), (3, "bye\n"), "{out:?}");
    // a second stop of the same job is refused, and nothing else is signalled
    assert!(s.stop_spawned(quick.id).await.is_err());
    assert_eq!(s.run("echo still", LIMIT).await.unwrap().stdout, "still\n");
    s.close().await;
}

#[tokio::test]
async fn what_a_job_leaves_running_is_stopped_and_said() {
    let (s, _child, token) = local().await;
    let dir = tempfile::tempdir().unwrap();
    // a child left in the job's own group, and one that made itself a session of its own
    let in_group = dir.path().join("in-group");
    let escaped = dir.path().join("escaped");
    let script = format!(
        "sleep 1001 & echo $! > {}\nsetsid sleep 1002 </dev/null >/dev/null 2>&1 &\n\
         while ! pgrep -f 'sleep 1002' > {} ; do sleep 0.01; done\necho done",
        in_group.display(),
        escaped.display()
    );
    let o = s.run(&script, LIMIT).await.unwrap();
    assert_eq!((o.status, o.stdout.as_str()), (0, "done\n"), "{o:?}");
    let pid = |p: &std::path::Path| -> u32 {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (a, b) = (pid(&in_group), pid(&escaped));
    assert!(!alive(a), "the child in its group outlived the job");
    assert!(
        !alive(b),
        "the child that left its session outlived the job"
    );
    let left = o.left.join(" | ");
    assert!(
        o.left.len() == 2 && left.contains(&a.to_string()) && left.contains(&b.to_string()),
        "{o:?}"
    );
    assert!(left.contains("sleep"), "{left}");
    assert!(processes_with(&token).is_empty() || s.ended().is_none());
    s.close().await;
}

#[tokio::test]
async fn outputs_are_bounded_on_the_host_and_here() {
    // a limit of 8192 blocks: 4 MiB per stream on the host
    let (s, _child, _) = local_limited(10, 8192).await;
    // 3 MiB: under the host's bound, past what is held here: the ends kept, the middle counted
    let o = s
        .run(
            "echo first; head -c 3145728 /dev/zero | tr '\\0' x; echo; echo last",
            LIMIT,
        )
        .await
        .unwrap();
    assert_eq!(o.status, 0);
    assert!(o.stdout.starts_with("first\n") && o.stdout.ends_with("\nlast\n"));
    assert!(o.omitted_bytes > 0, "{}", o.omitted_bytes);
    assert!(o.stdout.len() < 2 * crate::exec::capture::KEPT + 200);
    assert!(o.stdout.contains(crate::exec::capture::TRUNCATED_MARK));
    // without end: stopped by the host's bound (SIGXFSZ), whatever it would have written
    let t = Instant::now();
    let o = s.run("exec yes", LIMIT).await.unwrap();
    assert_eq!(o.status, 128 + libc::SIGXFSZ, "{}", o.status);
    assert!(t.elapsed() < LIMIT);
    assert!(o.stdout.len() < 2 * crate::exec::capture::KEPT + 200);
    s.close().await;
}

#[test]
fn a_line_longer_than_any_answer_is_dropped_as_it_comes() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel(SOURCE_DEPTH);
        let mut lines = Lines::new(rx);
        tokio::spawn(async move {
            for _ in 0..256 {
                tx.send(Chunk::Data(vec![b'x'; 64 * 1024])).await.unwrap();
            }
            tx.send(Chunk::Data(b"\n@fp Q\n".to_vec())).await.unwrap();
            tx.send(Chunk::End("closed".into())).await.unwrap();
        });
        assert_eq!(lines.next().await.unwrap(), "@fp Q");
        assert!(
            lines.buf.capacity() < 4 * MAX_LINE,
            "{}",
            lines.buf.capacity()
        );
        assert!(lines.next().await.is_err());
    });
}

#[tokio::test]
async fn a_loop_killed_with_everything_it_started_is_cleaned_up_by_the_next() {
    let (s, child, token) = local().await;
    let dir = std::path::PathBuf::from(s.dir());
    let pid_file = tempfile::NamedTempFile::new().unwrap();
    let script = format!("echo $$ > {}; exec sleep 1000", pid_file.path().display());
    let waiting = {
        let s = s.clone();
        tokio::spawn(async move { s.run(&script, LIMIT).await })
    };
    assert!(
        until(LIMIT, || std::fs::read_to_string(pid_file.path())
            .is_ok_and(|t| !t.trim().is_empty()))
        .await
    );
    let job: u32 = std::fs::read_to_string(pid_file.path())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // everything of the session but its job killed at once: nobody left to clean up
    let loop_pid = s.pid();
    let members: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|st| {
                    st.rsplit(')')
                        .next()?
                        .split_whitespace()
                        .nth(2)?
                        .parse::<u32>()
                        .ok()
                })
                == Some(loop_pid)
        })
        .collect();
    for p in &members {
        unsafe {
            libc::kill(*p as i32, libc::SIGKILL);
        }
    }
    let _ = waiting.await;
    let _ = child.exited_within(LIMIT).await;
    assert!(
        dir.exists() && alive(job),
        "the setting up of the test failed"
    );
    // the next session of this user on this host finds it gone, stops its job, removes it
    let (next, _c2, _) = local().await;
    assert!(!dir.exists(), "{} left", dir.display());
    assert!(until(LIMIT, || !alive(job)).await, "its job survived");
    assert!(
        processes_with(&token).is_empty(),
        "{:?}",
        processes_with(&token)
    );
    next.close().await;
}

#[tokio::test]
async fn a_loop_told_to_terminate_cleans_up_before_it_goes() {
    let (s, child, token) = local().await;
    let dir = std::path::PathBuf::from(s.dir());
    let server = s.spawn("exec sleep 1000").await.unwrap();
    unsafe {
        libc::kill(s.pid() as i32, libc::SIGTERM);
    }
    assert!(child.exited_within(LIMIT).await.is_some());
    assert!(
        until(LIMIT, || !alive(server.pgid)).await,
        "its job survived"
    );
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
