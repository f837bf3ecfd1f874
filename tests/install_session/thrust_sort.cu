#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/sequence.h>
#include <cstdio>

int main() {
    thrust::device_vector<int> v(1 << 10);
    thrust::sequence(v.rbegin(), v.rend());
    thrust::sort(v.begin(), v.end());
    std::printf("%d\n", static_cast<int>(v[0]));
    return 0;
}
