"""A real Slurm for end-to-end tests: munged, slurmctld and one slurmd per
node, no systemd, all state in a temporary folder, every daemon inside the
network namespaces of a hosts.Hosts (emulated hosts), so that its ports cannot
collide with anything else on the machine (another run of a test, a Slurm of
the machine's own) and clean-up is complete: killing what runs in those
namespaces ends every daemon, job, step and rank they started.

    with Cluster(nodes=3, cpus=2, gpus=2) as c:
        job = c.submit(["jobs/slurm/study.sh", ...], cwd=folder)     # or c.run([...]) for any client command
        state, exit_code = c.wait(job)

Layout (hosts.py's, names carry this process's pid):
  gsh<pid>-0   the "login node" and controller: the bridge br0 with <net>.254,
               munged and slurmctld; every client command (`run`) runs here
  gsh<pid>-i   node i (1..N): slurmd, hostname gsh<pid>-i, address <net>.i; its own mount
               namespace, where the spool folder is private (mpi/pmix uses one path on every node)
A one-node cluster is the same with N = 1: a local Slurm whose ports nothing else sees.
GPUs (`gpus` > 0): GRES backed by placeholder character devices (1,3: /dev/null), so jobs get
CUDA_VISIBLE_DEVICES as on a GPU node; nothing can run on them.

Clean-up (leaving the context, also on failure, KeyboardInterrupt and SIGTERM) is hosts.Hosts's:
every process in the namespaces is killed, the namespaces deleted (the bridge and veths go with
them) and the temporary folder removed; what a killed earlier run left is reaped on entry.

Needs root, `ip`, `unshare`, `nsenter`, munged and the Slurm daemons and clients; `unavailable()`
says what is missing. Setting up the namespaces raises hosts.Unavailable where the machine does
not allow it; daemons that do not come up raise RuntimeError with the end of their logs.
"""
import os
import shutil
import socket
import subprocess
import time

import hosts
from hosts import Unavailable  # noqa: F401 - re-exported for the tests

# Tool -> Debian package (scripts/install-deps.sh installs them).
TOOLS = {
    "nsenter": "util-linux",
    "munged": "munge",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "scontrol": "slurm-client",
    "sinfo": "slurm-client",
    "srun": "slurm-client",
}

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE"}


def unavailable():
    """Why a test Slurm cannot run here, or None."""
    why = hosts.unavailable()
    if why:
        return why
    for tool, pkg in TOOLS.items():
        if shutil.which(tool) is None and not os.path.exists(os.path.join("/usr/sbin", tool)):
            return f"`{tool}` not found (Debian package {pkg})"
    return None


def _netns_path(ns):
    for base in ("/run/netns", "/var/run/netns"):
        p = os.path.join(base, ns)
        if os.path.exists(p):
            return p
    raise RuntimeError(f"network namespace {ns} has no /run/netns entry")


class Cluster:
    def __init__(self, nodes=1, cpus=2, gpus=0, memory_mb=2000):
        """`nodes` nodes, each declaring `cpus` CPUs (more than the machine has is fine) and `gpus` placeholder
        GPUs."""
        self.hosts = hosts.Hosts(nodes, slots=cpus)
        self.nodes = nodes
        self.cpus = cpus
        self.gpus = gpus
        self.memory_mb = memory_mb
        self.login = self.hosts.switch
        self.node_names = list(self.hosts.hostnames)
        self.controller_address = f"{self.hosts.net}.254"
        self.dir = None  # state: etc/ (slurm.conf, munge key), run/, log/, ctld/, spool/, dev/
        self.conf = None

    # -- set up and tear down ---------------------------------------------------------------------------------

    def __enter__(self):
        why = unavailable()
        if why:
            raise Unavailable(why)
        self.hosts.__enter__()  # SIGTERM handler, stale reaping, the namespaces
        try:
            self._up()
        except BaseException:
            self.hosts.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def down(self):
        """Kills every daemon, job and rank (all live in the namespaces), deletes the namespaces and the state.
        Idempotent."""
        self.hosts.__exit__(None, None, None)
        self.dir = None

    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _daemon(self, ns, argv, name):
        """Starts a daemon that forks into the background, in network namespace `ns`; its own output (before it
        detaches) goes to log/<name>.start."""
        with open(self._path("log", name + ".start"), "w") as out:
            p = subprocess.run(["nsenter", "--net=" + _netns_path(ns), *argv], stdin=subprocess.DEVNULL,
                               stdout=out, stderr=subprocess.STDOUT, env=self._daemon_env(), timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"{name} did not start (exit {p.returncode}):\n{self.logs()}")

    def _daemon_env(self):
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin") + ":/usr/sbin:/sbin", "LANG": "C"}

    def _up(self):
        self.dir = os.path.join(self.hosts.dir, "slurm")
        for sub in ("etc", "run", "log", "ctld", "spool", "dev"):
            os.makedirs(self._path(sub), exist_ok=True)
        os.chmod(self._path("run"), 0o700)
        key = self._path("etc", "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(os.urandom(1024))
        for i in range(self.gpus):
            os.mknod(self._path("dev", f"nvidia{i}"), 0o666 | 0o020000, os.makedev(1, 3))
        # The login node's own address: slurmctld listens there; its clients reach it over lo.
        hosts._sh(["ip", "-n", self.login, "addr", "add", f"{self.controller_address}/24", "dev", "br0"])
        hosts._sh(["ip", "-n", self.login, "link", "set", "lo", "up"])
        self.conf = self._path("etc", "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(self._slurm_conf())
        if self.gpus:
            with open(self._path("etc", "gres.conf"), "w") as f:
                f.write("AutoDetect=off\n")
                for name in self.node_names:
                    f.write(f"NodeName={name} Name=gpu File={self._path('dev')}/nvidia[0-{self.gpus - 1}]\n")
        # mpi/pmix puts its folders under /tmp by default: one path for every "node" -> EEXIST.
        with open(self._path("etc", "mpi.conf"), "w") as f:
            f.write(f"PMIxCliTmpDirBase={self._path('spool', 'cur')}\n")

        sock = self._path("run", "munge.sock")
        self._daemon(self.login, ["munged", "--force", f"--socket={sock}", f"--key-file={key}",
                                  f"--pid-file={self._path('run', 'munged.pid')}",
                                  f"--log-file={self._path('log', 'munged.log')}",
                                  f"--seed-file={self._path('run', 'munged.seed')}"], "munged")
        self._daemon(self.login, ["slurmctld", "-f", self.conf, "-i"], "slurmctld")
        os.makedirs(self._path("spool", "cur"), exist_ok=True)
        for name in self.node_names:
            spool = self._path("spool", name)
            os.makedirs(spool, exist_ok=True)
            # nsenter, not `ip netns exec` (which remounts /sys: slurmd then finds no cgroup file system).
            # A mount namespace of its own: the node's spool folder bound over spool/cur.
            self._daemon(name, ["unshare", "--uts", "--mount", "sh", "-c",
                                'hostname "$0" && mount --bind "$1" "$2" && exec slurmd -f "$3" -N "$0"',
                                name, spool, self._path("spool", "cur"), self.conf], "slurmd-" + name)
        self._wait_idle()

    def _slurm_conf(self):
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        nodes = "".join(
            f"NodeName={name} NodeAddr={addr} NodeHostname={name} CPUs={self.cpus} Boards=1 SocketsPerBoard=1 "
            f"CoresPerSocket={self.cpus} ThreadsPerCore=1 RealMemory={self.memory_mb}{gres} State=UNKNOWN\n"
            for name, addr in zip(self.node_names, self.hosts.addresses))
        d = self._path
        return (
            f"ClusterName=gs{self.hosts.pid}\n"
            f"SlurmctldHost={socket.gethostname().split('.')[0]}({self.controller_address})\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            "AuthType=auth/munge\nCredType=cred/munge\n"
            f"AuthInfo=socket={d('run', 'munge.sock')}\n"
            f"StateSaveLocation={d('ctld')}\n"
            f"SlurmdSpoolDir={d('spool', 'cur')}\n"
            f"SlurmctldPidFile={d('run', 'slurmctld.pid')}\n"
            f"SlurmdPidFile={d('run', 'slurmd-%n.pid')}\n"
            f"SlurmctldLogFile={d('log', 'slurmctld.log')}\n"
            f"SlurmdLogFile={d('log', 'slurmd-%n.log')}\n"
            "SlurmctldPort=6817\nSlurmdPort=6818\n"  # in namespaces of their own: nothing else listens there
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nSchedulerType=sched/backfill\n"
            # No default MPI plugin: job scripts must ask for pmix themselves, as on many real clusters.
            "MpiDefault=none\n"
            "MailProg=/bin/true\nEnforcePartLimits=ALL\nReturnToService=2\n"
            "SlurmdParameters=config_overrides\n"  # more CPUs than the machine has
            + ("GresTypes=gpu\n" if self.gpus else "")
            + nodes
            + "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")

    def _wait_idle(self, timeout=30):
        deadline = time.time() + timeout
        out = ""
        while time.time() < deadline:
            p = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15)
            out = p.stdout + p.stderr
            states = dict(line.split() for line in p.stdout.splitlines() if len(line.split()) == 2)
            if p.returncode == 0 and len(states) == self.nodes and set(states.values()) == {"idle"}:
                return
            time.sleep(0.25)
        raise RuntimeError(f"the Slurm nodes are not idle after {timeout} s: {out.strip()}\n{self.logs()}")

    def logs(self, lines=15):
        """The end of every daemon log (for failure messages)."""
        text = []
        folder = self._path("log") if self.dir else None
        if folder and os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                text.append(f"--- {name}\n" + "\n".join(tail))
        return "\n".join(text)

    # -- use --------------------------------------------------------------------------------------------------

    def env(self, **extra):
        """A plain client environment (what a user's login shell has, plus SLURM_CONF); sbatch passes it on to
        the job. `extra` adds to it; a value None removes a variable."""
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
             "LANG": "C.UTF-8", "SLURM_CONF": self.conf}
        for k, v in extra.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def run(self, argv, cwd=None, env=None, timeout=60):
        """Runs a client command (sbatch, scontrol, a script that calls them) on the login node."""
        return subprocess.run(["nsenter", "--net=" + _netns_path(self.login), *argv], capture_output=True,
                              text=True, cwd=cwd, env=env if env is not None else self.env(), timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def submit(self, argv, cwd=None, env=None):
        """sbatch ARGV...; returns the job id (raises with sbatch's message when it refuses)."""
        p = self.run(["sbatch", "--parsable", *argv], cwd=cwd, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"sbatch {' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
        return p.stdout.strip().split(";")[0]

    def job(self, job_id):
        """scontrol's fields of a job as a dict (empty when unknown, or when the controller, busy on a loaded
        machine, did not answer within 15 s: the caller's deadline decides)."""
        try:
            p = self.run(["scontrol", "show", "job", "-o", str(job_id)], timeout=15)
        except subprocess.TimeoutExpired:
            return {}
        fields = {}
        if p.returncode == 0:
            for word in p.stdout.split():
                k, sep, v = word.partition("=")
                if sep and k not in fields:
                    fields[k] = v
        return fields

    def wait(self, job_id, timeout=120):
        """Polls every 0.25 s until the job ended; returns (state, exit code "N:S"). Cancels it and raises
        TimeoutError after `timeout` s."""
        deadline = time.time() + timeout
        while True:
            f = self.job(job_id)
            state = f.get("JobState", "")
            if state in TERMINAL:
                return state, f.get("ExitCode", "")
            if time.time() > deadline:
                self.run(["scancel", str(job_id)], timeout=15)
                raise TimeoutError(f"job {job_id} still {state or 'unknown'} after {timeout} s:\n{self.logs()}")
            time.sleep(0.25)

    def leftovers(self):
        """PIDs of processes still in the nodes' namespaces other than the slurmds (after the jobs ended:
        should be none)."""
        slurmd = set()
        for name in self.node_names:
            try:
                with open(self._path("run", f"slurmd-{name}.pid")) as f:
                    slurmd.add(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return [pid for pid in self.hosts.leftovers() if pid not in slurmd]
