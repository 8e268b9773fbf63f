/* Workspace of the prefill paths, every figure derived by hand in the comments: MatMulNBits'
 * GEMM tactic for more than one row (fpA_intB's CUTLASS workspace bound, ONNX Runtime's 1,792-byte
 * ordinary case among them), ONNX Runtime's GroupQueryAttention recipe for a prompt (a first prompt
 * counts the split work with the query heads, a prompt continuing a cache with the KV heads; the
 * sequence-length vectors), and Level 1 over sequence lengths: the envelope bounds every shape,
 * the maximum shape alone does not. */
#include <criterion/criterion.h>

#include "wskernels.h"

static const struct wsk_device h100 = {132};
static const struct wsk_device a100 = {108};

/*
 * K = N = 4096, 132 SMs.  M = 8: split-K would have ceil(4096/128) * 8 = 256 tiles >= 132 SMs, so
 * one split: the GEMM.  Its 64 x 64 tiles are 1 * 64 = 64, ceil(132/64) = 3 serial slices (under 7
 * and the 128 K blocks).  Workspace ceil(8/16) * ceil(4096/64) * 7 * 4 = 1 * 64 * 28 = 1,792 B,
 * ONNX Runtime's figure for an ordinary MatMulNBits shape.  M = 512: 8 * 64 = 512 tiles fill the SMs,
 * one slice; the workspace does not depend on the slices: 32 * 64 * 28 = 57,344 B.
 */
Test(estimate_prefill, gemm_tactic_and_workspace)
{
    struct wsk_matmul_attrs a = {4096, 4096, false};
    struct wsk_matmul_kernel k;
    struct wsk_ws ws;
    cr_assert_eq(wsk_matmul_create(&a, 8, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMM);
    cr_expect_eq(k.split_k, 3);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 8, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 1792);
    cr_assert_eq(wsk_matmul_create(&a, 512, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMM);
    cr_expect_eq(k.split_k, 1);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 512, &ws), WSK_OK);
    cr_expect_eq(ws.bytes[0], 57344);
    cr_assert_eq(wsk_matmul_create(&a, 1, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMV, "one row: the GEMV, no workspace");
}

/* K 256 gives 8 K blocks: M = 40, N = 512 is a GEMM (160 split-K tiles) of 1 * 8 = 8 tiles,
 * ceil(132/8) = 17 slices capped at 7; its workspace 3 * 8 * 28 = 672 B.  N = 0: nothing. */
Test(estimate_prefill, gemm_slices_capped_and_empty)
{
    struct wsk_matmul_attrs a = {256, 512, true}, empty = {256, 0, true};
    struct wsk_matmul_kernel k;
    struct wsk_ws ws;
    cr_assert_eq(wsk_matmul_create(&a, 40, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMM);
    cr_expect_eq(k.split_k, 7);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 40, &ws), WSK_OK);
    cr_expect_eq(ws.bytes[0], 672);
    cr_assert_eq(wsk_matmul_level2(&empty, &(struct wsk_matmul_kernel){WSK_MATMUL_GEMM, 1}, 40, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "an empty output declares nothing");
    cr_assert_eq(wsk_matmul_level2(&a, &(struct wsk_matmul_kernel){WSK_MATMUL_GEMM, 1}, 0, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "no rows: nothing");
}

/*
 * Level 1 of K = N = 4096 up to 4,096 rows (8 sequences of 512 tokens).  Split-K pays for M <= 4:
 * M = 2 (64 tiles, 3 splits) and M = 3 (96 tiles, 2) take 98,304 B, M = 4 (128 tiles, 2 splits)
 * 2 * 4 * 4096 * 4 = 131,072 B; from M = 5 it is the GEMM, whose workspace grows with M up to
 * ceil(4096/16) * 64 * 28 = 458,752 B at 4,096 rows: both policies give that.
 */
Test(estimate_prefill, gemm_level1_over_prompt_rows)
{
    struct wsk_matmul_attrs a = {4096, 4096, false};
    struct wsk_ws env, max;
    cr_assert_eq(wsk_matmul_level1(&a, 4096, &h100, WSK_L1_ENVELOPE, &env), WSK_OK);
    cr_assert_eq(wsk_matmul_level1(&a, 4096, &h100, WSK_L1_MAX_SHAPE, &max), WSK_OK);
    cr_expect_eq(env.bytes[0], 458752);
    cr_expect_eq(max.bytes[0], 458752);
    cr_assert_eq(wsk_matmul_level1(&a, 4, &h100, WSK_L1_ENVELOPE, &env), WSK_OK);
    cr_expect_eq(env.bytes[0], 131072, "decoding batches only: the split-K partial sums");
}

/*
 * 8 query heads over 1 KV head of 64, 108 SMs, 1,100 new tokens.
 * A first prompt (KV 1,100) counts the work with the 8 query heads: 8 * ceil(1100/64) = 144 >=
 * 0.8 * 108, one split.  Root: softmax_lse 1 * 8 * 1100 * 4 = 35,200 B at 0, seq_lens 3 * 1 * 4 =
 * 12 B at 35,328: 35,340 B.
 * The same tokens after one cached position (KV 1,101) continue a cache: the work is counted with
 * the 1 KV head, 18 < 86.4; 5 KV blocks of 256, eligible splits 1, 2, 3, 5 with efficiency s/6,
 * the best 0.833, 85 % of it 0.708: 5 splits of 256 positions.  Root: softmax_lse 35,200 B at 0,
 * softmax_lse_accum 5 * 8 * 1100 * 4 = 176,000 B at 35,328, out_accum 176,000 * 64 = 11,264,000 B
 * at align(211,328) = 211,456, seq_lens 12 B at 11,475,456: 11,475,468 B.
 */
Test(estimate_prefill, first_prompt_and_continuation)
{
    struct wsk_attn_attrs a = {8, 1, 64};
    struct wsk_attn_kernel k;
    struct wsk_flash_layout l;
    struct wsk_ws ws;
    cr_assert_eq(wsk_attn_create_seq(&a, 1, 1100, 1100, &a100, &k), WSK_OK);
    cr_expect_eq(k.splits, 1);
    cr_assert_eq(wsk_attn_layout_seq(&a, &k, 1, 1100, &l), WSK_OK);
    cr_expect_eq(l.lse_bytes, 35200);
    cr_expect_eq(l.seq_lens_offset, 35328);
    cr_expect_eq(l.seq_lens_bytes, 12);
    cr_expect_eq(l.total_bytes, 35340);
    cr_assert_eq(wsk_attn_level2_seq(&a, &k, 1, 1100, 1100, &ws), WSK_OK);
    cr_assert_eq(ws.nregions, 2);
    cr_expect_str_eq(ws.regions[0].name, "softmax_lse");
    cr_expect_str_eq(ws.regions[1].name, "seq_lens");
    cr_expect_eq(ws.bytes[0], 35340);

    cr_assert_eq(wsk_attn_create_seq(&a, 1, 1100, 1101, &a100, &k), WSK_OK);
    cr_expect_eq(k.splits, 5);
    cr_expect_eq(k.split_len, 256);
    cr_assert_eq(wsk_attn_layout_seq(&a, &k, 1, 1100, &l), WSK_OK);
    cr_expect_eq(l.lse_accum_offset, 35328);
    cr_expect_eq(l.lse_accum_bytes, 176000);
    cr_expect_eq(l.out_accum_offset, 211456);
    cr_expect_eq(l.out_accum_bytes, 11264000);
    cr_expect_eq(l.seq_lens_offset, 11475456);
    cr_expect_eq(l.total_bytes, 11475468);
    cr_assert_eq(wsk_attn_level2_seq(&a, &k, 1, 1100, 1101, &ws), WSK_OK);
    cr_expect_eq(ws.nregions, 4);
    cr_expect_str_eq(ws.regions[3].name, "seq_lens");
}

/* One token is decoding whatever the cache: no sequence-length vectors (ONNX Runtime's fast
 * decoding passes its seqlens input), the root of the decoding recipe. */
Test(estimate_prefill, one_token_is_decoding)
{
    struct wsk_attn_attrs a = {2, 2, 64};
    struct wsk_attn_kernel k, d;
    struct wsk_ws seq1, dec;
    cr_assert_eq(wsk_attn_create_seq(&a, 1, 1, 13824, &a100, &k), WSK_OK);
    cr_assert_eq(wsk_attn_create(&a, 1, 13824, &a100, &d), WSK_OK);
    cr_expect_eq(k.splits, 54);
    cr_expect_eq(d.splits, 54);
    cr_assert_eq(wsk_attn_level2_seq(&a, &k, 1, 1, 13824, &seq1), WSK_OK);
    cr_assert_eq(wsk_attn_level2(&a, &d, 1, 13824, &dec), WSK_OK);
    cr_expect_eq(seq1.bytes[0], 28416);
    cr_expect_eq(dec.bytes[0], 28416);
    cr_expect_eq(seq1.nregions, 3);
}

/*
 * The maximum shape of a workload of a first prompt of 1,100 tokens and a continuation of 1,000
 * (KV 1,100 both) is the first prompt: 35,340 B.  The continuation counts the 1 KV head: 16 query
 * blocks, 5 KV blocks, efficiencies 16s/108 (0.148, 0.296, 0.444, 0.741 for s = 1, 2, 3, 5), 85 % of
 * the best is 0.630: 5 splits.  Its root: softmax_lse 32,000 B, softmax_lse_accum 160,000 B at
 * 32,000, out_accum 10,240,000 B at 192,000, seq_lens 12 B at 10,432,000: 10,432,012 B, far above
 * the maximum shape's.  The envelope covers it.
 */
Test(estimate_prefill, max_shape_underestimates_a_continuation)
{
    struct wsk_attn_attrs a = {8, 1, 64};
    struct wsk_attn_kernel k;
    struct wsk_ws max, env, cont;
    cr_assert_eq(wsk_attn_level1_seq(&a, 1, 1100, 1100, &a100, WSK_L1_MAX_SHAPE, &max), WSK_OK);
    cr_assert_eq(wsk_attn_level1_seq(&a, 1, 1100, 1100, &a100, WSK_L1_ENVELOPE, &env), WSK_OK);
    cr_assert_eq(wsk_attn_create_seq(&a, 1, 1000, 1100, &a100, &k), WSK_OK);
    cr_expect_eq(k.splits, 5);
    cr_assert_eq(wsk_attn_level2_seq(&a, &k, 1, 1000, 1100, &cont), WSK_OK);
    cr_expect_eq(max.bytes[0], 35340);
    cr_expect_eq(cont.bytes[0], 10432012);
    cr_expect_geq(env.bytes[0], 10432012);
    cr_expect_eq(env.nregions, 0, "Level 1 reserves the root's size");
}

/* The envelope bounds every (batch, seq, kv_len) with seq <= kv_len up to the maxima, decoding and
 * prefill, first prompts and continuations: checked shape by shape. */
Test(estimate_prefill, envelope_bounds_every_prompt)
{
    struct wsk_attn_attrs a = {6, 3, 32};
    struct wsk_device dev = {20};
    struct wsk_ws env, w;
    cr_assert_eq(wsk_attn_level1_seq(&a, 2, 140, 300, &dev, WSK_L1_ENVELOPE, &env), WSK_OK);
    for (uint64_t b = 0; b <= 2; b++)
        for (uint64_t s = 1; s <= 140; s++)
            for (uint64_t len = s; len <= 300; len++) {
                struct wsk_attn_kernel k;
                cr_assert_eq(wsk_attn_create_seq(&a, b, s, len, &dev, &k), WSK_OK);
                cr_assert_eq(wsk_attn_level2_seq(&a, &k, b, s, len, &w), WSK_OK);
                for (uint32_t i = 0; i < w.nslots; i++)
                    cr_assert_leq(w.bytes[i], env.bytes[i], "batch %lu seq %lu kv %lu", (unsigned long)b,
                                  (unsigned long)s, (unsigned long)len);
            }
}

Test(estimate_prefill, bad_and_unknown_shapes)
{
    struct wsk_attn_attrs a = {4, 2, 64};
    struct wsk_attn_kernel k;
    struct wsk_ws ws;
    cr_expect_eq(wsk_attn_create_seq(&a, 1, 0, 10, &h100, &k), WSK_EINVAL, "no query token");
    cr_expect_eq(wsk_attn_create_seq(&a, 1, 11, 10, &h100, &k), WSK_EINVAL, "more new tokens than positions");
    cr_expect_eq(wsk_attn_create_seq(&a, 1, WSK_DIM_UNKNOWN, 10, &h100, &k), WSK_UNAVAILABLE);
    cr_expect_eq(wsk_attn_level1_seq(&a, 1, 20, 10, &h100, WSK_L1_ENVELOPE, &ws), WSK_EINVAL);
    cr_expect_eq(ws.nslots, 0);
    cr_expect_eq(wsk_attn_level1_seq(&a, 1, WSK_DIM_UNKNOWN, 10, &h100, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
    struct wsk_attn_attrs huge = {1ull << 20, 1ull << 20, 256};
    cr_expect_eq(wsk_attn_level1_seq(&huge, 1ull << 20, 1ull << 20, 1ull << 20, &h100, WSK_L1_ENVELOPE, &ws),
                 WSK_UNAVAILABLE, "the bound above the walking limit overflows");
}
