#!/usr/bin/python3 -S
"""Lab stand-in for perftest (ib_write_bw, ib_write_lat) and nccl-tests
(all_reduce_perf, all_gather_perf, sendrecv_perf).

One program, installed under each tool name; it dispatches on the name it was
started as. It reads this host's (bind-mounted) /sys/class/infiniband like the
real tools would, moves real bytes over TCP between the lab hosts, measures
them, and prints the current output formats of the real tools. Faults are
switched on per host by files in <bin dir>/.faults/<hostname>/<FaultName>.

Standard library only (Debian's python3), started with -S: no site-packages scan, which
alone cost ~25 ms a process here (perftest itself starts in milliseconds).
"""

import math
import os
import socket
import sys
import time

BIN_DIR = os.path.dirname(os.path.realpath(__file__))
IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"
HOST = socket.gethostname()
DASHES = "-" * 87
CHUNK = 1 << 20


def out(text=""):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def err(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def fault(name, dev=None):
    """A fault of this host: `<name>`, or `<name>@<device>` for the tool run on that device."""
    d = os.path.join(BIN_DIR, ".faults", HOST)
    return os.path.exists(os.path.join(d, name)) or (
        dev is not None and os.path.exists(os.path.join(d, "%s@%s" % (name, dev)))
    )


# ---------------------------------------------------------------- hostile tools
#
# A shared host's tools can misbehave in ways a run must survive with a true verdict: print
# without end, be killed by the kernel, kill their own parent, or leave processes behind.
# Each is a fault of the client of a bw test on its host (and device).


def flood(total, line):
    """Write `total` bytes to stdout: lines of 100, or one line when `line`; forever when
    `total` is None."""
    chunk = b"y" * CHUNK if line else (b"x" * 99 + b"\n") * (CHUNK // 100)
    n = 0
    while total is None or n < total:
        os.write(1, chunk)
        n += len(chunk)


def sleeper(how):
    """Start a process that outlives this tool: in its group (`group`), in a session of its
    own (`setsid`), or a daemon (`daemon`: two forks, setsid, its parent gone)."""
    pid = os.fork()
    if pid != 0:
        if how == "daemon":
            os.waitpid(pid, 0)
        return
    try:
        if how in ("setsid", "daemon"):
            os.setsid()
        if how == "daemon" and os.fork() != 0:
            os._exit(0)
        for fd in (0, 1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        time.sleep(600)
    finally:
        os._exit(0)


def hostile_start(dev):
    """Misbehave before measuring, as this host's faults say."""
    if fault("KilledAtStart", dev):
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
    if fault("FloodOutput", dev):
        flood(200 << 20, line=False)
    if fault("FloodLine", dev):
        flood(200 << 20, line=True)
    if fault("EndlessOutput", dev):
        flood(None, line=False)
    for how, name in (("group", "LeavesChild"), ("setsid", "SetsidChild"), ("daemon", "Daemonizes")):
        if fault(name, dev):
            sleeper(how)


def hostile_end(dev):
    """Misbehave after a complete measurement."""
    if fault("KillsParent", dev):
        import signal
        try:
            os.kill(os.getppid(), signal.SIGKILL)
        except OSError:
            pass


# ---------------------------------------------------------------- sysfs


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def port_dir(dev):
    return os.path.join(IB_ROOT, dev, "ports", "1")


def devices():
    try:
        return sorted(os.listdir(IB_ROOT))
    except OSError:
        return []


def dev_active(dev):
    return (read(os.path.join(port_dir(dev), "state")) or "").endswith("ACTIVE")


def dev_state_word(dev):
    state = read(os.path.join(port_dir(dev), "state")) or "1: DOWN"
    word = state.split(":", 1)[-1].strip()
    return {"DOWN": "Down", "INIT": "Init", "ARMED": "Armed", "NOP": "Nop"}.get(word, word.title())


def dev_netdev(dev):
    try:
        names = os.listdir(os.path.join(IB_ROOT, dev, "device", "net"))
    except OSError:
        return None
    return names[0] if names else None


def gid_bytes(dev, idx):
    text = read(os.path.join(port_dir(dev), "gids", str(idx)))
    if text is None:
        return None
    try:
        raw = bytes.fromhex(text.replace(":", ""))
    except ValueError:
        return None
    return raw if len(raw) == 16 else None


def gid_type(dev, idx):
    return read(os.path.join(port_dir(dev), "gid_attrs", "types", str(idx)))


def gid_usable_v2(dev, idx):
    g = gid_bytes(dev, idx)
    return g is not None and any(g) and gid_type(dev, idx) == "RoCE v2"


def best_gid_index(dev):
    """What modern perftest picks without -x: a RoCE v2 entry, IPv4-mapped first."""
    try:
        idxs = sorted(int(i) for i in os.listdir(os.path.join(port_dir(dev), "gids")))
    except OSError:
        return 0
    v2 = [i for i in idxs if gid_usable_v2(dev, i)]
    for i in v2:
        if gid_bytes(dev, i)[:12] == b"\0" * 10 + b"\xff\xff":
            return i
    return v2[0] if v2 else 0


def active_mtu(dev):
    """RoCE active MTU: the largest IB MTU that fits the netdev MTU."""
    netdev = dev_netdev(dev)
    try:
        mtu = int(read(os.path.join(NET_ROOT, netdev, "mtu")) or "1500")
    except (TypeError, ValueError):
        mtu = 1500
    best = 256
    for ib in (256, 512, 1024, 2048, 4096):
        if ib + 100 <= mtu:
            best = ib
    return best


def bump_counters(dev, sent, received):
    """Advance this device's port counters (data in 4-byte words) under flock."""
    if dev is None or fault("NoCounters"):
        return
    import fcntl

    base = os.path.join(port_dir(dev), "counters")
    deltas = {
        "port_xmit_data": sent // 4,
        "port_rcv_data": received // 4,
        "port_xmit_packets": (sent + 4095) // 4096,
        "port_rcv_packets": (received + 4095) // 4096,
    }
    for name, delta in deltas.items():
        if delta <= 0:
            continue
        path = os.path.join(base, name)
        try:
            with open(path, "r+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    value = int(f.read().strip() or "0")
                except ValueError:
                    value = 0
                f.seek(0)
                f.truncate()
                f.write("%d\n" % (value + delta))
                f.flush()
        except OSError:
            pass


# ---------------------------------------------------------------- small helpers


def c_alt_hex(value, width):
    """C printf("%#0<width>x"): zero prints without 0x, width includes the prefix."""
    if value == 0:
        return "0" * width
    digits = "%x" % value
    return "0x" + digits.rjust(width - 2, "0")


def gid_decimal(raw):
    return ":".join("%02d" % b for b in raw)


def parse_size(text):
    text = text.strip()
    mult = 1
    if text and text[-1] in "kKmMgGtT":
        mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[text[-1].lower()]
        text = text[:-1]
    return int(float(text) * mult)


def send_msg(sock, obj):
    import json
    sock.sendall((json.dumps(obj) + "\n").encode())


class Lines:
    """Line reader over a socket (JSON messages on the control connection)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def get(self):
        import json
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("peer closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def recv_exact(sock, view):
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("peer closed")
        got += n


def ipv4_addrs():
    import subprocess
    """[(ifname, ip)] of this namespace, from `ip -4 -o addr`."""
    try:
        text = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    except OSError:
        return []
    result = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "inet":
            result.append((parts[1], parts[3].split("/")[0]))
    return result


def ipv4_nets():
    import subprocess
    """[(ifname, ip, prefixlen)] of this namespace, from `ip -4 -o addr`."""
    try:
        text = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    except OSError:
        return []
    result = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "inet":
            ip, _, plen = parts[3].partition("/")
            result.append((parts[1], ip, int(plen or "32")))
    return result


def same_subnet(a, b, plen):
    mask = (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF if plen else 0
    return (int.from_bytes(socket.inet_aton(a), "big") & mask) == (int.from_bytes(socket.inet_aton(b), "big") & mask)


def is_local_ip(ip):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((ip, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


# ---------------------------------------------------------------- perftest


class PerfArgs:
    pass


PERF_VALUE_OPTS = {
    "-d": "dev", "--ib-dev": "dev",
    "-i": "ib_port", "--ib-port": "ib_port",
    "-x": "gid", "--gid-index": "gid",
    "-D": "duration", "--duration": "duration",
    "-s": "size", "--size": "size",
    "-q": "qps", "--qp": "qps",
    "-n": "iters", "--iters": "iters",
    "-p": "port", "--port": "port",
    "-m": "mtu", "--mtu": "mtu",
    "-t": "tx_depth", "--tx-depth": "tx_depth",
    "-c": "conn", "--connection": "conn",
    "-I": "inline", "--inline_size": "inline",
    "-Q": "cq_mod", "--cq-mod": "cq_mod",
    "-r": "rx_depth", "--rx-depth": "rx_depth",
    "-S": "sl", "--sl": "sl",
    "-T": "tos", "--tos": "tos",
    "-u": "qp_timeout", "--qp-timeout": "qp_timeout",
    "-L": "src_port", "--src_port": "src_port",
}
PERF_FLAGS = {
    "-F": "cpu_freq", "--CPU-freq": "cpu_freq",
    "-a": "all", "--all": "all",
    "-b": "bidir", "--bidirectional": "bidir",
    "--report_gbits": "gbits", "--report-gbits": "gbits",
    "-R": "rdma_cm", "--rdma_cm": "rdma_cm",
    "-N": "no_peak", "--noPeak": "no_peak",
    "-e": "events", "--events": "events",
    "-z": "comm_rdma_cm", "--comm_rdma_cm": "comm_rdma_cm",
    "-O": "dualport", "--dualport": "dualport",
    "--run_infinitely": "infinite",
    "-V": "version", "--version": "version",
    "-h": "help", "--help": "help",
}


def perf_parse(prog, argv, lat):
    a = PerfArgs()
    a.dev = None
    a.ib_port = "1"
    a.gid = None
    a.duration = None
    a.size = None
    a.qps = "1"
    a.iters = None
    a.port = "18515"
    a.mtu = None
    a.server = None
    for name in set(PERF_FLAGS.values()):
        setattr(a, name, False)
    for name in ("tx_depth", "conn", "inline", "cq_mod", "rx_depth", "sl", "tos", "qp_timeout", "src_port"):
        setattr(a, name, None)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--") and "=" in arg:
            key, val = arg.split("=", 1)
            if key in PERF_VALUE_OPTS:
                setattr(a, PERF_VALUE_OPTS[key], val)
                i += 1
                continue
            if key == "--report_gbits":
                a.gbits = True
                i += 1
                continue
            err("%s: unrecognized option '%s'" % (prog, arg))
            err(" Parser function exited with Error")
            sys.exit(1)
        if arg in PERF_FLAGS:
            setattr(a, PERF_FLAGS[arg], True)
        elif arg in PERF_VALUE_OPTS:
            if i + 1 >= len(argv):
                err("%s: option requires an argument -- '%s'" % (prog, arg.lstrip("-")))
                err(" Parser function exited with Error")
                sys.exit(1)
            setattr(a, PERF_VALUE_OPTS[arg], argv[i + 1])
            i += 1
        elif len(arg) > 2 and arg[:2] in PERF_VALUE_OPTS and not arg.startswith("--"):
            setattr(a, PERF_VALUE_OPTS[arg[:2]], arg[2:])
        elif arg.startswith("-"):
            err("%s: invalid option -- '%s'" % (prog, arg.lstrip("-")))
            err(" Parser function exited with Error")
            sys.exit(1)
        else:
            a.server = arg
        i += 1
    try:
        a.ib_port = int(a.ib_port)
        a.qps = int(a.qps)
        a.port = int(a.port)
        a.gid = None if a.gid is None else int(a.gid)
        a.duration = None if a.duration is None else int(a.duration)
        a.size = (2 if lat else 65536) if a.size is None else parse_size(a.size)
        a.iters = (1000 if lat else 5000) if a.iters is None else int(a.iters)
    except ValueError:
        err(" Parser function exited with Error")
        sys.exit(1)
    if a.infinite and a.duration is None:
        a.duration = 5
    return a


def perf_check_device(a):
    """Device and port checks, with perftest's own error lines. Returns the device."""
    devs = devices()
    if not devs:
        err(" Did not detect devices ")
        err(" If device exists, check if driver is up")
        err(" Unable to find the Infiniband/RoCE device")
        sys.exit(1)
    dev = a.dev if a.dev is not None else devs[0]
    if dev not in devs:
        err("IB device %s not found" % dev)
        err(" Unable to find the Infiniband/RoCE device")
        sys.exit(1)
    if a.ib_port != 1:
        err(" Unable to query port %d attributes" % a.ib_port)
        err(" Couldn't get context for the device")
        sys.exit(1)
    if not dev_active(dev):
        err(" Port number %d state is %s" % (a.ib_port, dev_state_word(dev)))
        err(" Couldn't get context for the device")
        sys.exit(1)
    return dev


def perf_banner(a, dev, gid_index, mtu, lat, server):
    out(DASHES)
    if lat:
        out("                    RDMA_Write Latency Test")
    elif a.bidir:
        out("                    RDMA_Write Bidirectional BW Test")
    else:
        out("                    RDMA_Write BW Test")
    out(" Dual-port       : %s\t\tDevice         : %s" % ("ON" if a.dualport else "OFF", dev))
    out(" Number of qps   : %d\t\tTransport type : IB" % a.qps)
    out(" Connection type : %s\t\tUsing SRQ      : OFF" % (a.conn or "RC"))
    out(" PCIe relax order: ON\t\tLock-free      : OFF")
    out(" ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF")
    if lat:
        out(" TX depth        : 1")
    elif not server or a.bidir:
        out(" TX depth        : %s" % (a.tx_depth or "128"))
    if not lat:
        out(" CQ Moderation   : %s" % (a.cq_mod or "100"))
        out(" CQE Poll Batch  : 16")
    out(" Mtu             : %d[B]" % mtu)
    out(" Link type       : Ethernet")
    out(" GID index       : %d" % gid_index)
    out(" Max inline data : %s[B]" % (a.inline or ("220" if lat else "0")))
    out(" rdma_cm QPs\t : %s" % ("ON" if a.rdma_cm else "OFF"))
    out(" Data ex. method : %s" % ("rdma_cm" if a.rdma_cm else "Ethernet"))
    out(DASHES)


def perf_local_dest(a, dev, gid_index):
    import random
    raw = gid_bytes(dev, gid_index) or bytes(16)
    dests = []
    for _ in range(a.qps):
        dests.append({
            "qpn": random.randint(0x100, 0x1FFFF),
            "psn": random.randint(0, 0xFFFFFF),
            "rkey": random.randint(0x1000, 0x3FFFFF),
            "vaddr": 0x7F0000000000 + random.randint(0, 0xFFFFFFF) * 0x1000,
            "gid": list(raw),
        })
    return dests


def perf_print_dests(side, dests):
    for d in dests:
        out(" %s address: LID %s QPN %s PSN %s RKey %s VAddr %s" % (
            side, c_alt_hex(0, 4), c_alt_hex(d["qpn"], 6), c_alt_hex(d["psn"], 6),
            c_alt_hex(d["rkey"], 8), c_alt_hex(d["vaddr"], 16)))
        out(" GID: %s" % gid_decimal(bytes(d["gid"])))


def perf_rtr_ok(dev, gid_index, remote):
    if not gid_usable_v2(dev, gid_index):
        return False
    return all(any(d["gid"]) for d in remote)


def perf_rtr_fail(local):
    err("Failed to modify QP %d to RTR" % local[0]["qpn"])
    err(" Unable to Connect the HCA's through the link")
    sys.exit(1)


def hang_forever():
    while True:
        time.sleep(3600)


def bw_header(a):
    if a.gbits:
        out(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]")
    else:
        out(" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]")


def bw_row(report):
    size, iters, peak, avg, rate, gbits = (report[k] for k in ("size", "iters", "peak", "avg", "rate", "gbits"))
    if gbits and avg < 0.1:
        out(" %-7d    %d           %-7.6f            %-7.6f            %-7.6f" % (size, iters, peak, avg, rate))
    else:
        out(" %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f" % (size, iters, peak, avg, rate))


def bw_report(a, size, nbytes, elapsed, duration_mode, iters_done):
    elapsed = max(elapsed, 1e-9)
    msgs = nbytes // max(size, 1)
    if a.gbits:
        avg = nbytes * 8 / elapsed / 1e9
    else:
        avg = nbytes / elapsed / (1 << 20)
    peak = 0.0 if (duration_mode or a.no_peak or iters_done > 20000) else avg
    iters = msgs if duration_mode else iters_done * a.qps
    return {"size": size, "iters": iters, "peak": peak, "avg": avg,
            "rate": msgs / elapsed / 1e6, "gbits": a.gbits}


def stream_send(sock, size, iters, duration):
    """Send size*iters bytes, or for `duration` seconds; returns bytes sent."""
    buf = memoryview(bytearray(CHUNK))
    sent = 0
    if duration is not None:
        deadline = time.perf_counter() + duration
        while time.perf_counter() < deadline:
            sent += sock.send(buf)
    else:
        total = size * iters
        while sent < total:
            sent += sock.send(buf[: min(CHUNK, total - sent)])
    return sent


def stream_recv(sock):
    buf = memoryview(bytearray(CHUNK))
    got = 0
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            return got
        got += n


def bw_sizes(a):
    if a.all:
        return [1 << i for i in range(1, 24)]
    return [a.size]


def bw_budget_iters(a, size):
    """With -a every size runs its iterations, capped at ~256 MiB per size (lab time budget)."""
    if not a.all or a.duration is not None:
        return a.iters
    return max(5, min(a.iters, (256 << 20) // size))


def perf_listen(a):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        lsock.bind(("0.0.0.0", a.port))
        lsock.listen(16)
    except OSError:
        err("Couldn't listen to port %d" % a.port)
        err("Unable to open file descriptor for socket connection")
        err(" Unable to init the socket connection")
        sys.exit(1)
    return lsock


def perf_connect(a):
    try:
        return socket.create_connection((a.server, a.port), timeout=10)
    except OSError:
        err("Couldn't connect to %s:%d" % (a.server, a.port))
        err("Unable to open file descriptor for socket connection")
        err(" Unable to init the socket connection")
        sys.exit(1)


def data_connect(a):
    s = socket.create_connection((a.server, a.port), timeout=30)
    s.settimeout(None)
    return s


def perf_prelude(a, lat):
    if a.version:
        out("Version: 6.29")
        sys.exit(0)
    if a.help:
        out("Usage:\n  %s            start a server and wait for connection\n  %s <host>     connect to server at <host>" % (PROG, PROG))
        sys.exit(0)
    dev = perf_check_device(a)
    gid_index = a.gid if a.gid is not None else best_gid_index(dev)
    mtu = active_mtu(dev)
    if a.mtu is not None:
        try:
            mtu = min(mtu, int(a.mtu))
        except ValueError:
            pass
    if a.duration is not None and not lat:
        out(" WARNING: BW peak won't be measured in this run.")
    return dev, gid_index, mtu


def bw_main(a):
    import threading
    dev, gid_index, mtu = perf_prelude(a, lat=False)
    server = a.server is None
    if server:
        lsock = perf_listen(a)
        out("")
        out("************************************")
        out("* Waiting for client to connect... *")
        out("************************************")
        if fault("ServerDiesBeforeConnect"):
            os._exit(1)
        ctrl, _ = lsock.accept()
    else:
        hostile_start(dev)
        ctrl = perf_connect(a)
        ctrl.settimeout(None)
    lines = Lines(ctrl)
    perf_banner(a, dev, gid_index, mtu, lat=False, server=server)
    local = perf_local_dest(a, dev, gid_index)
    send_msg(ctrl, {"dests": local})
    remote = lines.get()["dests"]
    perf_print_dests("local", local)
    perf_print_dests("remote", remote)
    out(DASHES)
    if not perf_rtr_ok(dev, gid_index, remote):
        perf_rtr_fail(local)
    send_msg(ctrl, {"ready": True})
    lines.get()
    if not server and fault("ClientHangs"):
        hang_forever()
    total_tx = total_rx = 0
    if server:
        last = None
        while True:
            msg = lines.get()
            if msg.get("op") == "end":
                last = msg.get("report")
                break
            data, _ = lsock.accept()
            if a.bidir:
                box = {}
                t = threading.Thread(target=lambda: box.update(tx=stream_send(data, msg["size"], msg["iters"], msg["duration"])))
                t.start()
                got = stream_recv(data)
                t.join()
                data.shutdown(socket.SHUT_WR)
                total_tx += box["tx"]
            else:
                got = stream_recv(data)
            data.close()
            total_rx += got
            send_msg(ctrl, {"rx": got})
        bw_header(a)
        if last is not None:
            bw_row(last)
        out(DASHES)
    else:
        bw_header(a)
        report = None
        for size in bw_sizes(a):
            iters = bw_budget_iters(a, size)
            data = data_connect(a)
            send_msg(ctrl, {"op": "run", "size": size, "iters": iters, "duration": a.duration})
            t0 = time.perf_counter()
            if a.bidir:
                box = {}
                t = threading.Thread(target=lambda: box.update(rx=stream_recv(data)))
                t.start()
                sent = stream_send(data, size, iters, a.duration)
                data.shutdown(socket.SHUT_WR)
                t.join()
                total_rx += box["rx"]
            else:
                sent = stream_send(data, size, iters, a.duration)
                data.shutdown(socket.SHUT_WR)
            peer_rx = lines.get()["rx"]
            elapsed = time.perf_counter() - t0
            data.close()
            total_tx += sent
            moved = peer_rx + (box["rx"] if a.bidir else 0)
            report = bw_report(a, size, moved, elapsed, a.duration is not None, iters)
            bw_row(report)
        send_msg(ctrl, {"op": "end", "report": report})
        out(DASHES)
    bump_counters(dev, total_tx, total_rx)
    ctrl.close()
    if not server:
        hostile_end(dev)
    return 0


def lat_stats(samples_us, iters):
    samples = sorted(samples_us)
    if len(samples) > 2:
        samples = samples[:-2]
    n = len(samples)
    avg = sum(samples) / n
    stdev = math.sqrt(sum((int(s) - int(avg)) ** 2 for s in samples) / n)
    p99 = samples[min(n - 1, int(math.ceil(n * 0.99)) - 1)]
    p999 = samples[min(n - 1, int(math.ceil(n * 0.999)) - 1)]
    return (samples[0], samples[-1], samples[n // 2], avg, stdev, p99, p999)


def lat_main(a):
    dev, gid_index, mtu = perf_prelude(a, lat=True)
    server = a.server is None
    if server:
        lsock = perf_listen(a)
        out("")
        out("************************************")
        out("* Waiting for client to connect... *")
        out("************************************")
        if fault("ServerDiesBeforeConnect"):
            os._exit(1)
        ctrl, _ = lsock.accept()
    else:
        ctrl = perf_connect(a)
        ctrl.settimeout(None)
    lines = Lines(ctrl)
    perf_banner(a, dev, gid_index, mtu, lat=True, server=server)
    local = perf_local_dest(a, dev, gid_index)
    send_msg(ctrl, {"dests": local})
    remote = lines.get()["dests"]
    perf_print_dests("local", local)
    perf_print_dests("remote", remote)
    out(DASHES)
    if not perf_rtr_ok(dev, gid_index, remote):
        perf_rtr_fail(local)
    send_msg(ctrl, {"ready": True})
    lines.get()
    if not server and fault("ClientHangs"):
        hang_forever()
    if a.duration is not None:
        out(" #bytes        #iterations       t_avg[usec]    tps average")
    else:
        out(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
    sizes = [1 << i for i in range(1, 24)] if a.all else [a.size]
    total = 0
    for size in sizes:
        iters = a.iters if not a.all else max(5, min(a.iters, (64 << 20) // size))
        if server:
            msg = lines.get()
            size, iters, duration = msg["size"], msg["iters"], msg["duration"]
            data, _ = lsock.accept()
        else:
            data = data_connect(a)
            duration = a.duration
            send_msg(ctrl, {"size": size, "iters": iters, "duration": duration})
        data.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = memoryview(bytearray(size))
        samples = []
        count = 0
        start = time.perf_counter()
        deadline = start + duration if duration is not None else None
        if server:
            # Echo until the client closes; time our own send -> next receive.
            last_send = None
            while True:
                try:
                    recv_exact(data, buf)
                except ConnectionError:
                    break
                now = time.perf_counter()
                if last_send is not None:
                    samples.append((now - last_send) * 1e6 / 2)
                data.sendall(buf)
                last_send = time.perf_counter()
                count += 1
        else:
            while True:
                if deadline is not None:
                    if time.perf_counter() >= deadline:
                        break
                elif count >= iters:
                    break
                t0 = time.perf_counter()
                data.sendall(buf)
                recv_exact(data, buf)
                samples.append((time.perf_counter() - t0) * 1e6 / 2)
                count += 1
            data.shutdown(socket.SHUT_WR)
        elapsed = time.perf_counter() - start
        data.close()
        total += count * size
        if not samples:
            samples = [0.0]
        if duration is not None:
            avg = sum(samples) / len(samples)
            out(" %-7d       %d            %-7.2f        %-7.2f" % (size, count, avg, count / max(elapsed, 1e-9)))
        else:
            mn, mx, typ, avg, sd, p99, p999 = lat_stats(samples, iters)
            out(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
                % (size, iters, mn, mx, typ, avg, sd, p99, p999))
    out(DASHES)
    bump_counters(dev, total, total)
    ctrl.close()
    return 0


# ---------------------------------------------------------------- nccl-tests

NCCL_VALUE_OPTS = {
    "-t": "nthreads", "--nthreads": "nthreads",
    "-g": "ngpus", "--ngpus": "ngpus",
    "-b": "minbytes", "--minbytes": "minbytes",
    "-e": "maxbytes", "--maxbytes": "maxbytes",
    "-i": "stepbytes", "--stepbytes": "stepbytes",
    "-f": "stepfactor", "--stepfactor": "stepfactor",
    "-n": "iters", "--iters": "iters",
    "-m": "agg", "--agg_iters": "agg",
    "-w": "warmup", "--warmup_iters": "warmup",
    "-N": "cycles", "--run_cycles": "cycles",
    "-p": "parallel", "--parallel_init": "parallel",
    "-c": "check", "--check": "check",
    "-o": "op", "--op": "op",
    "-d": "dtype", "--datatype": "dtype",
    "-r": "root", "--root": "root",
    "-z": "blocking", "--blocking": "blocking",
    "-y": "stream_null", "--stream_null": "stream_null",
    "-T": "timeout", "--timeout": "timeout",
    "-G": "graph", "--cudagraph": "graph",
    "-C": "cputime", "--report_cputime": "cputime",
    "-a": "average", "--average": "average",
    "-R": "local_register", "--local_register": "local_register",
    "-J": "json", "--output_file": "json",
    "-u": "unalign", "--unalign": "unalign",
    "-M": "memory", "--memory": "memory",
    "-S": "timestamps", "--report_timestamps": "timestamps",
    "-I": "per_iter", "--per_iter_timing": "per_iter",
}

DTYPE_SIZES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4,
               "int64": 8, "uint64": 8, "half": 2, "float16": 2, "float": 4, "float32": 4,
               "double": 8, "float64": 8, "bfloat16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1}


class NcclArgs:
    pass


def nccl_parse(prog, argv):
    a = NcclArgs()
    defaults = {"nthreads": "1", "ngpus": "1", "minbytes": "32M", "maxbytes": "32M", "stepbytes": "1M",
                "stepfactor": "1", "iters": "20", "agg": "1", "warmup": "1", "cycles": "1", "parallel": "0",
                "check": "1", "op": "sum", "dtype": "float", "root": "0", "blocking": "0", "stream_null": "0",
                "timeout": "0", "graph": "0", "cputime": "0", "average": "1", "local_register": "0",
                "json": None, "unalign": "0", "memory": "0", "timestamps": "0", "per_iter": "0"}
    for k, v in defaults.items():
        setattr(a, k, v)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--") and "=" in arg:
            key, val = arg.split("=", 1)
            if key not in NCCL_VALUE_OPTS:
                err("invalid option: %s" % arg)
                sys.exit(1)
            setattr(a, NCCL_VALUE_OPTS[key], val)
        elif arg in NCCL_VALUE_OPTS:
            if i + 1 >= len(argv):
                err("option requires an argument: %s" % arg)
                sys.exit(1)
            setattr(a, NCCL_VALUE_OPTS[arg], argv[i + 1])
            i += 1
        elif arg in ("-h", "--help"):
            out("USAGE: %s [-t,--nthreads <num threads>] [-g,--ngpus <gpus per thread>] [-b,--minbytes <min size in bytes>] [-e,--maxbytes <max size in bytes>] ..." % prog)
            sys.exit(0)
        else:
            err("invalid option: %s" % arg)
            sys.exit(1)
        i += 1
    a.minbytes = parse_size(a.minbytes)
    a.maxbytes = parse_size(a.maxbytes)
    a.stepbytes = parse_size(a.stepbytes)
    for k in ("nthreads", "ngpus", "stepfactor", "iters", "agg", "warmup", "cycles", "parallel", "check",
              "blocking", "graph", "unalign"):
        setattr(a, k, int(getattr(a, k)))
    a.word = DTYPE_SIZES.get(a.dtype, 4)
    return a


def hca_list_match(spec, name):
    """NCCL_IB_HCA / NCCL_SOCKET_IFNAME matching: prefix by default, '=' exact, '^' exclude."""
    if not spec:
        return True
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    hit = False
    for item in spec.split(","):
        item = item.split(":")[0].strip()
        if not item:
            continue
        if (name == item) if exact else name.startswith(item):
            hit = True
    return hit != exclude


class Ring:
    """Bootstrap over the fabric and a ring of TCP connections (rank -> rank+1)."""

    def __init__(self, rank, size, device_line, transport, ifspec):
        import queue
        import threading
        self.rank = rank
        self.size = size
        self.table = [{"rank": 0, "line": device_line, "host": HOST}]
        self.ip = self.rx_ip = None
        self.to_next = self.from_prev = None
        if size == 1:
            return
        ips, rport = rendezvous()
        # The lowest-starting rank on the launcher's host serves the rendezvous on every address.
        if any(is_local_ip(ip) for ip in ips):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("0.0.0.0", rport))
                s.listen(64)
                threading.Thread(target=self._serve, args=(s,), daemon=True).start()
            except OSError:
                s.close()
        deadline = time.time() + 30
        conn = None
        while conn is None:
            for ip in ips:
                try:
                    conn = socket.create_connection((ip, rport), timeout=2)
                    break
                except OSError:
                    conn = None
            if conn is None:
                if time.time() > deadline:
                    err("%s: Test NCCL failure common.cu:0 'remote process exited or there was a network error / bootstrap rendezvous at %s:%d unreachable'" % (HOST, ips[0], rport))
                    sys.exit(3)
                time.sleep(0.05)
        conn.settimeout(None)
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.bind(("0.0.0.0", 0))
        lst.listen(4)
        nets = [n for n in ipv4_nets() if n[0] != "lo"]
        nets.sort(key=lambda n: 0 if (ifspec and hca_list_match(ifspec, n[0])) else 1)
        send_msg(conn, {"rank": rank, "line": device_line, "host": HOST, "nets": nets,
                        "port": lst.getsockname()[1], "transport": transport})
        self.table = Lines(conn).get()["table"]
        self.boot = conn
        nxt = self.table[(rank + 1) % size]
        target = nxt["nets"][0][1] if nxt["nets"] else "127.0.0.1"
        for _if, ip, plen in nxt["nets"]:
            if any(same_subnet(ip, mine, min(plen, mplen)) for _m, mine, mplen in nets):
                target = ip
                break
        self.to_next = socket.create_connection((target, nxt["port"]), timeout=30)
        self.from_prev, _ = lst.accept()
        lst.close()
        self.ip = self.to_next.getsockname()[0]
        self.rx_ip = self.from_prev.getsockname()[0]
        for s in (self.to_next, self.from_prev):
            s.settimeout(None)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.jobs = queue.Queue()
        self.done = queue.Queue()
        self.sendbuf = memoryview(bytearray(CHUNK))
        threading.Thread(target=self._sender, daemon=True).start()
        self.recvbuf = memoryview(bytearray(CHUNK))

    def _serve(self, lsock):
        conns = []
        regs = []
        while len(regs) < self.size:
            c, _ = lsock.accept()
            regs.append(Lines(c).get())
            conns.append(c)
        table = sorted(regs, key=lambda r: r["rank"])
        for c in conns:
            send_msg(c, {"table": table})
        lsock.close()

    def _sender(self):
        while True:
            n = self.jobs.get()
            left = n
            while left > 0:
                left -= self.to_next.send(self.sendbuf[: min(CHUNK, left)])
            self.done.put(n)

    def step(self, nbytes):
        """Send nbytes to the next rank while receiving nbytes from the previous one."""
        if self.size == 1 or nbytes == 0:
            return
        self.jobs.put(nbytes)
        left = nbytes
        while left > 0:
            got = self.from_prev.recv_into(self.recvbuf[: min(CHUNK, left)])
            if got == 0:
                raise ConnectionError("ring peer closed")
            left -= got
        self.done.get()

    def close(self):
        if self.size == 1:
            return
        # A last tiny step doubles as a barrier before the sockets go away.
        self.step(1)
        for s in (self.to_next, self.from_prev, self.boot):
            try:
                s.close()
            except OSError:
                pass


def float_str(value, width):
    power = 0
    val = 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    if width >= 7:
        return "%*.1e" % (width, value)
    return "%*.0e" % (width, value)


def world():
    """(rank, size) as MPI_Init would see them: mpirun's environment (OMPI_COMM_WORLD_*), or
    under `srun --mpi=pmix` Slurm's PMIx server (which sets PMIX_RANK and SLURM_* but no
    OMPI_COMM_WORLD_*); otherwise a singleton, like an MPI program started without a launcher
    or with `srun --mpi=none`."""
    env = os.environ
    if "OMPI_COMM_WORLD_SIZE" in env:
        return int(env.get("OMPI_COMM_WORLD_RANK", "0")), int(env["OMPI_COMM_WORLD_SIZE"])
    if "PMIX_RANK" in env and "SLURM_JOB_ID" in env:
        size = env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS") or "1"
        return int(env["PMIX_RANK"]), int(size)
    if "SLURM_STEP_ID" in env and "SLURM_JOB_ID" in env:
        # Direct-launched by srun without PMIx (--mpi=none, or pmi2): Debian's Open MPI 4.1.4
        # refuses to run as a singleton there, with exactly this text, and exits 1.
        err("[%s:%d] OPAL ERROR: Unreachable in file ext3x_client.c at line 112" % (HOST, os.getpid()))
        err(OMPI_NO_PMI)
        err("[%s:%d] Local abort before MPI_INIT completed completed successfully, but am not able "
            "to aggregate error messages, and not able to guarantee that all other processes were "
            "killed!" % (HOST, os.getpid()))
        sys.exit(1)
    return 0, 1


OMPI_NO_PMI = """--------------------------------------------------------------------------
The application appears to have been direct launched using "srun",
but OMPI was not built with SLURM's PMI support and therefore cannot
execute. There are several options for building PMI support under
SLURM, depending upon the SLURM version you are using:

  version 16.05 or later: you can use SLURM's PMIx support. This
  requires that you configure and build SLURM --with-pmix.

  Versions earlier than 16.05: you must use either SLURM's PMI-1 or
  PMI-2 support. SLURM builds PMI-1 by default, or you can manually
  install PMI-2. You must then build Open MPI using --with-pmi pointing
  to the SLURM PMI library location.

Please configure as appropriate and try again.
--------------------------------------------------------------------------
*** An error occurred in MPI_Init
*** on a NULL communicator
*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,
***    and potentially your MPI job)"""


def first_node(nodelist):
    """The first host of a Slurm host list ("a,b", "spark-[1-3,5]", "n[01-02]x,m")."""
    depth, item = 0, ""
    for c in nodelist:
        if c == "," and depth == 0:
            break
        depth += {"[": 1, "]": -1}.get(c, 0)
        item += c
    if "[" not in item:
        return item
    prefix, _, rest = item.partition("[")
    ranges, _, suffix = rest.partition("]")
    return prefix + ranges.split(",")[0].split("-")[0] + suffix


def rendezvous():
    """The bootstrap address(es) and port every rank meets at: mpirun's (the addresses in
    OMPI_MCA_orte_hnp_uri, port from the job id) or, under srun, the first node of the step
    (rank 0 runs there), resolved through the host's /etc/hosts."""
    env = os.environ
    if "OMPI_MCA_orte_hnp_uri" not in env and "SLURM_JOB_ID" in env:
        first = first_node(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", ""))
        try:
            ips = [socket.gethostbyname(first)]
        except OSError:
            err("%s: Test NCCL failure common.cu:0 'unhandled system error (run with NCCL_DEBUG=INFO for details) / cannot resolve first node %r'" % (HOST, first))
            sys.exit(3)
        step = int(env.get("SLURM_STEP_ID", "0") or "0")
        return ips, 10000 + (int(env["SLURM_JOB_ID"]) * 7 + step) % 20000
    hnp = env.get("OMPI_MCA_orte_hnp_uri", "")
    jobid = env.get("OMPI_MCA_ess_base_jobid", "1")
    for part in hnp.split(";"):
        if part.startswith("tcp://"):
            addr = part[len("tcp://"):]
            host_part, _, port_part = addr.rpartition(":")
            ips = [x for x in host_part.split(",") if x]
            if ips:
                return ips, 10000 + (int("".join(c for c in jobid if c.isdigit()) or "1") % 20000)
    err("%s: Test NCCL failure common.cu:0 'unhandled system error (run with NCCL_DEBUG=INFO for details) / no launcher address (OMPI_MCA_orte_hnp_uri)'" % HOST)
    sys.exit(3)


def nccl_main(prog):
    import json
    import random
    import threading
    a = nccl_parse(prog, sys.argv[1:])
    rank, size = world()
    pid = os.getpid()
    tid = threading.get_native_id()
    pre = "%s:%d:%d [0] NCCL INFO " % (HOST, pid, tid)

    if a.ngpus * a.nthreads > 1:
        err("Invalid number of GPUs: %d requested but only 1 were found." % (a.ngpus * a.nthreads))
        err("Please check the number of processes and GPUs per process.")
        err(" .. %s pid %d: Test failure common.cu:1137" % (HOST, pid))
        return 2

    # Transport decision, per rank, from this host's sysfs and the NCCL_* environment.
    env = os.environ
    hca = env.get("NCCL_IB_HCA", "")
    gid_env = env.get("NCCL_IB_GID_INDEX")
    ib_devs = [d for d in devices() if hca_list_match(hca, d) and dev_active(d)]
    if gid_env is not None:
        try:
            gi = int(gid_env)
            ib_devs = [d for d in ib_devs if gid_usable_v2(d, gi)]
        except ValueError:
            ib_devs = []
    use_ib = env.get("NCCL_NET_PLUGIN") == "none" and bool(ib_devs)
    ifspec = env.get("NCCL_SOCKET_IFNAME", "")
    addrs = [(n, ip) for n, ip in ipv4_addrs() if n != "lo" and hca_list_match(ifspec, n)]
    if not addrs:
        addrs = [(n, ip) for n, ip in ipv4_addrs() if n != "lo"]
    oob = "%s:%s<0>" % addrs[0] if addrs else "lo:127.0.0.1<0>"

    device_line = "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % (
        rank, 0, pid, HOST, 0, 0x000F, 0x01, 0x00, "NVIDIA GB10")
    sizes = []
    s = a.minbytes
    while s <= a.maxbytes:
        sizes.append(s)
        if a.stepfactor > 1:
            s *= a.stepfactor
        else:
            s += max(a.stepbytes, 1)
        if a.maxbytes == 0:
            break
    if rank == 0:
        out("# nccl-tests version 2.19.6 nccl-headers=22907 nccl-library=22907")
        out("# Collective test starting: %s" % prog)
        step = a.stepfactor if a.stepfactor > 1 else a.stepbytes
        out("# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d unalign: %d"
            % (a.nthreads, a.ngpus, a.minbytes, a.maxbytes, step, "factor" if a.stepfactor > 1 else "bytes",
               a.warmup, a.iters, a.agg, a.check, a.graph, a.unalign))
        if a.blocking == 1:
            out("# Blocking Enabled: wait for completion and barrier after each collective ")
        elif a.blocking > 1:
            out("# Blocking Enabled: wait for completion after each collective (no barrier) ")
        out("#")
        out("# Using devices")

    ring = Ring(rank, size, device_line, "IB" if use_ib else "Socket", ifspec)
    if rank == 0:
        for entry in ring.table:
            out(entry["line"])

    ring_ip = ring.ip or (addrs[0][1] if addrs else "127.0.0.1")
    boot_if = next((n for n, ip in ipv4_addrs() if ip == ring_ip), addrs[0][0] if addrs else "lo")
    info = [
        "Bootstrap: Using %s:%s<0>" % (boot_if, ring_ip),
        "cudaDriverVersion 13000",
    ]
    if rank == 0:
        info.append("NCCL version 2.29.7+cuda13.0")
    for key in sorted(k for k in env if k.startswith("NCCL_") and not k.startswith("NCCL_DEBUG")):
        info.append("%s set by environment to %s." % (key, env[key]))
    # NCCL needs one network for the whole communicator: IB only if every rank found a device.
    my_ib = use_ib
    use_ib = all(entry.get("transport", "IB" if my_ib else "Socket") == "IB" for entry in ring.table)
    if my_ib:
        devs_txt = " ".join("[%d]%s:1/RoCE" % (i, d) for i, d in enumerate(ib_devs))
        info.append("NET/IB : Using %s [RO]; OOB %s" % (devs_txt, oob))
    else:
        info.append("NET/IB : No device found.")
    if use_ib:
        info.append("Using network IB")
        via = "NET/IB/0"
    else:
        info.append("NET/Socket : Using [0]%s" % oob)
        info.append("Using network Socket")
        via = "NET/Socket/0"
    comm = "0x%x" % random.randint(0x5500000000, 0x55FFFFFFFF)
    comm_id = "0x%016x" % random.getrandbits(64)
    info.append("ncclCommInitRank comm %s rank %d nranks %d cudaDev 0 nvmlDev 0 busId f01000 commId %s - Init START" % (comm, rank, size, comm_id))
    if size > 1:
        order = "".join(" %4d" % r for r in range(size))
        info.append("Channel 00/02 :%s" % order)
        info.append("Channel 01/02 :%s" % order)
        prev, nxt = (rank - 1) % size, (rank + 1) % size
        for ch in (0, 1):
            info.append("Channel %02d/0 : %d[0] -> %d[0] [receive] via %s" % (ch, prev, rank, via))
        for ch in (0, 1):
            info.append("Channel %02d/0 : %d[0] -> %d[0] [send] via %s" % (ch, rank, nxt, via))
        info.append("Connected all rings, use ring PXN 0 GDR 0")
    info.append("comm %s rank %d nranks %d cudaDev 0 nvmlDev 0 busId f01000 commId %s - Init COMPLETE" % (comm, rank, size, comm_id))
    for line in info:
        out(pre + line)

    coll = prog.replace("_perf", "")
    redop = {"all_reduce": a.op, "sendrecv": a.op}.get(coll, "none")
    n = size
    rows = []
    busbws = []
    moved = 0
    for cycle in range(max(a.cycles, 1)):
        for nbytes in sizes:
            count = nbytes // a.word
            if coll == "all_gather":
                per_rank = count // n
                shown_bytes = per_rank * n * a.word
                shown_count = per_rank
                wire = (n - 1) * per_rank * a.word
                factor = (n - 1) / n
            elif coll == "all_reduce":
                shown_bytes, shown_count = count * a.word, count
                # ring all-reduce: reduce-scatter + all-gather, 2(n-1)/n of the data each way
                wire = (2 * (n - 1) * shown_bytes) // n if n > 1 else 0
                factor = 2 * (n - 1) / n
            else:  # sendrecv and anything else: one buffer to the next rank
                shown_bytes, shown_count = count * a.word, count
                wire = shown_bytes if n > 1 else 0
                factor = 1.0
            halves = []
            for _ in (0, 1):  # out-of-place, in-place
                for _w in range(a.warmup):
                    ring.step(wire)
                t0 = time.perf_counter()
                for _i in range(a.iters * max(a.agg, 1)):
                    ring.step(wire)
                sec = (time.perf_counter() - t0) / max(a.iters * max(a.agg, 1), 1)
                moved += wire * (a.warmup + a.iters * max(a.agg, 1))
                algbw = shown_bytes / 1e9 / sec if sec > 0 else 0.0
                busbw = algbw * factor
                busbws.append(busbw)
                halves.append((sec * 1e6, algbw, busbw))
            rows.append((shown_bytes, shown_count, halves))
            if rank == 0:
                line = "%12d  %12d  %8s  %6s  %6s" % (shown_bytes, shown_count, a.dtype, redop, "%6i" % -1)
                for t_us, algbw, busbw in halves:
                    if a.check:
                        line += "  %7s  %6s  %6s  %6g" % (float_str(t_us, 7), float_str(algbw, 6), float_str(busbw, 6), 0)
                    else:
                        line += "  %7s  %6s  %6s    N/A" % (float_str(t_us, 7), float_str(algbw, 6), float_str(busbw, 6))
                if len(rows) == 1:
                    out("#")
                    out("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""))
                    out("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s" % (
                        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                        "time", "algbw", "busbw", "#wrong", ""))
                    out("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s" % (
                        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ""))
                out(line)
    ring.close()
    if use_ib:
        # Bytes go out of the device behind the interface facing the next rank, and come in
        # on the one facing the previous rank (the same device on a pair).
        def dev_for(ip):
            ifname = next((n for n, a_ip in ipv4_addrs() if a_ip == ip), None)
            return next((d for d in ib_devs if dev_netdev(d) == ifname), ib_devs[0])
        tx_dev, rx_dev = dev_for(ring.ip), dev_for(ring.rx_ip)
        if tx_dev == rx_dev:
            bump_counters(tx_dev, moved, moved)
        else:
            bump_counters(tx_dev, moved, 0)
            bump_counters(rx_dev, 0, moved)
    if rank == 0:
        avg = sum(busbws) / len(busbws) if busbws else 0.0
        out("# %-20s : %d %s" % ("Out of bounds values", 0, "OK"))
        min_bw = env.get("NCCL_TESTS_MIN_BW")
        verdict = ""
        if min_bw:
            verdict = "OK" if avg >= float(min_bw) * 0.9 else "FAILED"
        out("# %-20s : %g %s" % ("Avg bus bandwidth", avg, verdict))
        out("#")
        out("# Collective test concluded: %s" % prog)
        out("")
        out("#")
        if a.json:
            try:
                with open(a.json, "x") as f:
                    json.dump({"version": 2, "results": [
                        {"size": b, "count": c, "type": a.dtype, "redop": redop, "root": "    -1",
                         "out_of_place": {"time": h[0][0], "alg_bw": h[0][1], "bus_bw": h[0][2], "nwrong": 0},
                         "in_place": {"time": h[1][0], "alg_bw": h[1][1], "bus_bw": h[1][2], "nwrong": 0}}
                        for b, c, h in rows],
                        "out_of_bounds": {"count": 0, "okay": "true"},
                        "average_bus_bandwidth": {"bandwidth": avg, "okay": "unchecked"}}, f)
            except OSError:
                pass
        if min_bw and verdict == "FAILED":
            return 1
    return 0


PROG = os.path.basename(sys.argv[0])


def delays():
    """(start_ms, exit_ms): the environment's FABRICPLAN_LAB_TOOL_START_MS /
    FABRICPLAN_LAB_TOOL_EXIT_MS when set, else the lab's <bin dir>/.delays ("START EXIT")."""
    start = exit_ = 0
    text = read(os.path.join(BIN_DIR, ".delays"))
    if text:
        parts = text.split()
        if len(parts) == 2:
            start, exit_ = int(parts[0]), int(parts[1])
    start = int(os.environ.get("FABRICPLAN_LAB_TOOL_START_MS", start))
    exit_ = int(os.environ.get("FABRICPLAN_LAB_TOOL_EXIT_MS", exit_))
    return start, exit_


EXITING = False


def linger(exit_ms):
    """The exit delay: a heavier tool's teardown, once."""
    global EXITING
    if EXITING:
        return
    EXITING = True
    if exit_ms > 0:
        time.sleep(exit_ms / 1000.0)


def main():
    """Waits the lab's start-up delay, runs the tool, waits the exit delay (also on SIGTERM,
    as a tool tearing down would; a SIGTERM during the exit delay does not restart it)."""
    start_ms, exit_ms = delays()
    if exit_ms > 0:
        import signal

        def on_term(_sig, _frame):
            if EXITING:
                return
            linger(exit_ms)
            os._exit(143)

        signal.signal(signal.SIGTERM, on_term)
    if start_ms > 0:
        time.sleep(start_ms / 1000.0)
    rc = run_tool()
    linger(exit_ms)
    return rc


def run_tool():
    try:
        if PROG == "ib_write_bw":
            return bw_main(perf_parse(PROG, sys.argv[1:], lat=False))
        if PROG == "ib_write_lat":
            return lat_main(perf_parse(PROG, sys.argv[1:], lat=True))
        if PROG in ("all_reduce_perf", "all_gather_perf", "sendrecv_perf"):
            return nccl_main(PROG)
    except ConnectionError:
        err(" Failed to exchange data between server and clients")
        return 1
    except KeyboardInterrupt:
        return 130
    err("%s: unknown stand-in name" % PROG)
    return 2


if __name__ == "__main__":
    sys.exit(main())
