/*
 * The verdict table of docs/analysis.md ("Verification") as data, and every input of a grid
 * checked against it: the verdict of ws_verdict_of must be the verdict of the first row whose
 * conditions hold.  The rows below are copied from the table by hand, condition by condition; the
 * verdict names are also read from the docs so that a change of the table fails here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

/* What a row requires of each figure; ANY: no condition. */
enum known { ANY, KNOWN, ABSENT, ZERO, POSITIVE };         /* L1, L2 */
enum use { USE_ANY, USED, UNUSED };                        /* observed footprint */
enum tac { TAC_ANY, TAC_MISS, TAC_CACHED_FREE, TAC_NOT_MISS }; /* the declaration's tactic */
enum cmp {                                                  /* a comparison between figures */
    CMP_NONE,
    L2_ABOVE_L1,          /* L2 > L1 */
    L2_BELOW_L1,          /* L2 < L1 */
    USED_ABOVE_L2_OR_OVF, /* used more than L2, or an allocation overflowed its region */
    USED_ABOVE_L1_OR_OVF, /* used more than L1 (or overflowed it) */
    L1_POSITIVE_OR_USED   /* L1 > 0 or used */
};

struct row {
    int number;
    enum known l1, l2;
    enum use used;
    enum tac tactic;
    enum cmp cmp;
    const char *verdict;
};

/* docs/analysis.md, the verdict table, row by row. */
static const struct row table[] = {
    {1, KNOWN, KNOWN, USE_ANY, TAC_ANY, L2_ABOVE_L1, "over-reservation"},
    {2, ANY, KNOWN, USE_ANY, TAC_ANY, USED_ABOVE_L2_OR_OVF, "under-declared"},
    {3, ANY, POSITIVE, USE_ANY, TAC_CACHED_FREE, CMP_NONE, "tactic-overdeclared"},
    {4, KNOWN, KNOWN, USE_ANY, TAC_MISS, L2_BELOW_L1, "miss-underdeclared"},
    {5, ANY, POSITIVE, UNUSED, TAC_NOT_MISS, CMP_NONE, "idle-reservation"},
    {6, ABSENT, ABSENT, USED, TAC_ANY, CMP_NONE, "undeclared"},
    {7, KNOWN, ABSENT, USED, TAC_ANY, USED_ABOVE_L1_OR_OVF, "exceeds-reservation"},
    {8, ANY, ZERO, UNUSED, TAC_ANY, CMP_NONE, "ok"},
    {9, ABSENT, KNOWN, USE_ANY, TAC_ANY, CMP_NONE, "unavailable"},
    {10, ANY, ABSENT, USE_ANY, TAC_ANY, L1_POSITIVE_OR_USED, "unavailable"},
    {11, ANY, ANY, USE_ANY, TAC_ANY, CMP_NONE, "ok"},
};
#define NROWS (sizeof table / sizeof table[0])

static int known_ok(enum known k, int64_t v)
{
    switch (k) {
    case ANY: return 1;
    case KNOWN: return v >= 0;
    case ABSENT: return v < 0;
    case ZERO: return v == 0;
    case POSITIVE: return v > 0;
    }
    return 0;
}

static int row_matches(const struct row *r, const struct ws_verdict_input *in)
{
    int used = in->observed >= 0;
    if (!known_ok(r->l1, in->level1) || !known_ok(r->l2, in->level2))
        return 0;
    if ((r->used == USED && !used) || (r->used == UNUSED && used))
        return 0;
    if ((r->tactic == TAC_MISS && in->tactic != WS_TACTIC_MISS) ||
        (r->tactic == TAC_CACHED_FREE && in->tactic != WS_TACTIC_CACHED_FREE) ||
        (r->tactic == TAC_NOT_MISS && in->tactic == WS_TACTIC_MISS))
        return 0;
    switch (r->cmp) {
    case CMP_NONE: return 1;
    case L2_ABOVE_L1: return in->level2 > in->level1;
    case L2_BELOW_L1: return in->level2 < in->level1;
    case USED_ABOVE_L2_OR_OVF: return (used && in->observed > in->level2) || in->overflow;
    case USED_ABOVE_L1_OR_OVF: return (used && in->observed > in->level1) || in->overflow;
    case L1_POSITIVE_OR_USED: return in->level1 > 0 || used;
    }
    return 0;
}

/* The first row that matches (the table's last row always does). */
static const struct row *reference_verdict(const struct ws_verdict_input *in)
{
    for (size_t i = 0; i < NROWS; i++)
        if (row_matches(&table[i], in))
            return &table[i];
    return NULL;
}

/* The verdict names of the docs' table, in order ("| n | condition | `verdict` |"). */
static size_t docs_verdicts(char names[16][32])
{
    char path[512];
    snprintf(path, sizeof path, "%s/docs/analysis.md", WS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[1024];
    size_t n = 0;
    int in_table = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| # | condition | verdict |", 26) == 0) {
            in_table = 1;
            continue;
        }
        if (!in_table)
            continue;
        if (line[0] != '|')
            break;
        int number;
        if (sscanf(line, "| %d |", &number) != 1)
            continue; /* the |---| line */
        char *end = strrchr(line, '`'), *start = end;
        cr_assert_not_null(end, "row %d of the verdict table has no `verdict`", number);
        *end = 0;
        start = strrchr(line, '`');
        cr_assert_not_null(start);
        cr_assert_lt(n, 16);
        cr_assert_eq(number, (int)n + 1, "rows are numbered 1, 2, ...");
        snprintf(names[n++], 32, "%s", start + 1);
    }
    fclose(f);
    return n;
}

Test(ref_verdict, the_table_here_is_the_table_of_the_docs)
{
    char names[16][32];
    size_t n = docs_verdicts(names);
    cr_assert_eq(n, NROWS, "the docs' table has %zu rows, this copy %zu", n, NROWS);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(table[i].number, (int)i + 1);
        cr_expect_str_eq(table[i].verdict, names[i], "row %zu", i + 1);
    }
}

/*
 * Every combination of: L1 and L2 absent, 0, below, at and above each other (0, 50, 100, 150);
 * unused or a footprint of 0, 50, 100, 150, 200; with and without an overflow (only when used);
 * every tactic.  For each, the verdict must be the first matching row's, and every pair of rows
 * that both match some input is counted (each row must be the first match somewhere, so that no
 * row is dead).
 */
Test(ref_verdict, every_input_of_a_grid_gets_the_verdict_of_the_first_matching_row)
{
    static const int64_t figures[] = {-1, 0, 50, 100, 150};
    static const int64_t uses[] = {-1, 0, 50, 100, 150, 200};
    static const int tactics[] = {WS_TACTIC_NONE, WS_TACTIC_CACHED, WS_TACTIC_CACHED_FREE, WS_TACTIC_MISS};
    int first[NROWS] = {0}, both[NROWS][NROWS] = {{0}};
    size_t cases = 0, wrong = 0;
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t u = 0; u < 6; u++)
                for (int ovf = 0; ovf <= (uses[u] >= 0); ovf++)
                    for (size_t t = 0; t < 4; t++) {
                        struct ws_verdict_input in = {figures[a], figures[b], uses[u], ovf, tactics[t]};
                        const struct row *want = reference_verdict(&in);
                        cr_assert_not_null(want);
                        const char *got = ws_verdict_name(ws_verdict_of(&in));
                        cases++;
                        if (strcmp(got, want->verdict) != 0 && wrong++ < 10)
                            cr_expect_fail("L1 %lld L2 %lld used %lld overflow %d tactic %d: %s, the table says %s "
                                           "(row %d)",
                                           (long long)in.level1, (long long)in.level2, (long long)in.observed, ovf,
                                           tactics[t], got, want->verdict, want->number);
                        first[want->number - 1]++;
                        for (size_t i = 0; i < NROWS; i++)
                            for (size_t j = i + 1; j < NROWS; j++)
                                if (row_matches(&table[i], &in) && row_matches(&table[j], &in))
                                    both[i][j]++;
                    }
    cr_expect_eq(wrong, 0, "%zu of %zu inputs got another verdict than the table's", wrong, cases);
    for (size_t i = 0; i < NROWS; i++)
        cr_expect_gt(first[i], 0, "row %zu is never the first match on the grid", i + 1);
    /* Precedence matters where two rows both match: the grid holds such inputs for these pairs
     * (among others), each decided by the earlier row above. */
    static const int pairs[][2] = {{1, 2}, {1, 5}, {2, 3}, {2, 4}, {2, 9}, {3, 5}, {4, 8}, {5, 9},
                                   {6, 10}, {7, 10}, {8, 9}, {9, 11}, {10, 11}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        cr_expect_gt(both[pairs[k][0] - 1][pairs[k][1] - 1], 0, "rows %d and %d never both match", pairs[k][0],
                     pairs[k][1]);
}
