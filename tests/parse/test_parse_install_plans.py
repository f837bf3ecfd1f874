"""What an installer's dry run says it would do (parse/install_plans.py): uv 0.13.9's plan lines, recorded from the
real uv (a replacement of torch, an install beside it, nothing to do), and conda's --dry-run --json transaction,
recorded from a real paste (conda 4.4, conda/conda#6641, the one real UNLINK found) and in the later shape (whole real
documents from mamba, mamba-org/mamba#207, micromamba 1.5.12 and mamba 2.6.0, and constructed from conda's source for
an UNLINK of pytorch); any text in:
no exception, bounded."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded, recorded_runs
from cudaenv.parse.install_plans import MAX_ENTRIES, parse_conda_plan, parse_uv_plan


def _uv_runs():
    return recorded_runs("uv-pip-install-dry-run-0.13.9.txt")


def test_uvs_recorded_plans():
    runs = _uv_runs()
    assert parse_uv_plan(runs["six torch==2.9.1"]) == (("+", "six", "1.17.0"), ("-", "torch", "2.8.0+cu128"), ("+", "torch", "2.9.1"))
    assert parse_uv_plan(runs["six"]) == (("+", "six", "1.17.0"),)
    assert parse_uv_plan(runs["torch"]) == ()  # "Would make no changes"
    assert parse_uv_plan("Resolved 2 packages in 178ms\n") == () and parse_uv_plan(None) == ()


# conda's document after "actions": the keys conda/cli/install.py adds (stdout_json_success(prefix=..., actions=...,
# dry_run=True) -> "dry_run": true, "success": true), closing the recorded paste where the stored copy stops (constructed)
CLOSING = '\n  "dry_run": true,\n  "success": true\n}\n'


def test_condas_recorded_plan_conda_4_4():
    link, unlink = parse_conda_plan(recorded("conda-update-dry-run-json-4.4.txt") + CLOSING)
    assert link == (("pytest", "3.3.1", "py36_0"),) and unlink == (("pytest", "3.3.0", "py36_0"),)


def test_mambas_recorded_plan_in_the_later_shape():
    """A whole real document in the shape later conda prints ("actions" one object), as a terminal showed it: the
    DryRunExit line before it and mamba's doubled second document after it (mamba-org/mamba#207)."""
    text = recorded("mamba-create-dry-run-json-0.3.txt")
    assert text.startswith("DryRunExit") and text.count('"actions"') == 2
    assert parse_conda_plan(text) == ((("zlib", "1.2.11", "h01d97ff_1006"),), ())
    first = text[text.index("{"):text.index("}\n{") + 2]
    assert parse_conda_plan(first) == parse_conda_plan("  " + first + "\n") == parse_conda_plan(text)
    assert parse_conda_plan("DryRunExit: Dry run. Exiting.\n") is None and parse_conda_plan("x {\"actions\": {}}") is None


def test_micromamba_and_mamba_2_real_documents():
    """Real captures kept by conda-lock (micromamba 1.5.12, mamba 2.6.0): conda's shape, each LINK entry the full
    package record with both "build" and "build_string"; the constructed pytorch plan in the same record shape."""
    assert parse_conda_plan(recorded("micromamba-create-dry-run-json-1.5.12.txt")) == ((("libzlib", "1.3.2", "h25fd6f3_2"),), ())
    assert parse_conda_plan(recorded("mamba-create-dry-run-json-2.6.0.txt")) == (
        (("libzlib", "1.3.2", "h25fd6f3_2"), ("zlib", "1.3.2", "h25fd6f3_2")), ())
    link, unlink = parse_conda_plan(recorded("micromamba-install-dry-run-json-pytorch-constructed.txt"))
    assert link[1] == ("pytorch", "2.5.1", "cpu_generic_py312h0d5e7e4_8") and unlink == (("pytorch", "2.5.1", "cuda126_py312h1763f6d_308"),)


def test_condas_later_shape_and_the_string_records():
    """Later conda prints the first action group itself (constructed in that shape, from conda's
    _make_legacy_action_groups()[0] and PackageRecord.dist_fields_dump); conda 4.4.0 printed "channel::name-version-build"
    strings (conda/conda#5825)."""
    import json

    later = {"actions": {"LINK": [{"name": "pytorch", "version": "2.5.1", "build_string": "cpu_generic_py312h0d5e7e4_8",
                                   "channel": "conda-forge", "dist_name": "pytorch-2.5.1-cpu_generic_py312h0d5e7e4_8"}],
                         "UNLINK": [{"name": "pytorch", "version": "2.5.1", "build_string": "cuda126_py312h1763f6d_308"}],
                         "PREFIX": "/opt/conda/envs/x"}, "dry_run": True, "success": True}
    link, unlink = parse_conda_plan(json.dumps(later))
    assert link == (("pytorch", "2.5.1", "cpu_generic_py312h0d5e7e4_8"),) and unlink == (("pytorch", "2.5.1", "cuda126_py312h1763f6d_308"),)
    old = {"actions": {"LINK": ["defaults::krb5-1.13.2-0", "defaults::r-base64enc-0.1_3-r3.4.1_0", "junk"]}}
    assert parse_conda_plan(json.dumps(old))[0] == (("krb5", "1.13.2", "0"), ("r-base64enc", "0.1_3", "r3.4.1_0"))
    assert parse_conda_plan('{"message": "All requested packages already installed.", "success": true}') is None
    assert parse_conda_plan("CondaError: ...") is None and parse_conda_plan(None) is None


def test_a_plan_of_many_lines_is_bounded():
    text = " + p==1\n" * (MAX_ENTRIES + 50)
    assert len(parse_uv_plan(text)) == MAX_ENTRIES


@settings(max_examples=300)
@given(st.text(max_size=2000))
def test_any_text_never_raises(text):
    assert isinstance(parse_uv_plan(text), tuple)
    got = parse_conda_plan(text)
    assert got is None or all(isinstance(x, tuple) for x in got)


@settings(max_examples=200)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["actions", "LINK", "UNLINK", "name", "version", "build_string", "build"]), inner, max_size=4),
                    max_leaves=30))
def test_any_json_never_raises(value):
    import json

    got = parse_conda_plan(json.dumps({"actions": value}))
    assert got is not None and all(isinstance(n, str) and isinstance(v, str) for part in got for n, v, _ in part)
