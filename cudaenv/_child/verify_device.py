"""Real work on one device, in the interpreter this runs in; JSON lines on stdout, each starting with MARKER.

Run by ``cudaenv verify`` as ``python -c <this source> --device N`` (or ``--cpu``, or ``--info``), one
process per device, with ``CUDA_LAUNCH_BLOCKING=1`` so that an error points at the call that made it.
Stdlib + torch, Python 3.7+. Every line is flushed at once: when the parent kills a wedged device,
what was printed before still tells how far it got.

Events, in order (``"event"`` key):

* ``info``: torch version, ``torch.version.cuda``, ``is_available()``, ``device_count()``, arch list,
  ``CUDA_VISIBLE_DEVICES``, and any warning raised while CUDA initialised.
* ``device``: name, capability, uuid, PCI bus id, total/free memory of the device under test.
* ``check``: one per check: ``{"name", "ok", "seconds", "detail", "skipped"}``, and ``"said"`` (the detail's template
  and values, ``say.py``'s :func:`said`) when the detail is a sentence of this script's, not an exception's text.
* ``figure``: ``{"tflops", "gbps", "matmul_n", "copy_mib"}`` from the short timed loops.
* ``error``: ``{"stage", "type", "message", "traceback"}``: an exception (or a watchdog timeout, type
  ``Timeout``) that stopped the run; a CUDA error is sticky, so nothing more runs after it. ``"said"`` as for a check
  when the message is this script's own sentence (the watchdog's).
* ``done``: ``{"ok"}``.
"""

import json
import os
import sys
import threading
import time
import traceback
import warnings

MARKER = "CUDAENV_VERIFY "
_LOCK = threading.Lock()
_STAGE = {"name": "start"}

# Relative error (Frobenius norm of the difference over the reference's) allowed per dtype, against a
# float64 product of the same (already rounded) inputs: fp32 with TF32 off is ~1e-6, fp16 ~1e-3, bf16 ~1e-2.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def emit(event, **fields):
    fields["event"] = event
    line = MARKER + json.dumps(fields, default=str)
    with _LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _strip_cwd_from_path():
    """``python -c`` puts the current directory first on sys.path: a ./torch folder must not shadow torch."""
    cwd = os.getcwd()
    while sys.path and sys.path[0] in ("", ".", cwd):
        sys.path.pop(0)


def _parse_args(argv):
    opts = {"device": None, "cpu": False, "info": False, "size": 256, "bench": 2048, "deadline": 0.0}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--cpu", "--info"):
            opts[arg[2:]] = True
        elif arg in ("--device", "--size", "--bench", "--deadline") and i + 1 < len(argv):
            value = argv[i + 1]
            opts[arg[2:]] = float(value) if arg == "--deadline" else int(value)
            i += 1
        i += 1
    return opts


def _watchdog(seconds):
    """Report the stage that hung and leave before the parent has to kill us."""

    def fire():
        emit("error", stage=_STAGE["name"], type="Timeout",
             **said_fields(said("no progress for %s s in stage %s (a hung kernel or a wedged GPU)",  # noqa: F821
                                ("%d" % round(seconds)) if seconds >= 10 else ("%.2g" % seconds), _STAGE["name"]), "message"))
        sys.stdout.flush()
        os._exit(3)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()


def _info(torch, caught):
    info = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3],
            "torch": getattr(torch, "__version__", None), "cuda": getattr(torch.version, "cuda", None),
            "hip": getattr(torch.version, "hip", None),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            info["cuda_available"] = bool(torch.cuda.is_available())
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            info["cuda_available"] = False
            info["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
        try:
            info["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:  # noqa: BLE001
            info["device_count"] = 0
            info.setdefault("cuda_error", "%s: %s" % (type(exc).__name__, exc))
        if (info["cuda"] or info["hip"]) and "cuda_error" not in info and not (info["cuda_available"] and info["device_count"]):
            # is_available() only says False; initialising CUDA raises the reason (no driver, a driver too
            # old, no device, error 804, ...), which is what the parent classifies.
            try:
                torch.cuda.init()
            except Exception as exc:  # noqa: BLE001
                info["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
    messages = [str(w.message) for w in list(caught) + list(seen)]
    if messages:
        info["warnings"] = messages
    try:
        info["arch_list"] = list(torch.cuda.get_arch_list()) if info.get("cuda") else []
    except Exception:  # noqa: BLE001
        info["arch_list"] = []
    try:
        nccl = torch.cuda.nccl.version() if info.get("cuda_available") else None
        info["nccl"] = ".".join(str(x) for x in nccl) if isinstance(nccl, tuple) else nccl
    except Exception:  # noqa: BLE001
        info["nccl"] = None
    return info


def _device_facts(torch, index):
    props = torch.cuda.get_device_properties(index)
    facts = {"name": props.name, "capability": "%d.%d" % (props.major, props.minor),
             "total_memory_mib": int(props.total_memory // (1024 * 1024))}
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        facts["uuid"] = text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        facts["pci_bus_id"] = "%08X:%02X:%02X.0" % (getattr(props, "pci_domain_id", 0) or 0, bus,
                                                     getattr(props, "pci_device_id", 0) or 0)
    facts["multiprocessors"] = getattr(props, "multi_processor_count", None)
    return facts


def _rel_err(torch, got, ref):
    got = got.detach().to("cpu", torch.float64)
    ref = ref.to(torch.float64)
    denom = float(ref.norm()) or 1.0
    return float((got - ref).norm()) / denom


class Runner(object):
    def __init__(self, torch, device, size):
        self.torch = torch
        self.device = device
        self.size = size
        self.ok = True
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def check(self, name, fn):
        """Run one check; an exception stops the run (a CUDA error poisons the context)."""
        _STAGE["name"] = name
        start = time.perf_counter()
        try:
            result = fn()
            self.sync()
        except Exception as exc:  # noqa: BLE001 - classified by the parent
            seconds = time.perf_counter() - start
            emit("check", name=name, ok=False, seconds=round(seconds, 6), detail="%s: %s" % (type(exc).__name__, exc))
            emit("error", stage=name, type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
            self.ok = False
            raise _Stop() from None
        seconds = time.perf_counter() - start
        ok, detail, skipped = True, "", False
        if isinstance(result, tuple):
            ok, detail = result[0], result[1]
            skipped = len(result) > 2 and bool(result[2])
        emit("check", name=name, ok=bool(ok), seconds=round(seconds, 6), skipped=skipped, **said_fields(detail))  # noqa: F821
        if not ok:
            self.ok = False
        return result


class _Stop(Exception):
    pass


def _matmul_check(run, dtype_name, a_cpu, b_cpu):
    torch = run.torch
    dtype = getattr(torch, dtype_name)
    a, b = a_cpu.to(dtype), b_cpu.to(dtype)
    ref = a.to(torch.float64) @ b.to(torch.float64)
    got = a.to(run.device) @ b.to(run.device)
    err = _rel_err(torch, got, ref)
    limit = TOLERANCE[dtype_name]
    return err <= limit, said("relative error %.2e (limit %.0e)", err, limit)  # noqa: F821


def _bench(run, n, copy_mib):
    """A short timed loop: fp32 matmul TFLOP/s and device->host GB/s (a sanity figure, not a benchmark)."""
    torch = run.torch
    figures = {"matmul_n": n, "copy_mib": copy_mib}
    _STAGE["name"] = "benchmark"
    a = torch.randn(n, n, device=run.device)
    b = torch.randn(n, n, device=run.device)
    for _ in range(2):
        a @ b
    run.sync()
    iters, start = 0, time.perf_counter()
    while True:
        a @ b
        iters += 1
        if iters % 4 == 0:
            run.sync()
            elapsed = time.perf_counter() - start
            if elapsed > 0.25 or iters >= 200:
                break
    figures["tflops"] = round(2.0 * n ** 3 * iters / elapsed / 1e12, 3)
    numel = copy_mib * 1024 * 1024 // 4
    src = torch.ones(numel, device=run.device)
    dst = torch.empty(numel, pin_memory=run.cuda and torch.cuda.is_available())
    dst.copy_(src)
    run.sync()
    iters, start = 0, time.perf_counter()
    while True:
        dst.copy_(src, non_blocking=run.cuda)
        iters += 1
        run.sync()
        elapsed = time.perf_counter() - start
        if elapsed > 0.2 or iters >= 100:
            break
    figures["gbps"] = round(numel * 4.0 * iters / elapsed / 1e9, 3)
    return figures


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (OSError, ValueError):
        pass
    import platform
    return platform.processor() or platform.machine() or "CPU"


def run_device(torch, opts):
    if opts["cpu"]:
        device = torch.device("cpu")
        facts = {"name": _cpu_name(), "capability": None}
        facts["threads"] = torch.get_num_threads()
    else:
        index = opts["device"] or 0
        _STAGE["name"] = "select"
        device = torch.device("cuda", index)
        torch.cuda.set_device(index)
        facts = _device_facts(torch, index)
    run = Runner(torch, device, opts["size"])
    if run.cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            torch.backends.cudnn.allow_tf32 = False
        except Exception:  # noqa: BLE001
            pass
    emit("device", **facts)
    n = opts["size"]
    gen = torch.Generator().manual_seed(1234)
    a_cpu = torch.randn(n, n, generator=gen)
    b_cpu = torch.randn(n, n, generator=gen)
    holder = {}

    def allocate():
        holder["a"] = a_cpu.to(device)
        holder["b"] = b_cpu.to(device)
        return True, said("%d x %d fp32 host->device" if run.cuda else "%d x %d fp32 in CPU memory", n, n)  # noqa: F821

    def elementwise():
        got = holder["a"] * 2.0 + holder["b"]
        holder["c"] = got
        ref = a_cpu * 2.0 + b_cpu
        diff = float((got.cpu() - ref).abs().max())
        return diff <= 1e-5, said("max abs difference %.1e", diff)  # noqa: F821

    def copy_back():
        got = holder["c"].to("cpu")
        same = bool(torch.equal(got, holder["c"].cpu()))
        return same, said("%d bytes device->host" if run.cuda else "%d bytes copied", got.numel() * 4)  # noqa: F821

    def synchronize():
        run.sync()
        return True, "torch.cuda.synchronize" if run.cuda else said("nothing to wait for on the CPU")  # noqa: F821

    try:
        run.check("allocate", allocate)
        run.check("elementwise", elementwise)
        run.check("matmul-fp32", lambda: _matmul_check(run, "float32", a_cpu, b_cpu))
        if run.cuda:
            major, minor = torch.cuda.get_device_capability(device)
            fp16 = (major, minor) >= (5, 3)
            try:
                bf16 = bool(torch.cuda.is_bf16_supported(including_emulation=False))
            except TypeError:
                bf16 = bool(torch.cuda.is_bf16_supported())
        else:
            fp16 = bf16 = True
        for dtype_name, supported in (("float16", fp16), ("bfloat16", bf16)):
            name = "matmul-" + {"float16": "fp16", "bfloat16": "bf16"}[dtype_name]
            if supported:
                run.check(name, lambda d=dtype_name: _matmul_check(run, d, a_cpu, b_cpu))
            else:
                emit("check", name=name, ok=True, seconds=0.0, skipped=True,
                     **said_fields(said("not supported by this GPU")))  # noqa: F821
        run.check("copy-to-host", copy_back)
        run.check("synchronize", synchronize)
        if run.cuda:
            def memory():
                free, total = torch.cuda.mem_get_info(device)
                holder["memory"] = (free, total)
                return True, said("%d MiB free of %d MiB", free // 2 ** 20, total // 2 ** 20)  # noqa: F821
            run.check("memory", memory)
            free, total = holder["memory"]
            emit("memory", free_mib=int(free // 2 ** 20), total_mib=int(total // 2 ** 20))
        bench_n = opts["bench"] if run.cuda else min(opts["bench"], 512)
        copy_mib = 64 if run.cuda else 16
        start = time.perf_counter()
        try:
            figures = _bench(run, bench_n, copy_mib)
        except Exception as exc:  # noqa: BLE001
            emit("check", name="benchmark", ok=False, seconds=round(time.perf_counter() - start, 6),
                 detail="%s: %s" % (type(exc).__name__, exc))
            emit("error", stage="benchmark", type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
            run.ok = False
            raise _Stop() from None
        emit("check", name="benchmark", ok=True, seconds=round(time.perf_counter() - start, 6),
             **said_fields(said("timed matmul n=%d, %d MiB copy", bench_n, copy_mib)))  # noqa: F821
        emit("figure", **figures)
    except _Stop:
        pass
    return run.ok


def main(argv):
    _strip_cwd_from_path()
    opts = _parse_args(argv)
    if opts["deadline"] > 0:
        _watchdog(opts["deadline"])
    _STAGE["name"] = "import"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import torch
        except Exception as exc:  # noqa: BLE001 - ImportError, OSError from a missing libcudart, ...
            emit("error", stage="import", type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
            emit("done", ok=False)
            return 1
    _STAGE["name"] = "info"
    info = _info(torch, caught)
    emit("info", **info)
    if opts["info"]:
        emit("done", ok=True)
        return 0
    if not opts["cpu"]:
        count = info.get("device_count") or 0
        index = opts["device"] or 0
        if not info.get("cuda"):
            emit("error", stage="select", type="AssertionError", message="Torch not compiled with CUDA enabled")
            emit("done", ok=False)
            return 1
        if not info.get("cuda_available") or count == 0:
            cuda_warnings = [w for w in info.get("warnings") or [] if "CUDA" in w or "NVIDIA" in w]
            message = info.get("cuda_error") or "; ".join(cuda_warnings) or "No CUDA GPUs are available"
            emit("error", stage="select", type="RuntimeError", message=message)
            emit("done", ok=False)
            return 1
        if index >= count:
            emit("error", stage="select", type="RuntimeError",
                 message="CUDA error: invalid device ordinal (cuda:%d requested, torch.cuda.device_count() is %d)" % (index, count))
            emit("done", ok=False)
            return 1
    try:
        ok = run_device(torch, opts)
    except Exception as exc:  # noqa: BLE001 - e.g. get_device_properties failing
        emit("error", stage=_STAGE["name"], type=type(exc).__name__, message=str(exc), traceback=traceback.format_exc())
        ok = False
    emit("done", ok=bool(ok))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
