/* Workspace estimators: hand-computed sizes, tactic-dependent declarations, empty outputs,
 * unavailable estimates and the non-monotonic attention heuristic. */
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
    /* M=40: 160 tiles already fill 132 SMs; one split means the direct kernel, no workspace. */
    cr_assert_eq(wsk_matmul_create(&a, 40, &h100, &k), WSK_OK);
    cr_expect_eq(k.tactic, WSK_MATMUL_GEMV);
}

Test(estimate, matmul_level1_policies)
{
    struct wsk_matmul_attrs a = {256, 512, false};
    struct wsk_ws ws;
    cr_assert_eq(wsk_matmul_level1(&a, 40, &h100, WSK_L1_MAX_SHAPE, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "max shape M=40 runs the direct kernel");
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

Test(estimate, attention_hand_computed)
{
    struct wsk_attn_attrs a = {4, 64};
    struct wsk_attn_kernel k;
    struct wsk_ws ws;
    /* 2*132/(1*4) = 66 splits wanted, capped at 32; kv 1024 has 32 blocks. */
    cr_assert_eq(wsk_attn_create(&a, 1, 1024, &h100, &k), WSK_OK);
    cr_expect_eq(k.splits, 32);
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 1024, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 2);
    cr_expect_eq(ws.bytes[0], 1 * 4 * 32 * 64 * 4);
    cr_expect_eq(ws.bytes[1], 1 * 4 * 32 * 4);
    /* kv 1056 has 33 blocks: 2 blocks per split, 17 splits. */
    cr_assert_eq(wsk_attn_create(&a, 1, 1056, &h100, &k), WSK_OK);
    cr_expect_eq(k.splits, 17);
    cr_expect_eq(k.blocks_per_split, 2);
    /* One block: one split, written directly, no workspace. */
    cr_assert_eq(wsk_attn_create(&a, 1, 32, &h100, &k), WSK_OK);
    cr_expect_eq(k.splits, 1);
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 32, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0);
}

/* A KV length below the maximum needs more workspace than the maximum itself. */
Test(estimate, attention_max_shape_underestimates_envelope_does_not)
{
    struct wsk_attn_attrs a = {4, 64};
    struct wsk_device small = {8}; /* 2*8/4 = 4 splits wanted */
    struct wsk_attn_kernel k;
    struct wsk_ws at_max, below, maxshape, envelope;
    cr_assert_eq(wsk_attn_create(&a, 1, 160, &small, &k), WSK_OK); /* 5 blocks -> 3 splits */
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 160, &at_max), WSK_OK);
    cr_assert_eq(wsk_attn_create(&a, 1, 128, &small, &k), WSK_OK); /* 4 blocks -> 4 splits */
    cr_assert_eq(wsk_attn_level2(&a, &k, 1, 128, &below), WSK_OK);
    cr_expect_eq(at_max.bytes[0], 3 * 4 * 64 * 4);
    cr_expect_eq(below.bytes[0], 4 * 4 * 64 * 4);
    cr_assert_eq(wsk_attn_level1(&a, 1, 160, &small, WSK_L1_MAX_SHAPE, &maxshape), WSK_OK);
    cr_assert_eq(wsk_attn_level1(&a, 1, 160, &small, WSK_L1_ENVELOPE, &envelope), WSK_OK);
    cr_expect_lt(maxshape.bytes[0], below.bytes[0], "max-shape under-estimates kv 128");
    cr_expect_geq(envelope.bytes[0], below.bytes[0]);
    cr_expect_geq(envelope.bytes[1], below.bytes[1]);
    cr_expect_eq(envelope.bytes[0], 4 * 4 * 64 * 4);
    /* Same on an H100-sized device, at the 32-split boundary. */
    cr_assert_eq(wsk_attn_level1(&a, 1, 1056, &h100, WSK_L1_MAX_SHAPE, &maxshape), WSK_OK);
    cr_assert_eq(wsk_attn_level1(&a, 1, 1056, &h100, WSK_L1_ENVELOPE, &envelope), WSK_OK);
    cr_expect_eq(maxshape.bytes[0], 17 * 4 * 64 * 4);
    cr_expect_eq(envelope.bytes[0], 32 * 4 * 64 * 4);
}

/* The envelope covers every (batch, kv_len) up to the maximum. */
Test(estimate, attention_envelope_bounds_every_shape)
{
    struct wsk_attn_attrs a = {3, 16};
    struct wsk_device dev = {20};
    struct wsk_ws env, w;
    cr_assert_eq(wsk_attn_level1(&a, 5, 700, &dev, WSK_L1_ENVELOPE, &env), WSK_OK);
    for (uint64_t b = 0; b <= 5; b++)
        for (uint64_t len = 0; len <= 700; len++) {
            struct wsk_attn_kernel k;
            cr_assert_eq(wsk_attn_create(&a, b, len, &dev, &k), WSK_OK);
            cr_assert_eq(wsk_attn_level2(&a, &k, b, len, &w), WSK_OK);
            for (uint32_t s = 0; s < w.nslots; s++)
                cr_assert_leq(w.bytes[s], env.bytes[s], "batch %lu kv %lu slot %u", (unsigned long)b,
                              (unsigned long)len, s);
        }
}

Test(estimate, attention_empty_and_unavailable)
{
    struct wsk_attn_attrs a = {4, 64}, huge = {1ull << 40, 1ull << 30};
    struct wsk_attn_kernel k = {8, 1};
    struct wsk_ws ws;
    cr_expect_eq(wsk_attn_level2(&a, &k, 0, 128, &ws), WSK_OK);
    cr_expect_eq(ws.nslots, 0, "empty batch");
    cr_expect_eq(wsk_attn_level2(&huge, &k, 1ull << 20, 128, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(ws.nslots, 0);
    cr_expect_eq(wsk_attn_level1(&a, 1, WSK_DIM_UNKNOWN, &h100, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
    cr_expect_eq(wsk_attn_level1(&huge, 1ull << 20, 1ull << 20, &h100, WSK_L1_ENVELOPE, &ws), WSK_UNAVAILABLE);
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
