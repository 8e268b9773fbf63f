/*
 * matmul_nbits.cu - 4-bit block-quantized matmul (layout in wskernels.h).  One thread per output
 * element; the split-K tactic gives each z-slice of the grid a range of K blocks and writes fp32
 * partial sums to the workspace, reduced in split order by wsk_matmul_reduce.
 */
#include "matmul_nbits_dot.h"
#include "wsk_cuda.cuh"

/* grid (ceil(N/WSK_MATMUL_TILE_N), M), block WSK_MATMUL_TILE_N */
extern "C" __global__ void wsk_matmul_gemv(float *y, const float *x, const uint8_t *w, const float *scales,
                                           const uint8_t *zp, uint32_t M, uint32_t K, uint32_t N)
{
    uint32_t n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
    if (n >= N || m >= M)
        return;
    uint32_t kblocks = (K + WSK_QBLOCK - 1) / WSK_QBLOCK;
    y[(uint64_t)m * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, 0, kblocks);
}

/* grid (ceil(N/WSK_MATMUL_TILE_N), M, split_k), block WSK_MATMUL_TILE_N */
extern "C" __global__ void wsk_matmul_splitk(float *ws, const float *x, const uint8_t *w, const float *scales,
                                             const uint8_t *zp, uint32_t M, uint32_t K, uint32_t N, uint32_t split_k)
{
    uint32_t n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y, s = blockIdx.z;
    if (n >= N || m >= M || s >= split_k)
        return;
    uint32_t kblocks = (K + WSK_QBLOCK - 1) / WSK_QBLOCK, per = (kblocks + split_k - 1) / split_k;
    uint32_t b0 = s * per < kblocks ? s * per : kblocks;
    uint32_t b1 = b0 + per < kblocks ? b0 + per : kblocks;
    ws[((uint64_t)s * M + m) * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, b0, b1);
}

extern "C" __global__ void wsk_matmul_reduce(float *y, const float *ws, uint32_t M, uint32_t N, uint32_t split_k)
{
    uint64_t mn = (uint64_t)M * N;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < mn; i += (uint64_t)gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (uint32_t s = 0; s < split_k; s++)
            acc += ws[s * mn + i];
        y[i] = acc;
    }
}
