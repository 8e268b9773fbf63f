/*
 * The planner's private interfaces, shared by the files of analyzer/planner/ (see planner.h for
 * the public API and docs/planner.md for the algorithms). Nothing outside this folder includes it.
 *
 *   problem.c   the working copy of a problem, the load bound, validation
 *   sort.c      radix sorts
 *   index.c     interval indexes: which buffers meet a lifetime, the block tree of dense problems
 *   greedy.c    greedy decoders (best/first fit over orders, the bottom-up canonical decoder), the
 *               portfolio
 *   lns.c       perturbed orders and the large-neighbourhood search
 *   decision.c  the decision search: is there a layout within capacity C?
 *   strips.c    perfect packings split along flat strips, the parts given to the decision search
 *   solve.c     ws_plan_solve: the heuristics, the capacity search, the budget
 *   csv.c       the CSV form of problems and solutions
 */
#ifndef WS_PLANNER_INTERNAL_H
#define WS_PLANNER_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "planner.h"

/* ---- small helpers ------------------------------------------------------------------------ */

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t rng_next(uint64_t *s) /* splitmix64: tiny, good enough for search moves */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rng_below(uint64_t *s, uint64_t n) { return n ? rng_next(s) % n : 0; }

/* Round v up to a multiple of a (a >= 1); 0 on success, -1 on overflow. */
static inline int round_up(uint64_t v, uint64_t a, uint64_t *out)
{
    uint64_t r = (a & (a - 1)) == 0 ? v & (a - 1) : v % a; /* no division for powers of two */
    if (r == 0) {
        *out = v;
        return 0;
    }
    return __builtin_add_overflow(v, a - r, out) ? -1 : 0;
}

/* Alignment 0 means the plan's default, and a default of 0 means 1. */
static inline uint64_t effective_alignment(const struct ws_plan_buffer *b, uint64_t dflt)
{
    uint64_t a = b->alignment ? b->alignment : dflt;
    return a ? a : 1;
}

static inline uint64_t lifetime_length(int64_t lo, int64_t hi)
{
    return (uint64_t)hi - (uint64_t)lo; /* exact modulo 2^64 because hi > lo */
}

static inline int floor_log2(uint64_t v) { return 63 - __builtin_clzll(v); }

/* ---- sort.c ------------------------------------------------------------------------------- */

/* Stable LSD radix sort of n records of `words` 64-bit words by their word `kw`. 0, or -1 on OOM. */
int radix_sort_words(uint64_t *a, size_t n, size_t words, size_t kw);
/* Sort signed values ascending. 0, or -1 on OOM. */
int sort_i64(int64_t *v, size_t n);

/* ---- the planner's working state ---------------------------------------------------------- */

struct span { /* occupied addresses [a, b) of one placed buffer */
    uint64_t a, b;
};

/* Buffers grouped by floor(log2(lifetime length)), each group sorted by lower. A buffer of
 * group c overlapping [l, u) starts in (l - 2^(c+1), u), so one binary search per group finds
 * every candidate with little slack, in O(n) memory whatever the lifetimes. */
struct time_class {
    uint32_t *ids;
    int64_t *lo;
    size_t n;
    int log2len;
};

struct span_list {
    struct span *v;
    uint32_t n, cap;
};

struct union_tree; /* index.c: the block tree of dense problems */

/*
 * The problem as the planner works on it. Only buffers that occupy memory (a nonzero size and a
 * nonempty lifetime) are in it; the others get offset 0 and take no part (see problem.c).
 */
struct planner {
    size_t n;
    int64_t *lo, *hi;
    uint64_t *sz, *al; /* occupied size (rounded up to the alignment) and alignment */
    uint64_t *off;
    unsigned char *placed;
    struct time_class cls[64];
    int ncls;
    struct span *seg, *tmp; /* scratch for the spans around one buffer */
    size_t segcap;
    size_t *runs; /* with the union tree: where each sorted list copied into seg starts */
    size_t nruns, runcap;
    const struct span_list **lists; /* with the union tree: lists read in place, not yet copied */
    size_t nlists, listcap;
    struct union_tree *tree; /* built for dense problems; NULL otherwise */
    int use_tree;            /* the tree mirrors the placed buffers */
    int overflow;            /* a decoder put a buffer where its end does not fit in 64 bits */
    uint64_t lb;
    char *err;
    atomic_size_t *stop; /* in a portfolio worker: decoders after *stop are not needed */
    size_t index;        /* the decoder being run, compared with *stop */
    double abandon;      /* a decoder still running at this time gives up (0: never) */
};

enum fit { FIT_BEST, FIT_FIRST };

/* problem.c */
/* The m buffers b[map[k]] (each with a nonzero occupied size and lower < upper), alignments
 * resolved against dflt_align. 0, or -1 with err set (128 bytes). */
int planner_init(struct planner *p, const struct ws_plan_buffer *b, const uint32_t *map, size_t m, uint64_t dflt_align,
                 char *err);
void planner_free(struct planner *p);
/* The part ids[0..k) of p as a problem of its own (buffer x of sp is ids[x] of p), with its
 * interval index and nothing else: for the decision search on parts (repair.c, strips.c).
 * 0, or -1 on OOM; planner_free releases it either way. */
int planner_subset(struct planner *sp, const struct planner *p, const uint32_t *ids, size_t k);
uint64_t load_bound_of(const int64_t *lo, const int64_t *hi, const uint64_t *sz, size_t n);

/* index.c */
int build_index(struct planner *p);
int choose_structure(struct planner *p);
size_t first_at_or_after(const int64_t *lo, size_t n, __int128 key);
/* Spans of the placed buffers (other than i) whose lifetimes overlap buffer i's, into p->seg
 * (sorted runs in p->runs / lists in p->lists with the tree); their count, -1 on OOM. */
long collect_spans(struct planner *p, size_t i);
void sort_spans(struct planner *p, size_t n);
void union_tree_clear(struct union_tree *t);
int union_tree_insert(struct union_tree *t, size_t i, struct span s);
void union_tree_free(struct union_tree *t);
int union_tree_clone(struct union_tree **out, const struct union_tree *t);
void union_tree_free_clone(struct union_tree *t);
/* Up to this many sorted runs are merged on the fly while looking for a gap. */
#define STREAM_RUNS 4

/* Calls fn(ctx, j) for every buffer j != i whose lifetime overlaps [l, u) (any order); stops
 * and returns fn's value when it is nonzero. */
static inline int for_each_overlap(const struct planner *p, int64_t l, int64_t u, size_t i,
                                   int (*fn)(void *ctx, uint32_t j), void *ctx)
{
    for (int c = 0; c < p->ncls; c++) {
        const struct time_class *tc = &p->cls[c];
        __int128 from = (__int128)l - ((__int128)1 << (tc->log2len + 1)) + 1;
        for (size_t x = first_at_or_after(tc->lo, tc->n, from); x < tc->n && tc->lo[x] < u; x++) {
            uint32_t j = tc->ids[x];
            if (j == i || p->hi[j] <= l)
                continue;
            int r = fn(ctx, j);
            if (r)
                return r;
        }
    }
    return 0;
}

/* greedy.c */
enum order_kind { ORDER_SIZE, ORDER_BREADTH, ORDER_LENGTH, ORDER_AREA, ORDER_START, ORDER_COUNT };

struct heuristic {
    enum order_kind order;
    enum fit fit;
    const char *name;
};

extern const struct heuristic ws_portfolio[];
extern const size_t ws_portfolio_count;

struct best_plan {
    uint64_t *off;
    uint64_t peak;
    const char *name;
};

/* What decode returns for a layout with an end beyond 2^64 (worse than every real peak). */
#define PEAK_OVERFLOW (UINT64_MAX - 2)

int place(struct planner *p, size_t i, enum fit fit);
uint64_t decode(struct planner *p, const uint32_t *order, enum fit fit);
int breadth_of(const struct planner *p, uint64_t *breadth);
int make_order(const struct planner *p, enum order_kind kind, const uint64_t *breadth, double noise, uint64_t *rng,
               uint32_t *order);
int try_order(struct planner *p, const uint32_t *order, enum fit fit, const char *name, struct best_plan *best);
/* start_by (0: none): decoders after the first two do not start once it has passed; with
 * `abandon` (best holds a layout already) every decoder gives up when `deadline` (0: none) passes. */
int run_portfolio(struct planner *p, const uint64_t *breadth, double start_by, double deadline, int abandon,
                  struct best_plan *best);
/* The sweep: first fit in order of start with the live buffers in an array by address, in
 * O(n log n + n * live); the layout that the time limit never takes away on large problems.
 * Returns 0 (best set), 1 when more than SWEEP_LIVE_MAX buffers are alive at once (nothing
 * done), -1 on OOM. */
#define SWEEP_LIVE_MAX 8192
int sweep_decode(struct planner *p, struct best_plan *best);
/* The bottom-up canonical decoder: always the unplaced buffer with the lowest floor. */
int canonical_decode(struct planner *p, const uint64_t *breadth, struct best_plan *best);

/* Above this many buffers the default runs only the two decreasing-size decoders. */
#define LARGE_PROBLEM 250000

/* lns.c */
struct budget;
int perturbed_orders(struct planner *p, const uint64_t *breadth, uint32_t *order, struct best_plan *best, uint64_t *rng,
                     struct budget *bud, double deadline);
int search_improve(struct planner *p, uint64_t seed, struct budget *bud, double deadline, int *improved);

/* ---- the budget of the searches ----------------------------------------------------------- */

/* Work is counted in nodes (decision search), decodes and moves; a search stops when the count
 * reaches `limit` (when `limited`) or the clock passes `deadline` (0: none). */
struct budget {
    uint64_t used, limit;
    int limited;
    double deadline;
};

static inline int budget_spent(const struct budget *b)
{
    return (b->limited && b->used >= b->limit) || (b->deadline > 0 && now_s() >= b->deadline);
}

/* decision.c */
enum decision { DECISION_FOUND, DECISION_INFEASIBLE, DECISION_ABORTED, DECISION_ERROR };
struct decider;
/* Prepare the decision search for p (one per problem; it keeps what it learns between calls). */
int decider_new(struct decider **out, const struct planner *p, uint64_t seed);
void decider_free(struct decider *d);
/* Is there a layout of peak <= capacity? FOUND: off holds one (its peak may be below capacity).
 * INFEASIBLE: proven none. ABORTED: the node limit or the budget ran out first. */
enum decision decide(struct decider *d, uint64_t capacity, unsigned config, uint64_t node_limit, struct budget *bud,
                     uint64_t *off);
unsigned decider_configs(void);
/* For a repair (repair.c): every buffer i must sit at or above base[i] and end at or below
 * ceil[i] (both arrays of p->n, kept by the caller; NULL: no bounds). The failed states learnt
 * belong to these bounds: one decider per set of bounds. */
void decider_bound(struct decider *d, const uint64_t *base, const uint64_t *ceil);

/* repair.c: improve best (a complete layout) by re-solving parts of it with the decision search,
 * aiming at capacities from `lower` up; *improved when best's peak dropped. 0, or -1 on OOM. */
int repair_search(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                  int *improved);
/* repair.c: lay best out afresh around its busiest section (the decision search within `lower`
 * on the buffers of a window of sections, best fit for the rest), keeping a lower peak. */
int window_search(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                  int *improved);

/* strips.c: when every temporal component holds the same bytes in every section (at most
 * `lower`), look for a layout with each component at exactly its load by splitting it into flat
 * strips; *solved when best now holds one (proven optimal when the loads reach `lower`). 0, or
 * -1 on OOM. */
int strips_solve(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                 int *solved);

#endif
