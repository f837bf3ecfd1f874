"""`cudaenv fix`'s text for an externally managed Python: the recipe is the plan's (recommend.fix_plan), the words
the renderer's."""

from types import SimpleNamespace

from cudaenv.fix.plan import Choice, FixPlan, pep668_recipe
from cudaenv.render.fix import render_pep668


def test_the_venv_recipe_installs_the_recommended_build():
    rec = SimpleNamespace(packages=("torch==2.7.1+cu126",), index_url="https://download.pytorch.org/whl/cu126")
    plan = FixPlan(rec, (Choice("install", "Install torch 2.7.1 cu126 (recommended)", rec), Choice("quit", "Do nothing")))
    recipe = pep668_recipe("/usr/bin/python3", plan)
    assert recipe == [
        "/usr/bin/python3 -m venv ~/.venvs/torch    # /usr/bin/python3 is externally managed (PEP 668): pip will not install into it",
        "~/.venvs/torch/bin/python -m pip install torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126",
    ]
    assert render_pep668("/usr/bin/python3", recipe) == (
        "\n/usr/bin/python3 is an externally managed system Python (PEP 668): cudaenv will not install into it.\n"
        "Make a virtual environment instead:\n"
        "  %s\n  %s\n"
        "  # then use ~/.venvs/torch/bin/python (or `source ~/.venvs/torch/bin/activate`)\n" % tuple(recipe))


def test_with_nothing_installable_the_recipe_installs_plain_torch():
    plan = FixPlan(None, (Choice("quit", "Do nothing"),))
    assert pep668_recipe("/usr/bin/python3", plan)[1] == "~/.venvs/torch/bin/python -m pip install torch"
