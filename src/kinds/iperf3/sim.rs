//! `iperf3` on the simulated fabric: its options (`-s`, `-c HOST`, `-p`, `-t`, `-P`) and its
//! words: the server's banner and accepted connection in its log, the client's `-J` JSON
//! report (iperf 3.16's layout), and its errors.

use crate::kinds::simulated::{SimAnswer, SimArgs, SimOutcome, SimStream, SimTool};

pub struct Iperf3;

/// iperf3's default port.
const DEFAULT_PORT: u16 = 5201;

/// The value after `flag` in a word list.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a String> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1)
}

fn json(doc: &serde_json::Value) -> String {
    serde_json::to_string_pretty(doc).unwrap_or_default() + "\n"
}

/// The client's `-J` report of a stream that ran.
fn report(args: &SimArgs, stream: SimStream, local: &str, gbps: f64, bytes: u64) -> String {
    let (secs, streams, port) = (stream.seconds, stream.streams, args.port);
    let server_ip = args.server.clone().unwrap_or_default();
    let bps = gbps * 1e9;
    let sum = |sender: bool| serde_json::json!({"start": 0, "end": secs, "seconds": secs, "bytes": bytes, "bits_per_second": bps, "retransmits": 0, "sender": sender});
    json(&serde_json::json!({
        "start": {
            "connected": [{"socket": 5, "local_host": local, "local_port": 40000, "remote_host": server_ip, "remote_port": port}],
            "version": "iperf 3.16",
            "system_info": "Linux",
            "connecting_to": {"host": server_ip, "port": port},
            "test_start": {"protocol": "TCP", "num_streams": streams, "blksize": 131072, "omit": 0, "duration": secs, "bytes": 0, "blocks": 0, "reverse": 0}
        },
        "intervals": [{"streams": [], "sum": {"start": 0, "end": secs, "seconds": secs, "bytes": bytes, "bits_per_second": bps, "retransmits": 0, "omitted": false, "sender": true}}],
        "end": {
            "streams": [],
            "sum_sent": sum(true),
            "sum_received": sum(false),
            "cpu_utilization_percent": {"host_total": 35.0, "host_user": 1.0, "host_system": 34.0, "remote_total": 20.0, "remote_user": 1.0, "remote_system": 19.0}
        }
    }))
}

/// The client's `-J` report of a connection refused.
fn refused(server: &str, port: u16) -> String {
    json(&serde_json::json!({
        "start": {"connected": [], "version": "iperf 3.16", "system_info": "Linux", "connecting_to": {"host": server, "port": port}},
        "intervals": [],
        "end": {},
        "error": "error - unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused"
    }))
}

impl SimTool for Iperf3 {
    fn program(&self) -> &'static str {
        super::parse::TOOL.name
    }

    fn read(&self, args: &[String]) -> Result<SimArgs, String> {
        let server = flag(args, "-c").cloned();
        if server.is_none() && !args.iter().any(|a| a == "-s") {
            return Err(
                "iperf3: parameter error - must either be a client (-c) or server (-s)\n".into(),
            );
        }
        let number = |f: &str| flag(args, f).and_then(|p| p.parse::<f64>().ok());
        Ok(SimArgs {
            device: None,
            gid: None,
            port: flag(args, "-p")
                .and_then(|p| p.parse().ok())
                .unwrap_or(DEFAULT_PORT),
            server,
            size: 0,
            iters: 0,
            stream: Some(SimStream {
                seconds: number("-t").unwrap_or(10.0),
                streams: flag(args, "-P").and_then(|p| p.parse().ok()).unwrap_or(1),
            }),
        })
    }

    fn answer(&self, args: &SimArgs, outcome: &SimOutcome) -> SimAnswer {
        let ok = |stdout: String| SimAnswer {
            stdout,
            ..SimAnswer::default()
        };
        match outcome {
            SimOutcome::Listening => ok(format!(
                "-----------------------------------------------------------\nServer listening on {} (test #1)\n-----------------------------------------------------------\n",
                args.port
            )),
            SimOutcome::Refused { server, port } => SimAnswer {
                status: 1,
                stdout: refused(server, *port),
                stderr: String::new(),
            },
            SimOutcome::Streamed {
                client,
                server,
                gbps,
                bytes,
            } => match (&args.server, args.stream) {
                (Some(_), Some(stream)) => ok(report(args, stream, client, *gbps, *bytes)),
                // the server's log: the connection it accepted
                _ => ok(format!(
                    "Accepted connection from {client}, port 40000\n[  5] local {server} port {} connected to {client} port 40001\n",
                    args.port
                )),
            },
            // an RDMA outcome: never one of a TCP tool (its arguments have a stream)
            other => SimAnswer {
                status: 1,
                stdout: String::new(),
                stderr: format!("iperf3: error - internal: not a TCP outcome: {other:?}\n"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{ErrorKind, Status};

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn reads_a_client_a_server_and_refuses_neither() {
        let c = Iperf3
            .read(&words("-c 198.18.0.1 -p 5300 -t 2 -P 4 -J"))
            .unwrap();
        assert_eq!(c.server.as_deref(), Some("198.18.0.1"));
        assert_eq!(c.port, 5300);
        let s = c.stream.unwrap();
        assert_eq!((s.seconds, s.streams), (2.0, 4));
        let s = Iperf3.read(&words("-s -1")).unwrap();
        assert_eq!((s.server, s.port), (None, DEFAULT_PORT));
        assert!(s.stream.is_some(), "a TCP tool: its server streams too");
        let e = Iperf3.read(&words("-p 5300")).unwrap_err();
        assert!(e.contains("parameter error"), "{e}");
    }

    /// What the simulated tool prints is what its parser reads: the rate it streamed, or the
    /// refusal as the tool's connect error.
    #[test]
    fn its_words_read_back_through_its_parser() {
        let c = Iperf3.read(&words("-c 198.18.0.1 -t 3 -J")).unwrap();
        let done = SimOutcome::Streamed {
            client: "198.18.0.2".into(),
            server: "198.18.0.1".into(),
            gbps: 11.5,
            bytes: 4_312_500_000,
        };
        let a = Iperf3.answer(&c, &done);
        assert_eq!(a.status, 0);
        let r = crate::kinds::iperf3::parse::parse(&a.stdout);
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert!((r.gbps.unwrap() - 11.5).abs() < 1e-9);
        let log = Iperf3.answer(&Iperf3.read(&words("-s")).unwrap(), &done);
        assert!(
            log.stdout
                .starts_with("Accepted connection from 198.18.0.2")
        );
        let refused = SimOutcome::Refused {
            server: "198.18.0.1".into(),
            port: 5201,
        };
        let a = Iperf3.answer(&c, &refused);
        assert_eq!(a.status, 1);
        let r = crate::kinds::iperf3::parse::parse(&a.stdout);
        assert_eq!(r.error.map(|e| e.kind), Some(ErrorKind::ConnectFailed));
    }
}
