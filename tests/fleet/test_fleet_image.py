"""`cudaenv fleet summarize --image REF` (issue 30): which nodes of a fleet's reports can run a container image, by
the doctor's own rule (cudaenv.diagnose.image) on each node's driver; text, Markdown, JSON and HTML."""

import json

from fleet_builders import node_report, planted
from image_builders import NVIDIA_CUDA_12_0_CONFIG, config, docker_save
from cudaenv.fleet.files import report_paths
from cudaenv.fleet.summary import summarize


def run(cli, *args):
    return cli("fleet", "summarize", *args, env={"PATH": "/nonexistent", "COLUMNS": "80"})


def cuda13(tmp_path):
    return str(docker_save(tmp_path / "cuda13.tar", config(["CUDA_VERSION=13.0.1", "NVIDIA_REQUIRE_CUDA=cuda>=13.0"]), [],
                           tags=("nvidia/cuda:13.0.1-base-ubuntu24.04",)))


def test_the_nodes_whose_driver_is_too_old(tmp_path):
    folder = planted(tmp_path / "r")
    (folder / "node-21.json").write_text(json.dumps(node_report("node-21", driver=None).to_dict()))
    s = summarize(report_paths([str(folder)]), image=cuda13(tmp_path))
    img = s.image
    assert (img.needs_driver, img.needs_why, img.runs, img.too_old, img.no_driver) == ("580.65.06", "require", 18, 2, 1)
    assert [(n.name, n.driver, n.verdict) for n in img.nodes] == [
        ("node-03", "535.247.01", "needs-newer-driver"), ("node-04", "535.247.01", "needs-newer-driver"),
        ("node-21", "none", "no-driver")]
    assert not img.ok
    old = summarize(report_paths([str(folder)]), image=str(docker_save(tmp_path / "c12.tar", NVIDIA_CUDA_12_0_CONFIG, [])))
    assert old.image.ok and old.image.too_old == 0 and old.image.runs == 20 and old.image.needs_driver == "525.60.13"


def test_every_format_names_them_and_the_exit_code_says_so(cli, tmp_path):
    folder = str(planted(tmp_path / "r"))
    image = cuda13(tmp_path)
    r = run(cli, folder, "--image", image)
    assert r.code == 1
    flat = " ".join(r.out.split())
    assert ("Image image nvidia/cuda:13.0.1-base-ubuntu24.04 needs driver 580.65.06 or newer (its NVIDIA_REQUIRE_CUDA, "
            "checked by the runtime): runs on 18 nodes, driver too old on 2") in flat
    assert "node-03 driver 535.247.01: driver too old" in flat and "driver too old for the image on 2" in flat
    data = json.loads(run(cli, folder, "--image", image, "--json").out)
    assert data["image"]["too_old"] == 2 and data["image"]["image"]["tags"] == ["nvidia/cuda:13.0.1-base-ubuntu24.04"]
    assert list(data)[-1] == "image" and "image" not in json.loads(run(cli, folder, "--json").out)
    md = run(cli, folder, "--image", image, "--format", "markdown").out
    assert "| node-04 | `535.247.01` | driver too old |" in md
    html = run(cli, folder, "--image", image, "--format", "html").out
    assert '<p id="image">image nvidia/cuda:13.0.1-base-ubuntu24.04 needs driver 580.65.06 or newer' in html
    bad = run(cli, folder, "--image", str(tmp_path / "nope.tar"))
    assert bad.code == 1 and "nope.tar: not read (no such file or folder here" in " ".join(bad.out.split())
    zh = cli("fleet", "summarize", folder, "--image", str(tmp_path / "nope.tar"),
             env={"PATH": "/nonexistent", "COLUMNS": "80", "LANG": "zh_CN.UTF-8"})
    said = "".join(zh.out.split())  # why the image was not read: a marked message, said in Chinese (review)
    assert "这里没有这个文件或文件夹" in said and "nosuchfile" not in said, zh.out
