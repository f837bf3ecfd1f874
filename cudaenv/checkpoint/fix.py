"""``cudaenv checkpoint fix FILE -o OUT``: a copy of a checkpoint that loads here.

For a safe file (a torch zip or legacy file that torch.load(weights_only=True) would load) nothing is executed and
torch is not needed: the walked pickle is changed (storage locations, keys and ``_metadata`` keys, one entry kept),
written back by :mod:`cudaenv.checkpoint.rewrite`, and the storage records are copied byte for byte into a new torch
zip. The result is inspected again before it replaces OUT; it must be weights_only-loadable and consistent.

Anything else is refused unless ``--trust``: then ``cudaenv/_child/checkpoint_fix.py`` runs in the user's Python
(the one the doctor would pick, or ``--python``), loads the file with torch (its code runs) and saves the result.
OUT is always written atomically; FILE is replaced only with ``--in-place``, which keeps ``FILE.bak``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from cudaenv.checkpoint.names import EMA_ENTRIES, WEIGHTS_ENTRIES
from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M, N_, said_again

DEVICE = re.compile(r"^(cpu|cuda(:\d{1,4})?|mps|meta|xpu(:\d{1,4})?)$")
SAFE_FORMATS = ("torch-zip", "torch-legacy")
TRUST_TIMEOUT = 600.0


def then(prefixes: List[str]) -> str:
    """``a then b then c``: the prefixes stripped one after another, as one message."""
    said = prefixes[0] if prefixes else ""
    for p in prefixes[1:]:
        said = M("%s then %s", said, p)
    return said


class Options:
    def __init__(self, map_location: Optional[str] = None, strip: Optional[List[str]] = None, add: Optional[str] = None,
                 extract: Optional[str] = None):
        self.map_location = map_location
        self.strip = list(strip or [])
        self.add = add
        self.extract = extract



def _stored_at(src, entry) -> int:
    """:func:`reading.data_offset`, a damaged local header said as the user's error (nothing is written)."""
    from cudaenv.checkpoint.reading import data_offset

    try:
        return data_offset(src, entry)
    except ValueError as exc:
        raise UserError(M("cannot rewrite: %s", exc))

def rewrite_file(path: str, out_fh, opts: Options, prefix: str) -> List[str]:
    """Write the fixed checkpoint of ``path`` into ``out_fh`` (a seekable binary file); the changes, in words.
    Raises :class:`UserError` for what cannot be rewritten without torch."""
    from cudaenv.checkpoint import graph as G
    from cudaenv.checkpoint import rewrite as R
    from cudaenv.checkpoint.container import open_container
    from cudaenv.host.files import open_regular
    from cudaenv.core.text import printable

    box = open_container(path)
    if box.format not in SAFE_FORMATS or box.pickle is None or not box.pickle.complete:
        raise UserError(M("%s is a %s file: only torch zip and legacy checkpoints are rewritten without torch", printable(path), box.format))
    storages = G.storages_of(box)
    root = box.pickle.root
    changes: List[str] = []
    if opts.extract is not None:
        found = [v for k, v in G.pairs_of(root) if k == opts.extract]
        if not found:
            keys = ", ".join(printable(k) for k, _ in G.pairs_of(root)[:20] if isinstance(k, str))
            raise UserError(M("%s has no top-level entry %s", printable(path), printable(opts.extract)),
                            hint=M("its top-level keys: %s", keys or M("none (not a dict)")))
        root = found[-1]
        changes.append(M("kept only the entry %r", opts.extract))
    an = G.graph(root, storages)
    if opts.strip:
        n_keys = n_meta = 0
        for cpath, obj in an.candidates:
            n, clash = R.rename_pairs(obj.pairs, lambda k: R.strip_key(k, opts.strip), keep_taken=True)
            n_keys += n
            if clash:  # never a value over another: the key stays, and shows as unexpected where it is loaded
                changes.append(M("keys kept as they were in %s, because their name without the prefix is taken: %s",
                                 cpath or M("the top level"), ", ".join(printable(c)[:80] for c in clash[:5])))
            meta = R.metadata_pairs(obj)
            if meta is not None:
                n_meta += R.rename_pairs(meta, lambda k: R.strip_metadata_key(k, opts.strip))[0]
        changes.append(M("stripped %s from %d keys and %d _metadata keys", then(opts.strip), n_keys, n_meta))
    if opts.add:
        n_keys = n_meta = 0
        for cpath, obj in an.candidates:
            if not G.is_model_state_dict(cpath, obj, an):
                continue
            n, clash = R.rename_pairs(obj.pairs, lambda k: opts.add + k, keep_taken=True)
            n_keys += n
            if clash:
                changes.append(M("keys kept as they were in %s, because their name with the prefix is taken: %s",
                                 cpath or M("the top level"), ", ".join(printable(c)[:80] for c in clash[:5])))
            meta = R.metadata_pairs(obj)
            if meta is not None:
                n_meta += R.rename_pairs(meta, lambda k: R.add_metadata_key(k, opts.add))[0]
        changes.append(M("added %s to %d keys and %d _metadata keys", opts.add, n_keys, n_meta))

    used: List[str] = []  # the storage keys, in first-seen order: the new archive's data/0, data/1, ...
    number: Dict[str, str] = {}
    moved: Dict[Any, int] = {}

    def persid(p):
        pid = p.pid
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise UserError(M("a persistent id that is not a storage: not rewritten"))
        if len(pid) == 6 and pid[5] is not None:
            raise UserError(M("a legacy storage view (view_metadata): not rewritten without torch"), hint=M("use --trust"))
        key = pid[2] if isinstance(pid[2], str) else str(pid[2])
        location = pid[3]
        if opts.map_location and location != opts.map_location:
            moved[location] = moved.get(location, 0) + (0 if key in number else 1)
            location = opts.map_location
        if key not in number:
            # torch.save names the records str(len(id_map)) in first-seen order (T:serialization.py:1234): so does
            # the rewrite, whatever the file called them (a key '../../x' never becomes an entry name)
            number[key] = str(len(used))
            used.append(key)
        return ("storage", pid[1], number[key], location, pid[4])

    try:
        data_pkl = R.PickleWriter(persid).dumps(root)
    except R.Unsupported as exc:
        raise UserError(M("cannot rewrite %s without torch: %s", printable(path), exc.args[0] if len(exc.args) == 1 else str(exc)),
                        hint=M("use --trust to rewrite it with torch"))
    for old, n in sorted(moved.items(), key=lambda x: str(x[0])):
        changes.append(M("%d storage%s %s -> %s", n, "" if n == 1 else "s", printable(old), opts.map_location))
    odd = [k for k in used if not (k.isdigit() and k.isascii())]
    if odd and box.format == "torch-zip":
        changes.append(M("storage records renumbered 0..%d as torch.save names them (the file named %s)",
                         len(used) - 1, ", ".join(printable(k)[:40] for k in odd[:3])))
    if box.format == "torch-legacy":
        changes.append(M("legacy format rewritten as a torch zip"))

    zout = R.ZipOut(out_fh)
    zout.write_bytes("%s/data.pkl" % prefix, data_pkl)
    with open_regular(path) as src:
        if box.format == "torch-zip":
            small = {}
            for record in (".format_version", ".storage_alignment", "byteorder", "version", ".data/serialization_id"):
                entry = box.entries.get("%s/%s" % (box.prefix, record))
                if entry is not None and entry.compress_type == 0 and entry.compress_size == entry.file_size <= 4096:
                    src.seek(_stored_at(src, entry))
                    small[record] = src.read(entry.compress_size)
            for record in (".format_version", ".storage_alignment", "byteorder"):
                if record in small:
                    zout.write_bytes("%s/%s" % (prefix, record), small[record])
            for key in used:
                entry = box.entries.get("%s/data/%s" % (box.prefix, key))
                if entry is None or entry.compress_type != 0:
                    raise UserError(M("storage record data/%s is missing or compressed: not rewritten", printable(key)))
                start = _stored_at(src, entry)
                if entry.compress_size != entry.file_size or start + entry.compress_size > box.size:
                    # the zip directory disagrees with itself or with the file: copying would write a wrong record
                    raise UserError(M("storage record data/%s: the zip directory says %d bytes stored, %d bytes long, at "
                                    "byte %d of a %d-byte file: not rewritten", printable(key), entry.compress_size, entry.file_size, start, box.size))
                zout.copy_from("%s/data/%s" % (prefix, number[key]), src, start, entry.compress_size)
            zout.write_bytes("%s/version" % prefix, small.get("version", b"3\n"))
            zout.write_bytes("%s/.data/serialization_id" % prefix, small.get(".data/serialization_id", _serial()))
        else:
            offsets = {}
            offset = box.legacy_data_start or 0
            for key in box.legacy_keys:
                s = storages.get(key)
                if s is None or not isinstance(s.nbytes, int):
                    raise UserError(M("legacy storage %s has no size: not rewritten", printable(key)))
                offsets[key] = (offset + 8, s.nbytes)
                offset += 8 + s.nbytes
            if offset > box.size:
                raise UserError(M("%s is cut short: its storages need %d bytes, it has %d", printable(path), offset, box.size))
            zout.write_bytes("%s/.format_version" % prefix, b"1")
            zout.write_bytes("%s/.storage_alignment" % prefix, b"64")
            zout.write_bytes("%s/byteorder" % prefix, box.markers.get("byteorder", "little").encode())
            for key in used:
                if key not in offsets:
                    raise UserError(M("legacy storage %s is not in the file's key list", printable(key)))
                start, size = offsets[key]
                zout.copy_from("%s/data/%s" % (prefix, number[key]), src, start, size)
            zout.write_bytes("%s/version" % prefix, b"3\n")
            zout.write_bytes("%s/.data/serialization_id" % prefix, _serial())
    zout.close()
    if len(used) < len(storages):
        changes.append(M("%d storage records no longer referenced were left out", len(storages) - len(used)))
    return changes


def _serial() -> bytes:
    return "".join(str(b % 10) for b in os.urandom(40)).encode()


def archive_name(out: str) -> str:
    """The archive prefix torch gives a file: its basename without the last extension (``inline_container.cc``)."""
    base = os.path.basename(out)
    stem = base.rsplit(".", 1)[0] if "." in base[1:] else base
    stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in stem)
    return stem or "archive"


# ------------------------------------------------------------------ the output's format (--to)
PT_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt", ".tar", ".pkl")  # names torch.save files go by


def suffix_format(path: str) -> str:
    """The format a file's name says: ``safetensors`` for ``*.safetensors``, else ``pt`` (a torch.save file)."""
    return "safetensors" if path.lower().endswith(".safetensors") else "pt"


def output_format(out: str, to: Optional[str]) -> str:
    """OUT's format: ``--to`` when given, else OUT's suffix. A ``--to`` that OUT's suffix contradicts (``--to pt``
    with ``x.safetensors``, ``--to safetensors`` with ``x.pt``) is a usage error, said before anything is read."""
    from cudaenv.core.text import printable

    ext = os.path.splitext(out)[1].lower()
    if to is None:
        return suffix_format(out)
    if to == "pt" and ext == ".safetensors":
        raise UserError(M("--to pt, but %s is named as a safetensors file", printable(out)),
                        hint=M("name it for what it holds (-o %s.pt), or --to safetensors", printable(out[:-len(ext)])))
    if to == "safetensors" and ext in PT_SUFFIXES:
        raise UserError(M("--to safetensors, but %s is named as a torch.save file", printable(out)),
                        hint=M("name it for what it holds (-o %s.safetensors), or --to pt", printable(out[:-len(ext)])))
    if to not in ("pt", "safetensors"):
        raise UserError(M("--to %s is not a format", printable(to)), hint=M("--to pt or --to safetensors"))
    return to


# ------------------------------------------------------------------ the whole fix
class Target:
    """Where fix writes: ``path`` (a link's target: written through, the link kept) and what to say about it."""

    def __init__(self, path: str, notes: List[str]):
        self.path = path
        self.notes = notes


def _kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISCHR, N_("a character device")), (stat.S_ISBLK, N_("a block device")),
                       (stat.S_ISFIFO, N_("a FIFO")), (stat.S_ISSOCK, N_("a socket")), (stat.S_ISDIR, N_("a folder"))):
        if test(mode):
            return M(name)
    return M("not a regular file")


def plan_output(path: str, out: Optional[str], in_place: bool) -> Target:
    """Check where the result goes before anything is read or written: OUT (or FILE with ``--in-place``) is a
    regular file or nothing yet, in a folder that exists, and not FILE itself (unless ``--in-place``). A link is
    written through: its target is rewritten and the link stays (``-o /dev/null`` was replaced by a regular file,
    and ``--in-place`` on a link replaced the link)."""
    import stat

    from cudaenv.core.text import printable

    if in_place and out:
        raise UserError(M("give -o OUT or --in-place, not both"))
    if not in_place and not out:
        raise UserError(M("say where to write the result: -o OUT (or --in-place, which keeps FILE.bak)"))
    given = path if in_place else out
    notes: List[str] = []
    target = given
    if os.path.islink(given):
        target = os.path.realpath(given)
        if not os.path.exists(target):
            raise UserError(M("%s is a link to %s, which does not exist", printable(given), printable(target)),
                            hint=M("give the path of a file (or of one to create)"))
        notes.append(M("%s is a link: its target %s was written, the link kept", printable(given), printable(target)))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UserError(M("cannot use %s: %s", printable(given), printable(exc.strerror or exc)))
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(M("%s is a folder", printable(given)), hint=M("give a file path: -o %s/fixed.pt", printable(given)))
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserError(M("%s is %s: fix writes only regular files (it would replace it)", printable(given), _kind(st.st_mode)),
                        hint=M("give the path of a regular file"))
    if not os.path.isdir(os.path.dirname(os.path.abspath(target))):
        raise UserError(M("the folder of %s does not exist", printable(given)))
    if not in_place and st is not None and os.path.exists(path) and os.path.samefile(target, path):
        raise UserError(M("OUT is FILE: fix never overwrites its input unless --in-place"), hint=M("give another -o path"))
    return Target(target, notes)


def fix_checkpoint(host, path: str, out: Optional[str], opts: Options, visible, in_place: bool = False,
                   trust: bool = False, python: Optional[str] = None, timeout: Optional[float] = None):
    """Write the fixed ``path`` at ``out`` (atomically; with ``in_place``, over ``path``, keeping a backup) and return
    the :class:`FixReport` (before and after). Every failure is a :class:`UserError`: refused (exit 2), or the output
    could not be written (exit 1, nothing left behind)."""
    from cudaenv.core.fs import remove_stale_temps
    from cudaenv.core.text import printable

    target = plan_output(path, out, in_place)
    warnings: List[str] = []
    stale = remove_stale_temps(os.path.dirname(os.path.abspath(target.path)))
    if stale:
        warnings.append(M("removed %d temporary file%s a killed fix left: %s",
                          len(stale), "" if len(stale) == 1 else "s", ", ".join(printable(n) for n in stale[:3])))
    try:
        return _fix(host, path, target, opts, visible, in_place, trust, python, timeout, warnings)
    except RecursionError:
        raise UserError(M("%s is nested too deep to rewrite; nothing was written", printable(path))) from None
    except OSError as exc:  # a full disk, a read-only folder, a file that went away: one line, no traceback
        raise UserError(M("cannot write %s: %s; nothing was written", printable(target.path), printable(exc.strerror or str(exc))),
                        hint=M("free space or choose another -o folder") if exc.errno == 28 else None,
                        exit_code=EXIT_NOT_WRITTEN) from None


EXIT_NOT_WRITTEN = 1  # docs/reference/exit-codes.md: fix could not write OUT


def _fix(host, path: str, target: Target, opts: Options, visible, in_place: bool, trust: bool, python: Optional[str],
         timeout: Optional[float], warnings: List[str]):
    from cudaenv.checkpoint.analyze import inspect_file
    from cudaenv.checkpoint.report import FixReport
    from cudaenv.core.fs import atomic_binary
    from cudaenv.core.text import printable

    try:
        before = inspect_file(path, visible, with_tensors=False)
    except OSError as exc:
        raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
    out = target.path
    # bytes before a zip are the one inconsistency a rewrite mends: it writes the archive from byte 0
    mended = before.mended_by_fix
    blocking = [p for p in before.inconsistencies + before.weights_only_reasons if p not in mended]
    safe = before.format in SAFE_FORMATS and before.verdict == "safe" and before.weights_only is not None and not blocking
    backup = None
    changes: List[str] = []
    if safe:
        method = "rewrite"
        writer = atomic_binary(out)
        with writer as fh:
            changes = rewrite_file(path, fh, opts, archive_name(out))
            if mended:
                changes.append(M("the archive starts at byte 0 (%s)", mended[0].split(":")[0]))
            fh.flush()
            _check_written(writer.tmp, visible, M("the rewritten file"))
            if in_place:
                backup = _backup(out)
    else:
        why = "; ".join([r.why for r in before.verdict_reasons[:2]] + list(before.weights_only_reasons[:3] + before.inconsistencies[:2])) or before.format
        if not trust:
            raise UserError(M("%s is not safe to rewrite without running it (%s)", printable(path), printable(why)),
                            hint=M("only if you trust where it came from: add --trust (torch loads it in your Python, "
                                 "which runs its code)"))
        warnings.append(M("--trust: torch.load(weights_only=False) runs the file's code in your Python (%s)", why))
        method = "torch"
        writer = atomic_binary(out)
        with writer:
            changes = _trusted_fix(host, python, timeout, path, writer.tmp, opts)
            if in_place:
                backup = _backup(out)
    after = inspect_file(out, visible, with_tensors=False)
    if method == "torch" and not loadable(after):
        # what you trusted stays what you trusted: written as asked, but not called loadable (the service's exit 1)
        warnings.append(M("the result still needs torch.load(weights_only=False), as %s did (verdict %s): %s",
                          printable(path), after.verdict, printable("; ".join([r.why for r in after.verdict_reasons[:2]]
                                                                             + list(after.weights_only_reasons[:2]))[:300])))
    return FixReport(path, out, method, tuple(target.notes + changes), before, after, backup, tuple(warnings))


def loadable(report) -> bool:
    """What fix promises of its output: the verdict is safe, torch.load(weights_only=True) loads it, nothing is
    inconsistent."""
    return report.verdict == "safe" and report.weights_only is True and not report.inconsistencies


def _check_written(tmp: str, visible, what: str) -> None:
    """A rewrite without torch never leaves an output its own verdict does not call loadable: the temporary file is
    inspected before it replaces anything (UserError, exit 1: nothing was written)."""
    from cudaenv.core.text import printable

    check = _inspect_written(tmp, visible)
    if not loadable(check):
        why = [r.why for r in check.verdict_reasons] + list(check.inconsistencies + check.weights_only_reasons)
        raise UserError(M("%s did not check out (verdict %s: %s); nothing was written", what, check.verdict,
                          printable("; ".join(why)[:300]) or M("not loadable with weights_only=True")),
                        exit_code=EXIT_NOT_WRITTEN)


def _inspect_written(tmp: str, visible):
    from cudaenv.checkpoint.analyze import inspect_file

    return inspect_file(tmp, visible, with_tensors=False)


def _backup(path: str) -> str:
    """``FILE.bak`` (``FILE.bak.1``, ... when taken): a hard link where possible, else a copy."""
    import shutil

    n = 0
    backup = path + ".bak"
    while os.path.exists(backup):
        n += 1
        backup = "%s.bak.%d" % (path, n)
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)
    return backup


def _trusted_fix(host, python: Optional[str], timeout: Optional[float], path: str, tmp: str, opts: Options) -> List[str]:
    """Run ``_child/checkpoint_fix.py`` in the user's Python: torch loads FILE and saves the result at ``tmp``."""
    spec = {"source": os.path.abspath(path), "output": tmp, "map_location": opts.map_location, "strip": opts.strip,
            "add": opts.add, "extract": opts.extract}
    return _run_child(host, python, timeout, path, spec)


def _run_child(host, python: Optional[str], timeout: Optional[float], path: str, spec: Dict[str, Any]) -> List[str]:
    """``_child/checkpoint_fix.py`` with ``spec`` in the user's Python (a checkpoint folder's too: issue 32); the
    changes it made, in words. UserError when it fails."""
    import json

    from cudaenv._child import source
    from cudaenv.probes.python import find_interpreter
    from cudaenv.core.text import printable

    found = find_interpreter(host, python)
    if found is None:
        raise UserError(M("no Python interpreter found to run torch in"), hint=M("give one with --python /path/to/python"))
    spec = dict(spec, weights_entries=WEIGHTS_ENTRIES + EMA_ENTRIES)
    timeout = max(float(timeout or 0), TRUST_TIMEOUT)
    run = host.run([found.path, "-c", source("checkpoint_fix.py"), json.dumps(spec)], timeout=timeout)
    result: Any = None
    for line in (run.stdout or "").splitlines():
        if line.startswith("CUDAENV-CHECKPOINT "):
            try:
                result = json.loads(line[len("CUDAENV-CHECKPOINT "):])
            except ValueError:
                result = None
    if isinstance(result, dict) and result.get("missing_modules"):
        descriptor, modules = result["missing_modules"][0]
        raise UserError(M("%s stores items through %s, which torch reads only with the %s module, and %s has none of "
                          "them: nothing was converted", printable(path), printable(str(descriptor)), printable(" or ".join(map(str, modules))), printable(found.path)),
                        hint=M("install one into that Python (%s -m pip install %s), or give another with --python", printable(found.path), printable(str(modules[0]))))
    if not run.ok or not isinstance(result, dict) or not result.get("ok"):
        error = result.get("error") if isinstance(result, dict) else run.describe()
        raise UserError(M("torch could not rewrite %s: %s", printable(path), printable(str(error))[:500]))
    return child_changes(result)


# What _child/checkpoint_fix.py says it did (its say() templates), so each is said in the reader's language.
CHILD_CHANGES = frozenset((
    N_("merged %d .bin shards (%d keys) with torch.load(weights_only=%s)"),
    N_("read %d safetensors file%s (%d tensors) with safetensors.safe_open"),
    N_("%d tied tensors named in the metadata (cudaenv.aliases) share one storage again"),
    N_("consolidated with torch.distributed.checkpoint.format_utils.dcp_to_torch_save (torch %s)"),
    N_("consolidated %d tensors with torch.distributed.checkpoint.HuggingFaceStorageReader and dcp.load (torch %s)"),
    N_("consolidated with the folder's own zero_to_fp32.py (get_fp32_state_dict_from_zero_checkpoint)"),
    N_("storages mapped to %s"),
    N_("kept only the entry %r"),
    N_("stripped %s from %d keys"),
    N_("added %s to %d keys"),
    N_("keys kept as they were, because their new name is taken: %s"),
    N_("written as safetensors (%d tensors)"),
    N_("%d tied tensors written once, their other names in the metadata (cudaenv.aliases): %s"),
    N_("%d views of shared memory copied (safetensors stores no sharing): %s"),
    N_("%d values that are not tensors left out (safetensors stores only tensors): %s"),
))


def child_changes(result: Dict[str, Any]) -> List[str]:
    """The child's changes (its English, as it printed them), each a marked message when the child also said which of
    :data:`CHILD_CHANGES` it is and with which values (a list value: prefixes stripped one after another). A template
    this cudaenv does not know, or values that do not make the same English, keep the English as it is."""
    changes = [str(c) for c in result.get("changes", [])]
    said = result.get("said")
    if not isinstance(said, list) or len(said) != len(changes):
        return changes
    return [said_again(text, _with_prefixes_joined(pair), CHILD_CHANGES) for text, pair in zip(changes, said)]


def _with_prefixes_joined(pair: Any) -> Any:
    """The child's ``[template, values]`` with each list value (prefixes stripped one after another) said as one
    :func:`then` message; anything else as it came, for :func:`said_again` to judge."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], list):
        return pair
    return [pair[0], [then([str(p) for p in v]) if isinstance(v, list) else v for v in pair[1]]]
