"""Checkpoints built without torch, the way torch 2.13 writes them (the project's checkpoint facts, sections 1-2).

The pickles come from the stdlib's own (pure Python) pickler: stand-in objects make it write the same opcodes as
torch's: ``Glob("torch._utils", "_rebuild_tensor_v2")`` is written as ``GLOBAL 'torch._utils _rebuild_tensor_v2'``
(memoized like any global), a :class:`Tensor` reduces to ``_rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())``, and a :class:`Storage` becomes the persistent id ``('storage', GLOBAL torch
FloatStorage, key, location, numel)``. A state_dict is an ``OrderedDict`` with a ``_metadata`` attribute, pickled
(REDUCE, SETITEMS, BUILD) exactly as torch's is. Nothing here imports torch or anything the pickles name.
"""

import collections
import io
import pickle
import struct
import zipfile

ITEMSIZE = {"FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2, "LongStorage": 8, "IntStorage": 4,
            "BFloat16Storage": 2, "ByteStorage": 1, "BoolStorage": 1, "UntypedStorage": 1}


class Glob:
    """A global written as ``GLOBAL 'module name'`` (never imported)."""

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args):  # the pickler wants a callable; it is never called
        raise AssertionError("a stand-in global was called")


class Storage:
    def __init__(self, key, numel, location="cpu", kind="FloatStorage"):
        self.key = key
        self.numel = numel
        self.location = location
        self.kind = kind

    @property
    def nbytes(self):
        return self.numel * ITEMSIZE[self.kind]


_GLOBS = {}


def glob(module, name):
    """One stand-in per name, so that the pickler memoizes it like torch's memoized classes."""
    return _GLOBS.setdefault((module, name), Glob(module, name))


class Tensor:
    def __init__(self, storage, size, offset=0, stride=None, dtype=None):
        self.storage = storage
        self.size = tuple(size)
        self.offset = offset
        if stride is None:
            stride, acc = [], 1
            for d in reversed(self.size):
                stride.insert(0, acc)
                acc *= d
        self.stride = tuple(stride)
        self.dtype = dtype  # a v3 dtype name ("uint16"): the storage is then an UntypedStorage

    def __reduce__(self):
        if self.dtype:
            return (glob("torch._utils", "_rebuild_tensor_v3"),
                    (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict(), glob("torch", self.dtype)))
        return (glob("torch._utils", "_rebuild_tensor_v2"),
                (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict()))


class Parameter:
    def __init__(self, tensor):
        self.tensor = tensor

    def __reduce__(self):
        return (glob("torch._utils", "_rebuild_parameter"), (self.tensor, True, collections.OrderedDict()))


class Reduce:
    """Any ``func(*args)``: ``Reduce(glob('os', 'system'), ('touch x',))``."""

    def __init__(self, func, args, state=None):
        self.func = func
        self.args = args
        self.state = state

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (self.func, self.args, self.state)


class RawPid:
    """A persistent id written as given (a hostile one: the wrong length, a storage type that is no storage)."""

    def __init__(self, pid):
        self.pid = pid


class _Pickler(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, fh, protocol=2, legacy=False):
        super().__init__(fh, protocol)
        self.legacy = legacy

    def persistent_id(self, obj):
        if isinstance(obj, RawPid):
            return obj.pid
        if isinstance(obj, Storage):
            module = "torch.storage" if obj.kind == "UntypedStorage" else "torch"  # as torch 2.13 writes it
            pid = ("storage", glob(module, obj.kind), obj.key, obj.location, obj.numel)
            return pid + (None,) if self.legacy else pid
        return None

    def _save_glob(self, obj):
        if self.proto >= 4:  # as the C pickler does: the two strings, then STACK_GLOBAL
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    dispatch[Glob] = _save_glob


def dumps(obj, protocol=2, legacy=False) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol, legacy).dump(obj)
    return buf.getvalue()


def state_dict(items, metadata=None):
    """An OrderedDict of ``items`` with torch's ``_metadata`` (module prefix -> {'version': 1})."""
    sd = collections.OrderedDict(items)
    if metadata is not None:
        sd._metadata = collections.OrderedDict((k, {"version": 1}) for k in metadata)
    return sd


def storages_in(obj, found=None):
    """Every Storage reachable from ``obj`` by key (first seen wins)."""
    found = collections.OrderedDict() if found is None else found
    todo = [obj]
    while todo:
        o = todo.pop()
        if isinstance(o, Storage):
            found.setdefault(o.key, o)
        elif isinstance(o, Tensor):
            todo.append(o.storage)
        elif isinstance(o, Parameter):
            todo.append(o.tensor)
        elif isinstance(o, Reduce):
            todo.extend(o.args)
        elif isinstance(o, dict):
            todo.extend(o.values())
            todo.extend(getattr(o, "__dict__", {}).values())
        elif isinstance(o, (list, tuple)):
            todo.extend(o)
    return found


def pattern(key, size):
    """Record bytes that differ per storage (to check a byte-for-byte copy)."""
    seed = sum(key.encode()) + 1
    return bytes((seed * 31 + i * 7) % 251 for i in range(size))


def torch_zip(obj, prefix="archive", byteorder="little", protocol=2, data_pkl=None, record_sizes=None, extra=(), zip64=False):
    """The bytes of a torch.save zip of ``obj`` (records filled with ``pattern`` bytes; ``record_sizes`` overrides a
    size; ``zip64``: every entry with ZIP64 sizes, as a writer does for records past 4 GiB)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        if zip64:

            def writestr(name, data):
                with zf.open(name, "w", force_zip64=True) as fh:
                    fh.write(data if isinstance(data, bytes) else data.encode())

            zf.writestr = writestr  # type: ignore[method-assign]
        zf.writestr("%s/data.pkl" % prefix, data_pkl if data_pkl is not None else dumps(obj, protocol))
        zf.writestr("%s/.format_version" % prefix, b"1")
        zf.writestr("%s/.storage_alignment" % prefix, b"64")
        if byteorder:
            zf.writestr("%s/byteorder" % prefix, byteorder.encode())
        for key, s in storages_in(obj).items():
            size = (record_sizes or {}).get(key, s.nbytes)
            zf.writestr("%s/data/%s" % (prefix, key), pattern(key, size))
        for name, data in extra:
            zf.writestr(name, data)
        zf.writestr("%s/version" % prefix, b"3\n")
        zf.writestr("%s/.data/serialization_id" % prefix, b"1234567890" * 4)
    return buf.getvalue()


MAGIC = 0x1950A86A20F9469CFC6C


def legacy_file(obj) -> bytes:
    """``_use_new_zipfile_serialization=False``: magic, protocol 1001, sys_info, the object, sorted keys, then per
    storage an int64 element count and the bytes (T:serialization.py:1021-1180)."""
    out = io.BytesIO()
    out.write(pickle.dumps(MAGIC, 2))
    out.write(pickle.dumps(1001, 2))
    out.write(pickle.dumps({"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}, 2))
    out.write(dumps(obj, 2, legacy=True))
    stores = storages_in(obj)
    keys = sorted(stores)
    out.write(pickle.dumps(keys, 2))
    for k in keys:
        out.write(struct.pack("<q", stores[k].numel))
        out.write(pattern(k, stores[k].nbytes))
    return out.getvalue()


def safetensors_file(tensors, metadata=None) -> bytes:
    """8-byte little-endian header length, the JSON header, the data (the safetensors README's format)."""
    import json

    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


def cnn(location="cpu", prefix="", start=0):
    """The CNN state_dict of the facts (conv1, bn1, fc), storages on ``location``, keys with ``prefix``."""
    shapes = [("conv1.weight", (8, 3, 3, 3)), ("conv1.bias", (8,)), ("bn1.weight", (8,)), ("bn1.bias", (8,)),
              ("fc.weight", (4, 8)), ("fc.bias", (4,))]
    items = []
    for i, (name, shape) in enumerate(shapes):
        n = 1
        for d in shape:
            n *= d
        items.append((prefix + name, Tensor(Storage(str(start + i), n, location), shape)))
    base = prefix.rstrip(".")
    meta = (["", base] + ["%s%s" % (prefix, m) for m in ("conv1", "bn1", "fc")]) if prefix else ["", "conv1", "bn1", "fc"]
    return state_dict(items, meta)


def zero_files(top, files, ds_globals, drop=(), model_facts=None, optim_facts=None):
    """The files of a DeepSpeed ZeRO folder under ``top`` as DeepSpeed writes them: model states {module: state_dict,
    buffer_names, param_shapes, ds_version, plus ``model_facts(name)``}; optimizer states {optimizer_state_dict:
    {loss_scaler: LossScaler(...), zero_stage: ZeroStageEnum(stage), partition_count, one flat fp32 partition}}, with
    ``optim_facts(name)`` = (stage, partition_count, the partition's storage key); the DeepSpeed classes named, never
    imported; the scripts as stand-ins that are never run. ``drop``: file names left out."""
    for rel in files:
        if rel in drop:
            continue
        path = top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        name = path.name
        if name == "latest":
            path.write_text("global_step1")
        elif name.endswith(".py"):
            path.write_text("# stand-in for DeepSpeed's %s: never run by inspect\nraise SystemExit(1)\n" % name)
        elif name.endswith("_model_states.pt"):
            model = {"module": cnn("cpu"), "buffer_names": [], "param_shapes": [], **(model_facts(name) if model_facts else {}),
                     "ds_version": "0.19.8"}
            path.write_bytes(torch_zip(model, prefix=name[:-3]))
        else:
            stage, count, key = optim_facts(name)
            named = {n: glob(m, n) for m, n in ds_globals}
            osd = {"loss_scaler": Reduce(named["LossScaler"], ()), "zero_stage": Reduce(named["ZeroStageEnum"], (stage,)),
                   "partition_count": count, "single_partition_of_fp32_groups": [Tensor(Storage(key, 64, "cpu"), (64,))]}
            path.write_bytes(torch_zip({"optimizer_state_dict": osd, "ds_config": {}}, prefix=name[:-3]))
    return top


# Two gloo ranks on this CPU, a device mesh over both, each weight sharded by rows (Shard(0)), saved by
# torch.distributed.checkpoint (issue 32). WRITER "fs": the default FileSystemWriter, every rank its half in
# __{rank}_0.distcp; `step` and `extra` are not tensors, so DCP stores them as pickled bytes. WRITER "hf":
# HuggingFaceStorageWriter(save_distributed=True), every rank its half in shard-{rank+1:05d}-model-00001-of-00001.safetensors
# (tensors only, one of them int64: a value that is not a tensor would be written ahead of the safetensors header).
GLOO_DCP_SAVE = r"""
import os, socket, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp

def worker(rank, world, port, out, writer):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    import torch.distributed.checkpoint as dcp
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    full = {"module.fc.weight": torch.randn(512, 512), "module.fc.bias": torch.randn(512),
            "module.emb.weight": torch.randn(256, 512, dtype=torch.bfloat16)}
    if writer == "hf":
        full["module.steps"] = torch.arange(6, dtype=torch.int64)
    sd = {k: distribute_tensor(v, mesh, [Shard(0)]) for k, v in full.items()}
    if writer == "hf":
        from torch.distributed.checkpoint import HuggingFaceStorageWriter
        dcp.save(sd, storage_writer=HuggingFaceStorageWriter(out, save_distributed=True))
    else:
        sd["step"] = 7
        sd["extra"] = {"note": "hello"}
        dcp.save({"model": sd}, checkpoint_id=out)
    dist.barrier()
    dist.destroy_process_group()
    # gloo's threads can abort a rank at interpreter exit ("terminate called without an active exception", 3 of 14
    # saves here): the folder is whole once both ranks pass the barrier, so a rank leaves without C++ teardown
    os._exit(0)

if __name__ == "__main__":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    mp.spawn(worker, args=(2, port, sys.argv[1], sys.argv[2]), nprocs=2)
"""


def gloo_dcp_full(torch, writer="fs"):
    """The full tensors GLOO_DCP_SAVE shards (the same seed, in the same order), keyed as saved."""
    torch.manual_seed(0)
    full = {"module.fc.weight": torch.randn(512, 512), "module.fc.bias": torch.randn(512),
            "module.emb.weight": torch.randn(256, 512, dtype=torch.bfloat16)}
    if writer == "hf":
        full["module.steps"] = torch.arange(6, dtype=torch.int64)
    return full


def gloo_dcp_save(out, writer="fs"):
    """Run GLOO_DCP_SAVE (the real torch of this Python) into the folder ``out``; ``out``."""
    import shutil
    import subprocess
    import sys

    script = out.parent / ("save_%s.py" % writer)
    script.write_text(GLOO_DCP_SAVE)
    for _attempt in range(2):  # gloo on a loaded 2-core machine can lose a rank once: one more try, never more
        proc = subprocess.run([sys.executable, str(script), str(out), writer], capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            break
        shutil.rmtree(out, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out
