"""Property tests of the readers issue 26 added (hypothesis): the opcode arguments read as pickle's C unpickler reads
them, compared with pickle itself on the same bytes; miniz's directory reader on any bytes (never a crash, only
:class:`Refused`), and on any archive zipfile writes (the same entries); the tar header test against tarfile."""

import io
import pickle
import struct
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaenv.checkpoint import zipdir
from cudaenv.checkpoint.nodes import UNSURE, c_int

NUMBERISH = st.text(alphabet="0123456789_+- \t0xXoObBabcdefL\x00", max_size=30).map(lambda s: s.encode("latin-1"))


def _pickle_int(raw: bytes):
    try:
        return ("ok", pickle.loads(b"(I" + raw + b"\nt."))
    except Exception:  # noqa: BLE001 - any refusal of pickle's
        return ("fails", None)


def _pickle_put(raw: bytes):
    try:
        pickle.loads(b"Np" + raw + b"\n.")
        return "ok"
    except Exception:  # noqa: BLE001
        return "fails"


@settings(max_examples=600)
@given(NUMBERISH)
def test_int_is_read_as_pickle_reads_it_or_called_unsure(raw):
    """Never a value pickle would not give, never 'pickle stops' where it goes on."""
    if raw in (b"00", b"01") or b"\n" in raw:
        return
    got, why = c_int(raw, 0, strtol=True)
    kind, value = _pickle_int(raw)
    if got is not None:
        assert kind == "ok" and value == (got,)
    elif why != UNSURE:
        assert kind == "fails"


@settings(max_examples=600)
@given(NUMBERISH)
def test_put_index_is_read_as_pickle_reads_it_or_called_unsure(raw):
    if b"\n" in raw:
        return
    got, why = c_int(raw, 10)
    result = _pickle_put(raw)
    if got is not None and 0 <= got < 1 << 20:  # (a larger index: pickle's memo table may not grow that far; the
        assert result == "ok"                   # walk going on past it sees more than runs, never less)
    elif got is None and why != UNSURE:
        assert result == "fails"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_the_miniz_reader_never_raises_anything_but_refused(data):
    for blob in (data, b"PK\x03\x04" + data, data + b"PK\x05\x06" + bytes(18)):
        try:
            d = zipdir.read_central_directory(io.BytesIO(blob), len(blob))
        except zipdir.Refused:
            continue
        assert all(e.header_offset + 30 <= len(blob) or e.compress_size == 0xFFFFFFFF for e in d.entries)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(alphabet="abcXYZ./_0", min_size=1, max_size=12), st.binary(max_size=64)),
                min_size=1, max_size=8))
def test_the_miniz_reader_reads_what_zipfile_writes(items):
    import warnings

    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # a repeated name
        for name, data in items:
            zf.writestr("archive/" + name, data)
    blob = buf.getvalue()
    d = zipdir.read_central_directory(io.BytesIO(blob), len(blob))
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        assert [(e.name, e.header_offset, e.file_size) for e in d.entries] == [
            (i.filename, i.header_offset, i.file_size) for i in zf.infolist()]


@settings(max_examples=300)
@given(st.binary(min_size=512, max_size=512))
def test_the_tar_header_test_agrees_with_tarfile(block):
    import tarfile

    from cudaenv.checkpoint.legacytar import tar_header

    try:
        tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        taken = True
    except tarfile.HeaderError:
        taken = False
    if tar_header(block):
        assert taken
    chk = struct.pack("8s", b"%06o\x00 " % (sum(block[:148]) + sum(block[156:]) + 256))
    good = block[:148] + chk + block[156:]
    try:
        tarfile.TarInfo.frombuf(good, "utf-8", "surrogateescape")
        assert tar_header(good) or good.count(0) == 512
    except tarfile.HeaderError:
        pass
