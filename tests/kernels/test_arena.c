/* The caching arena of wsk --alloc arena (kernels/wsk/arena.c), driven without a device: regions
 * are fake addresses handed out by a callback, so every figure below is computed by hand from
 * the rules in kernels/README.md (round to 256, best fit, split at 2x or 128 MiB of rest, merge
 * with free neighbours, regions max(initial, request) then max(2 x previous, request)). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "wsk.h"

#define MiB (1ull << 20)

/* Region k lies at (k + 1) << 40: far apart, never dereferenced. */
struct fake_device {
    uint32_t obtained, released, fail_from; /* fail_from: first region refused (0: never) */
    uint64_t sizes[16], released_sizes[16];
    uintptr_t released_bases[16];
};

static int obtain(void *ctx, uint64_t bytes, void **base)
{
    struct fake_device *d = ctx;
    if (d->fail_from && d->obtained + 1 >= d->fail_from)
        return 2; /* cudaErrorMemoryAllocation */
    cr_assert_lt(d->obtained, 16);
    d->sizes[d->obtained++] = bytes;
    *base = (void *)((uintptr_t)d->obtained << 40);
    return 0;
}

static void release(void *ctx, void *base, uint64_t bytes)
{
    struct fake_device *d = ctx;
    cr_assert_lt(d->released, 16);
    d->released_bases[d->released] = (uintptr_t)base;
    d->released_sizes[d->released++] = bytes;
}

static uintptr_t region(uint32_t k) { return (uintptr_t)(k + 1) << 40; }

static uintptr_t alloc(struct wsk_arena *ar, uint64_t bytes)
{
    void *p = NULL;
    int rc = wsk_arena_alloc(ar, bytes, &p);
    cr_assert_eq(rc, 0, "alloc %llu: %d", (unsigned long long)bytes, rc);
    cr_assert_not_null(p);
    return (uintptr_t)p;
}

static uint64_t size_of(struct wsk_arena *ar, uintptr_t p) { return wsk_arena_chunk_size(ar, (void *)p); }

static void release_chunk(struct wsk_arena *ar, uintptr_t p) { cr_assert_eq(wsk_arena_free(ar, (void *)p), 0); }

Test(arena, rounding_splitting_and_region_growth)
{
    struct fake_device d = {0};
    struct wsk_arena ar;
    wsk_arena_init(&ar, 1024, obtain, &d);

    /* 100 -> 256; first region max(1024, 256) = 1024; 1024 >= 2*256: split, rest 768 free */
    uintptr_t a = alloc(&ar, 100);
    cr_expect_eq(a, region(0));
    cr_expect_eq(size_of(&ar, a), 256);
    cr_expect_eq(d.obtained, 1);
    cr_expect_eq(d.sizes[0], 1024);

    /* 300 -> 512 from the 768 rest: 768 < 2*512 and 256 of rest < 128 MiB: whole chunk */
    uintptr_t b = alloc(&ar, 300);
    cr_expect_eq(b, region(0) + 256);
    cr_expect_eq(size_of(&ar, b), 768);
    cr_expect_eq(ar.stats.in_use_bytes, 1024);

    /* nothing free: second region max(2*1024, 256) = 2048, split */
    uintptr_t c = alloc(&ar, 256);
    cr_expect_eq(c, region(1));
    cr_expect_eq(size_of(&ar, c), 256);
    cr_expect_eq(d.sizes[1], 2048);

    /* 5000 -> 5120 > the 1792 free: third region max(2*2048, 5120) = 5120, no rest */
    uintptr_t dd = alloc(&ar, 5000);
    cr_expect_eq(dd, region(2));
    cr_expect_eq(size_of(&ar, dd), 5120);
    cr_expect_eq(d.sizes[2], 5120);

    /* 1 -> 256 from the 1792 free in region 1: split, 1536 stays free */
    uintptr_t e = alloc(&ar, 1);
    cr_expect_eq(e, region(1) + 256);
    cr_expect_eq(size_of(&ar, e), 256);

    /* 2000 -> 2048 > 1536: fourth region max(2*5120, 2048) = 10240, split */
    uintptr_t f = alloc(&ar, 2000);
    cr_expect_eq(f, region(3));
    cr_expect_eq(size_of(&ar, f), 2048);
    cr_expect_eq(d.sizes[3], 10240);

    cr_expect_eq(ar.stats.regions, 4);
    cr_expect_eq(ar.stats.reserved_bytes, 1024 + 2048 + 5120 + 10240);
    cr_expect_eq(ar.stats.in_use_bytes, 256 + 768 + 256 + 5120 + 256 + 2048);
    cr_expect_eq(ar.stats.peak_in_use_bytes, ar.stats.in_use_bytes);

    /* frees never return a region; the peak stays */
    release_chunk(&ar, a), release_chunk(&ar, b), release_chunk(&ar, f);
    cr_expect_eq(ar.stats.in_use_bytes, 256 + 5120 + 256);
    cr_expect_eq(ar.stats.peak_in_use_bytes, 256 + 768 + 256 + 5120 + 256 + 2048);
    cr_expect_eq(d.obtained, 4);

    /* region 0 merged back to one 1024 chunk: a 1024 request fits it without a new region */
    cr_expect_eq(alloc(&ar, 1024), region(0));
    cr_expect_eq(d.obtained, 4);
    wsk_arena_destroy(&ar, release, &d);
    cr_expect_eq(d.released, 4);
    for (uint32_t k = 0; k < 4; k++) {
        cr_expect_eq(d.released_bases[k], region(k));
        cr_expect_eq(d.released_sizes[k], d.sizes[k]);
    }
    cr_expect_eq(ar.stats.regions, 4, "stats stay after destroy");
    cr_expect_eq(ar.stats.reserved_bytes, 18432);
}

Test(arena, best_fit_then_merge_with_both_neighbours)
{
    struct fake_device d = {0};
    struct wsk_arena ar;
    wsk_arena_init(&ar, 8192, obtain, &d);
    uintptr_t r = region(0);
    /* a[0,2048) b[2048,2304) c[2304,3328) d[3328,3584) e[3584,8192) */
    uintptr_t a = alloc(&ar, 2048), b = alloc(&ar, 256), c = alloc(&ar, 1024);
    uintptr_t dd = alloc(&ar, 256), e = alloc(&ar, 4608);
    cr_expect_eq(a, r);
    cr_expect_eq(b, r + 2048);
    cr_expect_eq(c, r + 2304);
    cr_expect_eq(dd, r + 3328);
    cr_expect_eq(e, r + 3584);
    cr_expect_eq(size_of(&ar, e), 4608);

    /* free 2048 at 0 and 1024 at 2304: 700 -> 768 takes the smaller one, at the higher address,
     * whole (1024 < 2*768) */
    release_chunk(&ar, a), release_chunk(&ar, c);
    uintptr_t x = alloc(&ar, 700);
    cr_expect_eq(x, r + 2304);
    cr_expect_eq(size_of(&ar, x), 1024);
    release_chunk(&ar, x);

    /* d's free neighbours on both sides: one chunk 1024 + 256 + 4608 at 2304 */
    release_chunk(&ar, e), release_chunk(&ar, dd);
    uintptr_t y = alloc(&ar, 5888);
    cr_expect_eq(y, r + 2304);
    cr_expect_eq(size_of(&ar, y), 5888);

    /* b merges with the free 2048 below it */
    release_chunk(&ar, b);
    uintptr_t z = alloc(&ar, 2304);
    cr_expect_eq(z, r);
    cr_expect_eq(ar.stats.regions, 1);
    cr_expect_eq(ar.stats.in_use_bytes, 8192);

    /* unknown pointers and double frees are refused */
    cr_expect_eq(wsk_arena_free(&ar, (void *)(r + 256)), -1);
    release_chunk(&ar, z);
    cr_expect_eq(wsk_arena_free(&ar, (void *)z), -1);
    wsk_arena_destroy(&ar, NULL, NULL);
}

Test(arena, equal_sizes_take_the_lowest_address)
{
    struct fake_device d = {0};
    struct wsk_arena ar;
    wsk_arena_init(&ar, 1024, obtain, &d);
    uintptr_t p[4];
    for (int i = 0; i < 4; i++)
        p[i] = alloc(&ar, 256);
    cr_expect_eq(p[3], region(0) + 768);
    release_chunk(&ar, p[2]), release_chunk(&ar, p[0]);
    cr_expect_eq(alloc(&ar, 256), region(0));
    cr_expect_eq(alloc(&ar, 256), region(0) + 512);
    cr_expect_eq(d.obtained, 1);
    wsk_arena_destroy(&ar, NULL, NULL);
}

Test(arena, rest_of_128_mib_is_split_even_below_twice_the_request)
{
    struct fake_device d = {0};
    struct wsk_arena ar;
    wsk_arena_init(&ar, 400 * MiB, obtain, &d);
    /* 400 < 2*250 but the rest, 150 MiB, reaches 128 MiB */
    uintptr_t a = alloc(&ar, 250 * MiB);
    cr_expect_eq(size_of(&ar, a), 250 * MiB);
    cr_expect_eq(alloc(&ar, 10 * MiB), region(0) + 250 * MiB);
    wsk_arena_destroy(&ar, NULL, NULL);

    struct fake_device d2 = {0};
    wsk_arena_init(&ar, 300 * MiB, obtain, &d2);
    /* 300 < 2*200 and the rest, 100 MiB, is below 128 MiB: the whole region */
    uintptr_t b = alloc(&ar, 200 * MiB);
    cr_expect_eq(size_of(&ar, b), 300 * MiB);
    cr_expect_eq(alloc(&ar, MiB), region(1));
    cr_expect_eq(d2.sizes[1], 600 * MiB);
    wsk_arena_destroy(&ar, NULL, NULL);
}

Test(arena, refused_region_leaves_the_arena_unchanged)
{
    struct fake_device d = {.fail_from = 2};
    struct wsk_arena ar;
    wsk_arena_init(&ar, 1024, obtain, &d);
    uintptr_t a = alloc(&ar, 1024);
    void *p = (void *)1;
    cr_expect_eq(wsk_arena_alloc(&ar, 512, &p), 2, "the callback's status comes back");
    cr_expect_null(p);
    cr_expect_eq(ar.stats.regions, 1);
    cr_expect_eq(ar.stats.reserved_bytes, 1024);
    release_chunk(&ar, a);
    cr_expect_eq(alloc(&ar, 512), region(0), "the region is still usable");
    cr_expect_eq(wsk_arena_alloc(&ar, UINT64_MAX, &p), WSK_ARENA_ETOOBIG);
    wsk_arena_destroy(&ar, release, &d);
    cr_expect_eq(d.released, 1);
}
