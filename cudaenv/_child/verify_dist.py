"""One rank of ``cudaenv verify --distributed``: run by torchrun (``python -m torch.distributed.run``).

``python -m torch.distributed.run --standalone --nproc_per_node N verify_dist.py --backend nccl
--results DIR --deadline SECONDS``. Each rank writes JSON lines to ``DIR/rank-R.jsonl``:

* ``start``: rank, local rank, world size, backend, pid;
* ``info``: the device it used, its name, torch version, NCCL version;
* ``check``: init, all-reduce (result checked), broadcast (result checked), barrier, bandwidth;
* ``figure``: all-reduce bus bandwidth;
* ``error``: the stage and exception that stopped it (type ``Timeout`` from the watchdog when a
  collective hangs: every rank leaves by itself before the deadline, since torchrun starts its
  workers in their own sessions where the parent's kill does not reach them);
* ``done``.

A check's detail and an error this script words itself carry ``"said"`` beside their English (``say.py``'s
:func:`said`, put before this text), so cudaenv says them in the reader's language.

``--hang-rank R`` makes rank R sleep instead of joining the all-reduce (to test the hang handling).
Stdlib + torch, Python 3.7+.
"""

import datetime
import faulthandler
import json
import os
import sys
import threading
import time
import traceback

_STAGE = {"name": "start"}
_LOCK = threading.Lock()
_OUT = {"fh": None}


def emit(event, **fields):
    fields["event"] = event
    line = json.dumps(fields, default=str)
    with _LOCK:
        fh = _OUT["fh"]
        if fh is not None:
            fh.write(line + "\n")
            fh.flush()
            try:
                os.fsync(fh.fileno())
            except OSError:
                pass


def _parse_args(argv):
    opts = {"backend": "nccl", "results": ".", "deadline": 60.0, "size_mib": 0, "hang_rank": -1.0}
    i = 0
    while i < len(argv):
        key = argv[i].lstrip("-").replace("-", "_")
        if key in opts and i + 1 < len(argv):
            value = argv[i + 1]
            opts[key] = value if key in ("backend", "results") else float(value)
            i += 1
        i += 1
    return opts


def _watchdogs(deadline):
    def fire():
        emit("error", stage=_STAGE["name"], type="Timeout",
             **said_fields(said("rank %s made no progress for %g s in stage %s", os.environ.get("RANK", "?"), deadline,  # noqa: F821
                                _STAGE["name"]), "message"))
        os._exit(3)

    timer = threading.Timer(deadline, fire)
    timer.daemon = True
    timer.start()
    # A hard backstop that needs no GIL: prints every thread's stack to stderr and exits.
    faulthandler.dump_traceback_later(deadline + 5, exit=True)
    parent = os.getppid()

    def orphaned():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                emit("error", stage=_STAGE["name"], type="Orphaned", **said_fields(said("torchrun went away; leaving"), "message"))  # noqa: F821
                os._exit(4)

    thread = threading.Thread(target=orphaned)
    thread.daemon = True
    thread.start()
    try:
        import signal

        def terminated(signum, frame):
            emit("error", stage=_STAGE["name"], type="Terminated",
                 **said_fields(said("rank %s was stopped by torchrun in stage %s (another rank failed first)",  # noqa: F821
                                    os.environ.get("RANK", "?"), _STAGE["name"]), "message"))
            os._exit(128 + signum)

        signal.signal(signal.SIGTERM, terminated)
    except (ImportError, ValueError, OSError, AttributeError):
        pass


def check(name, fn):
    _STAGE["name"] = name
    start = time.perf_counter()
    try:
        ok, detail = fn()
    except Exception as exc:  # noqa: BLE001 - classified by cudaenv
        emit("check", name=name, ok=False, seconds=round(time.perf_counter() - start, 6),
             detail="%s: %s" % (type(exc).__name__, exc))
        emit("error", stage=name, type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
        raise _Stop() from None
    emit("check", name=name, ok=bool(ok), seconds=round(time.perf_counter() - start, 6), **said_fields(detail))  # noqa: F821
    if not ok:
        raise _Stop() from None


class _Stop(Exception):
    pass


def run(opts):
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    backend = opts["backend"]
    use_cuda = backend == "nccl" or (torch.cuda.is_available() and backend != "gloo")
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": None}
    _STAGE["name"] = "device"
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        props = torch.cuda.get_device_properties(local_rank)
        info.update(device="cuda:%d" % local_rank, device_name=props.name,
                    capability="%d.%d" % (props.major, props.minor))
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            info["uuid"] = str(uuid) if str(uuid).startswith("GPU-") else "GPU-%s" % uuid
        try:
            version = torch.cuda.nccl.version()
            info["nccl"] = ".".join(str(x) for x in version) if isinstance(version, tuple) else str(version)
        except Exception:  # noqa: BLE001
            pass
    else:
        device = torch.device("cpu")
        info.update(device="cpu", device_name="CPU")
    emit("info", **info)
    size_mib = int(opts["size_mib"] or (16 if use_cuda else 4))

    def init():
        kwargs = {"backend": backend, "timeout": datetime.timedelta(seconds=max(5.0, opts["deadline"] - 5))}
        dist.init_process_group(**kwargs)
        return True, said("%s, world size %d", dist.get_backend(), dist.get_world_size())  # noqa: F821

    def all_reduce():
        if rank == int(opts["hang_rank"]):  # test hook: a rank that never joins the collective
            time.sleep(opts["deadline"] * 10)
        t = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        expected = world * (world + 1) / 2.0
        got = t.cpu()
        ok = bool((got == expected).all())
        return ok, said("sum of ranks 1..%d = %g (got %g)", world, expected, float(got[0]))  # noqa: F821

    def broadcast():
        t = torch.arange(1024, dtype=torch.float32, device=device) if rank == 0 else torch.zeros(1024, device=device)
        dist.broadcast(t, src=0)
        ok = bool(torch.equal(t.cpu(), torch.arange(1024, dtype=torch.float32)))
        return ok, said("%d floats from rank 0", 1024)  # noqa: F821

    def barrier():
        if use_cuda:
            dist.barrier(device_ids=[local_rank])
        else:
            dist.barrier()
        return True, said("all %d ranks arrived", world)  # noqa: F821

    figure = {}

    def bandwidth():
        numel = size_mib * 1024 * 1024 // 4
        t = torch.ones(numel, device=device)
        dist.all_reduce(t)
        if use_cuda:
            torch.cuda.synchronize()
        iters, start = 0, time.perf_counter()
        while True:
            dist.all_reduce(t)
            iters += 1
            if use_cuda:
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            if elapsed > 0.2 or iters >= 20:
                break
        algbw = numel * 4.0 * iters / elapsed / 1e9
        busbw = algbw * 2.0 * (world - 1) / world if world > 1 else algbw
        figure.update(busbw_gbps=round(busbw, 3), size_mib=size_mib, iterations=iters)
        return True, said("all-reduce of %d MiB: %.2f GB/s bus bandwidth", size_mib, busbw)  # noqa: F821

    ok = True
    try:
        check("init", init)
        check("all-reduce", all_reduce)
        check("broadcast", broadcast)
        check("barrier", barrier)
        check("bandwidth", bandwidth)
        emit("figure", **figure)
    except _Stop:
        ok = False
    _STAGE["name"] = "destroy"
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass
    return ok


def main(argv):
    opts = _parse_args(argv)
    rank = os.environ.get("RANK", "0")
    try:
        os.makedirs(opts["results"], exist_ok=True)
        _OUT["fh"] = open(os.path.join(opts["results"], "rank-%s.jsonl" % rank), "a")
    except OSError as exc:
        sys.stderr.write("cudaenv verify: cannot write results: %s\n" % exc)
        return 2
    _watchdogs(opts["deadline"])
    emit("start", rank=int(rank), local_rank=int(os.environ.get("LOCAL_RANK", "0")),
         world_size=int(os.environ.get("WORLD_SIZE", "1")), backend=opts["backend"], pid=os.getpid())
    try:
        ok = run(opts)
    except Exception as exc:  # noqa: BLE001 - import errors, set_device failing, ...
        emit("error", stage=_STAGE["name"], type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
        ok = False
    emit("done", ok=ok)
    faulthandler.cancel_dump_traceback_later()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
