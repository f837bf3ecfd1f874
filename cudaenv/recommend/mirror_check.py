"""`cudaenv torch mirror-check [URL]`: read a mirror's page for the build this machine needs, and the official one.

The build is `torch recommend`'s for this machine (the what-if flags apply). The mirror (``--mirror NAME`` or the URL)
is read as a simple index (``BASE/VARIANT/torch/``, PEP 691 JSON or PEP 503 HTML); a mirror without one is read as a
flat listing (``BASE/VARIANT/``). The wanted file's link is followed with a HEAD (no redirect taken) to see whether the
mirror sends the download elsewhere. The official index (``--index-base`` / ``CUDAENV_TORCH_INDEX``, else
PyTorch's own) gives the hash to compare. Each page gets ``--index-timeout`` seconds. The judgement is
:mod:`cudaenv.recommend.mirrors`'.
"""

from typing import Any, Mapping, Optional, Tuple

from cudaenv.core.errors import UserError
from cudaenv.recommend.mirrors import MirrorCheck, SourceCheck, WheelWant, find_wheel, judge_mirror, served_by
from cudaenv.core.i18n import M


def _read(url: str, seconds: float) -> Tuple[Optional[Any], Optional[str], Optional[str], bool]:
    """(links or None, problem, message, answered) of one page."""
    from cudaenv.host.process import Deadline
    from cudaenv.index.client import FetchError, fetch_page
    from cudaenv.parse.index_pages import parse_index_links

    try:
        text, ctype = fetch_page(url, Deadline(seconds))
    except FetchError as exc:
        message = str(exc)
        problem = "http-error" if exc.answered else ("timeout" if "timed out" in message or "longer than" in message else "unreachable")
        return None, problem, message, exc.answered
    page = parse_index_links(text, ctype)
    if page.problem is not None or not any(link.filename.endswith(".whl") for link in page.links):
        return None, "not-an-index", page.problem or "the page links to no wheel", True
    return page.links, None, None, True


def read_source(base: str, want: WheelWant, seconds: float, official_base: str, flat_too: bool = True) -> SourceCheck:
    """The mirror's (or the official) page for ``want``: its simple index, else its flat listing."""
    from cudaenv.host.process import Deadline
    from cudaenv.index.client import redirect_of

    simple = "%s/%s/torch/" % (base.rstrip("/"), want.variant)
    links, problem, message, answered = _read(simple, seconds)
    url, layout = simple, "simple"
    if links is None and flat_too and problem in ("http-error", "not-an-index"):
        flat = "%s/%s/" % (base.rstrip("/"), want.variant)
        flat_links, flat_problem, flat_message, _ = _read(flat, seconds)
        if flat_links is not None:
            links, problem, message, url, layout = flat_links, None, None, flat, "flat"
    if links is None:
        return SourceCheck(url, None, problem, message)
    link, file_url, newest = find_wheel(links, url, want)
    if link is None:
        return SourceCheck(url, layout, None, None, newest=newest)
    by = served_by(file_url, base, official_base)
    redirect = redirect_of(file_url, Deadline(seconds)) if by == "mirror" else None
    if redirect is not None and served_by(redirect, base, official_base) == "mirror":
        redirect = None  # a redirect inside the mirror serves it still
    return SourceCheck(url, layout, None, None, link.filename, file_url, link.sha256, newest, by, redirect)


def check_mirror(env: Mapping[str, str], make_host: Any, options: Any, target: Optional[str], timeout: Optional[float]) -> MirrorCheck:
    """`cudaenv torch mirror-check`: the build for this machine, looked up on the mirror and on the official index."""
    from cudaenv.facts import mirrors as mf
    from cudaenv.model.record import replace
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.recommend import service
    from cudaenv.recommend.decide import decide
    from cudaenv.recommend.install import commands as install_commands
    from cudaenv.recommend.conda import pypi_snippet
    from cudaenv.recommend.install import local_pins

    mirror = service.mirror_for(target or options.mirror)
    if mirror is None:
        raise UserError(M("say which mirror to check"), hint=M("cudaenv torch mirror-check URL, or --mirror %s", "|".join(mf.names())))
    interpreter, what_if_python = service.split_python(options.python)
    python_version = options.python_version or what_if_python
    official = service.index_base(env, options.index_base)  # --index-base, CUDAENV_TORCH_INDEX, else PyTorch's
    host = make_host()
    snapshot = collect_snapshot(host, python=interpreter, quick=True)
    plain = replace(options, mirror=None, index_base=official, python_version=python_version)
    req = service.request_for(plain, env, host, snapshot, python_version)
    rec = decide(req, None)
    if not rec.variant or not rec.torch_version or rec.variant == "default":
        raise UserError(M("no torch build from a variant index fits this machine: nothing to look for on a mirror"),
                        hint=M("see `cudaenv torch recommend`"))
    local = rec.variant if local_pins(rec.variant, rec.platform or "") else None
    want = WheelWant(rec.torch_version, rec.variant, local, req.python_version, rec.platform)
    seconds = service.index_timeout(env, timeout)
    source = read_source(mirror.base, want, seconds, official)
    upstream = None
    if source.file is not None and mirror.base.rstrip("/") != official.rstrip("/"):
        upstream = read_source(official, want, seconds, official, flat_too=False)
    verdict, match = judge_mirror(source, upstream, want)
    layout = source.layout or ("flat" if mirror.layout == "flat" else "simple")
    url = "%s/%s" % (mirror.base, rec.variant)
    lines = tuple(install_commands(rec.packages, url, inst, req.python, req.system, flat=layout == "flat")[0] for inst in ("pip", "uv"))
    snippet = pypi_snippet(rec.packages, url, layout == "flat")
    expected = mf.find(mirror.name)
    return MirrorCheck(mirror.name, mirror.base, expected["layout"] if expected else None, want, source, upstream, verdict,
                       match, lines, snippet)
