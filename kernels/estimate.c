/*
 * estimate.c - tactic heuristics and Level-1 / Level-2 workspace estimators (see wskernels.h).
 * Every size is computed with overflow checks; an overflow or an unknown dimension makes the
 * estimate unavailable rather than wrong.
 */
#include "wskernels.h"

#include <math.h>
#include <string.h>

/* Envelopes evaluate every shape up to the maximum; above this many evaluations they fall back
 * to a bound that holds for every shape (still safe, possibly loose). */
#define ENVELOPE_MAX_EVALS (1u << 24)
/* Each attention shape costs up to WSK_FLASH_MAX_SPLITS steps of the split rule. */
#define ATTN_ENVELOPE_MAX_EVALS (1u << 18)

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

/* GEMM tiles of 64 x 64 and serial K slices: as many as fill the SMs, at most 7, never below one
 * quantization block each. */
static uint32_t gemm_slices(uint64_t M, uint64_t N, uint64_t K, uint32_t sm_count)
{
    uint64_t tiles = ceil_div(M, WSK_GEMM_TILE_M) * ceil_div(N, WSK_GEMM_TILE_N);
    uint64_t slices = sm_count > tiles ? ceil_div(sm_count, tiles) : 1, kblocks = ceil_div(K, WSK_QBLOCK);
    slices = min_u64(slices, min_u64(WSK_GEMM_SPLIT_LIMIT, kblocks));
    return slices ? (uint32_t)slices : 1;
}

enum wsk_status wsk_matmul_create(const struct wsk_matmul_attrs *a, uint64_t M, const struct wsk_device *dev,
                                  struct wsk_matmul_kernel *out)
{
    out->tactic = WSK_MATMUL_GEMV;
    out->split_k = 1;
    if (a->K == WSK_DIM_UNKNOWN || a->N == WSK_DIM_UNKNOWN || M == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (M <= WSK_GEMV_MAX_M || a->N == 0)
        return WSK_OK;
    uint64_t tiles;
    if (!mul3(ceil_div(a->N, WSK_MATMUL_TILE_N), M, 1, &tiles))
        return WSK_UNAVAILABLE;
    /* Split K only as far as it fills the SMs; never below one quantization block per split. */
    uint64_t split = dev->sm_count ? ceil_div(dev->sm_count, tiles) : 1;
    split = min_u64(split, min_u64(WSK_SPLITK_MAX, ceil_div(a->K, WSK_QBLOCK)));
    if (split > 1) {
        out->tactic = WSK_MATMUL_SPLITK;
        out->split_k = (uint32_t)split;
        return WSK_OK;
    }
    out->tactic = WSK_MATMUL_GEMM;
    out->split_k = gemm_slices(M, a->N, a->K, dev->sm_count);
    return WSK_OK;
}

/* fpA_intB's CUTLASS workspace bound: 4 bytes per tile of the smallest tile configuration, times
 * the most K slices any configuration launches. */
static bool gemm_workspace(uint64_t M, uint64_t N, uint64_t *bytes)
{
    return mul4(ceil_div(M, WSK_GEMM_WS_TILE_M), ceil_div(N, WSK_GEMM_WS_TILE_N), WSK_GEMM_SPLIT_LIMIT, sizeof(int32_t),
                bytes);
}

enum wsk_status wsk_matmul_level2(const struct wsk_matmul_attrs *a, const struct wsk_matmul_kernel *k, uint64_t M,
                                  struct wsk_ws *out)
{
    ws_none(out);
    if (a->K == WSK_DIM_UNKNOWN || a->N == WSK_DIM_UNKNOWN || M == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    if (k->tactic == WSK_MATMUL_GEMV || M == 0 || a->N == 0)
        return WSK_OK;
    bool ok = k->tactic == WSK_MATMUL_GEMM ? gemm_workspace(M, a->N, &out->bytes[0])
                                           : mul4(k->split_k, M, a->N, sizeof(float), &out->bytes[0]);
    if (!ok)
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
        /* split_k * M * N is bounded by WSK_SPLITK_MAX * max_M * N for every M, the GEMM's
         * workspace (growing with M) by its value at max_M. */
        uint64_t gemm;
        if (!mul4(WSK_SPLITK_MAX, max_M, a->N, sizeof(float), &out->bytes[0]) || !gemm_workspace(max_M, a->N, &gemm))
            return ws_unavailable(out);
        out->bytes[0] = out->bytes[0] > gemm ? out->bytes[0] : gemm;
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

/* ---- the flash-decoding split rule ---- */

uint64_t wsk_flash_kv_block(uint64_t head_size) { return head_size <= 64 ? 256 : head_size <= 128 ? 128 : 64; }

/* s splits of `blocks` KV blocks are worth considering when they change the blocks per split:
 * 64 blocks over 12 splits leave the twelfth empty, which is 11 splits again. */
static bool split_eligible(uint64_t blocks, uint64_t s)
{
    return s == 1 || ceil_div(blocks, s) != ceil_div(blocks, s - 1);
}

/* Waves of thread blocks in single precision, as the runtime computes them. */
static float split_efficiency(uint64_t work, uint64_t s, uint32_t sm_count)
{
    float waves = (float)(work * s) / (float)sm_count;
    return waves / ceilf(waves);
}

/* The smallest eligible split count within 85 % of the best efficiency.  The runtime compares
 * with the unsuffixed literal 0.85, so the best efficiency is promoted to double: comparing in
 * single precision picks fewer splits at some boundaries (17 instead of 20 for B=1, 1 head of 64,
 * 24 SMs, 24,577 positions). */
static uint32_t best_split(uint64_t work, uint64_t blocks, uint32_t sm_count, uint64_t max_splits)
{
    float best = 0.0f;
    for (uint64_t s = 1; s <= max_splits; s++)
        if (split_eligible(blocks, s) && split_efficiency(work, s, sm_count) > best)
            best = split_efficiency(work, s, sm_count);
    for (uint64_t s = 1; s <= max_splits; s++)
        if (split_eligible(blocks, s) && split_efficiency(work, s, sm_count) >= 0.85 * (double)best)
            return (uint32_t)s;
    return 1;
}

enum wsk_status wsk_flash_num_splits(uint64_t batch, uint64_t seqlen_q, uint64_t kv_len, uint64_t heads,
                                     uint64_t head_size, uint32_t sm_count, uint32_t *splits)
{
    *splits = 1;
    if (batch == WSK_DIM_UNKNOWN || seqlen_q == WSK_DIM_UNKNOWN || kv_len == WSK_DIM_UNKNOWN ||
        heads == WSK_DIM_UNKNOWN || head_size == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    uint64_t work, blocks = ceil_div(kv_len, wsk_flash_kv_block(head_size));
    if (!mul3(batch, heads, ceil_div(seqlen_q, WSK_FLASH_BLOCK_M), &work) || work > UINT32_MAX)
        return WSK_UNAVAILABLE;
    /* Nothing to spread (an empty batch, no device): one split, as the runtime does. */
    if (work == 0 || sm_count == 0 || (float)work >= 0.8f * (float)sm_count)
        return WSK_OK;
    uint64_t max_splits = min_u64(min_u64(WSK_FLASH_MAX_SPLITS, sm_count), blocks);
    *splits = best_split(work, blocks, sm_count, max_splits);
    return WSK_OK;
}

/* ---- the flash workspace root ---- */

static bool align_up(uint64_t v, uint64_t alignment, uint64_t *out)
{
    uint64_t padded;
    if (__builtin_add_overflow(v, alignment - 1, &padded))
        return false;
    *out = padded / alignment * alignment;
    return true;
}

/* Places a region of `bytes` at the next aligned offset of the root; an empty region takes no
 * space and keeps offset 0. */
static bool append_region(uint64_t bytes, uint64_t *cursor, uint64_t *offset)
{
    *offset = 0;
    if (bytes == 0)
        return true;
    return align_up(*cursor, WSK_WS_ALIGNMENT, offset) && !__builtin_add_overflow(*offset, bytes, cursor);
}

enum wsk_status wsk_flash_layout(uint64_t batch, uint64_t seqlen_q, uint64_t heads, uint64_t head_size, uint32_t splits,
                                 struct wsk_flash_layout *out)
{
    memset(out, 0, sizeof *out);
    out->splits = splits ? splits : 1;
    if (batch == WSK_DIM_UNKNOWN || seqlen_q == WSK_DIM_UNKNOWN || heads == WSK_DIM_UNKNOWN ||
        head_size == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    uint64_t rows, cursor = 0;
    if (!align_up(head_size, WSK_FLASH_HEAD_ROUND, &out->head_size_rounded) || !mul3(batch, heads, seqlen_q, &rows) ||
        !mul3(rows, sizeof(float), 1, &out->lse_bytes))
        goto unavailable;
    if (out->splits > 1 && (!mul3(rows, out->splits, sizeof(float), &out->lse_accum_bytes) ||
                            !mul3(out->lse_accum_bytes, out->head_size_rounded, 1, &out->out_accum_bytes)))
        goto unavailable;
    if (!append_region(out->lse_bytes, &cursor, &out->lse_offset) ||
        !append_region(out->lse_accum_bytes, &cursor, &out->lse_accum_offset) ||
        !append_region(out->out_accum_bytes, &cursor, &out->out_accum_offset))
        goto unavailable;
    out->total_bytes = cursor;
    return WSK_OK;
unavailable:
    memset(out, 0, sizeof *out);
    return WSK_UNAVAILABLE;
}

static void add_region(struct wsk_ws *ws, const char *name, uint64_t offset, uint64_t bytes)
{
    if (bytes > 0)
        ws->regions[ws->nregions++] = (struct wsk_region){name, offset, bytes};
}

void wsk_flash_ws(const struct wsk_flash_layout *l, struct wsk_ws *out)
{
    ws_none(out);
    if (l->total_bytes == 0)
        return;
    out->nslots = 1;
    out->bytes[0] = l->total_bytes;
    add_region(out, "softmax_lse", l->lse_offset, l->lse_bytes);
    add_region(out, "softmax_lse_accum", l->lse_accum_offset, l->lse_accum_bytes);
    add_region(out, "out_accum", l->out_accum_offset, l->out_accum_bytes);
    add_region(out, "seq_lens", l->seq_lens_offset, l->seq_lens_bytes);
}

/* ---- attention ---- */

static enum wsk_status attn_attrs_check(const struct wsk_attn_attrs *a)
{
    if (a->heads == WSK_DIM_UNKNOWN || a->kv_heads == WSK_DIM_UNKNOWN || a->head_dim == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    return a->kv_heads == 0 || a->heads % a->kv_heads != 0 ? WSK_EINVAL : WSK_OK;
}

/* The heads ONNX Runtime counts the split work with: fast decoding (a one-token step, or a prompt
 * continuing a cache) counts the KV heads, a first prompt (every position new) the query heads. */
static uint64_t split_heads(const struct wsk_attn_attrs *a, uint64_t seq, uint64_t kv_len)
{
    return seq > 1 && kv_len == seq ? a->heads : a->kv_heads;
}

enum wsk_status wsk_attn_create_seq(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t seq, uint64_t kv_len,
                                    const struct wsk_device *dev, struct wsk_attn_kernel *out)
{
    out->splits = 1;
    out->split_len = 0;
    enum wsk_status st = attn_attrs_check(a);
    if (st != WSK_OK)
        return st;
    if (batch == WSK_DIM_UNKNOWN || seq == WSK_DIM_UNKNOWN || kv_len == WSK_DIM_UNKNOWN || kv_len > UINT32_MAX)
        return WSK_UNAVAILABLE;
    if (seq == 0 || (kv_len > 0 && seq > kv_len))
        return WSK_EINVAL;
    st =
        wsk_flash_num_splits(batch, seq, kv_len, split_heads(a, seq, kv_len), a->head_dim, dev->sm_count, &out->splits);
    if (st != WSK_OK)
        return st;
    uint64_t block = wsk_flash_kv_block(a->head_dim), blocks = ceil_div(kv_len, block);
    uint64_t span = ceil_div(blocks, out->splits) * block; /* whole blocks per split */
    out->split_len = (uint32_t)min_u64(span, UINT32_MAX);
    return WSK_OK;
}

enum wsk_status wsk_attn_create(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t kv_len,
                                const struct wsk_device *dev, struct wsk_attn_kernel *out)
{
    return wsk_attn_create_seq(a, batch, 1, kv_len, dev, out);
}

/* The prefill root ends with the sequence-length vectors. */
static enum wsk_status append_seq_lens(uint64_t batch, struct wsk_flash_layout *l)
{
    uint64_t bytes, cursor = l->total_bytes;
    if (!mul3(batch, WSK_SEQ_LENS_VECTORS, sizeof(int32_t), &bytes) ||
        !append_region(bytes, &cursor, &l->seq_lens_offset)) {
        memset(l, 0, sizeof *l);
        return WSK_UNAVAILABLE;
    }
    l->seq_lens_bytes = bytes;
    l->total_bytes = cursor;
    return WSK_OK;
}

enum wsk_status wsk_attn_layout_seq(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                    uint64_t seq, struct wsk_flash_layout *out)
{
    enum wsk_status st = attn_attrs_check(a);
    if (st != WSK_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    st = wsk_flash_layout(batch, seq, a->heads, a->head_dim, k->splits, out);
    return st != WSK_OK || seq <= 1 ? st : append_seq_lens(batch, out);
}

enum wsk_status wsk_attn_layout(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                struct wsk_flash_layout *out)
{
    return wsk_attn_layout_seq(a, k, batch, 1, out);
}

enum wsk_status wsk_attn_level2_seq(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                    uint64_t seq, uint64_t kv_len, struct wsk_ws *out)
{
    struct wsk_flash_layout l;
    ws_none(out);
    if (kv_len == WSK_DIM_UNKNOWN)
        return WSK_UNAVAILABLE;
    enum wsk_status st = wsk_attn_layout_seq(a, k, batch, seq, &l);
    if (st != WSK_OK || kv_len == 0 || batch == 0)
        return st; /* no position to attend: nothing runs, nothing is declared */
    wsk_flash_ws(&l, out);
    return WSK_OK;
}

enum wsk_status wsk_attn_level2(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                uint64_t kv_len, struct wsk_ws *out)
{
    return wsk_attn_level2_seq(a, k, batch, 1, kv_len, out);
}

static enum wsk_status attn_at(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t seq, uint64_t kv_len,
                               const struct wsk_device *dev, struct wsk_ws *out)
{
    struct wsk_attn_kernel k;
    enum wsk_status st = wsk_attn_create_seq(a, batch, seq, kv_len, dev, &k);
    return st != WSK_OK ? (ws_none(out), st) : wsk_attn_level2_seq(a, &k, batch, seq, kv_len, out);
}

/* The root of a shape with its split count forced: a bound for shapes whose split count the walk
 * does not evaluate itself. */
static enum wsk_status attn_root_with(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t seq, uint32_t splits,
                                      struct wsk_ws *out)
{
    struct wsk_attn_kernel k = {splits, 0};
    return wsk_attn_level2_seq(a, &k, batch, seq, 1, out);
}

/* One prefill group: every seq of query-block count qb has the split count of its largest member
 * for a given batch, KV block count and head count, and the root grows with seq, so that member
 * bounds the group.  Both head counts are tried: a first prompt and a continuing one differ. */
static enum wsk_status attn_prefill_group(const struct wsk_attn_attrs *a, uint64_t b, uint64_t seq, uint64_t blocks,
                                          const struct wsk_device *dev, struct wsk_ws *out)
{
    uint64_t block = wsk_flash_kv_block(a->head_dim);
    uint64_t heads[2] = {a->heads, a->kv_heads};
    for (uint64_t blk = 1; blk <= blocks; blk++)
        for (int h = 0; h < 2; h++) {
            uint32_t splits;
            struct wsk_ws w;
            if (wsk_flash_num_splits(b, seq, blk * block, heads[h], a->head_dim, dev->sm_count, &splits) != WSK_OK ||
                attn_root_with(a, b, seq, splits, &w) != WSK_OK)
                return WSK_UNAVAILABLE;
            w.nregions = 0;
            ws_max(out, &w);
        }
    return WSK_OK;
}

/* The largest root over every batch, sequence and KV length up to the maxima.  The split count
 * depends on the KV length only through its block count and on seq only through its query-block
 * count, so one length per block count covers them all.  Regions are not part of a Level-1
 * estimate: it reserves the root's size. */
static enum wsk_status attn_envelope(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_seq,
                                     uint64_t max_kv_len, const struct wsk_device *dev, struct wsk_ws *out)
{
    uint64_t block = wsk_flash_kv_block(a->head_dim), blocks = ceil_div(max_kv_len, block);
    for (uint64_t b = 1; b <= max_batch; b++) {
        for (uint64_t blk = 1; blk <= blocks; blk++) { /* decoding */
            struct wsk_ws w;
            if (attn_at(a, b, 1, min_u64(blk * block, max_kv_len), dev, &w) != WSK_OK)
                return ws_unavailable(out);
            w.nregions = 0;
            ws_max(out, &w);
        }
        for (uint64_t qb = 1; max_seq > 1 && qb <= ceil_div(max_seq, WSK_FLASH_BLOCK_M); qb++)
            if (attn_prefill_group(a, b, min_u64(qb * WSK_FLASH_BLOCK_M, max_seq), blocks, dev, out) != WSK_OK)
                return ws_unavailable(out);
    }
    return WSK_OK;
}

/* Above the walking limit: the root at the maximum batch and sequence with the most splits any KV
 * length up to the maximum could take, which bounds every shape (the root grows with batch,
 * sequence and splits). */
static enum wsk_status attn_bound(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_seq,
                                  uint64_t max_kv_len, const struct wsk_device *dev, struct wsk_ws *out)
{
    uint64_t blocks = ceil_div(max_kv_len, wsk_flash_kv_block(a->head_dim));
    uint64_t widest = min_u64(min_u64(WSK_FLASH_MAX_SPLITS, dev->sm_count ? dev->sm_count : 1), blocks ? blocks : 1);
    if (attn_root_with(a, max_batch, max_seq, (uint32_t)widest, out) != WSK_OK)
        return ws_unavailable(out);
    out->nregions = 0;
    return WSK_OK;
}

enum wsk_status wsk_attn_level1_seq(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_seq,
                                    uint64_t max_kv_len, const struct wsk_device *dev, enum wsk_l1_policy policy,
                                    struct wsk_ws *out)
{
    enum wsk_status st = attn_attrs_check(a);
    if (st == WSK_OK && (max_batch == WSK_DIM_UNKNOWN || max_seq == WSK_DIM_UNKNOWN || max_kv_len == WSK_DIM_UNKNOWN))
        st = WSK_UNAVAILABLE;
    if (st == WSK_OK && (max_seq == 0 || max_seq > max_kv_len))
        st = WSK_EINVAL;
    if (st != WSK_OK) {
        ws_none(out);
        return st;
    }
    if (policy == WSK_L1_MAX_SHAPE) {
        st = attn_at(a, max_batch, max_seq, max_kv_len, dev, out);
        out->nregions = 0;
        return st;
    }
    ws_none(out);
    uint64_t evals, groups = 1 + (max_seq > 1 ? 2 * ceil_div(max_seq, WSK_FLASH_BLOCK_M) : 0);
    if (mul3(max_batch, ceil_div(max_kv_len, wsk_flash_kv_block(a->head_dim)), groups, &evals) &&
        evals <= ATTN_ENVELOPE_MAX_EVALS)
        return attn_envelope(a, max_batch, max_seq, max_kv_len, dev, out);
    return attn_bound(a, max_batch, max_seq, max_kv_len, dev, out);
}

enum wsk_status wsk_attn_level1(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_kv_len,
                                const struct wsk_device *dev, enum wsk_l1_policy policy, struct wsk_ws *out)
{
    return wsk_attn_level1_seq(a, max_batch, 1, max_kv_len, dev, policy, out);
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
