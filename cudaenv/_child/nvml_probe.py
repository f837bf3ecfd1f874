"""Ask NVML (the driver's management library) about the driver and GPUs; print one JSON object.

Run as ``python nvml_probe.py LIBRARY_PATH`` in a child process with a timeout (a wedged GPU can hang NVML).
Standard library only, Python 3.7+. No CUDA context is created. Output, on success::

    {"ok": true, "library": "...", "driver_version": "550.54.15", "cuda_driver_version": 12040,
     "devices": [{"index": 0, "name": "...", "uuid": "GPU-...", "pci_bus_id": "00000000:01:00.0",
                  "memory_total": 25757220864, "memory_used": 1048576, "compute_capability": "8.6",
                  "mig_uuids": []}], "device_errors": []}

and on failure ``{"ok": false, "stage": "load|init|...", "error_code": 9, "error_name": "NVML_ERROR_DRIVER_NOT_LOADED",
"message": "Driver Not Loaded"}``.
"""

import ctypes
import json
import sys

ERROR_NAMES = {
    1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED", 4: "NO_PERMISSION",
    5: "ALREADY_INITIALIZED", 6: "NOT_FOUND", 7: "INSUFFICIENT_SIZE", 8: "INSUFFICIENT_POWER",
    9: "DRIVER_NOT_LOADED", 10: "TIMEOUT", 11: "IRQ_ISSUE", 12: "LIBRARY_NOT_FOUND",
    13: "FUNCTION_NOT_FOUND", 14: "CORRUPTED_INFOROM", 15: "GPU_IS_LOST", 16: "RESET_REQUIRED",
    17: "OPERATING_SYSTEM", 18: "LIB_RM_VERSION_MISMATCH", 19: "IN_USE", 20: "MEMORY", 21: "NO_DATA",
    22: "VGPU_ECC_NOT_ENABLED", 23: "INSUFFICIENT_RESOURCES", 999: "UNKNOWN",
}


class NvmlError(Exception):
    def __init__(self, stage, code, message):
        Exception.__init__(self, message)
        self.stage, self.code, self.message = stage, code, message


class PciInfo(ctypes.Structure):
    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    ]


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def _text(buf):
    return buf.value.decode("utf-8", "replace").strip()


class Nvml(object):
    def __init__(self, lib):
        self.lib = lib

    def fn(self, *names):
        for name in names:
            f = getattr(self.lib, name, None)
            if f is not None:
                return f
        raise NvmlError(names[0], 13, "function %s not found" % names[0])

    def message(self, code):
        try:
            f = self.lib.nvmlErrorString
            f.restype = ctypes.c_char_p
            raw = f(ctypes.c_int(code))
            return raw.decode("utf-8", "replace") if raw else ERROR_NAMES.get(code, "error %d" % code)
        except Exception:
            return ERROR_NAMES.get(code, "error %d" % code)

    def call(self, stage, f, *args):
        rc = f(*args)
        if rc != 0:
            raise NvmlError(stage, rc, self.message(rc))


def probe(path):
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return {"ok": False, "stage": "load", "error_code": None, "error_name": None, "message": str(exc), "library": path}
    nvml = Nvml(lib)
    try:
        nvml.call("init", nvml.fn("nvmlInit_v2", "nvmlInit"))
    except NvmlError as exc:
        return _failure(exc, path)
    try:
        return _collect(nvml, path)
    except NvmlError as exc:
        return _failure(exc, path)
    finally:
        try:
            lib.nvmlShutdown()
        except Exception:
            pass


def _failure(exc, path):
    name = ERROR_NAMES.get(exc.code) if exc.code is not None else None
    return {
        "ok": False,
        "stage": exc.stage,
        "error_code": exc.code,
        "error_name": ("NVML_ERROR_" + name) if name else None,
        "message": exc.message,
        "library": path,
    }


def _collect(nvml, path):
    result = {"ok": True, "library": path, "driver_version": None, "cuda_driver_version": None, "devices": [], "device_errors": []}
    buf = ctypes.create_string_buffer(96)
    nvml.call("driver_version", nvml.fn("nvmlSystemGetDriverVersion"), buf, ctypes.c_uint(96))
    result["driver_version"] = _text(buf)
    cuda = ctypes.c_int(0)
    try:
        nvml.call("cuda_version", nvml.fn("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"), ctypes.byref(cuda))
        result["cuda_driver_version"] = cuda.value
    except NvmlError as exc:
        result["device_errors"].append({"index": None, "stage": exc.stage, "error_code": exc.code, "message": exc.message})
    count = ctypes.c_uint(0)
    nvml.call("device_count", nvml.fn("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"), ctypes.byref(count))
    for index in range(count.value):
        try:
            result["devices"].append(_device(nvml, index))
        except NvmlError as exc:
            result["device_errors"].append({"index": index, "stage": exc.stage, "error_code": exc.code,
                                            "error_name": "NVML_ERROR_" + ERROR_NAMES.get(exc.code, "UNKNOWN"),
                                            "message": exc.message})
    return result


def _device(nvml, index):
    handle = ctypes.c_void_p()
    nvml.call("handle", nvml.fn("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"), ctypes.c_uint(index), ctypes.byref(handle))
    device = {"index": index, "name": None, "uuid": None, "pci_bus_id": None, "memory_total": None,
              "memory_used": None, "compute_capability": None, "mig_uuids": []}
    buf = ctypes.create_string_buffer(96)
    for key, names in (("name", ("nvmlDeviceGetName",)), ("uuid", ("nvmlDeviceGetUUID",))):
        try:
            nvml.call(key, nvml.fn(*names), handle, buf, ctypes.c_uint(96))
            device[key] = _text(buf)
        except NvmlError:
            pass
    try:
        pci = PciInfo()
        nvml.call("pci", nvml.fn("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"), handle, ctypes.byref(pci))
        device["pci_bus_id"] = pci.busId.decode("ascii", "replace") or "%08X:%02X:%02X.0" % (pci.domain, pci.bus, pci.device)
    except NvmlError:
        pass
    try:
        mem = Memory()
        nvml.call("memory", nvml.fn("nvmlDeviceGetMemoryInfo"), handle, ctypes.byref(mem))
        device["memory_total"], device["memory_used"] = mem.total, mem.used
    except NvmlError:
        pass
    try:
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        nvml.call("capability", nvml.fn("nvmlDeviceGetCudaComputeCapability"), handle, ctypes.byref(major), ctypes.byref(minor))
        device["compute_capability"] = "%d.%d" % (major.value, minor.value)
    except NvmlError:
        pass
    device["mig_uuids"] = _mig_uuids(nvml, handle)
    return device


def _mig_uuids(nvml, handle):
    uuids = []
    try:
        current, pending = ctypes.c_uint(0), ctypes.c_uint(0)
        nvml.call("mig_mode", nvml.fn("nvmlDeviceGetMigMode"), handle, ctypes.byref(current), ctypes.byref(pending))
        if current.value != 1:
            return uuids
        count = ctypes.c_uint(0)
        nvml.call("mig_count", nvml.fn("nvmlDeviceGetMaxMigDeviceCount"), handle, ctypes.byref(count))
        buf = ctypes.create_string_buffer(96)
        for i in range(count.value):
            mig = ctypes.c_void_p()
            try:
                nvml.call("mig_handle", nvml.fn("nvmlDeviceGetMigDeviceHandleByIndex"), handle, ctypes.c_uint(i), ctypes.byref(mig))
                nvml.call("mig_uuid", nvml.fn("nvmlDeviceGetUUID"), mig, buf, ctypes.c_uint(96))
                uuids.append(_text(buf))
            except NvmlError:
                continue
    except NvmlError:
        pass
    return uuids


def main(argv):
    if len(argv) < 2:
        out = {"ok": False, "stage": "usage", "error_code": None, "error_name": None, "message": "usage: nvml_probe.py LIBRARY"}
    else:
        try:
            out = probe(argv[1])
        except Exception as exc:  # never a traceback: the parent reads JSON
            out = {"ok": False, "stage": "crash", "error_code": None, "error_name": None, "message": "%s: %s" % (type(exc).__name__, exc)}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
