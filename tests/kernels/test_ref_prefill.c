/* Host references of the prefill kernels against straightforward double-precision implementations
 * written here: the GEMM tactic of matmul_nbits (every K-slice count, its semaphores), causal
 * attention over several query rows (first prompts, prompts continuing a cache, grouped-query
 * heads, several splits), and the norm of each sequence's last position. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wskernels.h"

static uint64_t rng = 777;

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

static void expect_close(const float *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i])), "%s: element %zu: got %.9g, want %.9g", what,
                  i, (double)got[i], want[i]);
}

/* ---- matmul_nbits, GEMM ---- */

struct qmat {
    uint8_t *w, *zp;
    float *scales;
    uint32_t K, N;
};

static struct qmat random_qmat(uint32_t K, uint32_t N, bool zp)
{
    uint32_t blocks = (K + 31) / 32;
    struct qmat q = {malloc((size_t)N * blocks * 16 + 1), zp ? malloc((size_t)N * ((blocks + 1) / 2) + 1) : NULL,
                     random_floats((size_t)N * blocks), K, N};
    for (size_t i = 0; i < (size_t)N * blocks * 16; i++)
        q.w[i] = (uint8_t)(rng = rng * 6364136223846793005ull + 1, rng >> 56);
    for (size_t i = 0; zp && i < (size_t)N * ((blocks + 1) / 2); i++)
        q.zp[i] = (uint8_t)(rng = rng * 6364136223846793005ull + 1, rng >> 56);
    return q;
}

/* w[k][n] from the layout of wskernels.h: column n's blocks of 32, two values a byte, low first. */
static double dequant(const struct qmat *q, uint32_t k, uint32_t n)
{
    uint32_t blocks = (q->K + 31) / 32, blk = k / 32, i = k % 32;
    uint8_t byte = q->w[((size_t)n * blocks + blk) * 16 + i / 2];
    int value = (i % 2) ? byte >> 4 : byte & 15, zero = 8;
    if (q->zp) {
        uint8_t zb = q->zp[(size_t)n * ((blocks + 1) / 2) + blk / 2];
        zero = (blk % 2) ? zb >> 4 : zb & 15;
    }
    return (double)(value - zero) * q->scales[(size_t)n * blocks + blk];
}

/* The GEMM with split_k slices against the double product; every semaphore back at 0 after. */
static void check_gemm(uint32_t M, uint32_t K, uint32_t N, bool zp, uint32_t split_k)
{
    struct qmat q = random_qmat(K, N, zp);
    float *x = random_floats((size_t)M * K), *y = calloc((size_t)M * N + 1, sizeof *y);
    uint64_t sem_count = (uint64_t)((M + 15) / 16) * ((N + 63) / 64) * 7; /* the workspace's int32s */
    int32_t *sem = calloc(sem_count + 1, sizeof *sem);
    double *want = calloc((size_t)M * N + 1, sizeof *want);
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            for (uint32_t k = 0; k < K; k++)
                want[(size_t)m * N + n] += (double)x[(size_t)m * K + k] * dequant(&q, k, n);
    struct wsk_matmul_kernel gemm = {WSK_MATMUL_GEMM, split_k};
    wsk_ref_matmul_nbits(y, x, q.w, q.scales, q.zp, M, K, N, &gemm, (float *)sem);
    expect_close(y, want, (size_t)M * N, 1e-4 * sqrt(K + 1.0), "gemm");
    for (uint64_t i = 0; i < sem_count; i++)
        cr_assert_eq(sem[i], 0, "semaphore %lu left at %d", (unsigned long)i, sem[i]);
    free(q.w), free(q.zp), free(q.scales), free(x), free(y), free(sem), free(want);
}

Test(ref_prefill, gemm_against_the_product)
{
    check_gemm(2, 64, 16, false, 1);    /* smaller than one tile */
    check_gemm(65, 100, 70, true, 1);   /* partial tiles in M and N, a partial K block */
    check_gemm(130, 256, 64, false, 2); /* two slices of 4 K blocks */
    check_gemm(64, 256, 129, true, 3);  /* 8 K blocks over 3 slices: 3, 3, 2 */
    check_gemm(17, 128, 33, false, 7);  /* 4 K blocks over 7 slices: the last 3 are empty */
    check_gemm(0, 64, 16, false, 2);    /* an empty batch */
}

/* Split K changes only the order of the sums: a GEMM of one slice and one of 5 agree to rounding. */
Test(ref_prefill, gemm_slices_agree)
{
    uint32_t M = 40, K = 320, N = 96;
    struct qmat q = random_qmat(K, N, true);
    float *x = random_floats((size_t)M * K), y1[40 * 96], y5[40 * 96];
    int32_t sem[3 * 2 * 7] = {0};
    wsk_ref_matmul_nbits(y1, x, q.w, q.scales, q.zp, M, K, N, &(struct wsk_matmul_kernel){WSK_MATMUL_GEMM, 1}, NULL);
    wsk_ref_matmul_nbits(y5, x, q.w, q.scales, q.zp, M, K, N, &(struct wsk_matmul_kernel){WSK_MATMUL_GEMM, 5},
                         (float *)sem);
    for (size_t i = 0; i < sizeof y1 / sizeof y1[0]; i++)
        cr_assert(fabsf(y1[i] - y5[i]) <= 1e-5f * sqrtf((float)K) * (1.0f + fabsf(y1[i])), "%zu: %g vs %g", i,
                  (double)y1[i], (double)y5[i]);
    free(q.w), free(q.zp), free(q.scales), free(x);
}

/* The host entry point (the simulated device's launch) is the reference, bit for bit; a
 * semaphore that was not zeroed holds back the slices of its tile (a device would wait). */
Test(ref_prefill, gemm_host_entry_point_and_semaphores)
{
    uint32_t M = 70, K = 96, N = 65, split = 3;
    struct qmat q = random_qmat(K, N, false);
    float *x = random_floats((size_t)M * K), *y1 = calloc(M * N, sizeof *y1), *y2 = calloc(M * N, sizeof *y2);
    int32_t sem[5 * 2 * 7] = {0};
    struct wsk_matmul_kernel k = {WSK_MATMUL_GEMM, split};
    wsk_ref_matmul_nbits(y1, x, q.w, q.scales, q.zp, M, K, N, &k, (float *)sem);
    int32_t *semp = sem;
    void *args[] = {&y2, &x, &q.w, &q.scales, &q.zp, &semp, &M, &K, &N, &split};
    wsk_host_matmul_gemm(args);
    cr_expect_arr_eq(y1, y2, M * N * sizeof(float), "through the argument array: bitwise equal");
    /* tiles are 64 x 64: 2 x 2 of them; tile 3 (rows 64.., column 64) finds a stale 2: only its
     * third slice (K block 2) runs, adds into the zeros and resets the semaphore */
    memset(y2, 0, M * N * sizeof(float));
    sem[3] = 2;
    wsk_host_matmul_gemm(args);
    cr_expect_eq(sem[3], 0, "the third slice ran last and reset it");
    cr_expect_neq(y2[64 * N + 64], y1[64 * N + 64], "slices 0 and 1 of tile 3 never got their turn");
    cr_expect_eq(y2[0], y1[0], "the other tiles are not affected");
    free(q.w), free(q.scales), free(x), free(y1), free(y2);
}

/* ---- attention over several query rows ---- */

struct prefill_case {
    uint32_t batch, seq, heads, kv_heads, dim, kv_len, max_kv;
    struct wsk_attn_kernel k;
};

/* Causal softmax attention in double precision over the cache after the append: query row i of a
 * sequence sits at position kv_len - seq + i and sees positions 0 .. that one.  want [b][i][h][d],
 * want_lse [b][h][i]. */
static void prefill_double(double *want, double *want_lse, const float *q, const float *kc, const float *vc,
                           const struct prefill_case *c)
{
    double *p = malloc((c->kv_len + 1) * sizeof *p);
    uint32_t group = c->heads / c->kv_heads, past = c->kv_len - c->seq;
    for (uint32_t b = 0; b < c->batch; b++)
        for (uint32_t h = 0; h < c->heads; h++)
            for (uint32_t i = 0; i < c->seq; i++) {
                size_t q_row = ((size_t)b * c->seq + i) * c->heads + h;
                size_t kv_row = (size_t)b * c->kv_heads + h / group;
                uint32_t visible = past + i + 1;
                double mx = -INFINITY, sum = 0;
                for (uint32_t t = 0; t < visible; t++) {
                    double s = 0;
                    for (uint32_t d = 0; d < c->dim; d++)
                        s += (double)q[q_row * c->dim + d] * kc[(kv_row * c->max_kv + t) * c->dim + d];
                    p[t] = s / sqrt((double)c->dim);
                    mx = fmax(mx, p[t]);
                }
                for (uint32_t t = 0; t < visible; t++)
                    sum += (p[t] = exp(p[t] - mx));
                want_lse[((size_t)b * c->heads + h) * c->seq + i] = mx + log(sum);
                for (uint32_t d = 0; d < c->dim; d++) {
                    double o = 0;
                    for (uint32_t t = 0; t < visible; t++)
                        o += p[t] * vc[(kv_row * c->max_kv + t) * c->dim + d];
                    want[q_row * c->dim + d] = o / sum;
                }
            }
    free(p);
}

static void check_prefill(struct prefill_case c)
{
    struct wsk_attn_attrs a = {c.heads, c.kv_heads, c.dim};
    struct wsk_flash_layout l;
    cr_assert_eq(wsk_attn_layout_seq(&a, &c.k, c.batch, c.seq, &l), WSK_OK);
    size_t rows = (size_t)c.batch * c.seq * c.heads, kv_rows = (size_t)c.batch * c.seq * c.kv_heads;
    size_t cache = (size_t)c.batch * c.kv_heads * c.max_kv * c.dim;
    float *q = random_floats(rows * c.dim), *kn = random_floats(kv_rows * c.dim), *vn = random_floats(kv_rows * c.dim);
    float *kc = random_floats(cache), *vc = random_floats(cache), *out = calloc(rows * c.dim + 1, sizeof *out);
    char *ws = calloc(l.total_bytes + 1, 1);
    double *want = calloc(rows * c.dim + 1, sizeof *want), *want_lse = calloc(rows + 1, sizeof *want_lse);
    wsk_ref_attention_prefill(out, q, kn, vn, kc, vc, &a, c.batch, c.seq, c.kv_len, c.max_kv, &c.k, ws);
    uint32_t past = c.kv_len - c.seq;
    for (uint32_t b = 0; b < c.batch; b++) {
        const int32_t *lens = (const int32_t *)(ws + l.seq_lens_offset);
        cr_expect_eq(lens[b], (int32_t)past);
        cr_expect_eq(lens[c.batch + b], (int32_t)c.kv_len);
        cr_expect_eq(lens[2 * c.batch + b], (int32_t)c.seq);
        for (uint32_t i = 0; i < c.seq; i++)
            for (uint32_t h = 0; h < c.kv_heads; h++) /* new token i at position past + i */
                cr_assert_arr_eq(&kc[(((size_t)b * c.kv_heads + h) * c.max_kv + past + i) * c.dim],
                                 &kn[(((size_t)b * c.seq + i) * c.kv_heads + h) * c.dim], c.dim * sizeof(float));
    }
    prefill_double(want, want_lse, q, kc, vc, &c);
    expect_close(out, want, rows * c.dim, 1e-5, "out");
    float *lse = calloc(rows + 1, sizeof *lse);
    memcpy(lse, ws + l.lse_offset, rows * sizeof *lse);
    expect_close(lse, want_lse, rows, 1e-5, "softmax_lse");
    free(q), free(kn), free(vn), free(kc), free(vc), free(out), free(ws), free(want), free(want_lse), free(lse);
}

Test(ref_prefill, attention_first_prompts)
{
    check_prefill((struct prefill_case){1, 2, 1, 1, 8, 2, 4, {1, 256}});        /* two tokens */
    check_prefill((struct prefill_case){1, 64, 4, 4, 64, 64, 64, {1, 256}});    /* one query block */
    check_prefill((struct prefill_case){2, 70, 4, 2, 32, 70, 80, {1, 256}});    /* GQA, a second block */
    check_prefill((struct prefill_case){1, 130, 2, 2, 72, 130, 130, {1, 256}}); /* head 72, chunks of 128 */
}

Test(ref_prefill, attention_continuing_a_cache)
{
    check_prefill((struct prefill_case){1, 5, 2, 2, 16, 300, 300, {1, 512}});  /* 295 cached positions */
    check_prefill((struct prefill_case){2, 33, 8, 2, 24, 200, 210, {1, 256}}); /* GQA */
}

/* Several splits: rows whose visible range ends before a split's start give that split an empty
 * range (zero output, -inf log-sum-exp), which the combine must weigh to nothing. */
Test(ref_prefill, attention_with_splits)
{
    check_prefill((struct prefill_case){1, 40, 2, 2, 16, 40, 64, {3, 16}});   /* first prompt, 3 splits */
    check_prefill((struct prefill_case){2, 20, 4, 1, 32, 150, 160, {4, 64}}); /* 130 cached, split 3 empty */
    check_prefill((struct prefill_case){1, 65, 6, 3, 40, 300, 300, {5, 64}}); /* head 40 rounds to 64 */
}

/* The four host entry points in turn, as the workload launches them, equal the reference. */
Test(ref_prefill, attention_host_entry_points)
{
    struct wsk_attn_attrs a = {4, 2, 32};
    struct wsk_attn_kernel k = {3, 64};
    struct wsk_flash_layout l;
    uint32_t B = 2, S = 24, H = 4, KVH = 2, D = 32, L = 150, max_kv = 160, splits = k.splits, span = k.split_len;
    cr_assert_eq(wsk_attn_layout_seq(&a, &k, B, S, &l), WSK_OK);
    size_t rows = (size_t)B * S * H, cache = (size_t)B * KVH * max_kv * D;
    float *q = random_floats(rows * D), *kn = random_floats((size_t)B * S * KVH * D);
    float *vn = random_floats((size_t)B * S * KVH * D), *kc = random_floats(cache), *vc = random_floats(cache);
    float *kc2 = malloc(cache * sizeof *kc2), *vc2 = malloc(cache * sizeof *vc2);
    memcpy(kc2, kc, cache * sizeof *kc), memcpy(vc2, vc, cache * sizeof *vc);
    float *o1 = calloc(rows * D, sizeof *o1), *o2 = calloc(rows * D, sizeof *o2);
    char *ws1 = calloc(l.total_bytes, 1), *ws2 = calloc(l.total_bytes, 1);
    wsk_ref_attention_prefill(o1, q, kn, vn, kc, vc, &a, B, S, L, max_kv, &k, ws1);
    float *lse = (float *)(ws2 + l.lse_offset), *lacc = (float *)(ws2 + l.lse_accum_offset);
    float *oacc = (float *)(ws2 + l.out_accum_offset);
    int32_t *lens = (int32_t *)(ws2 + l.seq_lens_offset);
    void *a_lens[] = {&lens, &B, &S, &L};
    void *a_append[] = {&kc2, &vc2, &kn, &vn, &lens, &B, &S, &KVH, &D, &max_kv};
    void *a_split[] = {&o2, &lse, &lacc, &oacc, &q, &kc2, &vc2, &lens, &B, &S, &H, &KVH, &D, &max_kv, &splits, &span};
    void *a_combine[] = {&o2, &lse, &lacc, &oacc, &B, &S, &H, &D, &splits};
    wsk_host_attn_seqlens(a_lens);
    wsk_host_kv_append_seq(a_append);
    wsk_host_attn_prefill_split(a_split);
    wsk_host_attn_prefill_combine(a_combine);
    cr_expect_arr_eq(o1, o2, rows * D * sizeof(float));
    cr_expect_arr_eq(kc, kc2, cache * sizeof(float));
    cr_expect_arr_eq(ws1, ws2, l.total_bytes, "the whole root, accumulators and vectors included");
    free(q), free(kn), free(vn), free(kc), free(vc), free(kc2), free(vc2), free(o1), free(o2), free(ws1), free(ws2);
}

/* ---- the final norm of a prompt ---- */

Test(ref_prefill, rmsnorm_of_the_last_positions)
{
    uint32_t B = 3, S = 5, H = 48;
    float *x = random_floats((size_t)B * S * H), *g = random_floats(H), y[3 * 48], y2[3 * 48];
    double want[3 * 48];
    for (uint32_t b = 0; b < B; b++) {
        const float *row = x + ((size_t)b * S + S - 1) * H;
        double ss = 0;
        for (uint32_t h = 0; h < H; h++)
            ss += (double)row[h] * row[h];
        for (uint32_t h = 0; h < H; h++)
            want[b * H + h] = row[h] / sqrt(ss / H + 1e-5) * g[h];
    }
    wsk_ref_rmsnorm_last(y, x, g, B, S, H, 1e-5f);
    expect_close(y, want, (size_t)B * H, 1e-5, "rmsnorm_last");
    float eps = 1e-5f, *yp = y2;
    void *args[] = {&yp, &x, &g, &B, &S, &H, &eps};
    wsk_host_rmsnorm_last(args);
    cr_expect_arr_eq(y, y2, sizeof y);
    free(x), free(g);
}
