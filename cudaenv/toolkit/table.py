"""What `cudaenv list` says beside its table, decided here so the renderer (render.toolkits) only words it.

:func:`list_view` reads the toolkits probe's state: whether several toolkits put nvcc on PATH, and, where one
major.minor has both a release number (13.0.2, from version.json) and nvcc's own number (13.0.88), which toolkit
``cudaenv use X.Y`` picks (:func:`cudaenv.toolkit.select.newest_toolkits`, the pick ``use`` makes).

Pure and on `cudaenv list`'s import path: no typing, no dataclasses; select is imported only when there are toolkits.
"""


class UsePick:
    """``cudaenv use MAJOR_MINOR`` picks ``toolkit`` (its release number) over ``others`` (nvcc's numbers)."""

    __slots__ = ("major_minor", "toolkit", "others")

    def __init__(self, major_minor, toolkit, others):
        self.major_minor, self.toolkit, self.others = major_minor, toolkit, tuple(others)


class ListView:
    """``several_on_path``: more than one toolkit has nvcc on PATH (the first one wins); ``picks``: the UsePicks."""

    __slots__ = ("several_on_path", "picks")

    def __init__(self, several_on_path=False, picks=()):
        self.several_on_path, self.picks = several_on_path, tuple(picks)


def list_view(state) -> ListView:
    toolkits = list(state.toolkits)
    several = len(toolkits) > 1 and sum(1 for tk in toolkits if tk.on_path) > 1
    return ListView(several, use_picks(toolkits))


def use_picks(toolkits):
    """The major.minors whose toolkits mix both numberings, each with the one `use X.Y` picks (none on a tie)."""
    if not toolkits:
        return []
    from cudaenv.core.version_strings import version_key
    from cudaenv.toolkit.select import newest_toolkits, numbering

    groups = {}
    for tk in toolkits:
        key = version_key(tk.version or "")[:2]
        if len(key) == 2:
            groups.setdefault(key, []).append(tk)
    picks = []
    for key, group in sorted(groups.items()):
        if len({numbering(tk) for tk in group}) < 2:
            continue
        best = newest_toolkits(group)
        if len(best) != 1:
            continue
        picks.append(UsePick("%d.%d" % key, best[0], [tk.version for tk in group if numbering(tk) == "component"]))
    return picks
