"""Crafted hostile checkpoints (issue 26), built without torch: byte strings that torch 2.13 and pickle read one way
and a careless reader another. Each builder says what torch does with the file; the verdict tests
(tests/checkpoint/test_checkpoint_verdict.py) and the differential harness of the `torch` session both use them.

``CALL`` is the payload: ``posix.system('true')`` (harmless to run, and what a scanner must call unsafe)."""

import collections
import struct
import zipfile

import checkpoint_builders as cb

CALL = b"cposix\nsystem\nX\x04\x00\x00\x00true\x85R"  # GLOBAL posix system; BINUNICODE 'true'; TUPLE1; REDUCE
CALL_NAME = "posix.system"


def pickle_with(prelude: bytes, payload: bytes = CALL) -> bytes:
    """A protocol-2 pickle: ``prelude`` (opcodes that leave the stack as it was), then ``payload``, then STOP."""
    return b"\x80\x02" + prelude + payload + b"."


# Opcode arguments pickle accepts and a walker may refuse; each prelude leaves the stack as it was.
PRELUDES = {
    "LONG4 of 5000 bytes": b"\x8b" + struct.pack("<i", 5000) + b"\x01" * 5000 + b"0",  # LONG4 ...; POP
    "PUT +1": b"N" + b"p+1\n" + b"0" + b"g1\n" + b"0",  # NONE; PUT +1; POP; GET 1; POP
    "PUT 1_0": b"N" + b"p1_0\n" + b"0" + b"g10\n" + b"0",  # PUT 1_0 is memo 10: GET 10 finds it
    "INT of 4,200 digits": b"I" + b"7" * 4200 + b"\n0",
    "LONG of 4,200 digits": b"L" + b"7" * 4200 + b"L\n0",
    "UNICODE line over 1 MiB": b"V" + b"a" * ((1 << 20) + 10) + b"\n0",
    "STRING line over 1 MiB": b"S'" + b"a" * ((1 << 20) + 10) + b"'\n0",
}


def zip_with_data_pkl(data_pkl: bytes, prefix: str = "archive") -> bytes:
    """A torch zip of the CNN state_dict whose data.pkl is ``data_pkl`` (the storages stay)."""
    return cb.torch_zip(cb.cnn(), prefix=prefix, data_pkl=data_pkl)


def leading_pickle_then_zip(pickle_bytes: bytes) -> bytes:
    """A pickle, then a real torch zip after it: torch.load sees no zip at byte 0 (``_is_zipfile``) and unpickles the
    leading pickle (which runs under weights_only=False)."""
    return pickle_bytes + cb.torch_zip(cb.cnn())


def memoized_global_name(count: int, size: int = 1 << 20) -> bytes:
    """Protocol 4: a ``size``-byte string memoized once, then ``count`` STACK_GLOBALs of (it, it), each popped: a
    reader that joins the strings per reference does ``count * size`` work."""
    name = b"a" * size
    out = b"\x80\x04" + b"\x8d" + struct.pack("<Q", size) + name + b"\x94" + b"0"  # BINUNICODE8; MEMOIZE; POP
    out += (b"h\x00h\x00\x93" + b"0") * count  # BINGET 0; BINGET 0; STACK_GLOBAL; POP
    return out + b"N."


def _locals(entries, start=0):
    """Local headers and data of ``entries`` [(name bytes, data[, options])] from offset ``start``: (bytes, central
    records). Options: flags, method, version (needed to extract), external (attributes), disk."""
    out = bytearray()
    central = []
    for item in entries:
        name, data = item[0], item[1]
        opt = item[2] if len(item) > 2 else {}
        offset = start + len(out)
        crc = zipfile.crc32(data) & 0xFFFFFFFF
        version, flags, method = opt.get("version", 20), opt.get("flags", 0), opt.get("method", 0)
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", version, flags, method, 0, 0, crc, len(data), len(data),
                           len(name), 0) + name + data
        central.append(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, version, flags, method, 0, 0, crc, len(data),
                                   len(data), len(name), 0, 0, opt.get("disk", 0), 0, opt.get("external", 0), offset) + name)
    return bytes(out), central


def _end(count, central_size, central_offset, disk=0):
    return struct.pack("<4s4H2LH", b"PK\x05\x06", disk, disk, count, count, central_size, central_offset, 0)


def raw_zip(entries, disk=0):
    """A stored zip of ``entries`` [(name bytes, data[, options])] written by hand: names may repeat, differ in case or
    hold NUL bytes, fields may say what zipfile refuses (see :func:`_locals`)."""
    body, central = _locals(entries)
    cd = b"".join(central)
    return body + cd + _end(len(central), len(cd), len(body), disk)


def split_directory(hostile_entries, benign_entries):
    """Two central directories of the same size: miniz reads the one at the offset the end record states (the
    hostile one); zipfile shifts that offset by what it takes for bytes before the archive and reads the one just
    before the end record (the benign one, its offsets shifted to match)."""
    body_h, central_h = _locals(hostile_entries)
    body_b, central_b = _locals(benign_entries, len(body_h))
    cd_h = b"".join(central_h)
    pos_h = len(body_h) + len(body_b)
    pos_b = pos_h + len(cd_h)
    concat = pos_b - pos_h  # what zipfile adds to every offset
    shifted = []
    for rec in central_b:
        offset = struct.unpack_from("<L", rec, 42)[0]
        shifted.append(rec[:42] + struct.pack("<L", offset - concat) + rec[46:])
    cd_b = b"".join(shifted)
    assert len(cd_b) == len(cd_h), "the two directories must be the same size"
    return body_h + body_b + cd_h + cd_b + _end(len(central_h), len(cd_h), pos_h)


def cnn_entries(prefix: bytes = b"archive", data_pkl: bytes = None, options=None, version=b"3\n", byteorder=b"little"):
    """The entries of a torch zip of the CNN state_dict, in torch's order (``options`` for data.pkl's entry;
    ``version`` or ``byteorder`` None: no such record)."""
    sd = cb.cnn()
    entries = [(prefix + b"/data.pkl", data_pkl if data_pkl is not None else cb.dumps(sd), options or {}),
               (prefix + b"/.format_version", b"1"), (prefix + b"/.storage_alignment", b"64")]
    if byteorder is not None:
        entries.append((prefix + b"/byteorder", byteorder))
    for key, s in cb.storages_in(sd).items():
        entries.append((prefix + b"/data/" + key.encode(), cb.pattern(key, s.nbytes)))
    if version is not None:
        entries.append((prefix + b"/version", version))
    entries.append((prefix + b"/.data/serialization_id", b"1234567890" * 4))
    return entries


EVIL = pickle_with(b"")  # a data.pkl that calls posix.system('true')
BENIGN = cb.dumps(cb.cnn())


def duplicate_data_pkl(hostile_first=True, case=b"data.pkl"):
    """Two data.pkl entries (the second named ``case``): miniz's name lookup ignores ASCII case and finds one of the
    two by a binary search over its heap-sorted index; zipfile takes the last exact name."""
    entries = cnn_entries(data_pkl=EVIL if hostile_first else BENIGN)
    entries.insert(1, (b"archive/" + case, BENIGN if hostile_first else EVIL))
    return raw_zip(entries)


def nul_named_decoy():
    """The hostile data.pkl under its own name, then a benign one named ``archive/data.pkl\\0x``: zipfile cuts names at
    NUL (two data.pkl, the last wins: the benign); miniz compares full names (only the hostile one is data.pkl)."""
    entries = cnn_entries(data_pkl=EVIL)
    entries.insert(1, (b"archive/data.pkl\x00x", BENIGN))
    return raw_zip(entries)


def legacy_tar(pickle_member: bytes = None, count_pickle: bytes = None, ustar: bool = True, elements: int = 4) -> bytes:
    """A torch < 0.4 tar checkpoint (members sys_info, pickle, storages, tensors; T:serialization.py:1722-1798 reads
    storages, tensors, pickle): one FloatStorage of 4 elements. ``count_pickle``: the storages member's first pickle
    (the count; :data:`COUNT_CALL` runs the payload first); ``ustar`` False: the magic field zeroed and the checksum
    redone (a v7 header, which tarfile, and so torch, still reads). ``elements``: the storage's element count as
    written before its data (16 bytes of data follow whatever it says)."""
    import io
    import pickle
    import tarfile

    storages = ((count_pickle if count_pickle is not None else pickle.dumps(1, 2))
                + cb.dumps(("1", "cpu", cb.glob("torch", "FloatStorage")))
                + struct.pack("<q", elements) + b"\0" * 16 + pickle.dumps([], 2))
    members = [("sys_info", pickle.dumps({"protocol_version": 1001, "little_endian": True}, 2)),
               ("pickle", pickle_member if pickle_member is not None else pickle.dumps({"w": 1}, 2)),
               ("storages", storages), ("tensors", pickle.dumps(0, 2))]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = bytearray(buf.getvalue())
    if not ustar:
        at = 0
        while at + 512 <= len(out) and out[at:at + 512].count(0) != 512:
            block = out[at:at + 512]
            block[257:265] = b"\0" * 8
            block[148:156] = b" " * 8
            block[148:156] = b"%06o\0 " % sum(block)
            out[at:at + 512] = block
            size = int(bytes(block[124:136]).split(b"\0")[0].strip() or b"0", 8)
            at += 512 + (size + 511) // 512 * 512
    return bytes(out)


COUNT_CALL = b"\x80\x02" + CALL + b"0K\x01."  # posix.system('true'), POP, then the count 1


def _g(module: bytes, name: bytes) -> bytes:
    return b"c" + module + b"\n" + name + b"\n"


# Calls of allowed globals that raise when torch 2.13 makes them (checked in tests/checkpoint/test_checkpoint_verdict_torch.py),
# and two that do not: a protocol-2 pickle body (after PROTO) each.
FAILING_CALLS = {
    "OrderedDict(5)": _g(b"collections", b"OrderedDict") + b"K\x05\x85R.",
    "OrderedDict(1, 2)": _g(b"collections", b"OrderedDict") + b"K\x01K\x02\x86R.",
    "set(5)": _g(b"builtins", b"set") + b"K\x05\x85R.",
    "torch.device('nonsense')": _g(b"torch", b"device") + b"X\x08\x00\x00\x00nonsense\x85R.",
    "torch.device('cuda:x')": _g(b"torch", b"device") + b"X\x06\x00\x00\x00cuda:x\x85R.",
    "torch.device('cuda:01')": _g(b"torch", b"device") + b"X\x07\x00\x00\x00cuda:01\x85R.",
    "torch.device(5.0)": _g(b"torch", b"device") + b"G@\x14\x00\x00\x00\x00\x00\x00\x85R.",
    "torch.Size(5)": _g(b"torch", b"Size") + b"K\x05\x85R.",
    "_rebuild_tensor_v2 of 3 arguments": _g(b"torch._utils", b"_rebuild_tensor_v2") + b"K\x01K\x02K\x03\x87R.",
    "OrderedDict of an int argument list": _g(b"collections", b"OrderedDict") + b"K\x01R.",
    "set of 6 arguments, spelled __builtin__.set": _g(b"__builtin__", b"set") + b"(K\x01K\x02K\x03K\x04K\x05K\x06tR.",
    "OrderedDict of a 1-tuple of a str": _g(b"collections", b"OrderedDict") + b"X\x03\x00\x00\x00abc\x85\x85R.",
    "set of a list holding a list": _g(b"builtins", b"set") + b"]]a\x85R.",
    "a storage class called": _g(b"torch", b"FloatStorage") + b")R.",
    "_rebuild_tensor_v2 of no arguments": _g(b"torch._utils", b"_rebuild_tensor_v2") + b")R.",
    "_rebuild_tensor_v2 of a tuple for its storage": cb.dumps(cb.Reduce(cb.glob("torch._utils", "_rebuild_tensor_v2"), (
        ("a",), 0, (2,), (1,), False, collections.OrderedDict())))[2:],
    "_rebuild_tensor_v2 with an int for requires_grad": cb.dumps(cb.Reduce(cb.glob("torch._utils", "_rebuild_tensor_v2"), (
        cb.Storage("0", 216), 0, (216,), (1,), 1, collections.OrderedDict())))[2:],
    "_rebuild_tensor_v3 with a storage class for its dtype": cb.dumps(cb.Reduce(cb.glob("torch._utils", "_rebuild_tensor_v3"), (
        cb.Storage("0", 216), 0, (216,), (1,), False, collections.OrderedDict(), cb.glob("torch", "FloatStorage"))))[2:],
    "_rebuild_tensor_v2 with 3 sizes and 2 strides": cb.dumps(cb.Reduce(cb.glob("torch._utils", "_rebuild_tensor_v2"), (
        cb.Storage("0", 216), 0, (6, 6, 6), (36, 6), False, collections.OrderedDict())))[2:],
    "NEWOBJ of a function": _g(b"torch._utils", b"_rebuild_tensor_v2") + b")\x81.",
    "_rebuild_tensor_v2 with a float in its size": cb.dumps({"w": cb.Tensor(cb.Storage("0", 216), (1.0,), stride=(1,))})[2:],
}
PASSING_CALLS = {
    "torch.device('cpu')": _g(b"torch", b"device") + b"X\x03\x00\x00\x00cpu\x85R.",
    "torch.Size((1, 2))": _g(b"torch", b"Size") + b"K\x01K\x02\x86\x85R.",
    "OrderedDict([])": _g(b"collections", b"OrderedDict") + b"]\x85R.",
}


def _cnn_storage_pid(*extra, kind=("torch", "FloatStorage"), key="0", location="cpu", numel=None):
    numel = cb.storages_in(cb.cnn())["0"].numel if numel is None else numel
    return ("storage", cb.glob(*kind) if kind else None, key, location, numel) + extra


def _tensor_on(pid, size=(2,)):
    return cb.dumps({"w": cb.Tensor(cb.RawPid(pid), size)})


def _cnn_numel():
    return cb.storages_in(cb.cnn())["0"].numel


# Files whose every global is allowed and which torch 2.13 refuses with weights_only=True (found by the differential
# harness, tests/checkpoint_differential.py): name -> (a torch zip of the CNN with this data.pkl, words of the reason).
# Checked against torch in tests/checkpoint/test_checkpoint_verdict_torch.py.
REFUSED = {
    "persistent id whose storage type is builtins.set": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(kind=("builtins", "set")))), "storage type is builtins.set"),
    "persistent id whose storage type is a function": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(kind=("torch._utils", "_rebuild_tensor_v2")))), "storage type"),
    "persistent id whose storage type is torch.Size": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(kind=("torch", "Size")))), "storage type is torch.Size"),
    "persistent id of 6 items in a zip": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(None))), "6 items, where torch unpacks 5"),
    "persistent id whose key is an OrderedDict": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(key=collections.OrderedDict()))), "storage key is a Call"),
    "persistent id whose element count is a str": (
        zip_with_data_pkl(_tensor_on(_cnn_storage_pid(numel="216"))), "element count is a str"),
    "BUILD on a tensor (Tensor.set_ of a str)": (zip_with_data_pkl(cb.dumps({"w": cb.Reduce(
        cb.glob("torch._utils", "_rebuild_tensor_v2"), (cb.Storage("0", _cnn_numel()), 0, (2,), (1,), False,
                                                        collections.OrderedDict()), state="x")})), "BUILD on the tensor"),
    "a 0-d tensor past the end of its storage": (zip_with_data_pkl(cb.dumps({"w": cb.Tensor(
        cb.Storage("0", _cnn_numel()), (), offset=_cnn_numel() + 1)})), "reaches element"),
    "a .storage_alignment record that is no number": (raw_zip([
        (e[0], b"6x4") + tuple(e[2:]) if e[0].endswith(b"/.storage_alignment") else e for e in cnn_entries()]),
        "storage_alignment record"),
    "STOP on an empty stack": (zip_with_data_pkl(b"\x80\x02."), "incomplete"),
    "a dict key that is an OrderedDict": (zip_with_data_pkl(
        b"\x80\x02}" + _g(b"collections", b"OrderedDict") + b")RK\x01s."), "not hashable"),
}


def storage_record_as_directory(key: str = "0") -> bytes:
    """A torch zip of the CNN whose ``data/<key>`` record has the DOS directory attribute (0x10) in the central
    directory: miniz reads nothing for it, and torch 2.13 loads the tensor from a buffer it never filled."""
    import io

    src = zipfile.ZipFile(io.BytesIO(cb.torch_zip(cb.cnn())))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            if info.filename.endswith("/data/" + key):
                info.external_attr = 0xFF
            out.writestr(info, src.read(info.filename))
    return buf.getvalue()
