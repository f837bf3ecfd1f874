"""Crafted hostile checkpoints (issue 26), built without torch: byte strings that torch 2.13 and pickle read one way
and a careless reader another. Each builder says what torch does with the file; the verdict tests
(tests/checkpoint/test_checkpoint_verdict.py) and the differential harness of the `torch` session both use them.

``CALL`` is the payload: ``posix.system('true')`` (harmless to run, and what a scanner must call unsafe)."""

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


def raw_zip(entries, comment=b""):
    """A stored zip of ``entries`` [(name bytes, data)] written by hand (names may repeat or hold NUL bytes; zipfile
    would refuse or warn), central directory after the data; returns the bytes."""
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        offset = len(out)
        crc = zipfile.crc32(data) & 0xFFFFFFFF
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0) + name + data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(name),
                               0, 0, 0, 0, 0, offset) + name
    n = len(entries)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), len(out), len(comment)) + comment
    return bytes(out + central + end)


def cnn_entries(prefix: bytes = b"archive", data_pkl: bytes = None):
    """The entries of a torch zip of the CNN state_dict, in torch's order."""
    sd = cb.cnn()
    entries = [(prefix + b"/data.pkl", data_pkl if data_pkl is not None else cb.dumps(sd)),
               (prefix + b"/.format_version", b"1"), (prefix + b"/.storage_alignment", b"64"),
               (prefix + b"/byteorder", b"little")]
    for key, s in cb.storages_in(sd).items():
        entries.append((prefix + b"/data/" + key.encode(), cb.pattern(key, s.nbytes)))
    entries += [(prefix + b"/version", b"3\n"), (prefix + b"/.data/serialization_id", b"1234567890" * 4)]
    return entries
