"""The differential proof of `checkpoint inspect` and `fix` against the real torch 2.13 (`nox -s torch`, issue 26).

What is compared, file by file:

* cudaenv's verdict (``CheckpointReport.verdict``: safe, unsafe, inconclusive) and its weights_only prediction, read
  in this process (cudaenv never imports torch, so nothing here runs the file);
* what torch does with the same bytes, in ONE long-lived child process that reads many files (``torch.load(path,
  weights_only=True, map_location="cpu")``; then, only where cudaenv said ``safe`` and for the corpus,
  ``weights_only=False``), with a timeout per file (a child that hangs or dies is restarted, the file counted as
  "torch: no answer"). ``map_location="cpu"``: the question is the unpickler's, not this machine's devices.

Code execution is seen through harmless markers only: every payload creates a file in the marker folder (``touch``,
``open(..., 'w')``), and the child has a module ``cudaenv_canary`` whose ``touch`` records a call; the mutator swaps
globals for it. Nothing else is ever called.

The files: real ``torch.save`` outputs (zip and legacy, pickle protocols 2 and 4), a legacy tar built as torch 1.x
wrote it (torch writes none today: the members ``sys_info``, ``pickle``, ``storages``, ``tensors`` that
``torch/serialization.py`` ``_legacy_load`` reads in its tar branch, T:serialization.py:1722-1800 of the 2.13 wheel),
the corpus below (crafted cases and published scanner bypasses, each with its source), and seeded mutations of all
of them (byte flips, inserts, deletes, truncation, opcode-aware edits of the pickle bytes, global swaps).
"""

import io
import json
import os
import pickle
import pickletools
import select
import struct
import subprocess
import sys
import tarfile
import time
import zipfile

TORCH_CHILD = r'''
import hashlib, io, json, os, sys, types, warnings
warnings.simplefilter("ignore")
# the protocol on private copies of stdin and stdout; what a payload prints or reads gets /dev/null
_in, _out = os.fdopen(os.dup(0), "r"), os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
sys.stdout = sys.stderr
canary = types.ModuleType("cudaenv_canary")
canary.calls = []
def touch(*args, **kw):
    canary.calls.append(1)
    return None
canary.touch = touch
sys.modules["cudaenv_canary"] = canary
import torch

def digest(o, depth=0):
    h = hashlib.sha256()
    def walk(x, d):
        if d > 60:
            h.update(b"deep"); return
        if isinstance(x, torch.Tensor):
            h.update(repr((str(x.dtype), tuple(x.shape), x.layout)).encode())
            if x.layout == torch.strided and not x.is_meta and x.dtype.is_floating_point + 1:
                try:
                    h.update(x.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes() if x.numel() else b"")
                except Exception:
                    h.update(repr(x.tolist() if x.numel() < 64 else x.shape).encode())
        elif isinstance(x, dict):
            h.update(b"{%d" % len(x))
            for k, v in x.items():
                h.update(repr(k).encode()); walk(v, d + 1)
        elif isinstance(x, (list, tuple)):
            h.update(b"[%d" % len(x))
            for v in x:
                walk(v, d + 1)
        else:
            h.update(repr(type(x)).encode())
            try:
                h.update(repr(x)[:200].encode())
            except Exception:
                pass
    walk(o, 0)
    return h.hexdigest()

for line in _in:
    job = json.loads(line)
    out = {}
    for wo in job["modes"]:
        before = len(canary.calls)
        try:
            obj = torch.load(job["path"], weights_only=wo, map_location="cpu")
            out[str(wo)] = "ok"
            if job.get("digest"):
                out["digest_" + str(wo)] = digest(obj)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            out[str(wo)] = ("%s: %s" % (type(exc).__name__, exc))[:300]
        out["canary_" + str(wo)] = len(canary.calls) - before
    out["markers"] = sorted(os.listdir(job["marker_dir"])) if os.path.isdir(job["marker_dir"]) else []
    data = (json.dumps(out) + "\n").encode()
    while data:
        data = data[os.write(_out, data):]
'''


class TorchChild:
    """One torch process answering many files; restarted when a file makes it hang or die."""

    def __init__(self, python=None, timeout=8.0):
        self.python = python or sys.executable
        self.timeout = timeout
        self.proc = None
        self.restarts = 0

    def _start(self):
        env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen([self.python, "-c", TORCH_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=os.path.dirname(os.path.abspath(__file__)))

    def ask(self, path, modes, marker_dir, digest=False):
        """{"True": "ok" | error, "False": ..., "canary_True": calls, "markers": [...]} or None (no answer)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        job = json.dumps({"path": str(path), "modes": list(modes), "marker_dir": str(marker_dir), "digest": digest})
        try:
            self.proc.stdin.write((job + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            return None
        end = time.monotonic() + self.timeout + (60 if self.restarts == 0 else 0)  # (the first answer imports torch)
        buf = b""
        fd = self.proc.stdout.fileno()
        while not buf.endswith(b"\n"):
            left = end - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.close()
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self.close()
                return None
            buf += chunk
        if self.restarts == 0:
            self.restarts = 1  # (torch is imported now: later answers get the plain timeout)
        return json.loads(buf.decode())

    def close(self):
        if self.proc is not None:
            try:
                self.proc.kill()
            except OSError:
                pass
            self.proc.wait()
            self.proc = None
            self.restarts += 1


# ---------------------------------------------------------------------------------------------------- the bases
def real_bases(torch, folder):
    """Real torch.save files: {name: bytes}."""
    sd = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Linear(2, 2)).state_dict()
    base = torch.arange(12, dtype=torch.float32)
    extra = {"half": torch.ones(3, dtype=torch.float16), "bf16": torch.ones(2, dtype=torch.bfloat16),
             "flag": torch.tensor([True, False]), "u16": torch.ones(3, dtype=torch.uint16), "view": base[2:6],
             "full": base, "param": torch.nn.Parameter(torch.zeros(2)), "s": {1, 2}, "c": 1 + 2j}
    training = {"state_dict": sd, "epoch": 3, "optimizer": {"state": {0: {"step": torch.tensor(1.0)}},
                                                            "param_groups": [{"lr": 0.1, "params": [0]}]}}
    objects = {"sd": sd, "mixed": extra, "train": training}
    # (not "mixed" in the legacy format: torch 2.13 cannot load its own legacy save of a uint16 tensor, with or
    # without weights_only: "type object 'torch.storage.UntypedStorage' has no attribute 'dtype'")
    out = {}
    for name, obj in objects.items():
        for proto in (2, 4):
            for legacy in (False, True):
                if legacy and name == "mixed":
                    continue
                path = os.path.join(folder, "%s_p%d_%s.pt" % (name, proto, "legacy" if legacy else "zip"))
                torch.save(obj, path, pickle_protocol=proto, _use_new_zipfile_serialization=not legacy)
                with open(path, "rb") as fh:
                    out[os.path.basename(path)] = fh.read()
    out["sd_legacy_tar.pt"] = legacy_tar({"w": [1.0, 2.0, 3.0], "b": [0.5]})
    return out


def _pkl(obj, proto=2):
    return pickle.dumps(obj, protocol=proto)


def legacy_tar(tensors, pickle_member=None, storages_member=None):
    """A checkpoint of torch's pre-1.0 tar format, as ``_legacy_load``'s tar branch reads it (T:serialization.py:
    1722-1800): ``storages``: the count, then per storage the pickle ``(key, location, storage_type)`` and an int64
    element count with the bytes; then the pickled list of views; ``tensors``: the count, per tensor the pickle
    ``(key, storage_key, tensor_type)``, ndim (int32 and 4 bytes), sizes, strides, offset (int64); ``pickle``: the
    object, whose persistent ids are the tensor keys. ``sys_info`` as torch 1.x wrote it."""
    st = io.BytesIO()
    st.write(_pkl(len(tensors)))
    for i, values in enumerate(tensors.values()):  # float32 storages, keys i (ints, as torch 1.x's _cdata)
        st.write(b"\x80\x02(K" + bytes([i]) + b"X\x03\x00\x00\x00cpuctorch\nFloatStorage\nt.")
        st.write(struct.pack("<q", len(values)) + struct.pack("<%df" % len(values), *values))
    st.write(_pkl([]))
    te = io.BytesIO()
    te.write(_pkl(len(tensors)))
    for i, values in enumerate(tensors.values()):  # tensor keys 100 + i
        te.write(b"\x80\x02(K" + bytes([100 + i]) + b"K" + bytes([i]) + b"ctorch\nFloatTensor\nt.")
        te.write(struct.pack("<i", 1) + b"\0" * 4 + struct.pack("<q", len(values)) + struct.pack("<q", 1) + struct.pack("<q", 0))
    if pickle_member is None:
        body = b"".join(_u(k) + _u(str(100 + i)) + b"Q" for i, k in enumerate(tensors))
        pickle_member = b"\x80\x02ccollections\nOrderedDict\n)R(" + body + b"u."
    members = [("sys_info", _pkl({"protocol_version": 1001, "little_endian": True,
                                  "type_sizes": {"short": 2, "int": 4, "long": 4}})),
               ("storages", storages_member if storages_member is not None else st.getvalue()),
               ("tensors", te.getvalue()), ("pickle", pickle_member)]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------------- the corpus
def _u(s):
    raw = s.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _su(s):  # protocol 4 SHORT_BINUNICODE
    raw = s.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def _call(module, name, *args):
    """Protocol 2: GLOBAL module name, the args (strings), REDUCE."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n(" + b"".join(_u(a) for a in args) + b"tR"


def zip_with(data_pkl, prefix="archive", extra=()):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in extra:
            zf.writestr(name, data)
        zf.writestr("%s/data.pkl" % prefix, data_pkl)
        zf.writestr("%s/byteorder" % prefix, b"little")
        zf.writestr("%s/version" % prefix, b"3\n")
    return buf.getvalue()


def corpus(marker_dir, benign_zip):
    """{name: (bytes, source)}: crafted cases and published bypasses; each payload only creates a file in
    ``marker_dir``. ``benign_zip``: a real torch.save zip to hide payloads next to."""
    m = lambda tag: os.path.join(marker_dir, tag)  # noqa: E731
    touch = lambda tag: "touch " + m(tag)  # noqa: E731
    py_touch = lambda tag: "open(%r, 'w').close()" % m(tag)  # noqa: E731
    cases = {}

    def add(name, pkl, source, wrap=True):
        cases[name] = (zip_with(pkl + b".") if wrap else pkl, source)

    add("os_system", _call("posix", "system", touch("os_system")), "facts §6 matrix A (GLOBAL os system)")
    add("cprofile_run", _call("cProfile", "run", py_touch("cprofile_run")),
        "mmaitre314/picklescan#49 (cProfile.runctx, GHSA-9w88-8rmg-7g2p) and #48 (profile.Profile.run)")
    add("uuid_command", _call("uuid", "_get_command_stdout", "touch", m("uuid_command")),
        "promptfoo/modelaudit#581 (uuid._get_command_stdout runs subprocess.Popen)")
    add("imap4_stream", _call("imaplib", "IMAP4_stream", touch("imap4_stream")),
        "issue 26's list of published bypasses (IMAP4_stream runs its command through a shell)")
    inner = zip_with(_call("posix", "system", touch("load_from_bytes")) + b".")
    add("load_from_bytes", b"ctorch.storage\n_load_from_bytes\n(B" + struct.pack("<I", len(inner)) + inner + b"tR",
        "issue 26's list (torch.storage._load_from_bytes: torch.load(weights_only=False) of nested bytes)")
    p4 = (b"\x80\x04" + _su("torch") + _su("serialization.os.system") + b"\x93" + _su(touch("dotted_p4")) + b"\x85R")
    add("dotted_p4", p4, "protectai/modelscan#338 (dotted names resolved by find_class at protocol 4)")
    add("getattr_import", b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(" + _u("posix") + b"tR" + _u("system") + b"tR("
        + _u(touch("getattr_import")) + b"tR", "facts §6 matrix C (getattr(__import__('os'), 'system'))")
    add("pydoc_locate", b"cpydoc\nlocate\n(" + _u("posix.system") + b"tR(" + _u(touch("pydoc_locate")) + b"tR",
        "facts §6 matrix D (pydoc.locate: modelscan 0.8.8 reports no issues)")
    add("runpy_run_code", _call("runpy", "_run_code", py_touch("runpy_run_code"))[:-2] + b"}tR",
        "facts §6 matrix E (runpy._run_code)")
    add("import_module", b"cbuiltins\ngetattr\n(cimportlib\nimport_module\n(" + _u("posix") + b"tR" + _u("system")
        + b"tR(" + _u(touch("import_module")) + b"tR", "protectai/modelscan#331 (importlib.import_module)")
    add("pkgutil_resolve", b"cpkgutil\nresolve_name\n(" + _u("posix:system") + b"tR(" + _u(touch("pkgutil_resolve")) + b"tR",
        "facts §6 (ModelAudit announcement: pkgutil.resolve_name, a universal bypass)")
    nested = b"cposix\nsystem\n(S'" + touch("nested_loads").encode() + b"'\ntR."
    add("nested_loads", b"cpickle\nloads\n(C" + bytes([len(nested)]) + nested + b"tR" if len(nested) < 256 else
        b"cpickle\nloads\n(B" + struct.pack("<I", len(nested)) + nested + b"tR", "protectai/modelscan#267 (nested pickle.loads)")
    add("builtins_exec", _call("builtins", "exec", py_touch("builtins_exec")), "facts §6 (builtins eval/exec denylists)")
    add("subprocess_list", b"csubprocess\ncheck_call\n((" + _u("touch") + _u(m("subprocess_list")) + b"ltR",
        "facts §6 (subprocess in every denylist)")
    memo = (b"\x80\x04" + _su("posix") + b"\x94" + _su("system") + b"\x94" + b"h\x00h\x01\x93" + _su(touch("memo_mix"))
            + b"\x85R")
    add("memo_mix", memo, "mmaitre314/picklescan#14 (BINPUT/MEMOIZE mix resolves STACK_GLOBAL from the memo)")
    # container-level cases of issue 26
    hostile = _call("posix", "system", touch("dup_first")) + b"."
    with zipfile.ZipFile(io.BytesIO(benign_zip)) as zf:
        names = zf.namelist()
        prefix = names[0].split("/")[0]
        entries = [(n, zf.read(n)) for n in names]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zout:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zout.writestr("%s/data.pkl" % prefix, hostile)
            for n, data in entries:
                zout.writestr(n, data)
    cases["duplicate_datapkl_hostile_first"] = (buf.getvalue(), "issue 26 (two entries named data.pkl, the hostile one first)")
    cases["pickle_before_zip"] = (_call("posix", "system", touch("pickle_before_zip")) + b"." + benign_zip,
                                  "issue 26 / facts §7.4 (torch reads a file that does not start with PK as a pickle)")
    payload = _call("posix", "system", touch("legacy_sysinfo")) + b"."
    cases["legacy_payload_in_sys_info"] = (_pkl(0x1950A86A20F9469CFC6C) + _pkl(1001) + payload,
                                           "T:serialization.py _legacy_load: magic, protocol and sys_info are unpickled first")
    cases["tar_payload_in_storages"] = (legacy_tar({"w": [1.0]}, storages_member=_call("posix", "system", touch("tar_storages")) + b"."),
                                        "issue 26 (torch unpickles a legacy tar's storages member)")
    cases["tar_payload_in_pickle"] = (legacy_tar({"w": [1.0]}, pickle_member=_call("posix", "system", touch("tar_pickle")) + b"."),
                                      "T:serialization.py:1722-1800 (the tar branch unpickles its pickle member)")
    cases["canary_in_state_dict"] = (zip_with(b"\x80\x02}(" + _u("w") + b"ccudaenv_canary\ntouch\n)Ru."),
                                     "the harness's own marker (a global outside the allowlist, called)")
    return cases


# ---------------------------------------------------------------------------------------------------- mutations
SWAP_GLOBALS = [b"cudaenv_canary\ntouch", b"collections\nOrderedDict", b"torch._utils\n_rebuild_tensor_v2",
                b"torch\nFloatStorage", b"builtins\nset", b"torch\nSize", b"torch._utils\n_rebuild_parameter",
                b"__builtin__\nset", b"torch\nLongStorage", b"cudaenv_canary\ntouch.__call__"]


def pickle_spans(data):
    """(start, end) of the pickles torch reads in ``data``: a zip's stored data.pkl, else the whole file's head."""
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    if info.filename.endswith("/data.pkl") and info.compress_type == 0:
                        n, e = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
                        start = info.header_offset + 30 + n + e
                        return [(start, start + info.file_size)]
        except (zipfile.BadZipFile, struct.error, ValueError):
            return []
        return []
    return [(0, min(len(data), 4096))]


def mutate(data, rng):
    """One mutant of ``data`` and the name of what was done."""
    b = bytearray(data)
    spans = pickle_spans(data)
    if spans and rng.random() < 0.75:
        lo, hi = spans[0]
    else:
        lo, hi = 0, len(b)
    if hi <= lo:
        lo, hi = 0, len(b)
    kind = rng.choice(["flip", "byte", "delete", "insert", "dup", "truncate", "opcode", "opdel", "opdup", "global",
                       "int", "opcode", "global"])
    pos = rng.randrange(lo, hi) if hi > lo else 0
    if kind == "flip":
        b[pos] ^= 1 << rng.randrange(8)
    elif kind == "byte":
        b[pos] = rng.randrange(256)
    elif kind == "delete":
        del b[pos:pos + rng.randint(1, 8)]
    elif kind == "insert":
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif kind == "dup":
        n = rng.randint(1, 32)
        b[pos:pos] = b[pos:pos + n]
    elif kind == "truncate":
        del b[pos:]
    else:
        ops = _ops(bytes(b[lo:hi]))
        if not ops:
            b[pos] ^= 0xFF
            return bytes(b), "flip"
        op_pos, op_end, code = ops[rng.randrange(len(ops))]
        at, end = lo + op_pos, lo + op_end
        if kind == "opcode":
            b[at] = rng.choice(_OPCODES)
        elif kind == "opdel":
            del b[at:end]
        elif kind == "opdup":
            b[at:at] = b[at:end]
        elif kind == "int":
            ints = [o for o in ops if o[2] in (b"K", b"M", b"J")]
            if ints:
                op_pos, op_end, code = ints[rng.randrange(len(ints))]
                b[lo + op_pos + 1] = rng.choice([0, 1, 2, 255, 7, rng.randrange(256)])
        elif kind == "global":
            globs = [o for o in ops if o[2] == b"c"]
            if globs:
                op_pos, op_end, code = globs[rng.randrange(len(globs))]
                b[lo + op_pos + 1:lo + op_end - 1] = rng.choice(SWAP_GLOBALS)
    if data[:4] == b"PK\x03\x04" and spans and rng.random() < 0.5 and kind not in ("truncate",):
        return _rezip(data, bytes(b[spans[0][0]:spans[0][1] + (len(b) - len(data))])) or bytes(b), kind + "+rezip"
    return bytes(b), kind


_OPCODES = sorted({op.code.encode("latin-1")[0] for op in pickletools.opcodes})


def _ops(pkl):
    out = []
    try:
        for op, _arg, pos in pickletools.genops(pkl):
            out.append([pos, None, op.code.encode("latin-1")])
            if op.name == "STOP":
                break
    except Exception:  # noqa: BLE001 - a damaged pickle: the opcodes read so far
        pass
    for i in range(len(out)):
        out[i][1] = out[i + 1][0] if i + 1 < len(out) else min(len(pkl), out[i][0] + 1)
    return [tuple(o) for o in out]


def _rezip(data, new_pkl):
    """The same archive with data.pkl replaced (every other entry as it was)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            entries = [(i.filename, zf.read(i.filename) if not i.filename.endswith("/data.pkl") else new_pkl)
                       for i in zf.infolist()]
    except Exception:  # noqa: BLE001
        return None
    import warnings

    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zout:
        warnings.simplefilter("ignore")  # (a duplicate name is kept as it was)
        for n, d in entries:
            zout.writestr(n, d)
    return buf.getvalue()
