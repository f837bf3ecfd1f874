"""The documentation: generated reference pages match the code, links resolve, the README stays a front page.

The pages under docs/reference/ that ``tools/docgen.py`` writes are regenerated here (from the installed
package, into a temporary folder) and compared with the repository's copies.
"""

import re
from pathlib import Path

import pytest

from builders import REPO
from builders import docgen

_docgen = docgen()

DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 160  # a front page (about 150 lines); the rest lives in docs/



@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generated pages, written once into a temporary folder from the installed package."""
    folder = tmp_path_factory.mktemp("reference")
    _docgen.write(str(folder))
    return folder


@pytest.mark.parametrize("name", sorted(_docgen.PAGES))
def test_generated_reference_page_is_current(name, generated):
    fresh = (generated / name).read_text(encoding="utf-8")
    page = DOCS / "reference" / name
    current = page.read_text(encoding="utf-8") if page.is_file() else None
    assert current == fresh, (
        "docs/reference/%s is stale: the code or data/ changed. Regenerate it from the repository root with "
        "`pip install . && python tools/docgen.py` (writes docs/reference/*.md) and commit the result" % name
    )


def test_check_mode_names_a_stale_page(generated, tmp_path, capsys):
    for page in generated.iterdir():
        (tmp_path / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    assert _docgen.main(["--check", str(tmp_path)]) == 0
    (tmp_path / "finding-ids.md").write_text("old\n", encoding="utf-8")
    assert _docgen.main(["--check", str(tmp_path)]) == 1
    assert "finding-ids.md" in capsys.readouterr().err


def test_generated_blocks_of_hand_written_pages_are_current():
    """The JSON outputs table of json-contract.md is the envelope registry's, between its markers."""
    folder = DOCS / "reference"
    assert set(_docgen.BLOCKS) == {"json-contract.md"}
    stale = _docgen.stale_blocks(str(folder))
    assert not stale, (
        "docs/reference/%s: a generated block is stale (an output record changed). Regenerate with "
        "`pip install . && python tools/docgen.py` and commit the result" % ", ".join(stale))
    text = (folder / "json-contract.md").read_text(encoding="utf-8")
    from cudaenv.model import records

    table = text.split("<!-- generated:outputs ", 1)[1].split("<!-- /generated:outputs -->", 1)[0]
    assert table.count("\n| `cudaenv ") == len([e for e in records.envelopes() if e.__name__ != "Snapshot"])
    assert "| `cudaenv doctor --json` | `DoctorReport` | {schema_version, the Snapshot's keys, hostname, generated_at, findings[], against, image}" in table


def test_check_mode_names_a_stale_block(tmp_path, capsys):
    page = (DOCS / "reference" / "json-contract.md").read_text(encoding="utf-8")
    for name, text in _docgen.pages().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "json-contract.md").write_text(page.replace("| `cudaenv list --json` |", "| `cudaenv ls --json` |"), encoding="utf-8")
    assert _docgen.main(["--check", str(tmp_path)]) == 1
    assert "json-contract.md" in capsys.readouterr().err
    with pytest.raises(ValueError, match="lost its markers"):
        _docgen.fill_blocks(page.replace("<!-- /generated:outputs -->", ""), _docgen.BLOCKS["json-contract.md"])


def test_every_package_and_module_is_on_the_architecture_map():
    folders, unmapped = _docgen.package_map()
    assert not unmapped, "give these a docstring (its first paragraph is their line on docs/reference/architecture.md): %s" % unmapped
    names = {f["folder"] for f in folders}
    assert {"cudaenv/", "cudaenv/core/", "cudaenv/model/", "cudaenv/probes/toolkits/", "cudaenv/render/"} <= names
    assert all(f["about"] for f in folders)


def test_the_map_names_a_package_or_module_without_a_docstring(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The package.\n\nMore."""\n')
    (pkg / "known.py").write_text('"""Does one thing. And more."""\n')
    (pkg / "bare.py").write_text("x = 1\n")
    (pkg / "room" / "__init__.py").write_text("")
    folders, unmapped = _docgen.package_map(str(pkg))
    assert unmapped == ["pkg/bare.py", "pkg/room/__init__.py"]
    assert folders[0]["about"] == "The package." and ("known.py", "Does one thing.") in folders[0]["modules"]


def test_finding_ids_are_read_from_the_rules():
    findings = {f["id"]: f for f in _docgen.doctor_findings()}
    assert findings["no-driver"]["section"] == "driver"
    assert findings["container-no-gpu"]["severities"] == ["error", "warning"]  # `"error" if wants else "warning"`
    assert set(findings["visible-devices-invalid"]["severities"]) == {"error", "warning"}  # through a variable
    assert all(f["severities"] and f["modules"] for f in findings.values()), findings
    # every explain row marked as a doctor finding is one the rules really build
    from cudaenv.core.resources import load_table

    shared = {r["id"] for r in load_table("error_patterns")["rows"] if r.get("doctor_finding")}
    assert shared and shared <= set(findings), shared - set(findings)


def test_doctor_page_describes_only_ids_that_exist():
    """The hand-written 'when' table of docs/commands/doctor.md names no id the rules no longer build."""
    text = (DOCS / "commands" / "doctor.md").read_text(encoding="utf-8")
    table = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    described = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M))
    code = {f["id"] for f in _docgen.doctor_findings()}
    assert len(described) > 20
    assert described <= code, "docs/commands/doctor.md describes ids the doctor no longer has: %s" % sorted(described - code)


def test_configuration_page_names_every_setting_the_code_reads(generated):
    names = set(_docgen.settings_from_code())
    assert {"CUDAENV_ROOT", "CUDAENV_TIMEOUT", "CUDAENV_TORCH_TIMEOUT"} <= names
    text = (generated / "configuration.md").read_text(encoding="utf-8")
    for name in names:
        assert "`%s`" % name in text


def test_readme_stays_a_front_page():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        "README.md has %d lines (at most %d): it is the front page; put the detail in docs/ and link it" % (lines, README_MAX_LINES)
    )


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path):
    out, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _markdown_files():
    return [README] + sorted(DOCS.rglob("*.md")) + sorted((REPO / "bench").glob("*.md"))


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path):
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, "%s: links to nothing: %s" % (path.relative_to(REPO), broken)


def test_the_ci_sessions_and_nox_sessions_the_guides_name_are_the_real_ones():
    """contributing.md and tests-suite.md name .ci/run's CI_SESSIONS as it lists them, and every nox session."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    sessions = re.search(r"^CI_SESSIONS=\(([^)]*)\)", ci, re.M).group(1).split()
    assert "slow" in sessions and "isolation" in sessions
    noxfile = (REPO / "noxfile.py").read_text(encoding="utf-8")
    every = re.findall(r"^@nox\.session\ndef (\w+)\(", noxfile, re.M)
    assert {"tests", "torch", "lint"} <= set(every)
    for page in ("contributing.md", "tests-suite.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        assert "`%s`" % " ".join(sessions) in " ".join(text.split()), "docs/%s: .ci/run's CI_SESSIONS are %s" % (page, sessions)
    contributing = (DOCS / "contributing.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`nox -s (\w+)`", contributing)) | {"tests", "torch"}  # the two defaults, named as such
    assert set(every) <= named, "docs/contributing.md does not name the nox sessions %s" % sorted(set(every) - named)
