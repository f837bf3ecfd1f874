"""The crafted hostile files of tests/checkpoint_hostile.py against the real torch 2.13 (`nox -s torch`): whatever
torch reads, inspect's verdict must agree. The payload is posix.system('true'), replaced for the test by a recorder
(nothing runs): a call under weights_only=False must be an 'unsafe' verdict, and a file torch refuses with
weights_only=True must never be 'weights_only: yes'."""

import io
import posix
import warnings

import pytest

torch = pytest.importorskip("torch")

import checkpoint_hostile as ch  # noqa: E402
from cudaenv.checkpoint.analyze import inspect_file  # noqa: E402

pytestmark = pytest.mark.torch


def _cases():
    cases = {
        "duplicate data.pkl, hostile first": ch.duplicate_data_pkl(True),
        "duplicate data.pkl, hostile last": ch.duplicate_data_pkl(False),
        "duplicate data.pkl in another case": ch.duplicate_data_pkl(True, case=b"Data.pkl"),
        "DATA.PKL only": ch.raw_zip([(b"archive/DATA.PKL",) + ch.cnn_entries(data_pkl=ch.EVIL)[0][1:]] + ch.cnn_entries()[1:]),
        "NUL-named decoy": ch.nul_named_decoy(),
        "two central directories": ch.split_directory(ch.cnn_entries(data_pkl=ch.EVIL), ch.cnn_entries()),
        "version needed 9.9": ch.raw_zip([(e[0], e[1], {"version": 99}) for e in ch.cnn_entries(data_pkl=ch.EVIL)]),
        "encrypted data.pkl": ch.raw_zip(ch.cnn_entries(data_pkl=ch.EVIL, options={"flags": 1})),
        "method 99": ch.raw_zip(ch.cnn_entries(options={"method": 99})),
        "multi-disk": ch.raw_zip(ch.cnn_entries(data_pkl=ch.EVIL), disk=2),
        "no version record": ch.raw_zip(ch.cnn_entries(version=None)),
        "version 99": ch.raw_zip(ch.cnn_entries(version=b"99\n")),
        "byteorder middle": ch.raw_zip(ch.cnn_entries(byteorder=b"middle")),
        ".data/version 99": ch.raw_zip(ch.cnn_entries() + [(b"archive/.data/version", b"99\n")]),
        "identical twins": ch.raw_zip([ch.cnn_entries()[0]] + ch.cnn_entries()),
        "benign": ch.raw_zip(ch.cnn_entries()),
        "BUILD with state on torch.device": ch.zip_with_data_pkl(b"\x80\x02ctorch\ndevice\nX\x03\x00\x00\x00cpu\x85R}X\x01\x00\x00\x00xK\x01sb."),
        "BUILD with an empty state on torch.device": ch.zip_with_data_pkl(b"\x80\x02ctorch\ndevice\nX\x03\x00\x00\x00cpu\x85R}b."),
        "SETITEMS with an odd count": ch.zip_with_data_pkl(b"\x80\x02}(K\x01K\x02K\x03u."),
        "DICT with an odd count": ch.zip_with_data_pkl(b"\x80\x02(K\x01K\x02K\x03d."),
    }
    for name, data in ch.FAILING_CALLS.items():
        cases["call that raises: " + name] = ch.zip_with_data_pkl(b"\x80\x02" + data)
    for name, (data, _) in ch.REFUSED.items():
        cases["refused: " + name] = data
    for name, data in ch.PASSING_CALLS.items():
        cases["call that works: " + name] = ch.zip_with_data_pkl(b"\x80\x02" + data)
    for k, v in ch.PRELUDES.items():
        cases["data.pkl with " + k] = ch.zip_with_data_pkl(ch.pickle_with(v))
        cases["leading pickle with " + k] = ch.leading_pickle_then_zip(ch.pickle_with(v))
        cases["plain pickle with " + k] = ch.pickle_with(v)
    return cases


CASES = _cases()


def _load(data, weights_only, monkeypatch):
    calls = []
    monkeypatch.setattr(posix, "system", lambda cmd: calls.append(cmd) or 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.load(io.BytesIO(data), weights_only=weights_only)
            error = None
        except Exception as exc:  # noqa: BLE001 - what torch raises is the answer
            error = "%s: %s" % (type(exc).__name__, exc)
    return error, calls


@pytest.mark.parametrize("name", sorted(CASES))
def test_inspect_agrees_with_torch(tmp_path, monkeypatch, name):
    data = CASES[name]
    path = tmp_path / "case.pt"
    path.write_bytes(data)
    r = inspect_file(str(path))
    error_wo, _ = _load(data, True, monkeypatch)
    _, calls = _load(data, False, monkeypatch)
    if calls:
        assert r.verdict == "unsafe", (r.verdict, r.verdict_reasons)
    if r.verdict == "safe":
        assert not calls
    if error_wo is not None:
        assert r.weights_only is not True, error_wo
    elif name in ("benign", "identical twins") or name.startswith("call that works"):  # no false alarm on what torch loads (an ambiguous file may be one)
        assert r.weights_only is True and r.verdict == "safe", (r.weights_only_reasons, r.verdict_reasons)


TAR_CASES = {
    "legacy tar": ch.legacy_tar(),
    "legacy tar without the ustar magic": ch.legacy_tar(ustar=False),
    "legacy tar, call in pickle": ch.legacy_tar(pickle_member=ch.EVIL),
    "legacy tar, call in the storage count": ch.legacy_tar(count_pickle=ch.COUNT_CALL),
    "legacy tar without magic, call in the storage count": ch.legacy_tar(count_pickle=ch.COUNT_CALL, ustar=False),
}


@pytest.mark.parametrize("name", sorted(TAR_CASES))
def test_inspect_agrees_with_torch_on_legacy_tar(tmp_path, monkeypatch, name):
    """torch tries tarfile only for a real file (it needs a fileno): loaded by path."""
    path = tmp_path / "case.tar"
    path.write_bytes(TAR_CASES[name])
    r = inspect_file(str(path))
    calls = []
    monkeypatch.setattr(posix, "system", lambda cmd: calls.append(cmd) or 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.load(str(path), weights_only=False)
        except Exception:  # noqa: BLE001 - only the calls matter here
            pass
        with pytest.raises(Exception, match="legacy .tar format"):
            torch.load(str(path), weights_only=True)
    assert r.format == "torch-legacy-tar" and r.weights_only is False
    assert (r.verdict == "unsafe") == bool(calls), (r.verdict, r.verdict_reasons, calls)


@pytest.mark.parametrize("name", sorted(ch.REFUSED))
def test_torch_refuses_every_crafted_refused_file(monkeypatch, name):
    """The files tests/checkpoint/test_checkpoint_verdict.py calls weights_only no: torch 2.13 refuses each."""
    error, calls = _load(ch.REFUSED[name][0], True, monkeypatch)
    assert error is not None and not calls


@pytest.mark.parametrize("name", sorted(ch.FAILING_CALLS))
def test_torch_raises_on_every_failing_call(monkeypatch, name):
    error, _ = _load(ch.zip_with_data_pkl(b"\x80\x02" + ch.FAILING_CALLS[name]), True, monkeypatch)
    assert error is not None
