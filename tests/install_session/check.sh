#!/usr/bin/env bash
# `nox -s install`: install CUDA 13.0 from the package index into a temp data dir, switch a bash shell to it with
# `cudaenv use`, compile and link (no GPU needed) a thrust program, an -rdc=true program, an NVTX one (--components nvtx), a
# driver-API one (-lcuda, against the stub cudaenv builds) and a CMake
# project (enable_language(CUDA) + find_package(CUDAToolkit)), then `cudaenv uninstall --yes` and check nothing is left.
set -euo pipefail
trap 'echo "check.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
work=$1
src=$(cd "$(dirname "$0")" && pwd)
export CUDAENV_DATA_DIR=$work/data
mkdir -p "$work/build"

start=$(date +%s.%N)
cudaenv install 13.0 --components nvtx --json > "$work/install.json"
end=$(date +%s.%N)
release=$(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["release"])' "$work/install.json")
python - "$work/install.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("install: release %s, %d files, %.1f MB downloaded, %.1f s wall (cudaenv says %s s)" % (
    r["release"], r["files"], r["download_bytes"] / 1e6, float(sys.argv[3]) - float(sys.argv[2]), r["seconds"]))
for c in r["components"]:
    print("  %s %s" % (c["name"], c["version"]))
PY
tk=$CUDAENV_DATA_DIR/toolkits/$release
test -f "$tk/.cudaenv-install.json"
test -f "$tk/include/nvtx3/nvToolsExt.h"   # --components nvtx: at the release's pin, in the same tree
python -c 'import json,sys; r=json.load(open(sys.argv[1])); assert any(c["name"]=="nvidia-nvtx" for c in r["components"]), r' "$work/install.json"
# (outputs captured first: with pipefail, `grep -q` closing the pipe early would fail the writer)
cudaenv list --json > "$work/list.json"
python - "$work/list.json" "$tk" <<'PY'
import json, sys
found = [t for t in json.load(open(sys.argv[1]))["toolkits"] if t["path"] == sys.argv[2]]
assert found and found[0]["install_method"] == "cudaenv", found
print("listed: %s %s (install method %s)" % (found[0]["version"], found[0]["path"], found[0]["install_method"]))
PY
again=$(cudaenv install 13.0)
grep -q "already installed" <<<"$again"

# This machine may also have /usr/local/cuda-13.0, whose version reads 13.0.88 (nvcc's number, no version.json):
# a release number and a component number compare at major.minor only, and the release-numbered install wins,
# so `use 13.0` right after `install 13.0` picks the install (issue 17).
source <(cudaenv use 13.0 --shell bash)
test "$CUDA_HOME" = "$tk"
test "$(command -v nvcc)" = "$tk/bin/nvcc"
version=$(nvcc --version)
tail -2 <<<"$version"

cd "$work/build"
t0=$(date +%s)
nvcc -o thrust_sort "$src/thrust_sort.cu"
nvcc -rdc=true -c -o rdc_a.o "$src/rdc_a.cu"
nvcc -rdc=true -c -o rdc_b.o "$src/rdc_b.cu"
nvcc -rdc=true -o rdc rdc_a.o rdc_b.o
nvcc -cudart shared -o shared_rt "$src/rdc_b.cu" -DSTANDALONE
nvcc -o nvtx_range "$src/nvtx_range.cu"
# -lcuda with no driver here (a container build): the toolkit's stub links it; the program needs the driver's libcuda.so.1
test -f "$tk/lib64/stubs/libcuda.so"
readelf -d "$tk/lib64/stubs/libcuda.so" | grep -F "Library soname: [libcuda.so.1]"
nvcc -o driver_api "$src/driver_api.cu" -L"$tk/lib64/stubs" -lcuda
nvcc --default-stream per-thread -o driver_api_ptds "$src/driver_api.cu" -L"$tk/lib64/stubs" -lcuda
readelf -d driver_api | grep -F "Shared library: [libcuda.so.1]"
cmake -S "$src/cmake" -B cm -DCMAKE_CUDA_ARCHITECTURES=75 > cmake-configure.log
grep -F "CUDAToolkit_BIN_DIR=$tk/bin" cmake-configure.log
cmake --build cm > cmake-build.log
test -x cm/cm_kernel
echo "compiled and linked: thrust, -rdc=true, -cudart shared, NVTX, -lcuda, CMake ($(( $(date +%s) - t0 )) s)"
ls -la thrust_sort rdc shared_rt cm/cm_kernel

cd "$work"
source <(cudaenv use --off --shell bash)
cudaenv uninstall "$release" --yes
test ! -e "$tk"
left=$(ls -A "$CUDAENV_DATA_DIR/toolkits" | grep -v '\.lock$' || true)
test -z "$left"
listed=$(cudaenv list --json)
if grep -qF "$CUDAENV_DATA_DIR" <<<"$listed"; then echo "still listed"; exit 1; fi
echo "uninstalled: nothing left in $CUDAENV_DATA_DIR/toolkits"
