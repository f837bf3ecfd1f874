"""The corpus of real tool outputs (issue 14 sec. 4): each pasted output of tests/corpus/tools/ (and the recorded ones
of tests/recorded/ the probes' tests already use) gives exactly the facts written here, and the doctor's findings
on them. Each expectation was checked against the output's own text; absent facts must stay None."""

import pytest

from builders import RECORDED, recorded, strip_provenance
from cudaenv.pasted import paste_findings, read_facts

CORPUS = RECORDED.parent / "corpus" / "tools"

# name -> (facts other than gpus/sources/machine, sources, gpus as (index, name, bus_id, uuid, MiB total, MiB used
# [, compute capability]), ids of the doctor's findings)
EXPECTED = {
    'collect-env-1.13-t4-many-cudnn.txt': ({'driver_version': '520.61.05', 'torch_version': '1.13.0+cu117', 'torch_cuda': '11.7', 'cuda_available': True, 'cudnn_version': '8.7.0', 'platform': 'linux'}, ('collect_env',), [(0, 'Tesla T4', None, None, None, None)], []),
    'collect-env-1.5-os-not-collected.txt': ({'driver_version': '426.25', 'toolkit_version': '10.1.243', 'torch_version': '1.5.0+cu101', 'torch_cuda': '10.1', 'cuda_available': True}, ('collect_env',), [(0, 'Quadro P1000', None, None, None, None)], []),
    'collect-env-h100x8-multiline-gpus.txt': ({'driver_version': '550.127.05', 'torch_version': '2.5.1+cu124', 'torch_cuda': '12.4', 'cuda_available': True, 'platform': 'linux'}, ('collect_env',), [(0, 'NVIDIA H100 80GB HBM3', None, None, None, None), (1, 'NVIDIA H100 80GB HBM3', None, None, None, None), (2, 'NVIDIA H100 80GB HBM3', None, None, None, None), (3, 'NVIDIA H100 80GB HBM3', None, None, None, None), (4, 'NVIDIA H100 80GB HBM3', None, None, None, None), (5, 'NVIDIA H100 80GB HBM3', None, None, None, None), (6, 'NVIDIA H100 80GB HBM3', None, None, None, None), (7, 'NVIDIA H100 80GB HBM3', None, None, None, None)], []),
    'collect-env-macos-2.2.2.txt': ({'torch_version': '2.2.2', 'cuda_available': False, 'platform': 'macos'}, ('collect_env',), [], []),
    'collect-env-macosx-no-torch.txt': ({'platform': 'macos'}, ('collect_env',), [], []),
    'collect-env-rocm-1.7.txt': ({'torch_version': '1.7.0a0+9ddd3df', 'cuda_available': True, 'rocm_version': '3.7.20315', 'platform': 'linux'}, ('collect_env',), [], []),
    'collect-env-windows-1.5-quoted.txt': ({'driver_version': '442.92', 'toolkit_version': '10.1.243', 'torch_version': '1.5.0+cu101', 'torch_cuda': '10.1', 'cuda_available': True, 'cudnn_version': '7', 'platform': 'windows'}, ('collect_env',), [(0, 'TITAN RTX', None, None, None, None), (1, 'TITAN RTX', None, None, None, None)], []),
    'collect-env-windows-2.0.1-cu117.txt': ({'driver_version': '535.98', 'toolkit_version': '11.7.64', 'torch_version': '2.0.1+cu117', 'torch_cuda': '11.7', 'cuda_available': True, 'cudnn_version': '8', 'platform': 'windows'}, ('collect_env',), [(0, 'NVIDIA GeForce GTX 1050 Ti', None, None, None, None)], []),
    'collect-env-windows-2.2.2-cuda-not-collected.txt': ({'driver_version': '551.86', 'toolkit_version': '12.4.99', 'torch_version': '2.2.2', 'cuda_available': False, 'platform': 'windows'}, ('collect_env',), [(0, 'NVIDIA GeForce RTX 4080 Laptop GPU', None, None, None, None)], ['torch-cpu-only']),
    'collect-env-windows-2.8-cpu.txt': ({'torch_version': '2.8.0.dev20250528+cpu', 'cuda_available': False, 'platform': 'windows'}, ('collect_env',), [], []),
    'collect-env-wsl2-1.10-cu111.txt': ({'torch_version': '1.10.0+cu111', 'torch_cuda': '11.1', 'platform': 'wsl2'}, ('collect_env',), [], []),
    'collect-env-wsl2-2.4-cu121.txt': ({'driver_version': '551.88', 'toolkit_version': '12.4.131', 'torch_version': '2.4.0+cu121', 'torch_cuda': '12.1', 'cuda_available': True, 'platform': 'wsl2'}, ('collect_env',), [(0, 'NVIDIA GeForce RTX 4070 Laptop GPU', None, None, None, None)], []),
    'device-query-fail-999.txt': ({}, ('deviceQuery',), [], []),
    'device-query-gt750m-macos.txt': ({'cuda_version': '8.0'}, ('deviceQuery',), [(0, 'GeForce GT 750M', None, None, 2048, None, '3.0')], []),
    'device-query-gtx460.txt': ({'cuda_version': '5.0'}, ('deviceQuery',), [(0, 'GeForce GTX 460', None, None, 1023, None, '2.1')], []),
    'device-query-tegra-x1.txt': ({'cuda_version': '10.2'}, ('deviceQuery',), [(0, 'NVIDIA Tegra X1', None, None, 3960, None, '5.3')], []),
    'nvcc-10.2-windows.txt': ({'toolkit_version': '10.2.89'}, ('nvcc --version',), [], []),
    'nvcc-11.0.194.txt': ({'toolkit_version': '11.0.194'}, ('nvcc --version',), [], []),
    'nvcc-11.0.221.txt': ({'toolkit_version': '11.0.221'}, ('nvcc --version',), [], []),
    'nvcc-11.1.105.txt': ({'toolkit_version': '11.1.105'}, ('nvcc --version',), [], []),
    'nvcc-11.5-quoted-fragment.txt': ({'toolkit_version': '11.5.119'}, ('nvcc --version',), [], []),
    'proc-open-555-localized-date.txt': ({'driver_version': '555.58', 'platform': 'linux', 'kernel_module': 'open'}, ('/proc/driver/nvidia/version', 'lspci'), [], []),
    'proc-open-610-issue-template.txt': ({'driver_version': '610.43.02', 'platform': 'linux', 'kernel_module': 'open'}, ('/proc/driver/nvidia/version',), [], []),
    'smi-a-470-a100.txt': ({'driver_version': '470.103.01', 'cuda_version': '11.4'}, ('nvidia-smi -q',), [(0, 'NVIDIA A100-SXM4-80GB', '00000000:94:00.0', 'GPU-a75cda02-62ce-2c30-9150-555ef08935e2', None, None)], []),
    'smi-banner-375-titanx-cut.txt': ({'driver_version': '375.39'}, ('nvidia-smi',), [(0, 'TITAN X (Pascal)', '0000:01:00.0', None, 12186, 63)], []),
    'smi-banner-390-no-cuda-line.txt': ({'driver_version': '390.116'}, ('nvidia-smi',), [(0, 'GeForce GT 630', '00000000:02:00.0', None, 1985, 185)], []),
    'smi-banner-450-2080ti-docker.txt': ({'driver_version': '450.102.04', 'cuda_version': '11.2'}, ('nvidia-smi',), [(0, 'GeForce RTX 208...', '00000000:19:00.0', None, 11019, 6)], []),
    'smi-banner-450-over-418-t4.txt': ({'driver_version': '418.67', 'cuda_version': '10.1'}, ('nvidia-smi',), [(0, 'Tesla T4', '00000000:00:04.0', None, 15079, 163)], []),
    'smi-banner-450-titanxp.txt': ({'driver_version': '450.57', 'cuda_version': '11.0'}, ('nvidia-smi',), [(0, 'TITAN Xp', '00000000:17:00.0', None, 12196, 7)], []),
    'smi-banner-461-windows-wddm.txt': ({'driver_version': '461.72', 'cuda_version': '11.2', 'platform': 'windows'}, ('nvidia-smi',), [(0, 'GeForce GTX 105...', '00000000:01:00.0', None, 4096, 78)], []),
    'smi-banner-525-grid-quoted.txt': ({'driver_version': '525.60.13', 'cuda_version': '12.0'}, ('nvidia-smi',), [(0, 'GRID A100-40C', '00000000:02:01.0', None, 40960, 0), (1, 'GRID A100-40C', '00000000:02:02.0', None, 40960, 0)], []),
    'smi-banner-535-laptop-names-cut.txt': ({'driver_version': '535.104.05', 'cuda_version': '12.2'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce RTX 3070 ...', '00000000:21:00.0', None, 8192, 1464), (1, 'NVIDIA GeForce RTX 3080 ...', '00000000:25:00.0', None, 8192, 1723)], []),
    'smi-banner-wsl2-510-gtx1060.txt': ({'driver_version': '511.79', 'cuda_version': '11.6', 'platform': 'wsl2'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce ...', '00000000:01:00.0', None, 3072, 431)], []),
    'smi-banner-wsl2-515-3090.txt': ({'driver_version': '516.94', 'cuda_version': '11.6', 'platform': 'wsl2'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce ...', '00000000:0A:00.0', None, 24576, 6700)], []),
    'smi-list-1080ti.txt': ({}, ('nvidia-smi -L',), [(0, 'NVIDIA GeForce GTX 1080 Ti', None, 'GPU-b4ffae3c-ec4e-5aa8-8804-e83359cbc19f', None, None)], []),
    'smi-list-3090x4.txt': ({}, ('nvidia-smi -L',), [(0, 'NVIDIA GeForce RTX 3090', None, 'GPU-e1924eea-b9bb-d537-39f2-b345087fa145', None, None), (1, 'NVIDIA GeForce RTX 3090', None, 'GPU-899c71bf-27be-b6a0-ae8f-d8afe5ba0f85', None, None), (2, 'NVIDIA GeForce RTX 3090', None, 'GPU-acd314e9-4c7a-4824-eb0f-b6e38b1ec38c', None, None), (3, 'NVIDIA GeForce RTX 3090', None, 'GPU-2639988f-1756-0583-db8f-faee38effce2', None, None)], []),
    'smi-list-a100-mig.txt': ({}, ('nvidia-smi -L',), [(0, 'NVIDIA A100-SXM4-80GB', None, 'GPU-513536b6-7d19-9063-b049-1e69664bb298', None, None), (1, 'NVIDIA A100-SXM4-80GB', None, 'GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95', None, None), (2, 'NVIDIA A100-SXM4-80GB', None, 'GPU-5e375e7e-b41f-155b-dcdc-534524c356fc', None, None), (3, 'NVIDIA A100-SXM4-80GB', None, 'GPU-69ec2344-ebac-b028-f88f-452abb3d7f11', None, None)], []),
    'smi-list-and-banner-quadro-rtx4000.txt': ({'driver_version': '535.129.03', 'cuda_version': '12.2'}, ('nvidia-smi', 'nvidia-smi -L'), [(0, 'Quadro RTX 4000', '00000000:06:00.0', 'GPU-c7b57be0-94ff-d352-a59b-d0ee00aeed43', 8192, 1), (1, 'Quadro RTX 4000', '00000000:07:00.0', 'GPU-d6de6afc-bdfe-75c4-5273-0544439153fc', None, None)], []),
    'smi-list-no-uuid-and-q-410.txt': ({'driver_version': '410.57'}, ('nvidia-smi -q',), [], []),
    'smi-query-csv-name-header.txt': ({}, ('nvidia-smi -L', 'nvidia-smi --query-gpu'), [(0, 'NVIDIA GeForce GTX 1080 Ti', None, 'GPU-b4ffae3c-ec4e-5aa8-8804-e83359cbc19f', None, None)], []),
    'smi-query-csv-units-unknown-error.txt': ({}, ('nvidia-smi --query-gpu',), [(0, 'GeForce RTX 2080 Ti', None, None, None, None)], []),
    'smi-rows-err-v100-fragment.txt': ({}, ('nvidia-smi',), [(1, 'Tesla V100-PCIE...', '00008ED0:00:00.0', None, 16160, 593)], []),
    'smi-banner-331-multi.txt': ({'driver_version': '331.62'}, ('nvidia-smi',), [(0, 'GeForce GTX 680', '0000:03:00.0', None, 4095, 9), (1, 'GeForce GTX 680', '0000:04:00.0', None, 4095, 9), (2, 'GeForce GTX 680', '0000:83:00.0', None, 4095, 9)], []),
    'smi-banner-384-processes.txt': ({'driver_version': '384.66'}, ('nvidia-smi',), [(0, 'TITAN Xp', '00000000:41:00.0', None, 12174, 2789)], []),
    'smi-banner-470.txt': ({'driver_version': '470.182.03', 'cuda_version': '11.4'}, ('nvidia-smi',), [(0, 'Tesla V100-SXM2...', '00000000:00:04.0', None, 16160, 0)], []),
    'smi-banner-550-single.txt': ({'driver_version': '550.135', 'cuda_version': '12.4'}, ('nvidia-smi',), [(0, 'Tesla P4', '00000000:86:00.0', None, 8192, 7719)], []),
    'smi-banner-580-a100x2.txt': ({'driver_version': '580.126.09', 'cuda_version': '13.0'}, ('nvidia-smi',), [(0, 'NVIDIA A100-SXM4-40GB', '00000000:10:1C.0', None, 40960, 598), (1, 'NVIDIA A100-SXM4-40GB', '00000000:10:1D.0', None, 40960, 602)], []),
    'smi-banner-610-kmd-b200x2.txt': ({'driver_version': '610.43.02', 'cuda_version': '13.3'}, ('nvidia-smi',), [(0, 'NVIDIA B200', '00000000:63:00.0', None, 183359, 0), (1, 'NVIDIA B200', '00000000:68:00.0', None, 183359, 0)], []),
    'smi-banner-610-kmd-single.txt': ({'driver_version': '610.43.02', 'cuda_version': '13.3'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce RTX 5070 ...', '00000000:02:00.0', None, 12227, 273)], []),
    'smi-banner-cuda-na.txt': ({'driver_version': '470.57.02'}, ('nvidia-smi',), [(0, 'Quadro P620', '00000000:01:00.0', None, 4042, 523)], []),
    'smi-banner-windows-processes.txt': ({'driver_version': '460.15', 'cuda_version': '11.1', 'platform': 'windows'}, ('nvidia-smi',), [(0, 'GeForce RTX 207...', '00000000:01:00.0', None, 8192, 176)], []),
    'smi-banner-wsl2-err.txt': ({'driver_version': '546.80', 'platform': 'wsl2'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce RTX 3060 ...', '00000000:01:00.0', None, 6144, 816)], []),
    'smi-banner-wsl2.txt': ({'driver_version': '555.99', 'cuda_version': '12.5', 'platform': 'wsl2'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce RTX 4070 ...', '00000000:01:00.0', None, 12282, 576)], []),
    'smi-q-375-quadro-m1000m.txt': ({'driver_version': '375.82'}, ('nvidia-smi -q',), [(0, 'Quadro M1000M', '0000:01:00.0', 'GPU-7cfc2710-0025-0d50-7ce9-5c877f079cb4', None, None)], []),
    'smi-q-450-gtx780.txt': ({'driver_version': '450.66', 'cuda_version': '11.0'}, ('nvidia-smi -q',), [(0, 'GeForce GTX 780', '00000000:01:00.0', 'GPU-a230e637-c9e1-1b61-3830-a437b874d88d', None, None)], []),
    'smi-list-a100-mig-r450.txt': ({}, ('nvidia-smi -L',), [(0, 'A100-PCIE-40GB', None, 'GPU-9de3d0e8-33f5-10dc-0c79-2c88a7ab0a23', None, None)], []),
    'smi-list-h100nvl-mig.txt': ({}, ('nvidia-smi -L',), [(0, 'NVIDIA H100 NVL', None, 'GPU-81495ec7-da36-8ea5-9f7d-5804aa3fef20', None, None)], []),
    'nvcc-10.1.243.txt': ({'toolkit_version': '10.1.243'}, ('nvcc --version',), [], []),
    'nvcc-11.7.99.txt': ({'toolkit_version': '11.7.99'}, ('nvcc --version',), [], []),
    'nvcc-13.0.88-this-machine.txt': ({'toolkit_version': '13.0.88'}, ('nvcc --version',), [], []),
    'nvcc-8.0.44-debian.txt': ({'toolkit_version': '8.0.44'}, ('nvcc --version',), [], []),
    'proc-nvidia-open-525-arch.txt': ({'driver_version': '525.60.11', 'platform': 'linux', 'kernel_module': 'open'}, ('/proc/driver/nvidia/version',), [], []),
    'proc-nvidia-open-565.txt': ({'driver_version': '565.57.01', 'platform': 'linux', 'kernel_module': 'open'}, ('/proc/driver/nvidia/version',), [], []),
    'proc-nvidia-open-jetson.txt': ({'driver_version': '35.3.1', 'platform': 'linux', 'kernel_module': 'open'}, ('/proc/driver/nvidia/version',), [], []),
    'proc-nvidia-proprietary-384.txt': ({'driver_version': '384.98', 'platform': 'linux', 'kernel_module': 'proprietary'}, ('/proc/driver/nvidia/version',), [], []),
    'proc-nvidia-proprietary-580.txt': ({'driver_version': '580.173.02', 'platform': 'linux', 'kernel_module': 'proprietary'}, ('/proc/driver/nvidia/version',), [], []),
    'diag-banner-1080ti.txt': ({'driver_version': '531.14', 'cuda_version': '12.1', 'platform': 'windows'}, ('nvidia-smi',), [(0, 'NVIDIA GeForce GTX 1080 Ti', '00000000:09:00.0', None, 11264, 1585)], []),
    'diag-banner-535-a10g.txt': ({'driver_version': '535.247.01', 'cuda_version': '12.2'}, ('nvidia-smi',), [(0, 'NVIDIA A10G', '00000000:00:1E.0', None, 23028, 8722)], []),
}
SCALARS = ("driver_version", "cuda_version", "toolkit_version", "torch_version", "torch_cuda", "cuda_available",
           "cudnn_version", "rocm_version", "platform", "kernel_module")


def _text(name: str) -> str:
    path = CORPUS / name
    return strip_provenance(path.read_text(encoding="utf-8")) if path.exists() else recorded(name)


def test_the_corpus_holds_forty_real_outputs_each_with_its_source():
    files = sorted(p.name for p in CORPUS.glob("*.txt"))
    assert len(files) >= 40
    assert set(files) <= set(EXPECTED)  # every corpus file has its expectation
    for name in files:
        first = (CORPUS / name).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: https://"), name
    kinds = {EXPECTED[n][1] for n in EXPECTED}
    for source in ("nvidia-smi", "nvidia-smi -q", "nvidia-smi -L", "nvidia-smi --query-gpu", "nvcc --version", "collect_env",
                   "/proc/driver/nvidia/version", "deviceQuery"):
        assert any(source in k for k in kinds), source


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_output_gives_its_facts(name):
    facts_expected, sources, gpus, findings = EXPECTED[name]
    facts = read_facts(_text(name))
    assert facts is not None, name
    for key in SCALARS:
        assert getattr(facts, key) == facts_expected.get(key), (name, key)
    assert facts.sources == sources
    got = [(g.index, g.name, g.bus_id, g.uuid, g.memory_total_mib, g.memory_used_mib)
           + ((g.compute_capability,) if g.compute_capability else ()) for g in facts.gpus]
    assert got == gpus
    assert [f.id for f in paste_findings(facts)] == findings


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_output_reads_the_same_quoted_in_a_reply(name):
    text = _text(name)
    quoted = "\n".join("> " + line for line in text.splitlines())
    assert read_facts(quoted) == read_facts(text)


def test_two_outputs_pasted_together_are_merged():
    text = _text("collect-env-wsl2-2.4-cu121.txt") + "\n" + _text("smi-banner-wsl2.txt") + "\n" + _text("nvcc-11.7.99.txt")
    facts = read_facts(text)
    assert facts.sources == ("nvidia-smi", "nvcc --version", "collect_env")
    assert facts.driver_version == "555.99"  # nvidia-smi's word first
    assert facts.toolkit_version == "11.7.99"  # nvcc's own output before collect_env's copy of it
    assert facts.gpus[0].memory_total_mib == 12282 and facts.platform == "wsl2"
