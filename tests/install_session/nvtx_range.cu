// --components nvtx: the NVTX headers are in the toolkit's include/, found by nvcc without any -I.
#include <nvtx3/nvToolsExt.h>

__global__ void touch(int *x) { x[threadIdx.x] = threadIdx.x; }

int main() {
    nvtxRangePushA("cudaenv");
    nvtxRangePop();
    return 0;
}
