/*
 * estimate.c - tactic heuristics and Level-1 / Level-2 workspace estimators (see wskernels.h).
 * Every size is computed with overflow checks; an overflow or an unknown dimension makes the
 * estimate unavailable rather than wrong.
 */
#include "wskernels.h"

#include <string.h>

/* Envelopes evaluate every shape up to the maximum; above this many evaluations they fall back
 * to a bound that holds for every shape (still safe, possibly loose). */
#define ENVELOPE_MAX_EVALS (1u << 24)

static bool mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;
    return !__builtin_mul_overflow(a, b, &ab) && !__builtin_mul_overflow(ab, c, out);
}

static bool mul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t *out)
{
    uint64_t abc;
    return mul3(a, b, c, &abc) && !__builtin_mul_overflow(abc, d, out);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void ws_none(struct wsk_ws *out) { memset(out, 0, sizeof *out); }

static enum wsk_status ws_unavailable(struct wsk_ws *out)
{
    ws_none(out);
    return WSK_UNAVAILABLE;
}

/* Per-slot maximum, the envelope of two estimates. */
static void ws_max(struct wsk_ws *acc, const struct wsk_ws *w)
{
    for (uint32_t i = 0; i < w->nslots; i++)
        if (w->bytes[i] > acc->bytes[i])
            acc->bytes[i] = w->bytes[i];
    if (w->nslots > acc->nslots)
        acc->nslots = w->nslots;
}

enum wsk_status wsk_nbits_sizes(uint64_t K, uint64_t N, uint64_t *weight_bytes, uint64_t *scale_count,
                                uint64_t *zero_point_bytes)
{
    if (K == WSK_DIM_UNKNOWN || N == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    uint64_t blocks = ceil_div(K, WSK_QBLOCK);
    if (!mul3(N, blocks, WSK_QBLOCK_BYTES, weight_bytes) || !mul3(N, blocks, 1, scale_count) ||
        !mul3(N, ceil_div(blocks, 2), 1, zero_point_bytes))
        return WSK_UNAVAILABLE;
    return WSK_OK;
}

/* ---- matmul_nbits ---- */

enum wsk_status wsk_matmul_create(const struct wsk_matmul_attrs *a, uint64_t M, const struct wsk_device *dev,
                                  struct wsk_matmul_kernel *out)
{
    out->tactic = WSK_MATMUL_GEMV;
    out->split_k = 1;
    if (a->K == WSK_DIM_UNKNOWN || a->N == WSK_DIM_UNKNOWN || M == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (M <= WSK_GEMV_MAX_M || a->N == 0 || dev->sm_count == 0)
        return WSK_OK;
    uint64_t tiles;
    if (!mul3(ceil_div(a->N, WSK_MATMUL_TILE_N), M, 1, &tiles))
        return WSK_UNAVAILABLE;
    /* Split K only as far as it fills the SMs; never below one quantization block per split. */
    uint64_t split = ceil_div(dev->sm_count, tiles);
    split = min_u64(split, min_u64(WSK_SPLITK_MAX, ceil_div(a->K, WSK_QBLOCK)));
    if (split > 1) {
        out->tactic = WSK_MATMUL_SPLITK;
        out->split_k = (uint32_t)split;
    }
    return WSK_OK;
}

enum wsk_status wsk_matmul_level2(const struct wsk_matmul_attrs *a, const struct wsk_matmul_kernel *k, uint64_t M,
                                  struct wsk_ws *out)
{
    ws_none(out);
    if (a->K == WSK_DIM_UNKNOWN || a->N == WSK_DIM_UNKNOWN || M == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (k->tactic == WSK_MATMUL_GEMV || M == 0 || a->N == 0)
        return WSK_OK;
    if (!mul4(k->split_k, M, a->N, sizeof(float), &out->bytes[0]))
        return ws_unavailable(out);
    out->nslots = 1;
    return WSK_OK;
}

static enum wsk_status matmul_at(const struct wsk_matmul_attrs *a, uint64_t M, const struct wsk_device *dev,
                                 struct wsk_ws *out)
{
    struct wsk_matmul_kernel k;
    enum wsk_status st = wsk_matmul_create(a, M, dev, &k);
    return st != WSK_OK ? (ws_none(out), st) : wsk_matmul_level2(a, &k, M, out);
}

enum wsk_status wsk_matmul_level1(const struct wsk_matmul_attrs *a, uint64_t max_M, const struct wsk_device *dev,
                                  enum wsk_l1_policy policy, struct wsk_ws *out)
{
    if (policy == WSK_L1_MAX_SHAPE || max_M == WSK_DIM_UNKNOWN)
        return matmul_at(a, max_M, dev, out);
    ws_none(out);
    if (max_M > ENVELOPE_MAX_EVALS) {
        /* split_k * M * N is bounded by WSK_SPLITK_MAX * max_M * N for every M. */
        if (!mul4(WSK_SPLITK_MAX, max_M, a->N, sizeof(float), &out->bytes[0]))
            return ws_unavailable(out);
        out->nslots = a->N ? 1 : 0;
        return WSK_OK;
    }
    for (uint64_t M = 1; M <= max_M; M++) {
        struct wsk_ws w;
        enum wsk_status st = matmul_at(a, M, dev, &w);
        if (st != WSK_OK)
            return ws_unavailable(out);
        ws_max(out, &w);
    }
    return WSK_OK;
}

/* ---- attention_decode ---- */

enum wsk_status wsk_attn_create(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t kv_len,
                                const struct wsk_device *dev, struct wsk_attn_kernel *out)
{
    out->splits = 1;
    out->blocks_per_split = 1;
    if (a->heads == WSK_DIM_UNKNOWN || batch == WSK_DIM_UNKNOWN || kv_len == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    uint64_t kv_blocks = ceil_div(kv_len, WSK_ATTN_KV_BLOCK);
    uint64_t rows;
    if (!mul3(batch, a->heads, 1, &rows))
        return WSK_UNAVAILABLE;
    out->blocks_per_split = (uint32_t)min_u64(kv_blocks ? kv_blocks : 1, UINT32_MAX);
    if (rows == 0 || kv_blocks <= 1 || dev->sm_count == 0)
        return WSK_OK;
    uint64_t fill = ceil_div(2 * (uint64_t)dev->sm_count, rows);
    uint64_t splits = min_u64(min_u64(fill, WSK_ATTN_MAX_SPLITS), kv_blocks);
    /* Even the splits out: no split may be idle, so the count drops to what the rounded-up
     * blocks per split need. */
    uint64_t per_split = ceil_div(kv_blocks, splits);
    if (per_split > UINT32_MAX)
        return WSK_UNAVAILABLE;
    out->splits = (uint32_t)ceil_div(kv_blocks, per_split);
    out->blocks_per_split = (uint32_t)per_split;
    return WSK_OK;
}

enum wsk_status wsk_attn_level2(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                uint64_t kv_len, struct wsk_ws *out)
{
    ws_none(out);
    if (a->heads == WSK_DIM_UNKNOWN || a->head_dim == WSK_DIM_UNKNOWN || batch == WSK_DIM_UNKNOWN ||
        kv_len == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (k->splits <= 1 || batch == 0 || a->heads == 0 || a->head_dim == 0 || kv_len == 0)
        return WSK_OK;
    uint64_t partials;
    if (!mul3(batch, a->heads, k->splits, &partials) || !mul3(partials, a->head_dim, sizeof(float), &out->bytes[0]) ||
        !mul3(partials, sizeof(float), 1, &out->bytes[1]))
        return ws_unavailable(out);
    out->nslots = 2;
    return WSK_OK;
}

static enum wsk_status attn_at(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t kv_len,
                               const struct wsk_device *dev, struct wsk_ws *out)
{
    struct wsk_attn_kernel k;
    enum wsk_status st = wsk_attn_create(a, batch, kv_len, dev, &k);
    return st != WSK_OK ? (ws_none(out), st) : wsk_attn_level2(a, &k, batch, kv_len, out);
}

/* The splits depend on kv_len only through its block count, so one length per block count
 * covers every length. */
static enum wsk_status attn_envelope(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_kv_len,
                                     const struct wsk_device *dev, struct wsk_ws *out)
{
    uint64_t kv_blocks = ceil_div(max_kv_len, WSK_ATTN_KV_BLOCK);
    for (uint64_t b = 1; b <= max_batch; b++) {
        for (uint64_t blk = 1; blk <= kv_blocks; blk++) {
            struct wsk_ws w;
            uint64_t len = min_u64(blk * WSK_ATTN_KV_BLOCK, max_kv_len);
            if (attn_at(a, b, len, dev, &w) != WSK_OK)
                return ws_unavailable(out);
            ws_max(out, &w);
        }
    }
    return WSK_OK;
}

enum wsk_status wsk_attn_level1(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_kv_len,
                                const struct wsk_device *dev, enum wsk_l1_policy policy, struct wsk_ws *out)
{
    if (policy == WSK_L1_MAX_SHAPE || max_batch == WSK_DIM_UNKNOWN || max_kv_len == WSK_DIM_UNKNOWN ||
        a->heads == WSK_DIM_UNKNOWN || a->head_dim == WSK_DIM_UNKNOWN)
        return attn_at(a, max_batch, max_kv_len, dev, out);
    ws_none(out);
    uint64_t evals;
    if (mul3(max_batch, ceil_div(max_kv_len, WSK_ATTN_KV_BLOCK), 1, &evals) && evals <= ENVELOPE_MAX_EVALS)
        return attn_envelope(a, max_batch, max_kv_len, dev, out);
    /* Too many shapes to walk: every split count is at most WSK_ATTN_MAX_SPLITS. */
    struct wsk_attn_kernel widest = {WSK_ATTN_MAX_SPLITS, 1};
    return wsk_attn_level2(a, &widest, max_batch, max_kv_len, out);
}

/* ---- argmax ---- */

uint64_t wsk_argmax_nblocks(uint64_t vocab) { return ceil_div(vocab, WSK_ARGMAX_BLOCK); }

enum wsk_status wsk_argmax_level2(uint64_t vocab, uint64_t batch, struct wsk_ws *out)
{
    ws_none(out);
    if (vocab == WSK_DIM_UNKNOWN || batch == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (vocab == 0 || batch == 0)
        return WSK_OK;
    if (!mul3(batch, wsk_argmax_nblocks(vocab), sizeof(struct wsk_argmax_pair), &out->bytes[0]))
        return ws_unavailable(out);
    out->nslots = 1;
    return WSK_OK;
}

enum wsk_status wsk_argmax_level1(uint64_t vocab, uint64_t max_batch, enum wsk_l1_policy policy, struct wsk_ws *out)
{
    /* Monotonic in batch: the envelope is the value at the maximum. */
    (void)policy;
    return wsk_argmax_level2(vocab, max_batch, out);
}
