"""`nox -s slurm`: `cudaenv doctor --json --output` through a real scheduler on this machine, then `fleet summarize`.

A single-node Slurm from Debian's packages (slurm-wlm, munge; installed with apt-get when missing and running as
root), started here: munged, slurmctld and slurmd in the foreground as this process's children, on a slurm.conf
written into a temporary folder (SlurmUser=root, ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, the node
and the partition named after `hostname -s`). Then ``srun --nodes=1 --ntasks-per-node=1 cudaenv doctor --json
--output reports/`` and ``cudaenv fleet summarize reports/ --json``, checked. Every daemon is stopped by its pid
when done, also on failure. Usage: python tests/slurm_session/run.py CUDAENV (the cudaenv to run).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PACKAGES = ("slurm-wlm", "munge")


def sh(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def ensure_packages():
    if all(shutil.which(p) for p in ("slurmctld", "slurmd", "srun", "munged")):
        return
    if os.geteuid() != 0:
        raise SystemExit("slurm session: slurm-wlm and munge are not installed and this is not root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = sh(["apt-get", "install", "-y", "-q", *PACKAGES], timeout=900, env=env)
    if r.returncode != 0:
        raise SystemExit("slurm session: apt-get install failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])


CONF = """ClusterName=cudaenvtest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName={host} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(cudaenv):
    ensure_packages()
    started = time.monotonic()
    host = sh(["hostname", "-s"]).stdout.strip()
    work = tempfile.mkdtemp(prefix="cudaenv-slurm-")
    for sub in ("state", "spool", "reports", "munge"):
        os.makedirs(os.path.join(work, sub))
    conf = os.path.join(work, "slurm.conf")
    with open(conf, "w") as fh:
        fh.write(CONF.format(host=host, work=work, cpus=os.cpu_count() or 1, ctld_port=free_port(), d_port=free_port()))
    env = dict(os.environ, SLURM_CONF=conf)
    procs = []
    try:
        if not os.path.exists("/etc/munge/munge.key"):
            sh(["mungekey", "--create"]) if shutil.which("mungekey") else None
        os.makedirs("/run/munge", exist_ok=True)
        procs.append(subprocess.Popen(["munged", "--force", "--foreground"], stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(work, "munged.log"), "w")))
        time.sleep(1)
        procs.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", conf], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(["slurmd", "-D", "-f", conf], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 120
        state = ""
        while time.monotonic() < deadline:
            for p in procs:
                if p.poll() is not None:
                    raise SystemExit("slurm session: %s exited with %s\n%s" % (p.args[0], p.returncode, logs(work)))
            state = sh(["sinfo", "-h", "-n", host, "-o", "%t"], env=env, timeout=20).stdout.strip()
            if state in ("idle", "mix", "alloc"):
                break
            time.sleep(1)
        else:
            raise SystemExit("slurm session: the node never became idle (%r)\n%s" % (state, logs(work)))
        ready = time.monotonic() - started
        reports = os.path.join(work, "reports") + "/"
        run = sh(["srun", "--nodes=1", "--ntasks-per-node=1", "--time=5", cudaenv, "doctor", "--json", "--quick",
                  "--output", reports], env=env, timeout=300, cwd=work)
        if run.returncode not in (0, 1):  # 1: the doctor found an error on this machine (no GPU)
            raise SystemExit("slurm session: srun failed (%s)\n%s%s\n%s" % (run.returncode, run.stdout, run.stderr, logs(work)))
        names = os.listdir(reports)
        assert names == [host + ".json"] or names == [socket.gethostname() + ".json"], names
        summary = sh([cudaenv, "fleet", "summarize", reports, "--json"], env=env, timeout=120)
        data = json.loads(summary.stdout)
        assert data["nodes_read"] == 1 and not data["unreadable"] and data["deviating"] == 0, data
        assert summary.returncode == (1 if data["with_errors"] else 0), summary
        print("slurm session: ok; slurm ready after %.1f s, whole session %.1f s; report %s; summary exit %d"
              % (ready, time.monotonic() - started, names[0], summary.returncode))
        print(sh([cudaenv, "fleet", "summarize", reports], env=env).stdout)
    finally:
        for p in reversed(procs):  # by pid, also on failure
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        shutil.rmtree(work, ignore_errors=True)


def logs(work):
    out = []
    for name in ("slurmctld.log", "slurmd.log", "munged.log"):
        path = os.path.join(work, name)
        if os.path.exists(path):
            out.append("--- %s\n%s" % (name, open(path, errors="replace").read()[-3000:]))
    return "\n".join(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else shutil.which("cudaenv"))
