"""The checkpoint service: what ``cudaenv checkpoint inspect`` and ``fix`` call, once each. It does the I/O around
the readers (the file checks, this machine's visible GPUs through ``Host``, the writes of fix) and returns a
:class:`Result`: the record to render and the exit code, taken from the record (the verdict's kind for inspect:
:func:`cudaenv.checkpoint.tables.inspect_exit_code`; never from a sentence). Refusals are :class:`UserError`."""

from __future__ import annotations

from cudaenv.core.errors import UserError
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # `checkpoint inspect`'s start-up is a benchmark target: no typing
    from typing import List, Optional


class Result:
    """A service's answer: ``report`` (a :class:`CheckpointReport` or :class:`FixReport`) and the command's exit code."""

    __slots__ = ("report", "exit_code")

    def __init__(self, report, exit_code: int):
        self.report = report
        self.exit_code = exit_code


def is_folder_target(path: str) -> bool:
    """Whether ``checkpoint inspect PATH`` reads a checkpoint folder: PATH is a folder, a ``*.index.json`` or DCP's
    ``.metadata`` (names only: nothing of the folder's modules is imported for a single file)."""
    import os

    base = os.path.basename(path)
    return os.path.isdir(path) or (os.path.isfile(path) and (base.endswith((".safetensors.index.json", ".bin.index.json"))
                                                              or base == ".metadata"))


def check_file(path: str) -> None:
    """FILE exists and is not a folder (usage errors, exit 2)."""
    import os

    from cudaenv.core.text import printable

    if not os.path.exists(path):
        raise UserError(M("%s does not exist", printable(path)), hint=M("give the path of the checkpoint file"))
    if os.path.isdir(path):
        raise UserError(M("%s is a folder, not a checkpoint file", printable(path)),
                        hint=M("a sharded checkpoint is a folder of files: inspect one of them"))


def looks_safetensors(path: str) -> bool:
    """Whether FILE starts as a safetensors file does (its header's length, then ``{``): fix converts it with the
    safetensors library, never torch.load."""
    from cudaenv.checkpoint.container import sniff_safetensors

    try:
        return sniff_safetensors(path)
    except OSError:
        return False


def inspect_service(host, path: str, with_tensors: bool = False) -> Result:
    """``checkpoint inspect``: the report, read without running the file, and its exit code (0 loads here as it is,
    1 it does not, 3 unsafe, 4 inconclusive). A folder, an index file or DCP's ``.metadata`` is read as the
    checkpoint folder it is (:mod:`cudaenv.checkpoint.folder`, a :class:`FolderReport`)."""
    import os
    from cudaenv.checkpoint.advice import probe_visible_gpus
    from cudaenv.checkpoint.analyze import inspect_file
    from cudaenv.checkpoint.tables import inspect_exit_code
    from cudaenv.core.text import printable

    if not os.path.exists(path):
        check_file(path)
    if is_folder_target(path):  # a folder of shards, an index file, DCP's .metadata (issue 32)
        from cudaenv.checkpoint.folder import folder_exit_code, inspect_folder

        visible = probe_visible_gpus(host)
        try:
            report = inspect_folder(path, visible)
        except OSError as exc:
            raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
        if report.layout == "unknown":
            raise UserError(M("%s is a folder, but not a checkpoint folder cudaenv recognises", printable(path)),
                            hint=M("a DCP folder (.metadata, __0_0.distcp), a DeepSpeed ZeRO folder (latest, global_step*/), "
                                 "shards with model.safetensors.index.json or pytorch_model.bin.index.json; or inspect "
                                 "one file of it"))
        return Result(report, folder_exit_code(report))
    check_file(path)
    visible = probe_visible_gpus(host)
    try:
        report = inspect_file(path, visible, with_tensors=with_tensors)
    except OSError as exc:
        raise UserError(M("cannot read %s: %s", printable(path), printable(exc.strerror or exc)))
    return Result(report, inspect_exit_code(report))


def fix_service(host, path: str, output: Optional[str], in_place: bool = False, map_location: Optional[str] = None,
                   strip: Optional[List[str]] = None, add: Optional[str] = None, extract: Optional[str] = None,
                   trust: bool = False, python: Optional[str] = None, timeout: Optional[float] = None,
                   to: Optional[str] = None) -> Result:
    """``checkpoint fix``: the checks of what was asked (before anything is read), then the rewrite. Exit 0 with the
    :class:`FixReport` when OUT was written and its own verdict calls it loadable; 1 when ``--trust`` wrote one that
    still needs weights_only=False (said in its warnings); every other outcome raises."""
    import os

    from cudaenv.checkpoint import fix as F
    from cudaenv.checkpoint.advice import probe_visible_gpus, target_device
    from cudaenv.core.text import printable

    strip = list(strip or [])
    folder = os.path.exists(path) and is_folder_target(path)  # a checkpoint folder: consolidated (issue 32)
    if not folder:
        check_file(path)
    elif in_place:
        raise UserError(M("--in-place rewrites one file; a checkpoint folder is consolidated into -o OUT"),
                        hint=M("-o consolidated.pt"))
    F.plan_output(path, output, in_place)  # (before the GPU probe: a wrong OUT is said at once)
    fmt = F.output_format(path if in_place else output, to)  # --to against OUT's suffix, before anything is read
    # FILE's format by its bytes (a folder's is its layout's: consolidate says)
    source_fmt = "pt" if folder else "safetensors" if looks_safetensors(path) else "pt"
    if in_place and fmt != source_fmt:
        raise UserError(M("--in-place keeps FILE's name and format: give -o OUT for a %s file", fmt),
                        hint=M("-o %s", "model.safetensors" if fmt == "safetensors" else "model.pt"))
    if not folder and fmt == source_fmt and not (map_location or strip or add or extract is not None):
        raise UserError(M("nothing to change"), hint=M("--map-location cpu|cuda:N|auto, --strip-prefix module., "
                                                  "--add-prefix P, --extract state_dict"))
    for p in strip + ([add] if add is not None else []):
        if not p:
            raise UserError(M("an empty prefix"), hint=M("for example --strip-prefix module."))
    visible = probe_visible_gpus(host)
    target = None
    if map_location:
        target = target_device(map_location, visible)
        if not F.DEVICE.match(target):
            raise UserError(M("--map-location %s is not a device", printable(map_location)), hint=M("cpu, cuda:0 or auto"))
    opts = F.Options(target, strip, add, extract)
    if folder:
        from cudaenv.checkpoint.consolidate import consolidate

        report = consolidate(host, path, output, opts, visible, trust=trust, python=python, timeout=timeout,
                             in_place=in_place, to=fmt)
        return Result(report, 0)
    if fmt == "safetensors" or source_fmt == "safetensors":  # one file to the other format (issue 32)
        from cudaenv.checkpoint.consolidate import convert_file

        report = convert_file(host, path, output, opts, visible, in_place=in_place, trust=trust, python=python,
                              timeout=timeout, to=fmt)
        return Result(report, 0)
    report = F.fix_checkpoint(host, path, output, opts, visible, in_place=in_place, trust=trust, python=python,
                              timeout=timeout)
    # 0 only for an output its own verdict calls loadable; a --trust result that still needs weights_only=False
    # (a whole module, a Namespace: what was trusted) is written as asked, and is exit 1
    return Result(report, 0 if F.loadable(report.after) else F.EXIT_NOT_WRITTEN)
