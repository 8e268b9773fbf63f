/* A program that uses only fakeblas (no CUDA library of its own): GEMM_CALLS calls, then prints
 * what the library counted, "allocs=", "async_allocs=", "frees=", "launches=", "launches_ex=". */
#include <stdio.h>

#include "fakeblas.h"

enum { GEMM_CALLS = 5 };

int main(void)
{
    struct fakeblas_counts n;
    if (fakeblas_gemm(GEMM_CALLS, &n) != 0) {
        fprintf(stderr, "blas_prog: fakeblas_gemm failed\n");
        return 1;
    }
    printf("allocs=%u\nasync_allocs=%u\nfrees=%u\nlaunches=%u\nlaunches_ex=%u\n", n.allocs, n.async_allocs, n.frees,
           n.launches, n.launches_ex);
    return 0;
}
