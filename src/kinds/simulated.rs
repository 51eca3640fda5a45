//! What a kind with a tool of its own tells the simulated fabric (`--sim`): how the tool's
//! command line reads and what it prints. The fabric's half (which device a node has, whether
//! the server listens and is reached, whether the two ends share a wire and a RoCE v2 GID, the
//! latency of their path, the rate a TCP stream gets over its route) is the simulator's and the
//! same for every kind; the tool's words are the kind's. A kind gives one through
//! [`super::TestKind::simulated`]; the simulator asks [`simulated`] by program name and never
//! names a kind.
//!
//! A tool exchanges over one of two carriers: RDMA (a queue pair between two devices:
//! `ibv_rc_pingpong`) or TCP (a stream between two addresses: `iperf3`), which its command line
//! says through [`SimArgs::stream`].

/// A kind's tool, as the simulated fabric runs it: a server started as a job of its session, then a client
/// that exchanges with it over one pair of RDMA ends, or streams to it over TCP.
pub trait SimTool: Sync {
    /// The program it answers for (`ibv_rc_pingpong`).
    fn program(&self) -> &'static str;

    /// Its command line read; `Err` is what the tool prints for one it refuses.
    fn read(&self, args: &[String]) -> Result<SimArgs, String>;

    /// What one end prints for `outcome` and its exit status (a server's words go to its
    /// log: at its start, then what the exchange added to it).
    fn answer(&self, args: &SimArgs, outcome: &SimOutcome) -> SimAnswer;
}

/// A command line of a [`SimTool`], as the simulator needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimArgs {
    /// `-d`: the RDMA device; the node's first when absent.
    pub device: Option<String>,
    /// The GID index; the device's RoCE v2 one when absent.
    pub gid: Option<u32>,
    /// The out-of-band TCP port the server listens on.
    pub port: u16,
    /// A client's server address; `None` for a server.
    pub server: Option<String>,
    /// Bytes per message and round trips: what an RDMA exchange moves.
    pub size: u64,
    pub iters: u32,
    /// A TCP tool's stream; `None` for an RDMA tool, whose ends exchange `iters` messages of
    /// `size` bytes over a queue pair (a TCP tool has no device, GID, size or iterations).
    pub stream: Option<SimStream>,
}

/// What a TCP tool's client streams: for how long, over how many parallel connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimStream {
    pub seconds: f64,
    pub streams: u32,
}

/// One end's queue pair address, as the tools print it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimEnd {
    pub lid: u32,
    pub qpn: u32,
    pub psn: u32,
    /// All zero when the end has no RoCE v2 GID at its index.
    pub gid: [u8; 16],
}

/// What happened on the simulated fabric for one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum SimOutcome {
    /// A server has started and waits for its client.
    Waiting { local: SimEnd },
    /// The device asked for is not on the node (`None`: the node has none).
    NoDevice { asked: Option<String> },
    /// The device's port is down.
    PortDown,
    /// No server listens at the client's address and port (or it is not routed there).
    Refused { server: String, port: u16 },
    /// An end has no RoCE v2 GID at its index: the queue pair cannot reach RTR.
    NoGid { local: SimEnd, remote: SimEnd },
    /// The two ends share no wire: the first send is retried until the counter runs out.
    NoWire { local: SimEnd, remote: SimEnd },
    /// The exchange completed, at this many microseconds per round trip.
    Done {
        local: SimEnd,
        remote: SimEnd,
        usec_per_iter: f64,
    },
    /// A TCP server listens on its port and waits for its client.
    Listening,
    /// A TCP stream ran from the client's address to the server's at this rate, moving this
    /// many bytes (the client's words and the server's log both say so).
    Streamed {
        client: String,
        server: String,
        gbps: f64,
        bytes: u64,
    },
}

/// What one end printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimAnswer {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The simulated tool of the kind that runs `program`, when one does.
pub fn simulated(program: &str) -> Option<&'static dyn SimTool> {
    super::ALL
        .iter()
        .filter_map(|k| k.simulated())
        .find(|s| s.program() == program)
}
