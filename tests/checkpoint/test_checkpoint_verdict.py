"""The safety verdict of `checkpoint inspect` (issue 26): safe, unsafe (exit 3) or inconclusive (exit 4), fail closed.

Every file here is built without torch (tests/checkpoint_builders.py, tests/checkpoint_hostile.py); nothing is loaded.
"""

import pytest

import checkpoint_builders as cb
from cudaenv.checkpoint.analyze import build_report, inspect_file
from cudaenv.checkpoint.container import open_container
from cudaenv.checkpoint.nodes import Limits


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_a_plain_state_dict_is_safe_and_exits_0(tmp_path, cli):
    path = write(tmp_path, "sd.pt", cb.torch_zip(cb.cnn()))
    r = inspect_file(path)
    assert (r.verdict, r.verdict_reasons, r.weights_only) == ("safe", (), True)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 0 and "verdict: safe" in res.out


@pytest.mark.parametrize("module,name", [("os", "system"), ("cProfile", "run"), ("uuid", "_get_command_stdout"),
                                         ("imaplib", "IMAP4_stream"), ("torch.storage", "_load_from_bytes"),
                                         ("__main__", "CNN")])
def test_any_global_outside_the_allowlist_is_unsafe_exit_3(tmp_path, cli, module, name):
    """An allow-list, not a deny-list: cProfile.run or imaplib.IMAP4_stream (scanner bypasses, in no deny-list of
    cudaenv's) are as unsafe as os.system (exit 1 'not allowed' before)."""
    sd = cb.cnn()
    sd["x"] = cb.Reduce(cb.glob(module, name), ("id",))
    path = write(tmp_path, "evil.pt", cb.torch_zip(sd))
    r = inspect_file(path)
    assert r.verdict == "unsafe" and r.weights_only is False
    assert any("%s.%s" % (module, name) in x.why and x.where == "archive/data.pkl" for x in r.verdict_reasons)
    res = cli("checkpoint", "inspect", path)
    assert res.code == 3 and "UNSAFE" in res.out


def test_a_bound_that_is_hit_is_inconclusive_never_yes(tmp_path):
    """The walk stops at the opcode bound before the end: nothing after it was seen (it was weights_only 'no' with
    an exit 1 and no word that the rest was unseen)."""
    sd = cb.state_dict([("w%d" % i, cb.Tensor(cb.Storage(str(i), 4), (4,))) for i in range(300)], [""])
    path = write(tmp_path, "sd.pt", cb.torch_zip(sd))
    assert inspect_file(path).verdict == "safe"
    r = build_report(open_container(path, Limits(max_ops=1000)))
    assert r.verdict == "inconclusive" and r.weights_only is False
    assert r.verdict_reasons[0].where.startswith("archive/data.pkl, byte ")
    assert "more than 1000 opcodes" in r.verdict_reasons[0].why


def test_a_file_of_zeros_is_not_a_checkpoint_and_nothing_in_it_runs(tmp_path):
    path = write(tmp_path, "z.pt", bytes(1 << 20))
    r = inspect_file(path)
    assert r.format == "unknown" and r.verdict is None and r.weights_only is False


# ---------------------------------------------------------------- the walker accepts every argument pickle accepts
import io  # noqa: E402
import pickle  # noqa: E402

import checkpoint_hostile as ch  # noqa: E402


class _Recorder(pickle.Unpickler):
    """pickle's own C unpickler, with find_class recording the name and returning a harmless callable: proof that
    pickle reads the prelude and reaches the payload, without running anything."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data))
        self.found = []

    def find_class(self, module, name):
        self.found.append("%s.%s" % (module, name))
        return lambda *a: None


@pytest.mark.parametrize("case", sorted(ch.PRELUDES))
def test_pickle_itself_reads_each_prelude_and_reaches_the_call(case):
    data = ch.pickle_with(ch.PRELUDES[case])
    u = _Recorder(data)
    u.load()
    assert u.found == [ch.CALL_NAME]


@pytest.mark.parametrize("case", sorted(ch.PRELUDES))
def test_a_prelude_pickle_accepts_does_not_hide_the_call_in_data_pkl(tmp_path, cli, case):
    """Each argument stopped the walk before (a note, exit 1, no SECURITY line) while torch ran posix.system."""
    path = write(tmp_path, "evil.pt", ch.zip_with_data_pkl(ch.pickle_with(ch.PRELUDES[case])))
    r = inspect_file(path)
    assert r.verdict == "unsafe" and r.weights_only is False
    assert [x.where for x in r.verdict_reasons if ch.CALL_NAME in x.why] == ["archive/data.pkl"]
    assert cli("checkpoint", "inspect", path).code == 3


@pytest.mark.parametrize("case", sorted(ch.PRELUDES))
def test_a_prelude_pickle_accepts_does_not_hide_the_call_in_a_plain_pickle(tmp_path, case):
    r = inspect_file(write(tmp_path, "evil.pkl", ch.pickle_with(ch.PRELUDES[case])))
    assert r.format == "pickle" and r.verdict == "unsafe"
    assert any(ch.CALL_NAME in x.why for x in r.verdict_reasons)


@pytest.mark.parametrize("case", sorted(ch.PRELUDES))
def test_a_leading_pickle_before_a_zip_is_the_pickle_torch_reads(tmp_path, case):
    """torch.load unpickles a file that does not start with PK\\x03\\x04 from byte 0: the leading pickle runs. It was
    called 'bytes before the zip archive' (mended by fix), the zip's benign data.pkl judged instead."""
    r = inspect_file(write(tmp_path, "lead.pt", ch.leading_pickle_then_zip(ch.pickle_with(ch.PRELUDES[case]))))
    assert r.verdict == "unsafe" and any(ch.CALL_NAME in x.why for x in r.verdict_reasons)
    assert not r.mended_by_fix and not any("bytes before the zip" in p for p in r.inconsistencies)


def test_a_memoized_long_name_is_joined_once_not_per_reference(tmp_path, monkeypatch):
    """100,000 STACK_GLOBALs of one memoized 1 MiB string (a 1.6 MB file took 86 s): one Global (the one join of
    module and name) is made per name, not per reference. Counted work: the Globals made."""
    from cudaenv.checkpoint import careful, nodes, pickle_vm

    made = []

    class Counting(nodes.Global):
        def __init__(self, module, name):
            made.append(1)
            super().__init__(module, name)

    monkeypatch.setattr(careful, "Global", Counting)
    res = pickle_vm.walk(ch.memoized_global_name(100_000))
    assert res.complete and list(res.globals.values()) == [100_000] and len(made) == 1
    r = inspect_file(write(tmp_path, "g.pkl", ch.memoized_global_name(100_000)))
    assert r.verdict == "unsafe" and len(r.globals) == 1


# ---------------------------------------------------------------- read what torch reads (miniz, not zipfile)
def test_a_duplicate_data_pkl_is_never_safe_and_names_the_hostile_one(tmp_path, cli):
    """Two data.pkl entries, the hostile one first: zipfile (and cudaenv before) read the last, benign one and said
    'weights_only: yes', exit 0; torch's miniz may read either (a binary search over a heap-sorted index)."""
    for hostile_first in (True, False):
        path = write(tmp_path, "dup.pt", ch.duplicate_data_pkl(hostile_first))
        r = inspect_file(path)
        assert r.verdict == "unsafe" and r.weights_only is False
        assert any(ch.CALL_NAME in x.why for x in r.verdict_reasons)
        assert any("2 entries answer to the name data.pkl" in x.why for x in r.verdict_reasons)
        assert cli("checkpoint", "inspect", path).code == 3


def test_two_identical_data_pkl_entries_are_not_ambiguous(tmp_path):
    entries = ch.cnn_entries()
    entries.insert(1, entries[0])
    r = inspect_file(write(tmp_path, "twin.pt", ch.raw_zip(entries)))
    assert r.verdict == "safe" and r.weights_only is True


def test_names_are_looked_up_as_miniz_does_without_regard_to_case(tmp_path):
    """An entry named archive/DATA.PKL is what torch reads for data.pkl (it was 'a zip without data.pkl: not a
    checkpoint', exit 1, while torch ran it)."""
    entries = ch.cnn_entries(data_pkl=ch.EVIL)
    entries[0] = (b"archive/DATA.PKL",) + entries[0][1:]
    r = inspect_file(write(tmp_path, "case.pt", ch.raw_zip(entries)))
    assert r.format == "torch-zip" and r.verdict == "unsafe"
    path = write(tmp_path, "case2.pt", ch.duplicate_data_pkl(True, case=b"Data.pkl"))
    r = inspect_file(path)
    assert r.verdict == "unsafe" and any("ignores ASCII case" in x.why for x in r.verdict_reasons)


def test_a_name_with_a_nul_byte_is_not_data_pkl_for_torch(tmp_path):
    """zipfile cuts archive/data.pkl\\0x to archive/data.pkl, and the last of the two 'data.pkl' (the decoy) was judged;
    torch compares the full name and runs the other."""
    import zipfile

    data = ch.nul_named_decoy()
    assert zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl") == ch.BENIGN  # the reader cudaenv used to be
    r = inspect_file(write(tmp_path, "nul.pt", data))
    assert r.verdict == "unsafe" and any(ch.CALL_NAME in x.why for x in r.verdict_reasons)


def test_the_central_directory_is_read_at_the_offset_stated_as_miniz_does(tmp_path):
    """zipfile shifts the stated offset by what it takes for bytes before the archive and read a benign directory;
    miniz reads the one at the stated offset, whose data.pkl calls posix.system."""
    import zipfile

    data = ch.split_directory(ch.cnn_entries(data_pkl=ch.EVIL), ch.cnn_entries())
    assert zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl") == ch.BENIGN
    r = inspect_file(write(tmp_path, "split.pt", data))
    assert r.verdict == "unsafe" and any(ch.CALL_NAME in x.why for x in r.verdict_reasons)


def test_version_needed_to_extract_is_ignored_as_miniz_does(tmp_path):
    """zipfile refuses 'zip file version 9.9'; miniz never reads that field, and torch runs the pickle (cudaenv said
    'could not be read', exit 1)."""
    entries = [(e[0], e[1], {"version": 99}) for e in ch.cnn_entries(data_pkl=ch.EVIL)]
    r = inspect_file(write(tmp_path, "v99.pt", ch.raw_zip(entries)))
    assert r.format == "torch-zip" and r.verdict == "unsafe"


@pytest.mark.parametrize("options,words", [({"flags": 1}, "encrypted"), ({"flags": 0x40}, "encrypted"),
                                           ({"method": 99}, "compression method 99")])
def test_an_entry_miniz_will_not_read_makes_weights_only_no(tmp_path, options, words):
    """torch fails on these before it unpickles anything (they were 'weights_only: yes'); the pickle is still judged
    (another reader may read it)."""
    r = inspect_file(write(tmp_path, "x.pt", ch.raw_zip(ch.cnn_entries(options=options))))
    assert r.weights_only is False and any(words in x for x in r.weights_only_reasons)


def test_a_multi_disk_archive_is_refused_as_miniz_refuses_it(tmp_path):
    r = inspect_file(write(tmp_path, "md.pt", ch.raw_zip(ch.cnn_entries(), disk=2)))
    assert r.weights_only is False and any("multi-disk" in x for x in r.weights_only_reasons)
    assert r.verdict == "safe"  # its pickle, read as zipfile reads it, is the benign state_dict


@pytest.mark.parametrize("version,byteorder,words", [
    (None, b"little", "no archive/version record"), (b"99\n", b"little", "says '99"), (b"0\n", b"little", "says '0"),
    (b"x\n", b"little", "says 'x"), (b"3\n", b"middle", "'Unknown endianness type'")])
def test_the_records_torch_checks_first_are_part_of_weights_only(tmp_path, version, byteorder, words):
    r = inspect_file(write(tmp_path, "r.pt", ch.raw_zip(ch.cnn_entries(version=version, byteorder=byteorder))))
    assert r.weights_only is False and any(words in x for x in r.weights_only_reasons), r.weights_only_reasons


def test_a_data_version_record_is_read_before_version(tmp_path):
    """inline_container.cc reads .data/version when there is one: a good version record does not save a bad one."""
    entries = ch.cnn_entries() + [(b"archive/.data/version", b"99\n")]
    r = inspect_file(write(tmp_path, "dv.pt", ch.raw_zip(entries)))
    assert r.weights_only is False and any(".data/version record says '99" in x for x in r.weights_only_reasons)


def test_every_zip_rule_of_the_table_is_followed_somewhere_in_the_reader():
    """data/checkpoint_zip_rules.txt is the table of torch's archive rules; each row's id is named where the reader
    follows it (so a row cannot be added without the code, nor the code lose a rule silently)."""
    import pathlib

    from cudaenv.core.resources import load_table
    import cudaenv.checkpoint.container as container
    import cudaenv.checkpoint.reading as reading
    import cudaenv.checkpoint.zipdir as zipdir

    code = "".join(pathlib.Path(m.__file__).read_text() for m in (container, zipdir, reading))
    rules = [r["rule"] for r in load_table("checkpoint_zip_rules")["rows"]]
    assert len(rules) >= 15 and [r for r in rules if r not in code] == []


# ---------------------------------------------------------------- allow-list, dotted names, the pickle rules
def _stack_global(module: bytes, name: bytes, call: bool = True) -> bytes:
    """Protocol 4: SHORT_BINUNICODE module, SHORT_BINUNICODE name, STACK_GLOBAL (then a call of it with 'true')."""
    out = b"\x80\x04\x8c" + bytes([len(module)]) + module + b"\x8c" + bytes([len(name)]) + name + b"\x93"
    return out + (b"\x8c\x04true\x85R." if call else b".")


def test_a_dotted_name_is_resolved_as_cpython_does(tmp_path):
    """torch + serialization.os.system (protocol 4 follows the attribute chain to os.system): outside the allowlist,
    so unsafe, and named as what it reaches (it was 'not allowed', exit 1)."""
    r = inspect_file(write(tmp_path, "dot.pkl", _stack_global(b"torch", b"serialization.os.system")))
    assert r.verdict == "unsafe"
    assert any("torch.serialization.os.system" in x.why and "can run code" in x.why for x in r.verdict_reasons)


def test_an_allowlisted_name_reached_through_a_dotted_path_is_not_called_safe(tmp_path):
    r = inspect_file(write(tmp_path, "dot.pkl", _stack_global(b"torch", b"_utils._rebuild_tensor_v2", call=False)))
    assert r.verdict == "inconclusive" and any("dotted attribute path" in x.why for x in r.verdict_reasons)


def test_setitems_with_an_odd_count_is_where_pickle_stops():
    """pickle raises 'odd number of items for SETITEMS' (and torch's unpickler fails); the walk dropped the last item
    and went on, so the file was weights_only yes."""
    from cudaenv.checkpoint import pickle_vm

    for data in (b"\x80\x02}(K\x01K\x02K\x03u.", b"\x80\x02(K\x01K\x02K\x03d."):
        for walk in (pickle_vm.walk, pickle_vm.reference_walk):
            res = walk(data)
            assert not res.complete and res.fails and "odd number of items" in res.notes[-1]


def test_setitems_with_an_odd_count_makes_weights_only_no(tmp_path):
    sd = cb.dumps(cb.cnn())
    bad = sd.replace(b"u}", b"K\x07u}", 1)  # one more item before the state_dict's SETITEMS
    assert bad != sd
    r = inspect_file(write(tmp_path, "odd.pt", cb.torch_zip(cb.cnn(), data_pkl=bad)))
    assert r.weights_only is False and r.verdict == "safe"


def test_build_with_state_on_a_torch_device_makes_weights_only_no(tmp_path):
    """torch.device has no __setstate__ and no __dict__: BUILD raises (it was weights_only yes)."""
    sd = cb.cnn()
    sd["dev"] = cb.Reduce(cb.glob("torch", "device"), ("cpu",), {"x": 1})
    r = inspect_file(write(tmp_path, "dev.pt", cb.torch_zip(sd)))
    assert r.weights_only is False and any("BUILD on the result of torch.device" in x for x in r.weights_only_reasons)


# ---------------------------------------------------------------- legacy tar checkpoints
@pytest.mark.parametrize("ustar", [True, False])
def test_a_legacy_tar_is_walked_member_by_member(tmp_path, ustar):
    """torch.load tries tarfile first for a file that is not a zip (a v7 header without the ustar magic too), and
    unpickles storages, tensors and pickle: a call in any is unsafe (the tar was named and not read, and without
    the magic called a plain pickle)."""
    import tarfile

    benign = ch.legacy_tar(ustar=ustar)
    assert tarfile.open(fileobj=io.BytesIO(benign)).getmember("storages").size > 0
    if not ustar:
        assert benign[257:262] != b"ustar"
    r = inspect_file(write(tmp_path, "ok.tar", benign))
    assert r.format == "torch-legacy-tar" and r.verdict == "safe" and r.weights_only is False
    for data, where in ((ch.legacy_tar(pickle_member=ch.EVIL, ustar=ustar), "legacy tar member pickle"),
                        (ch.legacy_tar(count_pickle=ch.COUNT_CALL, ustar=ustar), "legacy tar member storages, count")):
        r = inspect_file(write(tmp_path, "evil.tar", data))
        assert r.format == "torch-legacy-tar" and r.verdict == "unsafe"
        assert any(ch.CALL_NAME in x.why and x.where == where for x in r.verdict_reasons), r.verdict_reasons


# ---------------------------------------------------------------- bounded work (counted, never timed)
def test_a_10_gb_file_of_zeros_is_judged_from_its_first_bytes(tmp_path, bytes_read):
    """Zeros: the first byte is no pickle opcode, pickle stops there. It read 512 MiB (64 KiB, then 4 times more
    each walk) to say 'not a checkpoint'."""
    path = tmp_path / "zeros.pt"
    with open(path, "wb") as fh:
        fh.truncate(10 * 1024 ** 3)  # sparse: no disk used
    r = inspect_file(str(path))
    assert r.format == "unknown" and r.verdict is None
    assert 0 < bytes_read[0] < 1024 * 1024


def test_a_long_plain_pickle_is_walked_at_most_twice(tmp_path, monkeypatch):
    """A plain pickle longer than the first 64 KiB read is read whole once more and walked once more: it was
    re-walked from byte 0 at 64 KiB, 256 KiB, 1 MiB, ... (a 600 MB pickle: 24 s and 800 MB)."""
    import pickle as pk

    from cudaenv.checkpoint import container

    data = pk.dumps([list(range(200)) for _ in range(3000)], 2)  # a few MB of opcodes
    assert len(data) > 1 << 20
    walked = []
    real = container.pickle_vm.walk
    monkeypatch.setattr(container.pickle_vm, "walk", lambda buf, *a, **k: walked.append(len(buf)) or real(buf, *a, **k))
    r = inspect_file(write(tmp_path, "long.pkl", data))
    assert r.format == "pickle" and r.verdict == "safe"
    assert len(walked) == 2 and sum(walked) == 64 * 1024 + len(data)


def test_a_pickle_longer_than_the_read_cap_is_inconclusive(tmp_path, monkeypatch):
    import pickle as pk

    from cudaenv.checkpoint import reading

    monkeypatch.setattr(reading, "MAX_PICKLE", 256 * 1024)
    data = pk.dumps([list(range(200)) for _ in range(3000)], 2)
    r = inspect_file(write(tmp_path, "long.pkl", data))
    assert r.verdict == "inconclusive" and any("longer than the 262144 bytes read" in x.why for x in r.verdict_reasons)


@pytest.mark.parametrize("name", sorted(ch.FAILING_CALLS))
def test_a_call_of_an_allowed_global_that_raises_makes_weights_only_no(tmp_path, name):
    """An OrderedDict of an int, a torch.device of a string that is none: all globals allowed, and torch raises
    when it makes the call (they were weights_only yes)."""
    r = inspect_file(write(tmp_path, "c.pt", ch.zip_with_data_pkl(b"\x80\x02" + ch.FAILING_CALLS[name])))
    assert r.weights_only is False and any("raises when torch calls it" in x for x in r.weights_only_reasons)
    assert r.verdict == "safe"


@pytest.mark.parametrize("name", sorted(ch.PASSING_CALLS))
def test_a_call_of_an_allowed_global_that_works_stays_yes(tmp_path, name):
    r = inspect_file(write(tmp_path, "c.pt", ch.zip_with_data_pkl(b"\x80\x02" + ch.PASSING_CALLS[name])))
    assert r.weights_only is True and r.verdict == "safe"


def test_a_leading_pickle_the_walk_could_not_finish_is_not_mended_by_fix(tmp_path):
    """The pickle in front of a zip stops the walk at a bound (no global seen yet): it is what torch.load runs, so
    the verdict is inconclusive and a rewrite of the zip behind it must not 'mend' it away."""
    lead = b"\x80\x02" + b"N0" * 1500 + ch.CALL + b"."
    path = write(tmp_path, "lead.pt", lead + cb.torch_zip(cb.cnn()))
    r = build_report(open_container(path, Limits(max_ops=1000)))
    assert r.verdict == "inconclusive" and not r.mended_by_fix
    assert any("read by torch.load as a pickle" in p for p in r.inconsistencies)
    assert inspect_file(path).verdict == "unsafe"  # walked whole (default bounds): the call is seen


# ---------------------------------------------------------------- found by mutating real torch.save files (torch 2.13)
def test_a_tensor_past_its_storage_makes_weights_only_no(tmp_path):
    """set_ raises 'out of bounds for storage of size ...' (the problem was named, and weights_only still yes)."""
    sd = cb.state_dict([("w", cb.Tensor(cb.Storage("0", 4), (8,)))], [""])
    r = inspect_file(write(tmp_path, "v.pt", cb.torch_zip(sd)))
    assert r.weights_only is False and any("reaches element 8 of storage 0" in x for x in r.weights_only_reasons)


def test_a_storage_record_miniz_will_not_read_makes_weights_only_no(tmp_path):
    entries = ch.cnn_entries()
    at = [i for i, e in enumerate(entries) if e[0] == b"archive/data/2"][0]
    entries[at] = (entries[at][0], entries[at][1], {"method": 99})
    r = inspect_file(write(tmp_path, "m.pt", ch.raw_zip(entries)))
    assert r.weights_only is False and any("record data/2: it uses compression method 99" in x for x in r.weights_only_reasons)


def test_a_record_name_that_is_not_utf8_makes_weights_only_no(tmp_path):
    """get_all_records hands torch.load each name as str: UnicodeDecodeError."""
    entries = ch.cnn_entries() + [(b"archive/\xa6x", b"1")]
    r = inspect_file(write(tmp_path, "n.pt", ch.raw_zip(entries)))
    assert r.weights_only is False and any("not UTF-8" in x for x in r.weights_only_reasons)


def test_a_legacy_file_torch_refuses_is_weights_only_no(tmp_path):
    """A protocol version other than 1001, a storage count that is not the storage's: 'Invalid protocol version',
    'storage has wrong byte size' (named, and weights_only still yes)."""
    import pickle as pk
    import struct

    good = cb.legacy_file(cb.cnn())
    assert inspect_file(write(tmp_path, "ok.pt", good)).weights_only is True
    bad_protocol = good.replace(pk.dumps(1001, 2), pk.dumps(912, 2), 1)
    r = inspect_file(write(tmp_path, "p.pt", bad_protocol))
    assert r.weights_only is False and any("legacy protocol version 912" in x for x in r.weights_only_reasons)
    first = len(good) - sum(8 + s.nbytes for s in cb.storages_in(cb.cnn()).values())
    count = struct.unpack_from("<q", good, first)[0]
    bad_count = good[:first] + struct.pack("<q", count + 1) + good[first + 8:]
    r = inspect_file(write(tmp_path, "c.pt", bad_count))
    assert r.weights_only is False and any("records %d elements" % (count + 1) in x for x in r.weights_only_reasons)


def test_a_small_record_whose_local_header_is_gone_makes_weights_only_no(tmp_path):
    """torch reads .format_version and the other small records through miniz too: 'invalid header or archive is
    corrupted' (it was a note, and weights_only yes)."""
    data = bytearray(ch.raw_zip(ch.cnn_entries()))
    at = data.index(b"archive/.format_version") - 30
    assert data[at:at + 4] == b"PK\x03\x04"
    data[at:at + 4] = b"XX\x03\x04"
    r = inspect_file(write(tmp_path, "h.pt", bytes(data)))
    assert r.weights_only is False and any("local header of archive/.format_version" in x for x in r.weights_only_reasons)


@pytest.mark.parametrize("name", sorted(ch.REFUSED))
def test_what_torch_refuses_past_the_allowlist_is_weights_only_no(tmp_path, name):
    """Persistent ids torch's persistent_load cannot read, a BUILD on a tensor, a 0-d view past its storage, STOP on
    an empty stack, an unhashable dict key: every global allowed, torch refuses each (the differential harness found
    them judged safe and weights_only yes)."""
    data, words = ch.REFUSED[name]
    r = inspect_file(write(tmp_path, "c.pt", data))
    assert r.weights_only is False, r.weights_only_reasons
    assert any(words in x for x in r.weights_only_reasons), r.weights_only_reasons
    assert r.verdict in ("safe", "inconclusive")


@pytest.mark.parametrize("elements", [-5, 1 << 60])
def test_a_legacy_tar_storage_size_out_of_the_member_is_judged_not_a_crash(tmp_path, elements):
    """A storage of the legacy tar whose element count points before the entry or past the member's end (the
    harness found inspect raising OSError on a seek there): the verdict names it, weights_only is no."""
    r = inspect_file(write(tmp_path, "t.tar", ch.legacy_tar(elements=elements)))
    assert r.weights_only is False
    assert any("below zero" in x.why for x in r.verdict_reasons) if elements < 0 else any(
        "runs past the member's end" in n for n in r.notes)


def test_a_storage_record_miniz_takes_for_a_directory_is_weights_only_no(tmp_path):
    """torch loads it, but the tensor is memory miniz never filled, not the record's bytes (the harness found `fix`
    'changing the data' of such a file): weights_only no, with the reason."""
    r = inspect_file(write(tmp_path, "d.pt", ch.storage_record_as_directory()))
    assert r.weights_only is False
    assert any("takes it for a directory" in x for x in r.weights_only_reasons), r.weights_only_reasons
