"""Steps 3-7 of an uninstall plan: what still points at or names a removed toolkit. Pure: no I/O.

update-alternatives groups listing it, the ``/usr/local/cuda`` link (removed as a link, or ``--repoint``), links
and exec-only wrapper scripts on PATH, ``/etc/ld.so.conf.d`` files and shell startup lines. Each step carries a
guard (``only_if``) so the script skips what the removal tool already took away.
"""

from typing import Dict, List

from cudaenv.model.snapshot import Note
from cudaenv.toolkit.uninstall.builder import Builder
from cudaenv.toolkit.uninstall.facts import Inspection
from cudaenv.toolkit.uninstall.rcfiles import EDIT_LINES_CODE, edit_args
from cudaenv.toolkit.uninstall.records import Guard, HostPath, Options
from cudaenv.core.i18n import M


# ----------------------------------------------------------------------------- steps 3-4: alternatives and the link


def alternatives_steps(b: Builder, inspection: Inspection, options: Options) -> None:
    for t in inspection.targets:
        for alt in t.alternatives:
            b.add(
                "alternatives-remove",
                M("Remove %s from the update-alternatives group '%s'", alt.path, alt.name),
                commands=(("update-alternatives", "--remove", alt.name, alt.path),),
                needs_root=True,
                destructive=True,
                paths=(alt.admin_file,) + ((alt.link,) if alt.link else ()),
                only_if=Guard("line-in", alt.admin_file, alt.path),
                target=t.toolkit.path,
            )
            if options.repoint and options.repoint in alt.others:
                b.add(
                    "alternatives-set",
                    M("Point the '%s' alternative at %s", alt.name, options.repoint),
                    commands=(("update-alternatives", "--set", alt.name, options.repoint),),
                    needs_root=True,
                    destructive=True,
                    paths=(alt.admin_file,),
                    only_if=Guard("line-in", alt.admin_file, options.repoint),
                    target=t.toolkit.path,
                )


def link_steps(b: Builder, inspection: Inspection, options: Options) -> List[str]:
    link = inspection.cuda_symlink
    choices: List[str] = []
    if link is None or link.target is None:
        return choices
    here = [t for t in inspection.targets if t.link_points_here]
    managed = link.alternatives and any(t.alternatives for t in here)
    if not here and not (link.dangling and options.remove_link):
        if link.dangling:
            b.notes.append(Note("uninstall", M("%s is a dangling link (-> %s); --remove-link removes it", link.path, link.target)))
        return choices
    if managed:
        return choices
    removing = {t.toolkit.path for t in inspection.targets}
    others = [k for k in inspection.toolkits if k.path not in removing and k.install_method not in ("conda", "pip")]
    guard = Guard("link-to", link.path, link.target)
    if options.repoint and not options.remove_link:
        b.add(
            "repoint-link",
            M("Point %s at %s (it points at %s now)", link.path, options.repoint, link.target),
            commands=(("ln", "-sfn", "--", options.repoint, HostPath(link.path)),),
            needs_root=b.root_for(link.path),
            destructive=True,
            paths=(link.path,),
            only_if=guard,
        )
        return choices
    b.add(
        "remove-link",
        M("Remove the link %s (-> %s) itself; what it points to is not followed", link.path, link.target),
        commands=(("rm", "--", HostPath(link.path)),),
        needs_root=b.root_for(link.path),
        destructive=True,
        paths=(link.path,),
        only_if=guard,
    )
    if not options.remove_link:
        choices.extend(M("--repoint %s   (point %s at %s instead of removing it)", k.version or k.path, link.path, k.path) for k in others)
    return choices


def wrapper_steps(b: Builder, inspection: Inspection) -> None:
    auto = [w for w in inspection.wrappers if w.action == "remove"]
    hand = [w for w in inspection.wrappers if w.action == "hand"]
    if auto:
        b.add(
            "remove-wrappers",
            M("Remove the programs on PATH that only lead into the removed toolkit (links are removed as links)"),
            commands=(("rm", "-f", "--", *(HostPath(w.path) for w in auto)),),
            needs_root=any(b.root_for(w.path) for w in auto),
            destructive=True,
            paths=tuple(w.path for w in auto),
            details=tuple("%s %s %s" % (w.path, "->" if w.kind == "link" else "runs", w.text) for w in auto),
        )
    if hand:
        b.add(
            "wrappers-by-hand",
            M("Check these scripts on PATH by hand: they use the removed toolkit but also do other things"),
            paths=tuple(w.path for w in hand),
            details=tuple("%s: %s" % (w.path, w.text) for w in hand),
        )


# ----------------------------------------------------------------------------- steps 5-6: ld.so.conf.d and rc files


def ldconf_steps(b: Builder, inspection: Inspection) -> bool:
    purged = {p for t in inspection.targets for p in t.packages}
    touched = False
    for conf in inspection.ldconf:
        if conf.owner:
            if conf.owner not in purged:
                b.notes.append(
                    Note("uninstall", M("%s names the toolkit but belongs to the package %s; it is left to the package manager",
                                        conf.file, conf.owner))
                )
            continue
        touched = True
        if conf.whole:
            b.add(
                "remove-ldconf",
                M("Remove %s (it only names the removed toolkit's library folders)", conf.file),
                commands=(("rm", "--", HostPath(conf.file)),),
                needs_root=True,
                destructive=True,
                paths=(conf.file,),
                details=tuple("%s:%d: %s" % (conf.file, n, text) for n, text in conf.lines),
                only_if=Guard("exists", conf.file),
            )
        else:
            args: List[str] = []
            for n, text in conf.lines:
                args += [str(n), "remove", text, ""]
            b.add(
                "edit-ldconf",
                M("Remove the lines naming the toolkit from %s (a backup is kept next to it)", conf.file),
                commands=(("python3", "-c", EDIT_LINES_CODE, HostPath(conf.file), *args),),
                needs_root=True,
                destructive=True,
                paths=(conf.file,),
                details=tuple("%s:%d: %s" % (conf.file, n, text) for n, text in conf.lines),
                only_if=Guard("exists", conf.file),
            )
    return touched


def rc_steps(b: Builder, inspection: Inspection) -> None:
    by_file: Dict[str, list] = {}
    for line in inspection.rc_lines:
        by_file.setdefault(line.file, []).append(line)
    for file, lines in by_file.items():
        editable = [l for l in lines if l.action in ("remove", "rewrite")]
        by_hand = [l for l in lines if l.action == "hand"]
        if editable:
            details = []
            for l in editable:
                details.append("%s:%d: %s" % (file, l.lineno, l.text))
                if l.action == "rewrite":
                    details.append("    becomes: %s" % l.new_text)
            b.add(
                "edit-rc",
                M("Take the lines that mention the removed toolkit out of %s (a backup is kept next to it; each line is "
                "checked to still read exactly as shown)", file),
                commands=(("python3", "-c", EDIT_LINES_CODE, HostPath(file), *edit_args(editable)),),
                needs_root=b.root_for(file),
                destructive=True,
                paths=(file,),
                details=tuple(details),
                only_if=Guard("exists", file),
            )
        if by_hand:
            b.add(
                "rc-by-hand",
                M("Edit %s by hand: these lines mention the removed toolkit but cannot be taken out safely on their own", file),
                paths=(file,),
                details=tuple(M("%s:%d: %s   (%s)", file, l.lineno, l.text, l.reason) for l in by_hand),
            )
