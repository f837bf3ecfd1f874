"""The timeline of `cudaenv doctor --json` against the torch import floor (issue 35), on the monotonic clock.

    python bench/timeline.py [--runs N] [--python PY] [--variant NAME=DIR ...]

Runs, interleaved N times after a warm-up round: the doctor (``PY``'s ``cudaenv doctor --json --python PY``), the
floor (``PY -c 'import os, torch; torch.cuda.is_available(); os._exit(0)'``) and the doctor's own torch child alone
(``PY -c SCRIPT dynamic``). Each runs with a ``sitecustomize`` on PYTHONPATH that writes the time of a few events
(CLOCK_MONOTONIC, the same clock in every process) to a log: the interpreter reaching site, each subprocess spawn, the
first ``import torch``, ``os._exit`` (or the child's close of its output after its answer), and the parent's first
write to stdout; the launcher adds the exec and the
exit (``os.wait4``). ``--variant NAME=DIR``: instead of the installed doctor, one doctor per variant, the cudaenv
package found in DIR (``pip install --no-deps --target DIR .`` of each commit), PY running DIR/bin/cudaenv (else the
installed ``cudaenv`` script), interleaved with the rest: a before and an after in the same run. Prints the medians of each leg. Not a target (the hook costs a little in every process): the legs
say where the doctor's time over the floor goes (bench/RESULTS.md).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

SITECUSTOMIZE = r'''
import os, sys, time
_LOG = os.environ.get("CUDAENV_TIMELINE_LOG")
def _log(what):
    if _LOG:
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, ("%d %d %s\n" % (os.getpid(), time.monotonic_ns(), what)).encode())
        os.close(fd)
_log("site " + " ".join(sys.argv[-1:])[:20])
def _hook(event, args):
    if event == "subprocess.Popen":
        _log("spawn " + str(args[1][-1])[:20])
    elif event == "import" and args[0] == "torch":
        _log("import torch")
sys.addaudithook(_hook)
_exit = os._exit
def _logged_exit(code):
    _log("os._exit")
    _exit(code)
os._exit = _logged_exit
_closerange = os.closerange
def _logged_closerange(low, high):
    _log("answered")  # the doctor's torch child closes its output after its answer (then the parent kills it)
    _closerange(low, high)
os.closerange = _logged_closerange
class _Out:
    def __init__(self, stream):
        self._stream, self._said = stream, False
    def write(self, text):
        if not self._said and text:
            self._said = True
            _log("stdout")
        return self._stream.write(text)
    def __getattr__(self, name):
        return getattr(self._stream, name)
sys.stdout = _Out(sys.stdout)
'''


def run(argv, env, log):
    """One run: the (pid, seconds since the exec, what) events, the launcher's first."""
    if os.path.exists(log):
        os.unlink(log)
    start = time.monotonic_ns()
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(os.devnull, os.O_RDWR)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.wait4(pid, 0)
    end = time.monotonic_ns()
    events = [(str(pid), 0.0, "exec")]
    with open(log) as fh:
        for line in fh:
            p, t, what = line.rstrip("\n").split(" ", 2)
            events.append((p, (int(t) - start) / 1e9, what))
    events.append((str(pid), (end - start) / 1e9, "exit"))
    return events


def first(events, pid=None, what=None, after=None):
    return next(t for p, t, w in events if (pid is None or p == pid) and w.startswith(what) and (after is None or t > after))


def doctor_legs(events):
    """The doctor's legs in seconds, from one run's events."""
    main = events[0][0]
    spawn = first(events, main, "spawn dynamic")
    child = next(p for p, t, w in events if w == "site dynamic")
    answer = min(t for p, t, w in events if p == child and w in ("answered", "os._exit"))
    out = first(events, main, "stdout")
    end = first(events, main, "exit")
    return {
        "exec -> site (interpreter start)": first(events, main, "site"),
        "site -> spawn of the torch child": spawn - first(events, main, "site"),
        "spawn -> the child's site": first(events, child, "site") - spawn,
        "the child's site -> import torch": first(events, child, "import torch") - first(events, child, "site"),
        "the child: import torch -> answer": answer - first(events, child, "import torch"),
        "answer -> the parent's output": out - answer,
        "output -> the parent's exit": end - out,
        "exec -> exit (the whole doctor)": end,
        "spawns after the answer": sum(1 for p, t, w in events if w.startswith("spawn") and t > answer),
    }


def process_legs(events):
    main = events[0][0]
    site = first(events, main, "site")
    torch = first(events, main, "import torch")
    done = first(events, main, "os._exit")
    return {"exec -> site": site, "site -> import torch": torch - site, "import torch -> os._exit": done - torch,
            "exec -> exit": first(events, main, "exit")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=DIR")
    args = parser.parse_args(argv)
    python = args.python
    cudaenv = os.path.join(os.path.dirname(python), "cudaenv")
    from cudaenv._child import source

    work = tempfile.mkdtemp(prefix="cudaenv-timeline-")
    with open(os.path.join(work, "sitecustomize.py"), "w") as fh:
        fh.write(SITECUSTOMIZE)
    log = os.path.join(work, "log")
    env = dict(os.environ, PYTHONPATH=work, CUDAENV_TIMELINE_LOG=log)
    commands = {"doctor": [cudaenv, "doctor", "--json", "--python", python]}
    envs = {"doctor": env}
    for variant in args.variant:
        name, _, folder = variant.partition("=")
        commands.pop("doctor", None)
        script = os.path.join(folder, "bin", "cudaenv")  # the variant's own script (pip --target puts it there)
        commands["doctor " + name] = [python, script if os.path.isfile(script) else cudaenv, "doctor", "--json",
                                      "--python", python]
        envs["doctor " + name] = dict(env, PYTHONPATH=work + os.pathsep + folder)
    commands["floor"] = [python, "-c", "import os, torch; torch.cuda.is_available(); os._exit(0)"]
    commands["child alone"] = [python, "-c", source("torch_probe.py"), "dynamic"]
    legs = {name: {} for name in commands}
    for round_ in range(args.runs + 1):  # the first round warms the page cache and is dropped
        for name, argv_ in commands.items():
            events = run(argv_, envs.get(name, env), log)
            if round_:
                for k, v in (doctor_legs(events) if name.startswith("doctor") else process_legs(events)).items():
                    legs[name].setdefault(k, []).append(v)
    for name, table in legs.items():
        print(name)
        for k, v in table.items():
            med = statistics.median(v)
            print("  %-40s %s" % (k, "%d" % med if k.startswith("spawns") else "%8.1f ms" % (med * 1000)))
    for name in (n for n in legs if n.startswith("doctor")):
        print("%s / floor (medians of exec -> exit): %.3f" % (
            name, statistics.median(legs[name]["exec -> exit (the whole doctor)"]) / statistics.median(legs["floor"]["exec -> exit"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
