// A program built with nvcc's default, the static cudart: its runtime calls never leave the
// executable, so the tracer cannot see them and must say so.  It makes N cudaMalloc calls and
// prints what the runtime answered (no GPU, or the simulated driver, answers with an error).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 1;
    cudaError_t last = cudaSuccess;
    for (int i = 0; i < n; i++) {
        void *p = nullptr;
        last = cudaMalloc(&p, 1024);
    }
    std::printf("calls=%d\nlast_rc=%d\n", n, (int)last);
    return 0;
}
