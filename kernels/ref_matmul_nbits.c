/*
 * ref_matmul_nbits.c - host reference of matmul_nbits, in the same three tactics as the CUDA
 * kernels: a direct GEMV; split-K partial sums into the workspace followed by a reduction in split
 * order (so the result does not depend on how the workspace was placed); and the tiled GEMM, whose
 * K slices add into the output in slice order under one semaphore per tile.
 */
#include <string.h>

#include "matmul_nbits_dot.h"
#include "wskernels.h"

static uint32_t kblocks_of(uint32_t K) { return K / WSK_QBLOCK + (K % WSK_QBLOCK != 0); }

static void gemv(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp, uint32_t M,
                 uint32_t K, uint32_t N)
{
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            y[(uint64_t)m * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, 0, kblocks_of(K));
}

static void splitk_partial(float *ws, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                           uint32_t M, uint32_t K, uint32_t N, uint32_t split_k)
{
    uint32_t kblocks = kblocks_of(K), per = (kblocks + split_k - 1) / split_k;
    for (uint32_t s = 0; s < split_k; s++) {
        uint32_t b0 = s * per < kblocks ? s * per : kblocks;
        uint32_t b1 = b0 + per < kblocks ? b0 + per : kblocks;
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++)
                ws[((uint64_t)s * M + m) * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, b0, b1);
    }
}

static void splitk_reduce(float *y, const float *ws, uint32_t M, uint32_t N, uint32_t split_k)
{
    uint64_t mn = (uint64_t)M * N;
    for (uint64_t i = 0; i < mn; i++) {
        float acc = 0.0f;
        for (uint32_t s = 0; s < split_k; s++)
            acc += ws[s * mn + i];
        y[i] = acc;
    }
}

/* ---- GEMM: 64 x 64 tiles, serial split-K ---- */

#define TM WSK_GEMM_TILE_M
#define TN WSK_GEMM_TILE_N

/* Block blk of the tile's columns, dequantised: wt[i][j] = (q - zero point) * scale of value i of
 * column n0 + j; zeros past the last column and past K. */
static void dequant_block(float *restrict wt, const uint8_t *w, const float *scales, const uint8_t *zp, uint32_t K,
                          uint32_t N, uint32_t n0, uint32_t blk)
{
    uint32_t kblocks = kblocks_of(K), len = K - blk * WSK_QBLOCK < WSK_QBLOCK ? K - blk * WSK_QBLOCK : WSK_QBLOCK;
    for (uint32_t j = 0; j < TN; j++) {
        uint32_t n = n0 + j;
        const uint8_t *packed = n < N ? w + ((uint64_t)n * kblocks + blk) * WSK_QBLOCK_BYTES : NULL;
        float z = n < N ? wsk_zero_point(zp, n, blk, kblocks) : 0.0f;
        float scale = n < N ? scales[(uint64_t)n * kblocks + blk] : 0.0f;
        for (uint32_t i = 0; i < WSK_QBLOCK; i++) {
            uint8_t byte = packed && i < len ? packed[i / 2] : 0;
            float q = (float)((i & 1) ? byte >> 4 : byte & 15);
            wt[i * TN + j] = packed && i < len ? (q - z) * scale : 0.0f;
        }
    }
}

/* Four floats at a time (GCC's and clang's vector extension, any target). */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* Rows r and r + 1 (when two), 16 columns from j0: their sums stay in registers over the block. */
static void tile_pair(float acc[TM][TN], const float *wt, const float *x0, const float *x1, uint32_t r, uint32_t j0,
                      uint32_t len)
{
    float *a = &acc[r][j0], *b = x1 ? &acc[r + 1][j0] : a;
    v4f a0 = load4(a), a1 = load4(a + 4), a2 = load4(a + 8), a3 = load4(a + 12);
    v4f b0 = load4(b), b1 = load4(b + 4), b2 = load4(b + 8), b3 = load4(b + 12);
    const float *x1r = x1 ? x1 : x0;
    for (uint32_t i = 0; i < len; i++) {
        const float *wi = wt + i * TN + j0;
        v4f w0 = load4(wi), w1 = load4(wi + 4), w2 = load4(wi + 8), w3 = load4(wi + 12);
        v4f xa = {x0[i], x0[i], x0[i], x0[i]}, xb = {x1r[i], x1r[i], x1r[i], x1r[i]};
        a0 += xa * w0, a1 += xa * w1, a2 += xa * w2, a3 += xa * w3;
        b0 += xb * w0, b1 += xb * w1, b2 += xb * w2, b3 += xb * w3;
    }
    store4(a, a0), store4(a + 4, a1), store4(a + 8, a2), store4(a + 12, a3);
    if (x1)
        store4(b, b0), store4(b + 4, b1), store4(b + 8, b2), store4(b + 12, b3);
}

/* acc[r][j] += x[m0 + r][k] * wt[k - k0][j] over the block's K values, in K order for every
 * output. */
static void tile_block(float acc[TM][TN], const float *wt, const float *x, uint32_t K, uint32_t m0, uint32_t rows,
                       uint32_t k0)
{
    uint32_t len = K - k0 < WSK_QBLOCK ? K - k0 : WSK_QBLOCK;
    for (uint32_t r = 0; r < rows; r += 2) {
        const float *x0 = x + (uint64_t)(m0 + r) * K + k0, *x1 = r + 1 < rows ? x0 + K : NULL;
        for (uint32_t j0 = 0; j0 < TN; j0 += 16)
            tile_pair(acc, wt, x0, x1, r, j0, len);
    }
}

/* The K blocks of slice s: [b0, b1). */
static void slice_blocks(uint32_t kblocks, uint32_t split_k, uint32_t s, uint32_t *b0, uint32_t *b1)
{
    uint32_t per = (kblocks + split_k - 1) / split_k;
    *b0 = s * per < kblocks ? s * per : kblocks;
    *b1 = *b0 + per < kblocks ? *b0 + per : kblocks;
}

struct gemm_args {
    float *y;
    const float *x;
    const uint8_t *w, *zp;
    const float *scales;
    int32_t *sem;
    uint32_t M, K, N, split_k;
};

/* Slice s of tile (mt, nt): its partial sums, added into y once the tile's semaphore says it is
 * this slice's turn (a device would wait; a semaphore that never gets there leaves y alone). */
static void gemm_slice(const struct gemm_args *g, uint32_t mt, uint32_t nt, uint32_t s)
{
    float acc[TM][TN] = {{0}}, wt[WSK_QBLOCK * TN];
    uint32_t m0 = mt * TM, n0 = nt * TN, rows = g->M - m0 < TM ? g->M - m0 : TM, b0, b1;
    uint64_t tile = (uint64_t)mt * ((g->N + TN - 1) / TN) + nt;
    if (g->split_k > 1 && g->sem[tile] != (int32_t)s)
        return;
    slice_blocks(kblocks_of(g->K), g->split_k, s, &b0, &b1);
    for (uint32_t blk = b0; blk < b1; blk++) {
        dequant_block(wt, g->w, g->scales, g->zp, g->K, g->N, n0, blk);
        tile_block(acc, wt, g->x, g->K, m0, rows, blk * WSK_QBLOCK);
    }
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t j = 0; j < TN && n0 + j < g->N; j++) {
            float *out = &g->y[(uint64_t)(m0 + r) * g->N + n0 + j];
            *out = s == 0 ? acc[r][j] : *out + acc[r][j];
        }
    if (g->split_k > 1)
        g->sem[tile] = s + 1 == g->split_k ? 0 : (int32_t)s + 1;
}

static void gemm(const struct gemm_args *g)
{
    uint32_t mtiles = (g->M + TM - 1) / TM, ntiles = (g->N + TN - 1) / TN;
    for (uint32_t mt = 0; mt < mtiles; mt++)
        for (uint32_t nt = 0; nt < ntiles; nt++)
            for (uint32_t s = 0; s < g->split_k; s++)
                gemm_slice(g, mt, nt, s);
}

void wsk_ref_matmul_nbits(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zero_points,
                          uint32_t M, uint32_t K, uint32_t N, const struct wsk_matmul_kernel *k, float *workspace)
{
    if (k->tactic == WSK_MATMUL_SPLITK) {
        splitk_partial(workspace, x, w, scales, zero_points, M, K, N, k->split_k);
        splitk_reduce(y, workspace, M, N, k->split_k);
    } else if (k->tactic == WSK_MATMUL_GEMM) {
        gemm(&(struct gemm_args){y, x, w, zero_points, scales, (int32_t *)workspace, M, K, N, k->split_k});
    } else {
        gemv(y, x, w, scales, zero_points, M, K, N);
    }
}

#define ARG(type, i) (*(type *)args[i])

void wsk_host_matmul_gemv(void **args)
{
    gemv(ARG(float *, 0), ARG(const float *, 1), ARG(const uint8_t *, 2), ARG(const float *, 3),
         ARG(const uint8_t *, 4), ARG(uint32_t, 5), ARG(uint32_t, 6), ARG(uint32_t, 7));
}

void wsk_host_matmul_splitk(void **args)
{
    splitk_partial(ARG(float *, 0), ARG(const float *, 1), ARG(const uint8_t *, 2), ARG(const float *, 3),
                   ARG(const uint8_t *, 4), ARG(uint32_t, 5), ARG(uint32_t, 6), ARG(uint32_t, 7), ARG(uint32_t, 8));
}

void wsk_host_matmul_reduce(void **args)
{
    splitk_reduce(ARG(float *, 0), ARG(const float *, 1), ARG(uint32_t, 2), ARG(uint32_t, 3), ARG(uint32_t, 4));
}

void wsk_host_matmul_gemm(void **args)
{
    gemm(&(struct gemm_args){ARG(float *, 0), ARG(const float *, 1), ARG(const uint8_t *, 2), ARG(const uint8_t *, 4),
                             ARG(const float *, 3), ARG(int32_t *, 5), ARG(uint32_t, 6), ARG(uint32_t, 7),
                             ARG(uint32_t, 8), ARG(uint32_t, 9)});
}
