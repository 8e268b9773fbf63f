/* The library of fakeblas.c and what its calls did, counted by itself. */
#ifndef WS_FAKEBLAS_H
#define WS_FAKEBLAS_H

#define FAKEBLAS_WORKSPACE (1u << 20)
#define FAKEBLAS_SCRATCH   (64u << 10)

struct fakeblas_counts {
    unsigned allocs, async_allocs, frees, launches, launches_ex;
};

__attribute__((visibility("default"))) int fakeblas_gemm(int calls, struct fakeblas_counts *n);

#endif
