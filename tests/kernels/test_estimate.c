/* Workspace estimators: hand-computed sizes, tactic-dependent declarations, empty outputs,
 * unavailable estimates, the flash-decoding split rule and its non-monotonic workspace.  Figures
 * of the split rule come from ONNX Runtime's published cases or are derived by hand in comments. */
#include <criterion/criterion.h>

#include "wskernels.h"

static const struct wsk_device h100 = {132};

Test(estimate, nbits_sizes_partial_block)
{
    uint64_t w, s, z;
    cr_assert_eq(wsk_nbits_sizes(100, 7, &w, &s, &z), WSK_OK);
    cr_expect_eq(w, 7 * 4 * 16); /* ceil(100/32) = 4 blocks of 16 bytes per column */
    cr_expect_eq(s, 7 * 4);
    cr_expect_eq(z, 7 * 2); /* two 4-bit zero points per byte */
}

Test(estimate, matmul_gemv_declares_nothing)
{
    struct wsk_matmul_attrs a = {256, 512, true};
    struct wsk_matmul_kernel k;
    struct wsk_ws ws;
    cr_assert_eq(wsk_matmul_create(&a, 1, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMV);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 1, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0);
}

Test(estimate, matmul_splitk_hand_computed)
{
    struct wsk_matmul_attrs a = {256, 512, false};
    struct wsk_matmul_kernel k;
    struct wsk_ws ws;
    /* M=4: tiles = ceil(512/128)*4 = 16, ceil(132/16) = 9 splits, capped by 8 K blocks. */
    cr_assert_eq(wsk_matmul_create(&a, 4, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_SPLITK);
    cr_expect_eq(k.split_k, 8);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 4, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 8 * 4 * 512 * 4);
    /* M=40: 160 tiles already fill 132 SMs; one split means the GEMM (test_estimate_prefill.c). */
    cr_assert_eq(wsk_matmul_create(&a, 40, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMM);
}

Test(estimate, matmul_level1_policies)
{
    struct wsk_matmul_attrs a = {256, 512, false};
    struct wsk_ws ws;
    /* Max shape M=40 runs the GEMM: ceil(40/16) * ceil(512/64) * 7 * 4 = 672 B. */
    cr_assert_eq(wsk_matmul_level1(&a, 40, &h100, WSK_L1_MAX_SHAPE, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 672);
    /* The envelope peaks at M=32: 128 tiles, 2 splits, 2*32*512 floats. */
    cr_assert_eq(wsk_matmul_level1(&a, 40, &h100, WSK_L1_ENVELOPE, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 2 * 32 * 512 * 4);
}

Test(estimate, matmul_empty_and_unavailable)
{
    struct wsk_matmul_attrs a = {256, 0, false}, big = {1u << 20, 1ull << 30, false};
    struct wsk_matmul_kernel k = {WSK_MATMUL_SPLITK, 16};
    struct wsk_ws ws;
    cr_expect_eq(wsk_matmul_level2(&a, &k, 8, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "empty output declares nothing");
    a.N = 512;
    cr_expect_eq(wsk_matmul_level2(&a, &k, 0, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "empty batch declares nothing");
    cr_expect_eq(wsk_matmul_level2(&big, &k, 1ull << 40, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(ws.nslots, 0);
    cr_expect_eq(wsk_matmul_level1(&a, WSK_DIM_UNKNOWN, &h100, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(wsk_matmul_level1(&big, 1ull << 40, &h100, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE,
                 "the bound used above the envelope limit overflows");
}

/* ---- the flash-decoding split rule ---- */

static uint32_t splits_of(uint64_t batch, uint64_t seqlen_q, uint64_t heads, uint64_t head_size, uint32_t sms,
                          uint64_t kv_len)
{
    uint32_t splits = 0;
    cr_assert_eq(wsk_flash_num_splits(batch, seqlen_q, kv_len, heads, head_size, sms, &splits), WSK_OK);
    return splits;
}

/* The five rows of ONNX Runtime's figures (B, S_q, heads, head size, SMs, KV length -> splits). */
Test(flash, the_published_split_counts)
{
    cr_expect_eq(splits_of(1, 1, 2, 64, 108, 13824), 54);
    cr_expect_eq(splits_of(1, 1, 2, 64, 108, 13825), 28);
    cr_expect_eq(splits_of(1, 1, 1, 64, 24, 24577), 20, "the 0.85 threshold compares in double precision");
    cr_expect_eq(splits_of(1, 1, 2, 64, 108, 4096), 16);
    cr_expect_eq(splits_of(1, 1, 2, 64, 108, 128), 1);
}

static struct wsk_flash_layout layout_of(uint64_t batch, uint64_t seqlen_q, uint64_t heads, uint64_t head_size,
                                         uint32_t splits)
{
    struct wsk_flash_layout l;
    cr_assert_eq(wsk_flash_layout(batch, seqlen_q, heads, head_size, splits, &l), WSK_OK);
    return l;
}

/*
 * One more KV position, less workspace.  13,824: 54 splits; softmax_lse 1*2*1*4 = 8 B at 0,
 * softmax_lse_accum 54*2*4 = 432 B at 256, out_accum 54*2*64*4 = 27,648 B at align(256+432) = 768:
 * the root is 768 + 27,648 = 28,416 B (28,080 B of accumulators).  13,825: 28 splits; 224 B at
 * 256, 28*2*64*4 = 14,336 B at align(480) = 512: 14,848 B.
 */
Test(flash, one_more_position_takes_less_workspace)
{
    struct wsk_flash_layout at = layout_of(1, 1, 2, 64, 54), above = layout_of(1, 1, 2, 64, 28);
    cr_expect_eq(at.lse_offset, 0);
    cr_expect_eq(at.lse_bytes, 8);
    cr_expect_eq(at.lse_accum_offset, 256);
    cr_expect_eq(at.lse_accum_bytes, 432);
    cr_expect_eq(at.out_accum_offset, 768);
    cr_expect_eq(at.out_accum_bytes, 27648);
    cr_expect_eq(at.lse_accum_bytes + at.out_accum_bytes, 28080);
    cr_expect_eq(at.total_bytes, 28416);
    cr_expect_eq(above.out_accum_offset, 512);
    cr_expect_eq(above.total_bytes, 14848);
}

/* Over KV lengths 1..14,000 (B=1, 2 heads of 64, 108 SMs) the root shrinks at least once, and at
 * 13,825 in particular: the rule is not monotonic. */
Test(flash, a_scan_finds_the_drop)
{
    int64_t previous = 0, drops = 0;
    bool drop_at_13825 = false;
    for (uint64_t kv = 1; kv <= 14000; kv++) {
        struct wsk_flash_layout l = layout_of(1, 1, 2, 64, splits_of(1, 1, 2, 64, 108, kv));
        if ((int64_t)l.total_bytes < previous) {
            drops++;
            drop_at_13825 |= kv == 13825;
        }
        previous = (int64_t)l.total_bytes;
    }
    cr_expect_gt(drops, 0);
    cr_expect(drop_at_13825);
}

/* ONNX Runtime's own hand-computed recipes: B=1, S_q=1, 2 heads of 64, 108 SMs, KV 4096: 16 splits,
 * softmax_lse 8 B, softmax_lse_accum 128 B at 256, out_accum 8,192 B at 512, 8,704 B in all.
 * B=2, S_q=3, 8 heads, KV 128: one split, softmax_lse 2*8*3*4 = 192 B and nothing else. */
Test(flash, ort_hand_computed_recipes)
{
    struct wsk_flash_layout l = layout_of(1, 1, 2, 64, splits_of(1, 1, 2, 64, 108, 4096));
    cr_expect_eq(l.splits, 16);
    cr_expect_eq(l.lse_bytes, 8);
    cr_expect_eq(l.lse_accum_offset, 256);
    cr_expect_eq(l.lse_accum_bytes, 128);
    cr_expect_eq(l.out_accum_offset, 512);
    cr_expect_eq(l.out_accum_bytes, 8192);
    cr_expect_eq(l.total_bytes, 8704);
    l = layout_of(2, 3, 8, 64, splits_of(2, 3, 8, 64, 108, 128));
    cr_expect_eq(l.splits, 1);
    cr_expect_eq(l.lse_bytes, 192);
    cr_expect_eq(l.lse_accum_bytes, 0);
    cr_expect_eq(l.out_accum_bytes, 0);
    cr_expect_eq(l.lse_accum_offset, 0, "an empty region keeps offset 0");
    cr_expect_eq(l.total_bytes, 192);
}

/*
 * Head size 72: KV blocks of 128, so 4096 positions are 32 blocks; work 2, candidates 1..32,
 * eligible 1-8, 11, 16, 32; efficiency 2s/108 peaks at s = 32 (0.593), 85 % of it is 0.504, and the
 * smallest eligible s with 2s/108 >= 0.504 is 32.  out_accum rows round 72 up to 96:
 * 32*1*2*96*4 = 24,576 B.
 */
Test(flash, head_size_rounds_up_to_32)
{
    struct wsk_flash_layout l = layout_of(1, 1, 2, 72, splits_of(1, 1, 2, 72, 108, 4096));
    cr_expect_eq(l.splits, 32);
    cr_expect_eq(l.head_size_rounded, 96);
    cr_expect_eq(l.out_accum_bytes, 24576);
}

/*
 * Grouped-query decoding (8 query heads, 2 KV heads, KV 4096, 108 SMs): the split count comes from
 * the 2 KV heads (16, as above), the accumulators hold all 8 query heads: 16*8*4 = 512 B and
 * 16*8*64*4 = 32,768 B (ONNX Runtime's figures).  Counted with the query heads the work would be 8
 * and the answer different, so the distinction is visible.
 */
Test(flash, gqa_splits_with_kv_heads_sizes_with_query_heads)
{
    struct wsk_attn_attrs a = {8, 2, 64};
    struct wsk_device dev = {108};
    struct wsk_attn_kernel k;
    struct wsk_flash_layout l;
    cr_assert_eq(wsk_attn_create(&a, 1, 4096, &dev, &k), WSK_OK);
    cr_expect_eq(k.splits, 16);
    cr_expect_eq(k.split_len, 256, "16 blocks of 256 over 16 splits: one block each");
    cr_assert_eq(wsk_attn_layout(&a, &k, 1, &l), WSK_OK);
    cr_expect_eq(l.lse_accum_bytes, 512);
    cr_expect_eq(l.out_accum_bytes, 32768);
    cr_expect_neq(splits_of(1, 1, 8, 64, 108, 4096), 16);
}

/*
 * Prefill: query blocks of 64 rows.  B=1, 2 heads, KV 4096 (16 blocks), 108 SMs.  S_q = 2752 is 43
 * query blocks: work 86 < 0.8*108 = 86.4; eligible splits 1, 2, 3, 4, 6, 8, 16 with efficiencies
 * 0.796 (s <= 4), 4.778/5 = 0.956 (6), 6.370/7 = 0.910 (8), 12.741/13 = 0.980 (16); 85 % of 0.980
 * is 0.833, first reached at 6.  S_q = 2753 is 44 blocks: work 88 >= 86.4, one split.
 */
Test(flash, prefill_counts_query_blocks)
{
    cr_expect_eq(splits_of(1, 2752, 2, 64, 108, 4096), 6);
    cr_expect_eq(splits_of(1, 2753, 2, 64, 108, 4096), 1);
    struct wsk_flash_layout l = layout_of(1, 2752, 2, 64, 6);
    cr_expect_eq(l.lse_bytes, 2752 * 2 * 4);
    cr_expect_eq(l.lse_accum_bytes, 6 * 2752 * 2 * 4);
}

Test(flash, degenerate_shapes_take_one_split)
{
    cr_expect_eq(splits_of(0, 1, 2, 64, 108, 4096), 1, "empty batch");
    cr_expect_eq(splits_of(1, 1, 2, 64, 108, 0), 1, "no KV block");
    cr_expect_eq(splits_of(1, 1, 2, 64, 0, 4096), 1, "no SM count");
    cr_expect_eq(splits_of(1, 1, 2, 64, 1, 4096), 1, "work 2 >= 0.8 * 1");
    uint32_t s;
    cr_expect_eq(wsk_flash_num_splits(1, 1, WSK_DIM_UNKNOWN, 2, 64, 108, &s), WSK_UNAVAILABLE);
    struct wsk_flash_layout l;
    cr_expect_eq(wsk_flash_layout(1ull << 40, 1, 1ull << 30, 64, 128, &l), WSK_UNAVAILABLE);
    cr_expect_eq(l.total_bytes, 0);
}

/* ---- attention_decode ---- */

/* The root, declared at Level 2 with its regions; one split declares softmax_lse only. */
Test(estimate, attention_level2_is_one_root_with_regions)
{
    struct wsk_attn_attrs a = {2, 2, 64};
    struct wsk_device dev = {108};
    struct wsk_attn_kernel k;
    struct wsk_ws ws;
    cr_assert_eq(wsk_attn_create(&a, 1, 13824, &dev, &k), WSK_OK);
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 13824, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 28416);
    cr_assert_eq(ws.nregions, 3);
    cr_expect_str_eq(ws.regions[0].name, "softmax_lse");
    cr_expect_str_eq(ws.regions[1].name, "softmax_lse_accum");
    cr_expect_str_eq(ws.regions[2].name, "out_accum");
    cr_expect_eq(ws.regions[2].offset, 768);
    cr_expect_eq(ws.regions[2].bytes, 27648);
    cr_assert_eq(wsk_attn_create(&a, 1, 128, &dev, &k), WSK_OK);
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 128, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 8);
    cr_expect_eq(ws.nregions, 1);
}

/* Level 1 at the maximum shape only (KV 13,825: 14,848 B) under-reserves KV 13,824 (28,416 B);
 * the envelope covers it. */
Test(estimate, attention_max_shape_underestimates_envelope_does_not)
{
    struct wsk_attn_attrs a = {2, 2, 64};
    struct wsk_device dev = {108};
    struct wsk_ws maxshape, envelope;
    cr_assert_eq(wsk_attn_level1(&a, 1, 13825, &dev, WSK_L1_MAX_SHAPE, &maxshape), WSK_OK);
    cr_assert_eq(wsk_attn_level1(&a, 1, 13825, &dev, WSK_L1_ENVELOPE, &envelope), WSK_OK);
    cr_expect_eq(maxshape.bytes[0], 14848);
    cr_expect_geq(envelope.bytes[0], 28416);
    cr_expect_eq(envelope.nregions, 0, "Level 1 reserves the root's size");
}

/* The envelope covers every (batch, kv_len) up to the maximum. */
Test(estimate, attention_envelope_bounds_every_shape)
{
    struct wsk_attn_attrs a = {6, 3, 32};
    struct wsk_device dev = {20};
    struct wsk_ws env, w;
    cr_assert_eq(wsk_attn_level1(&a, 3, 2600, &dev, WSK_L1_ENVELOPE, &env), WSK_OK);
    for (uint64_t b = 0; b <= 3; b++)
        for (uint64_t len = 0; len <= 2600; len++) {
            struct wsk_attn_kernel k;
            cr_assert_eq(wsk_attn_create(&a, b, len, &dev, &k), WSK_OK);
            cr_assert_eq(wsk_attn_level2(&a, &k, b, len, &w), WSK_OK);
            for (uint32_t s = 0; s < w.nslots; s++)
                cr_assert_leq(w.bytes[s], env.bytes[s], "batch %lu kv %lu slot %u", (unsigned long)b,
                              (unsigned long)len, s);
        }
}

Test(estimate, attention_empty_invalid_and_unavailable)
{
    struct wsk_attn_attrs a = {4, 4, 64}, huge = {1ull << 40, 1ull << 40, 1ull << 30}, bad = {4, 3, 64};
    struct wsk_attn_kernel k = {8, 256};
    struct wsk_device dev = {132};
    struct wsk_ws ws;
    cr_expect_eq(wsk_attn_level2(&a, &k, 0, 128, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "empty batch");
    cr_expect_eq(wsk_attn_level2(&a, &k, 1, 0, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "nothing to attend");
    cr_expect_eq(wsk_attn_level2(&huge, &k, 1ull << 20, 128, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(ws.nslots, 0);
    cr_expect_eq(wsk_attn_create(&bad, 1, 128, &dev, &k), WSK_EINVAL, "3 KV heads do not divide 4");
    cr_expect_eq(wsk_attn_level1(&a, 1, WSK_DIM_UNKNOWN, &dev, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(wsk_attn_level1(&huge, 1ull << 20, 1ull << 20, &dev, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
}

/*
 * MatMulNBits parity.  An ordinary shape (K 256, N 512, M 4, 132 SMs: split-K 8): Level 1 at that
 * shape, Level 2 of the created kernel and the bytes the launch code takes are the same 8*4*512*4
 * (the runtime side is checked on a trace in test_wsk.c).  An empty output (M 0): Level 1 is a
 * known 0 and Level 2 has no slot.
 */
Test(estimate, matmul_parity_of_both_levels)
{
    struct wsk_matmul_attrs a = {256, 512, false};
    struct wsk_matmul_kernel k;
    struct wsk_ws l1, l2;
    cr_assert_eq(wsk_matmul_level1(&a, 4, &h100, WSK_L1_MAX_SHAPE, &l1), WSK_OK);
    cr_assert_eq(wsk_matmul_create(&a, 4, &h100, &k), WSK_OK);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 4, &l2), WSK_OK);
    cr_expect_eq(l1.nslots, 1);
    cr_expect_eq(l2.nslots, 1);
    cr_expect_eq(l1.bytes[0], 65536);
    cr_expect_eq(l2.bytes[0], 65536);
    cr_assert_eq(wsk_matmul_level1(&a, 0, &h100, WSK_L1_MAX_SHAPE, &l1), WSK_OK, "a known zero, not unavailable");
    cr_expect_eq(l1.nslots, 0);
    cr_assert_eq(wsk_matmul_level1(&a, 0, &h100, WSK_L1_ENVELOPE, &l1), WSK_OK);
    cr_expect_eq(l1.nslots, 0);
    cr_assert_eq(wsk_matmul_create(&a, 0, &h100, &k), WSK_OK);
    cr_assert_eq(wsk_matmul_level2(&a, &k, 0, &l2), WSK_OK);
    cr_expect_eq(l2.nslots, 0, "no Level-2 slot");
}

Test(estimate, argmax_sizes)
{
    struct wsk_ws ws;
    cr_assert_eq(wsk_argmax_level2(2500, 3, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 1);
    cr_expect_eq(ws.bytes[0], 3 * 3 * 8); /* 3 blocks of 1024 logits, 8-byte pairs */
    cr_assert_eq(wsk_argmax_level1(2500, 3, WSK_L1_ENVELOPE, &ws), WSK_OK);
    cr_expect_eq(ws.bytes[0], 72);
    cr_assert_eq(wsk_argmax_level2(2500, 0, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0);
    cr_expect_eq(wsk_argmax_level2(WSK_DIM_UNKNOWN, 1, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(wsk_argmax_level2(1ull << 62, 1ull << 20, &ws), WSK_UNAVAILABLE);
}
