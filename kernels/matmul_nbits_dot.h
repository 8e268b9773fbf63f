/*
 * matmul_nbits_dot.h - dequantise-and-dot of matmul_nbits, one definition for the host reference
 * (ref_matmul_nbits.c) and the CUDA kernel (cuda/matmul_nbits.cu): both sum in the same order,
 * so the simulated device and a GPU agree to rounding.
 */
#ifndef WSK_MATMUL_NBITS_DOT_H
#define WSK_MATMUL_NBITS_DOT_H

#include <stdint.h>

#include "wskernels.h"

#ifdef __CUDACC__
#define WSK_HD __host__ __device__
#else
#define WSK_HD
#endif

WSK_HD static inline float wsk_zero_point(const uint8_t *zp, uint32_t n, uint32_t blk, uint32_t kblocks)
{
    if (!zp)
        return 8.0f;
    uint8_t byte = zp[(uint64_t)n * ((kblocks + 1) / 2) + blk / 2];
    return (float)((blk & 1) ? byte >> 4 : byte & 15);
}

/* Dot product of row x with column n of the dequantised weights over blocks [b0, b1). */
WSK_HD static inline float wsk_dot_blocks(const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                                          uint32_t K, uint32_t n, uint32_t b0, uint32_t b1)
{
    uint32_t kblocks = K / WSK_QBLOCK + (K % WSK_QBLOCK != 0);
    float acc = 0.0f;
    for (uint32_t blk = b0; blk < b1; blk++) {
        const uint8_t *packed = w + ((uint64_t)n * kblocks + blk) * WSK_QBLOCK_BYTES;
        float z = wsk_zero_point(zp, n, blk, kblocks), part = 0.0f;
        uint32_t k0 = blk * WSK_QBLOCK, len = K - k0 < WSK_QBLOCK ? K - k0 : WSK_QBLOCK;
        for (uint32_t i = 0; i < len; i++) {
            uint8_t byte = packed[i / 2];
            float q = (float)((i & 1) ? byte >> 4 : byte & 15);
            part += x[k0 + i] * (q - z);
        }
        acc += part * scales[(uint64_t)n * kblocks + blk];
    }
    return acc;
}

#endif
