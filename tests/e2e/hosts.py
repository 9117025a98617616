"""Several emulated "hosts" on one machine for end-to-end tests: one network
namespace per host, joined by a bridge, and an rsh agent that Open MPI uses
to start its daemons in them, each with its own hostname (`unshare --uts`),
so MPI sees separate nodes that talk over TCP.

    with Hosts(2) as hosts:
        p = hosts.mpirun(4, [GPUSCALE, "run", cfg, "-o", out], timeout=120)

    with Hosts(4, slots=2, rate="400mbit") as hosts:   # every link limited to 400 Mbit/s each way
        p = hosts.mpirun(4, argv, nodes=2)             # 2 ranks on each of hosts 1 and 2

Layout (names carry this process's pid, so concurrent runs do not collide):
  gsh<pid>-0        the "switch": bridge br0 and the host-side veth ends h1..hN
  gsh<pid>-<i>      host i (1..N): eth0 = 10.201.<x>.<i>/24, lo; hostname gsh<pid>-<i>
Nothing is added to the machine's own network namespace, and the only
addresses used are those of these namespaces, so no traffic can leave them.
Deleting the namespaces deletes the bridge and the veth pairs with them.

Clean-up always runs on leaving the context (test failure, timeout,
KeyboardInterrupt, SIGTERM): processes still inside the namespaces are
killed, then the namespaces deleted, and the temporary folder (agent,
hostfile, Open MPI's session folders) removed. What an earlier run left
because its process was killed outright (e.g. by ctest's TIMEOUT, which
gives no chance to clean up) is removed on entry.

With `rate`, every host's link is limited to that rate in both directions
with a tc tbf qdisc: on eth0 in the host (what it sends) and on its veth end
hN in the switch (what it receives), so a host's link is the bottleneck of
what crosses it, as a full-duplex NIC into a non-blocking switch. The default
burst (64 KiB) and queue (50 ms) give the nominal rate to large transfers: a
single TCP stream reaches 96% of it (the rest is TCP/IP headers), 48 MB/s of
payload at 400 Mbit/s from 1 MiB up; a transfer that fits in the burst
(64 KiB) after the link was idle passes at the unlimited speed, one that
follows others at the rate. There is no netem in every kernel, so delay
cannot be emulated. With a rate the links carry jumbo frames (MTU 9000, as
data-centre networks do): at 1500 bytes, 4 hosts at 400 Mbit/s each way keep
this machine's 2 cores two-thirds busy in the kernel's packet path (softirq),
and the cores, not the links, set the pace; at 9000, 4% (`mtu` sets another).

Needs root, `ip` (iproute2) and `unshare` (util-linux), and `tc` (iproute2)
for a rate; `unavailable()` says why it cannot run here, `Hosts.up()` raises
`Unavailable` when setting up fails (a kernel without the tbf qdisc, say).
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import textwrap
import threading
import time
import unittest

from common import ENV, LAUNCHER, MPIEXEC  # what the ranks need: as root, one BLAS thread per rank

# Forwarded to every rank with `mpirun -x`: a real rsh/ssh agent would not
# carry the environment to another host.
FORWARD = ["OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "OPENBLAS_NUM_THREADS"]

# A permanently dead link would otherwise hang mpirun for ~8 minutes.
KEEPALIVE = ["--mca", "oob_tcp_keepalive_time", "2", "--mca", "oob_tcp_keepalive_intvl", "1",
             "--mca", "oob_tcp_keepalive_probes", "3"]

PREFIX = "gsh"
_NAME = re.compile(r"^" + PREFIX + r"(\d+)-(\d+)$")
_DIR = re.compile(r"^" + PREFIX + r"(\d+)-\w+$")  # tempfile.mkdtemp(prefix=...) of a run


class Unavailable(Exception):
    """Emulated hosts cannot be set up here (not a failure of the code under test)."""


def unavailable(tc=False):
    """Why emulated hosts cannot run here, or None. tc: whether their links are to be limited (needs `tc`)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    tools = (("ip", "iproute2"), ("unshare", "util-linux")) + ((("tc", "iproute2"),) if tc else ())
    for tool, pkg in tools:
        if shutil.which(tool) is None:
            return f"`{tool}` not found (Debian package {pkg})"
    return None


def _sh(args, check=True, timeout=30):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, args, p.stdout, p.stderr)
    return p


def _namespaces():
    p = _sh(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def _kill_inside(ns):
    """SIGKILL every process whose network namespace is `ns`; waits until none is left."""
    for _ in range(50):
        p = _sh(["ip", "netns", "pids", ns], check=False)
        pids = [int(x) for x in p.stdout.split() if x.isdigit() and int(x) != os.getpid()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _delete(ns):
    _kill_inside(ns)
    _sh(["ip", "netns", "del", ns], check=False)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def reap_stale():
    """Removes namespaces and temporary folders left by an earlier run of this module whose process is gone."""
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            _delete(ns)
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        m = _DIR.match(name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


class Hosts:
    def __init__(self, n=2, slots=2, rate=None, burst="64kb", latency="50ms", mtu=None):
        """n hosts offering `slots` slots each; `rate` (tc's units, e.g. "400mbit"; None: unlimited) limits every
        host's link both ways, with tbf's `burst` and `latency` (how long a packet may wait in the queue); `mtu`:
        the links' (default: 9000 with a rate, else the kernel's 1500)."""
        if not 1 <= n <= 200:
            raise ValueError("1..200 hosts")
        self.n = n
        self.slots = slots
        self.rate = rate
        self.burst = burst
        self.latency = latency
        self.mtu = mtu or (9000 if rate else None)
        self.pid = os.getpid()
        self.prefix = f"{PREFIX}{self.pid}-"
        self.switch = self.prefix + "0"
        self.namespaces = [self.prefix + str(i) for i in range(1, n + 1)]
        self.hostnames = list(self.namespaces)
        x = self.pid % 250 + 1
        self.net = f"10.201.{x}"
        self.subnet = f"{self.net}.0/24"
        self.addresses = [f"{self.net}.{i}" for i in range(1, n + 1)]
        self.dir = None
        self.agent = None
        self.hostfile = None
        self._made = []  # namespaces created, in order
        self._old_sigterm = None

    # -- set up -----------------------------------------------------------------------------------------------

    def up(self):
        why = unavailable(tc=self.rate is not None)
        if why:
            raise Unavailable(why)
        reap_stale()
        try:
            self._up()
        except Unavailable:
            self.down()
            raise
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            self.down()
            detail = (getattr(e, "stderr", None) or "").strip()
            raise Unavailable(f"setting up network namespaces failed: {e}" + (f": {detail}" if detail else ""))
        except BaseException:
            self.down()
            raise
        return self

    def _add_ns(self, ns):
        self._made.append(ns)  # before: a half-made one is deleted too
        _sh(["ip", "netns", "add", ns])

    def _up(self):
        self._add_ns(self.switch)
        _sh(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
        _sh(["ip", "-n", self.switch, "link", "set", "br0", "up"])
        for i, (ns, addr) in enumerate(zip(self.namespaces, self.addresses), start=1):
            self._add_ns(ns)
            _sh(["ip", "-n", self.switch, "link", "add", f"h{i}", "type", "veth", "peer", "name", "eth0", "netns", ns])
            _sh(["ip", "-n", self.switch, "link", "set", f"h{i}", "master", "br0", "up"])
            _sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
            _sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            if self.mtu:
                _sh(["ip", "-n", self.switch, "link", "set", f"h{i}", "mtu", str(self.mtu)])
                _sh(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(self.mtu)])
        if self.mtu:
            _sh(["ip", "-n", self.switch, "link", "set", "br0", "mtu", str(self.mtu)])
        if self.rate:
            for i in range(1, self.n + 1):
                try:
                    self.limit_bandwidth(i, self.rate)
                except subprocess.CalledProcessError as e:
                    raise Unavailable(f"limiting host {i}'s link with tc tbf failed: {' '.join(e.cmd)}: "
                                      f"{(e.stderr or '').strip()}")

        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        os.chmod(self.dir, 0o755)
        self.hostfile = os.path.join(self.dir, "hostfile")
        with open(self.hostfile, "w") as f:
            for addr in self.addresses:
                f.write(f"{addr} slots={self.slots}\n")
        self.agent = os.path.join(self.dir, "nsrsh")
        cases = "\n".join(f"  {addr}|{name}) i={i};;" for i, (addr, name)
                          in enumerate(zip(self.addresses, self.hostnames), start=1))
        with open(self.agent, "w") as f:
            f.write(textwrap.dedent("""\
                #!/bin/bash
                # Open MPI rsh agent: nsrsh [ssh-style options] HOST CMD...
                # runs CMD in HOST's network namespace, in its own UTS namespace with HOST's hostname.
                while [[ "$1" == -* ]]; do shift; done
                host=$1; shift
                case "$host" in
                """) + cases + textwrap.dedent(f"""
                  *) echo "nsrsh: unknown host $host" >&2; exit 255;;
                esac
                exec ip netns exec {self.prefix}$i unshare --uts sh -c "hostname {self.prefix}$i; $*"
                """))
        os.chmod(self.agent, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)

        self.wait_reachable(len(self.addresses))

    def wait_reachable(self, i, within=10):
        """Waits until host 1 reaches host i over the bridge: without ping, a TCP connect to a closed port must be
        refused (RST). Raises Unavailable after `within` seconds."""
        addr = self.addresses[i - 1]
        deadline = time.time() + within
        while True:
            p = _sh(["ip", "netns", "exec", self.namespaces[0], "timeout", "3", "bash", "-c",
                     f"exec 3<>/dev/tcp/{addr}/9"], check=False, timeout=15)
            if "refused" in p.stderr:
                return
            if time.time() > deadline:
                raise Unavailable(f"{self.namespaces[0]} cannot reach {addr} over the bridge: {p.stderr.strip()}")
            time.sleep(0.2)

    # -- tear down --------------------------------------------------------------------------------------------

    def down(self):
        """Kills what runs in the namespaces and deletes them (the bridge and veths go with them). Idempotent."""
        for ns in reversed(self._made):
            try:
                _delete(ns)
            except Exception:  # noqa: BLE001 - keep going, check below
                pass
        self._made = [ns for ns in self._made if ns in _namespaces()]
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            # SIGTERM (e.g. `kill`, or a CI runner stopping the job) unwinds through __exit__.
            self._old_sigterm = signal.signal(signal.SIGTERM, _raise_on_sigterm)
        try:
            if not self._made:
                self.up()
        except BaseException:
            self._restore_sigterm()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.down()
        finally:
            self._restore_sigterm()
        return False

    def _restore_sigterm(self):
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None

    # -- use --------------------------------------------------------------------------------------------------

    def hostfile_for(self, nodes, slots=None):
        """A hostfile of hosts 1..nodes with `slots` slots each (default: the hosts' own), written once."""
        slots = self.slots if slots is None else slots
        if nodes == self.n and slots == self.slots:
            return self.hostfile
        if not 1 <= nodes <= self.n:
            raise ValueError(f"1..{self.n} nodes")
        path = os.path.join(self.dir, f"hostfile-{nodes}x{slots}")
        if not os.path.exists(path):
            with open(path, "w") as f:
                for addr in self.addresses[:nodes]:
                    f.write(f"{addr} slots={slots}\n")
        return path

    def mpirun_args(self, np, argv, extra=(), keepalive=True, nodes=None, slots=None):
        """The command line: mpirun runs in host 1 (with host 1's hostname) and starts the others' daemons
        through the rsh agent; TCP only, on this run's subnet. keepalive=False: Open MPI's defaults, with which
        its daemons take minutes to notice a dead link. nodes, slots: only hosts 1..nodes, with `slots` slots each
        (mpirun fills a host's slots before the next: ranks 0..slots-1 on host 1, ...)."""
        hostfile = self.hostfile if nodes is None and slots is None else self.hostfile_for(nodes or self.n, slots)
        cmd = ["ip", "netns", "exec", self.namespaces[0], "unshare", "--uts", "sh", "-c",
               f'hostname {self.hostnames[0]}; exec "$0" "$@"',
               MPIEXEC, "--allow-run-as-root", "-n", str(np), "--hostfile", hostfile,
               "--mca", "plm_rsh_agent", self.agent,
               "--mca", "btl", "tcp,self",
               "--mca", "btl_tcp_if_include", self.subnet,
               "--mca", "oob_tcp_if_include", self.subnet,
               # Open MPI's session folders (named by hostname) in ours, removed with it even after a kill.
               "--mca", "orte_tmpdir_base", self.dir,
               *(KEEPALIVE if keepalive else [])]
        for name in FORWARD:
            cmd += ["-x", name]
        return cmd + list(extra) + list(argv)

    def mpirun(self, np, argv, extra=(), timeout=180, cwd=None, nodes=None, slots=None):
        """Runs `argv` on `np` ranks across the hosts (1..nodes, `slots` each: see mpirun_args); returns the
        CompletedProcess (stdout, stderr as text). On timeout mpirun is killed, leftovers in the namespaces too,
        and AssertionError raised with what mpirun printed and what each gpuscale process left was doing."""
        try:
            return subprocess.run(self.mpirun_args(np, argv, extra, nodes=nodes, slots=slots), capture_output=True,
                                  text=True,
                                  timeout=timeout, env=ENV, cwd=cwd)
        except subprocess.TimeoutExpired as e:
            left = "\n".join(self.describe(pid) for pid, name in self.processes() if name == "gpuscale")
            self.kill_all()
            printed = "".join(x.decode(errors="replace") if isinstance(x, bytes) else x
                              for x in (e.stdout, e.stderr) if x)
            raise AssertionError(f"mpirun ran past {timeout} s; it printed:\n{printed}\n"
                                 f"--- the gpuscale processes left ---\n{left or 'none'}") from None

    def kill_all(self):
        """Kills every process inside the hosts (the namespaces stay)."""
        for ns in self.namespaces:
            _kill_inside(ns)

    def limit_bandwidth(self, i, rate="200mbit"):
        """Limits host i's link (1-based) to `rate` in both directions with tc tbf, with the hosts' burst and
        latency: what host i sends (its eth0) and what it receives (its veth end in the switch). No netem in
        every kernel: delay cannot be emulated, bandwidth can."""
        for ns, dev in ((self.switch, f"h{i}"), (self.namespaces[i - 1], "eth0")):
            _sh(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                 "burst", self.burst, "latency", self.latency])

    def set_link(self, i, up):
        """Takes host i's link (1-based) down or brings it back up, as a cable pulled or plugged in (then waits until
        the host is reachable again)."""
        _sh(["ip", "-n", self.switch, "link", "set", f"h{i}", "up" if up else "down"])
        if up and i > 1:
            self.wait_reachable(i)

    def processes(self):
        """(pid, command name) of every process inside the hosts."""
        pids = self.leftovers()
        if not pids:
            return []
        p = _sh(["ps", "-o", "pid=,comm=", "-p", ",".join(map(str, pids))], check=False)
        return [(int(line.split()[0]), line.split()[1]) for line in p.stdout.splitlines() if len(line.split()) == 2]

    def describe(self, pid):
        """What a process left inside the hosts is doing: its rank, state, and (gdb where installed) every
        thread's stack; for a test's failure message."""
        lines = [f"pid {pid}:"]
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            rank = [e.decode() for e in env if e.startswith((b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK="))]
            state = [ln for ln in open(f"/proc/{pid}/status").read().splitlines() if ln.startswith("State:")]
            lines.append("  " + " ".join(rank + state))
        except OSError as e:
            return f"pid {pid}: gone ({e.strerror})"
        if shutil.which("gdb"):
            p = _sh(["timeout", "30", "gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 12"],
                    check=False, timeout=40)
            lines += ["  " + ln for ln in p.stdout.splitlines() if ln.startswith(("Thread ", "#"))]
        return "\n".join(lines)

    def leftovers(self):
        """PIDs of processes still inside the hosts (e.g. after a run: should be none)."""
        pids = []
        for ns in self.namespaces:
            p = _sh(["ip", "netns", "pids", ns], check=False)
            pids += [int(x) for x in p.stdout.split() if x.isdigit()]
        return pids


def run_tests(n, slots, use, missing=None, without_hosts=False, rate=None):
    """Runs the calling module's unittest suite on n emulated hosts (slots each; links limited to `rate`, if
    given), handing them to use(hosts) first; returns the exit code. Where they cannot be made (or `missing`
    names what else is missing) it says why and returns 77 (ctest: skipped); with `without_hosts` the tests
    that need none run anyway (those needing hosts skip themselves), and a failure among them returns 1."""
    why = unavailable(tc=rate is not None) or missing
    if not why and LAUNCHER != "openmpi":
        why = f"the hosts' ranks are started by Open MPI's mpirun (its rsh agent and MCA options); {MPIEXEC} is not it"
    h = None
    if not why:
        h = Hosts(n, slots=slots, rate=rate)
        try:
            h.up()
        except Unavailable as e:
            why, h = str(e), None
    if why:
        if not without_hosts:
            print(f"SKIP: emulated hosts unavailable: {why}")
            return 77
        print(f"SKIP (after the tests that need no hosts): emulated hosts unavailable: {why}")
        prog = unittest.main(module="__main__", verbosity=2, exit=False)
        return 77 if prog.result.wasSuccessful() else 1
    with h:
        use(h)
        prog = unittest.main(module="__main__", verbosity=2, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


def _raise_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)
