__device__ int twice(int x);

__global__ void kernel(int *out) { *out = twice(21); }

int main() {
    int *d = nullptr;
    cudaMalloc(&d, sizeof(int));
    kernel<<<1, 1>>>(d);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
