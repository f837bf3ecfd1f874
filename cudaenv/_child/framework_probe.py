"""Import one CUDA framework in the interpreter this runs in and ask it for its GPUs, as one JSON line on stdout.

Run by cudaenv (``doctor --import``) as ``python -c <this source> CHECK MODULE``, one child per framework, with a
timeout. Stdlib only, Python 3.7+. CHECK is the framework's own device check:

* ``tensorflow``: ``tf.config.list_physical_devices("GPU")``
* ``jax``: ``jax.devices()``, the devices whose platform is ``gpu`` (or ``cuda``)
* ``onnxruntime``: an InferenceSession of a one-node model (Identity, built here as protobuf bytes) asked for the
  CUDA provider: ``get_available_providers()`` lists CUDA even where it cannot run; the session says whether it did
* ``cupy``: ``cupy.cuda.runtime.getDeviceCount()``
* ``paddle``: ``paddle.device.cuda.device_count()``
* ``import``: the import alone (a compiled extension: an ``undefined symbol`` shows here)

The result is printed on one line starting with ``MARKER`` (frameworks print on stdout themselves).
"""

import json
import sys
import traceback

MARKER = "CUDAENV_FRAMEWORK_PROBE "


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field (bytes or str) or a varint field (int)."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def identity_model():
    """An ONNX model (ir_version 7, opset 13): y = Identity(x), x and y float tensors of shape [1]."""
    tensor = _field(1, _field(1, 1) + _field(2, _field(1, _field(1, 1))))  # TypeProto.tensor_type(elem float, shape [1])
    x = _field(1, "x") + _field(2, tensor)
    y = _field(1, "y") + _field(2, tensor)
    node = _field(1, "x") + _field(2, "y") + _field(4, "Identity")
    graph = _field(1, node) + _field(2, "g") + _field(11, x) + _field(12, y)
    return _field(1, 7) + _field(8, _field(1, "") + _field(2, 13)) + _field(7, graph)


def check_tensorflow(module):
    gpus = module.config.list_physical_devices("GPU")
    return len(gpus), ", ".join(str(getattr(g, "name", g)) for g in gpus)


def check_jax(module):
    devices = module.devices()
    gpus = [d for d in devices if str(getattr(d, "platform", "")).lower() in ("gpu", "cuda")]
    return len(gpus), ", ".join(str(d) for d in devices)


def check_onnxruntime(module):
    session = module.InferenceSession(identity_model(), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    providers = list(session.get_providers())
    return (1 if "CUDAExecutionProvider" in providers else 0), "session providers: " + ", ".join(providers)


def check_cupy(module):
    count = int(module.cuda.runtime.getDeviceCount())
    return count, "CUDA runtime %s" % module.cuda.runtime.runtimeGetVersion()


def check_paddle(module):
    compiled = bool(module.is_compiled_with_cuda())
    count = int(module.device.cuda.device_count()) if compiled else 0
    return count, "compiled with CUDA: %s" % compiled


CHECKS = {"tensorflow": check_tensorflow, "jax": check_jax, "onnxruntime": check_onnxruntime, "cupy": check_cupy,
          "paddle": check_paddle}


def main(argv):
    import importlib
    import os

    cwd = os.getcwd()  # ``python -c`` puts the current directory first: the installation is what is asked about
    while sys.path and sys.path[0] in ("", ".", cwd):
        sys.path.pop(0)
    check, name = argv[1], argv[2]
    out = {"module": name, "imported": False}
    try:
        module = importlib.import_module(name)
        out["imported"] = True
        out["version"] = str(getattr(module, "__version__", "") or "")[:100]
        if check in CHECKS:
            count, detail = CHECKS[check](module)
            out["gpu_count"], out["detail"] = int(count), str(detail)[:500]
    except BaseException as exc:  # noqa: BLE001 - an import may raise anything (SystemExit, OSError, ImportError)
        out["error"] = ("%s: %s" % (type(exc).__name__, exc))[:2000]
        out["traceback"] = "".join(traceback.format_exception_only(type(exc), exc))[-2000:]
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
