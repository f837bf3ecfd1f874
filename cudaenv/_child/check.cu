#include <cstdio>
#include <cuda_runtime.h>

__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static int fail(int dev, const char *stage, cudaError_t err) {
    printf("CUDAENV_TOOLKIT {\"device\": %d, \"ok\": false, \"stage\": \"%s\", \"code\": %d, \"error\": \"%s\"}\n",
           dev, stage, (int)err, cudaGetErrorString(err));
    return 1;
}

int main(void) {
    int runtime = 0, driver = 0, count = 0, failed = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    cudaError_t err = cudaGetDeviceCount(&count);
    printf("CUDAENV_TOOLKIT {\"runtime\": %d, \"driver\": %d, \"count\": %d}\n", runtime, driver, err == cudaSuccess ? count : 0);
    if (err != cudaSuccess) return fail(-1, "cudaGetDeviceCount", err);
    const int n = 1 << 16;
    static float ha[1 << 16], hb[1 << 16], hc[1 << 16];
    for (int i = 0; i < n; ++i) { ha[i] = (float)i; hb[i] = 2.0f * i; }
    for (int dev = 0; dev < count; ++dev) {
        cudaDeviceProp p;
        float *a = 0, *b = 0, *c = 0;
        if ((err = cudaSetDevice(dev)) != cudaSuccess) { failed |= fail(dev, "cudaSetDevice", err); continue; }
        if ((err = cudaGetDeviceProperties(&p, dev)) != cudaSuccess) { failed |= fail(dev, "cudaGetDeviceProperties", err); continue; }
        if ((err = cudaMalloc(&a, n * sizeof(float))) != cudaSuccess ||
            (err = cudaMalloc(&b, n * sizeof(float))) != cudaSuccess ||
            (err = cudaMalloc(&c, n * sizeof(float))) != cudaSuccess) { failed |= fail(dev, "cudaMalloc", err); continue; }
        cudaMemcpy(a, ha, n * sizeof(float), cudaMemcpyHostToDevice);
        cudaMemcpy(b, hb, n * sizeof(float), cudaMemcpyHostToDevice);
        add<<<(n + 255) / 256, 256>>>(a, b, c, n);
        if ((err = cudaGetLastError()) != cudaSuccess) { failed |= fail(dev, "launch", err); continue; }
        if ((err = cudaDeviceSynchronize()) != cudaSuccess) { failed |= fail(dev, "synchronize", err); continue; }
        if ((err = cudaMemcpy(hc, c, n * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) { failed |= fail(dev, "copy", err); continue; }
        int wrong = 0;
        for (int i = 0; i < n; ++i) if (hc[i] != 3.0f * i) ++wrong;
        printf("CUDAENV_TOOLKIT {\"device\": %d, \"name\": \"%s\", \"capability\": \"%d.%d\", \"ok\": %s, \"wrong\": %d}\n",
               dev, p.name, p.major, p.minor, wrong ? "false" : "true", wrong);
        failed |= wrong != 0;
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    return failed;
}
