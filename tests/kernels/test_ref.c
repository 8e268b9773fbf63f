/* Host references against straightforward double-precision implementations. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wskernels.h"

static uint64_t rng = 12345;

static double uniform(void) /* [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static float *random_floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)uniform();
    return p;
}

static void expect_close(const float *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i])), "element %zu: got %.9g, want %.9g", i,
                  (double)got[i], want[i]);
}

/* ---- elementwise ---- */

Test(ref, rmsnorm)
{
    const uint32_t shapes[][2] = {{1, 1}, {1, 256}, {3, 100}, {0, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        uint32_t M = shapes[s][0], H = shapes[s][1];
        float *x = random_floats((size_t)M * H), *g = random_floats(H);
        float *y = calloc((size_t)M * H + 1, sizeof *y);
        double *want = calloc((size_t)M * H + 1, sizeof *want);
        for (uint32_t m = 0; m < M; m++) {
            double ss = 0;
            for (uint32_t h = 0; h < H; h++)
                ss += (double)x[m * H + h] * x[m * H + h];
            double inv = 1.0 / sqrt(ss / H + 1e-5);
            for (uint32_t h = 0; h < H; h++)
                want[m * H + h] = x[m * H + h] * inv * g[h];
        }
        float eps = 1e-5f;
        void *args[] = {&y, &x, &g, &M, &H, &eps};
        wsk_host_rmsnorm(args); /* through the argument array, as the simulated device calls it */
        expect_close(y, want, (size_t)M * H, 1e-5);
        free(x), free(g), free(y), free(want);
    }
}

Test(ref, silu_mul_add_embed)
{
    uint64_t n = 1000;
    float *g = random_floats(n), *u = random_floats(n), *y = malloc(n * sizeof *y);
    double *want = malloc(n * sizeof *want);
    for (uint64_t i = 0; i < n; i++)
        want[i] = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
    void *args[] = {&y, &g, &u, &n};
    wsk_host_silu_mul(args);
    expect_close(y, want, n, 1e-6);
    for (uint64_t i = 0; i < n; i++)
        want[i] = (double)g[i] + u[i];
    wsk_host_add(args);
    expect_close(y, want, n, 1e-7);
    /* embedding: rows of the table picked by id */
    int32_t ids[3] = {4, 0, 4};
    float *table = random_floats(5 * 7), out[21];
    wsk_ref_embed(out, ids, table, 3, 7);
    for (int i = 0; i < 21; i++)
        cr_expect_eq(out[i], table[ids[i / 7] * 7 + i % 7]);
    free(g), free(u), free(y), free(want), free(table);
}

/* ---- matmul_nbits ---- */

struct qmat {
    uint8_t *w, *zp;
    float *scales;
    uint32_t K, N;
};

static struct qmat random_qmat(uint32_t K, uint32_t N, bool zp)
{
    uint64_t wb, ns, zb;
    cr_assert_eq(wsk_nbits_sizes(K, N, &wb, &ns, &zb), WSK_OK);
    struct qmat q = {malloc(wb + 1), zp ? malloc(zb + 1) : NULL, random_floats(ns), K, N};
    for (uint64_t i = 0; i < wb; i++)
        q.w[i] = (uint8_t)(rng = rng * 6364136223846793005ull + 1, rng >> 56);
    for (uint64_t i = 0; zp && i < zb; i++)
        q.zp[i] = (uint8_t)(rng = rng * 6364136223846793005ull + 1, rng >> 56);
    return q;
}

/* Straightforward dequantisation of w[k][n], following the layout in wskernels.h. */
static double dequant(const struct qmat *q, uint32_t k, uint32_t n)
{
    uint32_t blocks = (q->K + 31) / 32, blk = k / 32, i = k % 32;
    uint8_t byte = q->w[(n * blocks + blk) * 16 + i / 2];
    int value = (i % 2) ? byte >> 4 : byte & 15;
    int zero = 8;
    if (q->zp) {
        uint8_t zb = q->zp[n * ((blocks + 1) / 2) + blk / 2];
        zero = (blk % 2) ? zb >> 4 : zb & 15;
    }
    return (double)(value - zero) * q->scales[n * blocks + blk];
}

static void check_matmul(uint32_t M, uint32_t K, uint32_t N, bool zp, struct wsk_matmul_kernel tactic)
{
    struct qmat q = random_qmat(K, N, zp);
    float *x = random_floats((size_t)M * K), *y = calloc((size_t)M * N + 1, sizeof *y);
    float *ws = calloc((size_t)tactic.split_k * M * N + 1, sizeof *ws);
    double *want = calloc((size_t)M * N + 1, sizeof *want);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            for (uint32_t k = 0; k < K; k++)
                want[m * N + n] += (double)x[m * K + k] * dequant(&q, k, n);
    wsk_ref_matmul_nbits(y, x, q.w, q.scales, q.zp, M, K, N, &tactic, ws);
    expect_close(y, want, (size_t)M * N, 1e-4 * sqrt(K + 1.0));
    free(q.w), free(q.zp), free(q.scales), free(x), free(y), free(ws), free(want);
}

Test(ref, matmul_gemv)
{
    struct wsk_matmul_kernel gemv = {WSK_MATMUL_GEMV, 1};
    check_matmul(1, 64, 16, false, gemv);
    check_matmul(1, 100, 7, true, gemv); /* K not a multiple of the block */
    check_matmul(2, 33, 5, true, gemv);
    check_matmul(0, 64, 16, false, gemv); /* empty batch */
}

Test(ref, matmul_splitk)
{
    check_matmul(3, 100, 7, true, (struct wsk_matmul_kernel){WSK_MATMUL_SPLITK, 3});
    check_matmul(4, 256, 33, false, (struct wsk_matmul_kernel){WSK_MATMUL_SPLITK, 8});
    /* 4 K blocks over 3 splits of 2: the last split is empty and contributes zeros */
    check_matmul(2, 128, 9, true, (struct wsk_matmul_kernel){WSK_MATMUL_SPLITK, 3});
    check_matmul(5, 31, 3, false, (struct wsk_matmul_kernel){WSK_MATMUL_SPLITK, 1});
}

Test(ref, matmul_host_entry_points)
{
    uint32_t M = 3, K = 100, N = 7, split = 3;
    struct qmat q = random_qmat(K, N, true);
    float *x = random_floats(M * K), y1[21], y2[21], ws[3 * 21];
    struct wsk_matmul_kernel sk = {WSK_MATMUL_SPLITK, split};
    wsk_ref_matmul_nbits(y1, x, q.w, q.scales, q.zp, M, K, N, &sk, ws);
    float *wsp = ws, *y2p = y2;
    void *partial[] = {&wsp, &x, &q.w, &q.scales, &q.zp, &M, &K, &N, &split};
    void *reduce[] = {&y2p, &wsp, &M, &N, &split};
    wsk_host_matmul_splitk(partial);
    wsk_host_matmul_reduce(reduce);
    cr_expect_arr_eq(y1, y2, sizeof y1, "split-K through the argument arrays is bitwise equal");
    free(q.w), free(q.zp), free(q.scales), free(x);
}

/* ---- attention_decode ---- */

struct attn_case {
    uint32_t batch, heads, kv_heads, dim, kv_len, max_kv;
    struct wsk_attn_kernel k;
};

/* Plain softmax attention in double precision: out and the log-sum-exp of the scaled scores. */
static void attention_double(double *want, double *want_lse, const float *q, const float *kc, const float *vc,
                             const struct attn_case *c)
{
    double *p = malloc((c->kv_len + 1) * sizeof *p);
    uint32_t group = c->heads / c->kv_heads;
    for (uint32_t row = 0; row < c->batch * c->heads; row++) {
        size_t kv_row = (size_t)(row / c->heads) * c->kv_heads + (row % c->heads) / group;
        double mx = -INFINITY, sum = 0;
        for (uint32_t t = 0; t < c->kv_len; t++) {
            double s = 0;
            for (uint32_t d = 0; d < c->dim; d++)
                s += (double)q[row * c->dim + d] * kc[(kv_row * c->max_kv + t) * c->dim + d];
            p[t] = s / sqrt((double)c->dim);
            mx = fmax(mx, p[t]);
        }
        for (uint32_t t = 0; t < c->kv_len; t++)
            sum += (p[t] = exp(p[t] - mx));
        want_lse[row] = mx + log(sum);
        for (uint32_t d = 0; d < c->dim; d++) {
            double o = 0;
            for (uint32_t t = 0; t < c->kv_len; t++)
                o += p[t] * vc[(kv_row * c->max_kv + t) * c->dim + d];
            want[row * c->dim + d] = o / sum;
        }
    }
    free(p);
}

static void check_attention(struct attn_case c)
{
    struct wsk_attn_attrs a = {c.heads, c.kv_heads, c.dim};
    struct wsk_flash_layout l;
    cr_assert_eq(wsk_attn_layout(&a, &c.k, c.batch, &l), WSK_OK);
    size_t rows = (size_t)c.batch * c.heads, kv_rows = (size_t)c.batch * c.kv_heads;
    size_t cache = kv_rows * c.max_kv * c.dim;
    float *q = random_floats(rows * c.dim), *kn = random_floats(kv_rows * c.dim);
    float *vn = random_floats(kv_rows * c.dim), *kc = random_floats(cache), *vc = random_floats(cache);
    float *out = calloc(rows * c.dim + 1, sizeof *out);
    char *ws = calloc(l.total_bytes + 1, 1);
    double *want = calloc(rows * c.dim + 1, sizeof *want), *want_lse = calloc(rows + 1, sizeof *want_lse);
    wsk_ref_attention_decode(out, q, kn, vn, kc, vc, &a, c.batch, c.kv_len, c.max_kv, &c.k, ws);
    for (size_t row = 0; row < kv_rows; row++) /* the new token went to position kv_len-1 */
        cr_assert_arr_eq(&kc[(row * c.max_kv + c.kv_len - 1) * c.dim], &kn[row * c.dim], c.dim * sizeof(float));
    attention_double(want, want_lse, q, kc, vc, &c);
    expect_close(out, want, rows * c.dim, 1e-5);
    const float *lse = (const float *)(ws + l.lse_offset);
    for (size_t row = 0; row < rows; row++)
        cr_expect(fabs(lse[row] - want_lse[row]) <= 1e-5 * (1.0 + fabs(want_lse[row])), "lse %zu: %g vs %g", row,
                  (double)lse[row], want_lse[row]);
    free(q), free(kn), free(vn), free(kc), free(vc), free(out), free(ws), free(want), free(want_lse);
}

Test(ref, attention_decode)
{
    check_attention((struct attn_case){1, 1, 1, 8, 1, 4, {1, 256}});      /* KV length 1 */
    check_attention((struct attn_case){1, 4, 4, 64, 96, 128, {1, 256}});  /* one split */
    check_attention((struct attn_case){2, 3, 3, 16, 96, 100, {3, 32}});   /* three splits */
    check_attention((struct attn_case){1, 2, 2, 32, 300, 300, {2, 160}}); /* chunks of 128 */
    check_attention((struct attn_case){3, 2, 2, 24, 70, 80, {3, 32}});    /* short last split */
    check_attention((struct attn_case){2, 8, 2, 72, 200, 210, {4, 64}});  /* GQA, head size not a multiple of 32 */
    check_attention((struct attn_case){0, 4, 4, 16, 10, 16, {1, 256}});   /* empty batch */
}

/* The splits of the rule itself (B=1, 2 heads of 64, 108 SMs: 16 splits at 4096 positions),
 * through the host entry points with the buffers of the root. */
Test(ref, attention_host_entry_points)
{
    struct wsk_attn_attrs a = {2, 2, 64};
    struct wsk_device dev = {108};
    struct wsk_attn_kernel k;
    struct wsk_flash_layout l;
    uint32_t B = 1, H = 2, KVH = 2, D = 64, L = 4096, max_kv = 4096, pos = L - 1;
    cr_assert_eq(wsk_attn_create(&a, B, L, &dev, &k), WSK_OK);
    cr_assert_eq(k.splits, 16);
    cr_assert_eq(wsk_attn_layout(&a, &k, B, &l), WSK_OK);
    struct attn_case c = {B, H, KVH, D, L, max_kv, k};
    float *q = random_floats(H * D), *kn = random_floats(KVH * D), *vn = random_floats(KVH * D);
    float *kc = random_floats((size_t)KVH * max_kv * D), *vc = random_floats((size_t)KVH * max_kv * D);
    float *out = calloc(H * D, sizeof *out);
    char *root = calloc(l.total_bytes, 1);
    float *lse = (float *)(root + l.lse_offset), *lse_accum = (float *)(root + l.lse_accum_offset),
          *out_accum = (float *)(root + l.out_accum_offset);
    double want[128], want_lse[2];
    void *append[] = {&kc, &vc, &kn, &vn, &B, &KVH, &D, &pos, &max_kv};
    void *split[] = {&out, &lse, &lse_accum, &out_accum, &q,      &kc,       &vc,         &B,
                     &H,   &KVH, &D,         &L,         &max_kv, &k.splits, &k.split_len};
    void *combine[] = {&out, &lse, &lse_accum, &out_accum, &B, &H, &D, &k.splits};
    wsk_host_kv_append(append);
    wsk_host_attn_split(split);
    wsk_host_attn_combine(combine);
    attention_double(want, want_lse, q, kc, vc, &c);
    expect_close(out, want, H * D, 1e-5);
    cr_expect(fabs(lse[1] - want_lse[1]) <= 1e-5 * (1.0 + fabs(want_lse[1])));
    free(q), free(kn), free(vn), free(kc), free(vc), free(out), free(root);
}

/* ---- argmax ---- */

static void check_argmax(uint32_t batch, uint32_t vocab, bool ties)
{
    float *logits = random_floats((size_t)batch * vocab);
    if (ties && vocab > 2000)
        for (uint32_t b = 0; b < batch; b++) /* equal maxima in different blocks, and a NaN */
            logits[b * vocab + 1500] = logits[b * vocab + 2000 + b] = 5.0f, logits[b * vocab + 3] = NAN;
    int32_t *tokens = calloc(batch + 1, sizeof *tokens);
    struct wsk_argmax_pair *ws = calloc(batch * wsk_argmax_nblocks(vocab) + 1, sizeof *ws);
    wsk_ref_argmax(tokens, logits, batch, vocab, ws);
    for (uint32_t b = 0; b < batch; b++) {
        int32_t best = -1;
        for (uint32_t i = 0; i < vocab; i++) {
            float v = logits[b * vocab + i];
            if (!isnan(v) && (best < 0 || v > logits[b * vocab + best]))
                best = (int32_t)i;
        }
        cr_expect_eq(tokens[b], best, "batch %u vocab %u", b, vocab);
    }
    free(logits), free(tokens), free(ws);
}

Test(ref, argmax)
{
    check_argmax(1, 1, false);
    check_argmax(2, 1024, false);
    check_argmax(3, 2500, false); /* a partial last block */
    check_argmax(3, 2500, true);  /* ties go to the lower index, NaN never wins */
    check_argmax(0, 100, false);  /* empty batch */
}
