/*
 * planner_smoke: the planner and its CSV reader without Criterion, for the ThreadSanitizer
 * build (where Criterion cannot run, see tests/CMakeLists.txt). Plans random problems and the
 * smallest shared problem file, checks validity and the load bound, exits 1 on a failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "planner.h"

static int check(struct ws_plan_buffer *b, size_t n, uint64_t limit, const char *what)
{
    struct ws_plan_options o = {.alignment = 1, .work_limit = limit, .seed = 1};
    struct ws_plan_result r;
    uint64_t peak;
    if (ws_plan_solve(b, n, &o, &r) || !r.valid || ws_plan_validate(b, n, 1, &peak) != 1 || peak != r.peak_bytes ||
        r.peak_bytes < r.load_bound_bytes) {
        fprintf(stderr, "planner_smoke: %s: failed (%s)\n", what, r.error);
        return 1;
    }
    return 0;
}

int main(void)
{
    int failed = 0;
    uint64_t s = 12345;
    /* The last rounds are large enough (>= 2000 buffers) for the decoders to run on two threads. */
    for (int round = 0; round < 12; round++) {
        size_t n = round < 10 ? 100 + (size_t)round * 50 : 2500 + (size_t)round * 100;
        struct ws_plan_buffer *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int64_t lo = (int64_t)((s >> 33) % 300);
            b[i] = (struct ws_plan_buffer){
                .id = i, .lower = lo, .upper = lo + 1 + (int64_t)((s >> 20) % 40), .size = 1 + (s >> 40) % 4096};
        }
        failed |= check(b, n, round % 3 == 0 ? 20000 : 0, "random problem");
        free(b);
    }
    /* Dense, mostly short lifetimes with a long tail: the block tree in both decoder threads,
     * then the search. */
    for (int round = 0; round < 2; round++) {
        size_t n = 5000;
        struct ws_plan_buffer *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t p = (s >> 33) % 100, len = 1 + (s >> 20) % (p < 85 ? 8 : p < 98 ? 100 : 3000);
            b[i] = (struct ws_plan_buffer){
                .id = i, .lower = (int64_t)(i / 12), .upper = (int64_t)(i / 12 + len), .size = 1 + (s >> 40) % 4096};
        }
        failed |= check(b, n, round ? 20000 : 0, "dense problem with a long tail");
        free(b);
    }
    struct ws_problem pr;
    char err[512];
    const char *dir =
        getenv("WSTRACE_PROBLEMS") && *getenv("WSTRACE_PROBLEMS") ? getenv("WSTRACE_PROBLEMS") : WS_PROBLEMS_DIR;
    char path[4096];
    snprintf(path, sizeof path, "%s/somas_resnet50.csv", dir);
    if (ws_problem_read(path, &pr, err, sizeof err) == 0) {
        failed |= check(pr.buffers, pr.n, 20000, path);
        ws_problem_free(&pr);
    } else {
        fprintf(stderr, "planner_smoke: %s\n", err);
        failed = 1;
    }
    if (!failed)
        puts("planner_smoke: ok");
    return failed;
}
