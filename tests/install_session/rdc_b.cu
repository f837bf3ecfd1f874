__device__ int twice(int x) { return 2 * x; }

#ifdef STANDALONE
#include <cuda_runtime.h>
__global__ void k(int *out) { *out = twice(2); }
int main() {
    int *d = nullptr;
    cudaMalloc(&d, sizeof(int));
    k<<<1, 1>>>(d);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
#endif
