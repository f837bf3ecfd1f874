// -lcuda: the driver API, linked against the toolkit's lib64/stubs/libcuda.so (cudaenv builds it; no wheel ships it).
#include <cuda.h>
#include <cstdio>

int main() {
  CUresult r = cuInit(0);
  int n = 0;
  if (r == CUDA_SUCCESS) cuDeviceGetCount(&n);
  std::printf("cuInit: %d, %d devices\n", (int)r, n);
  return 0;
}
