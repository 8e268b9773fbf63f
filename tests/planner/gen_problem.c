/*
 * planner_gen: synthetic planning problems in the CSV form of `wstrace plan --problem`.
 *
 *   planner_gen hard N SEED [HEIGHT]   a rectangle HEIGHT bytes high and 1000 steps wide cut
 *                                      into N pieces by random guillotine cuts; every moment is
 *                                      covered by pieces summing to HEIGHT, so the load bound is
 *                                      HEIGHT and a layout of exactly HEIGHT exists (the cut).
 *   planner_gen speed N MAXLIVE SEED   N buffers, 1 to 3 allocated a step, at most MAXLIVE alive
 *                                      at once; lifetimes mostly short with a long tail, sizes
 *                                      log-uniform from 256 bytes to 64 MiB in 256-byte units.
 *   planner_gen nested N SEED          N nested lifetimes [i, 2N - i), sizes 1 to 4096 bytes: all
 *                                      alive at time N, so the optimum is the sum of the sizes.
 *   planner_gen same N SIZE            N identical buffers [0, 10) of SIZE bytes.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t n) { return next() % n; }

struct rect {
    uint64_t t0, t1, a0, a1;
};

static int hard(size_t n, uint64_t height)
{
    const uint64_t width = 1000;
    struct rect *r = malloc(n * sizeof *r);
    size_t count = 1, stuck = 0;
    if (!r)
        return 1;
    r[0] = (struct rect){0, width, 0, height};
    while (count < n && stuck < 100000) {
        /* Cut a random piece: pieces of every size keep being cut, as in real layouts where
         * large and small blocks interleave. */
        struct rect *x = &r[below(count)];
        int in_time = below(2) == 0;
        uint64_t len = in_time ? x->t1 - x->t0 : x->a1 - x->a0;
        if (len < 2) {
            stuck++;
            continue;
        }
        uint64_t cut = 1 + below(len - 1);
        struct rect y = *x;
        if (in_time)
            x->t1 = y.t0 = x->t0 + cut;
        else
            x->a1 = y.a0 = x->a0 + cut;
        r[count++] = y;
    }
    printf("id,lower,upper,size\n");
    for (size_t i = 0; i < count; i++)
        printf("%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i, r[i].t0, r[i].t1, r[i].a1 - r[i].a0);
    free(r);
    return 0;
}

static uint64_t lifetime(void)
{
    uint64_t p = below(1000);
    if (p < 900)
        return 1 + below(8);
    if (p < 990)
        return 1 + below(200);
    return 1 + below(80000);
}

static int speed(size_t n, size_t maxlive)
{
    uint64_t *ends = malloc(maxlive * sizeof *ends);
    size_t live = 0, made = 0;
    if (!ends)
        return 1;
    printf("id,lower,upper,size\n");
    for (uint64_t t = 0; made < n; t++) {
        for (size_t k = 0; k < live;) /* drop the buffers that ended */
            if (ends[k] <= t)
                ends[k] = ends[--live];
            else
                k++;
        for (uint64_t k = 1 + below(3); k > 0 && live < maxlive && made < n; k--) {
            uint64_t end = t + lifetime(), size = 256ull << below(19);
            size += below(size / 256 + 1) * 256 / 2; /* spread between the powers of two */
            ends[live++] = end;
            printf("%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", made++, t, end, size);
        }
    }
    free(ends);
    return 0;
}

static int nested(size_t n)
{
    printf("id,lower,upper,size\n");
    for (size_t i = 0; i < n; i++)
        printf("%zu,%zu,%zu,%" PRIu64 "\n", i, i, 2 * n - i, 1 + below(4096));
    return 0;
}

static int same(size_t n, uint64_t size)
{
    printf("id,lower,upper,size\n");
    for (size_t i = 0; i < n; i++)
        printf("%zu,0,10,%" PRIu64 "\n", i, size);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "nested") == 0) {
        rng_state = strtoull(argv[3], NULL, 10);
        return nested(strtoull(argv[2], NULL, 10));
    }
    if (argc == 4 && strcmp(argv[1], "same") == 0)
        return same(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    if (argc >= 4 && strcmp(argv[1], "hard") == 0) {
        rng_state = strtoull(argv[3], NULL, 10);
        return hard(strtoull(argv[2], NULL, 10), argc > 4 ? strtoull(argv[4], NULL, 10) : 1u << 20);
    }
    if (argc == 5 && strcmp(argv[1], "speed") == 0) {
        rng_state = strtoull(argv[4], NULL, 10);
        return speed(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    }
    fprintf(stderr, "usage: planner_gen hard N SEED [HEIGHT] | speed N MAXLIVE SEED | nested N SEED | same N SIZE\n");
    return 2;
}
