#include <cuda_runtime.h>
#include <cstdio>

__global__ void add(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] += a[i];
}

int main() {
    int version = 0;
    cudaRuntimeGetVersion(&version);
    std::printf("runtime %d\n", version);
    add<<<1, 32>>>(nullptr, nullptr, 0);
    return 0;
}
