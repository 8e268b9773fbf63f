/*
 * matmul_nbits.cu - 4-bit block-quantized matmul (layout in wskernels.h).  GEMV and split-K: one
 * thread per output element; the split-K tactic gives each z-slice of the grid a range of K blocks
 * and writes fp32 partial sums to the workspace, reduced in split order by wsk_matmul_reduce.
 * GEMM: 64 x 64 tiles in shared memory, each thread 4 x 4 outputs; with several K slices each
 * slice adds into the output in slice order, serialised by one semaphore per tile (the zeroed
 * workspace), the last slice resetting it to 0.
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

#define GEMM_THREADS 256u /* 16 x 16 threads, 4 x 4 outputs each */
#define GEMM_SUB     4u

/* x[m0 .. m0+64)[k0 .. k0+len) into xs, zeros elsewhere. */
__device__ static void gemm_load_x(float (*xs)[WSK_QBLOCK + 1], const float *x, uint32_t M, uint32_t K, uint32_t m0,
                                   uint32_t k0, uint32_t len)
{
    for (uint32_t e = threadIdx.x; e < WSK_GEMM_TILE_M * WSK_QBLOCK; e += blockDim.x) {
        uint32_t r = e / WSK_QBLOCK, i = e % WSK_QBLOCK, m = m0 + r;
        xs[r][i] = m < M && i < len ? x[(uint64_t)m * K + k0 + i] : 0.0f;
    }
}

/* Block blk of columns n0 .. n0+64, dequantised into wt[i][j]; zeros past N and K. */
__device__ static void gemm_load_w(float (*wt)[WSK_GEMM_TILE_N], const uint8_t *w, const float *scales,
                                   const uint8_t *zp, uint32_t N, uint32_t kblocks, uint32_t n0, uint32_t blk,
                                   uint32_t len)
{
    for (uint32_t e = threadIdx.x; e < WSK_QBLOCK * WSK_GEMM_TILE_N; e += blockDim.x) {
        uint32_t j = e % WSK_GEMM_TILE_N, i = e / WSK_GEMM_TILE_N, n = n0 + j;
        float v = 0.0f;
        if (n < N && i < len) {
            uint8_t byte = w[((uint64_t)n * kblocks + blk) * WSK_QBLOCK_BYTES + i / 2];
            float q = (float)((i & 1) ? byte >> 4 : byte & 15);
            v = (q - wsk_zero_point(zp, n, blk, kblocks)) * scales[(uint64_t)n * kblocks + blk];
        }
        wt[i][j] = v;
    }
}

/* Thread 0 waits for the tile's turn; everyone then sees the earlier slices' sums. */
__device__ static void gemm_wait(int32_t *semaphore, uint32_t slice)
{
    if (threadIdx.x == 0)
        while (atomicCAS(semaphore, (int32_t)slice, (int32_t)slice) != (int32_t)slice)
            ;
    __threadfence();
    __syncthreads();
}

/* grid (ceil(N/64), ceil(M/64), split_k), block GEMM_THREADS */
extern "C" __global__ void wsk_matmul_gemm(float *y, const float *x, const uint8_t *w, const float *scales,
                                           const uint8_t *zp, int32_t *semaphores, uint32_t M, uint32_t K, uint32_t N,
                                           uint32_t split_k)
{
    __shared__ float xs[WSK_GEMM_TILE_M][WSK_QBLOCK + 1];
    __shared__ float wt[WSK_QBLOCK][WSK_GEMM_TILE_N];
    uint32_t tx = threadIdx.x % 16, ty = threadIdx.x / 16, s = blockIdx.z;
    uint32_t n0 = blockIdx.x * WSK_GEMM_TILE_N, m0 = blockIdx.y * WSK_GEMM_TILE_M;
    uint32_t kblocks = (K + WSK_QBLOCK - 1) / WSK_QBLOCK, per = (kblocks + split_k - 1) / split_k;
    uint32_t b0 = s * per < kblocks ? s * per : kblocks, b1 = b0 + per < kblocks ? b0 + per : kblocks;
    float acc[GEMM_SUB][GEMM_SUB] = {{0.0f}};
    for (uint32_t blk = b0; blk < b1; blk++) {
        uint32_t k0 = blk * WSK_QBLOCK, len = K - k0 < WSK_QBLOCK ? K - k0 : WSK_QBLOCK;
        gemm_load_x(xs, x, M, K, m0, k0, len);
        gemm_load_w(wt, w, scales, zp, N, kblocks, n0, blk, len);
        __syncthreads();
        for (uint32_t i = 0; i < len; i++)
            for (uint32_t r = 0; r < GEMM_SUB; r++) {
                float xv = xs[ty + 16 * r][i];
                for (uint32_t c = 0; c < GEMM_SUB; c++)
                    acc[r][c] += xv * wt[i][tx + 16 * c];
            }
        __syncthreads();
    }
    int32_t *semaphore = &semaphores[(uint64_t)blockIdx.y * gridDim.x + blockIdx.x];
    if (split_k > 1)
        gemm_wait(semaphore, s);
    for (uint32_t r = 0; r < GEMM_SUB; r++)
        for (uint32_t c = 0; c < GEMM_SUB; c++) {
            uint32_t m = m0 + ty + 16 * r, n = n0 + tx + 16 * c;
            if (m < M && n < N) { /* an earlier slice's sums come from another block: read them past L1 */
                float *out = &y[(uint64_t)m * N + n];
                *out = s == 0 ? acc[r][c] : __ldcg(out) + acc[r][c];
            }
        }
    if (split_k > 1) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
            atomicExch(semaphore, s + 1 == split_k ? 0 : (int32_t)s + 1);
    }
}
