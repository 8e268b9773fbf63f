/* `wstrace plan --svg`: the picture of a layout, checked against the scale documented in svg_plan.h. */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqltest.h"
#include "testdir.h"
#include "commands.h"
#include "planner.h"
#include "svg_plan.h"
#include "tracedb.h"

static char tmp[64];

static void make_tmp(void) { testdir_make(tmp, sizeof tmp, "ws_svg_test"); }
static void remove_tmp(void) { testdir_remove(tmp); }

TestSuite(svg, .init = make_tmp, .fini = remove_tmp);

static int run_plan(int argc, char **argv)
{
    fflush(stdout);
    return cmd_plan(argc, argv);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *s = malloc((size_t)len + 1);
    cr_assert_eq(fread(s, 1, (size_t)len, f), (size_t)len);
    s[len] = '\0';
    fclose(f);
    return s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A small XML well-formedness check: one root element, every start tag closed in order, quoted
 * attribute values without '<', and character data without a bare '<' or an unknown entity. */
static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == ':' || c == '.';
}

static int entity_ok(const char *p)
{
    static const char *const names[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(p, names[i], strlen(names[i])))
            return 1;
    return 0;
}

static void expect_well_formed(const char *s)
{
    const char *stack[64];
    size_t len[64], depth = 0;
    int roots = 0;
    const char *p = s;
    if (!strncmp(p, "<?xml", 5)) {
        p = strstr(p, "?>");
        cr_assert_not_null(p, "unterminated XML declaration");
        p += 2;
    }
    while (*p) {
        if (*p == '&') {
            cr_assert(entity_ok(p), "bare '&' at offset %td", p - s);
            p++;
            continue;
        }
        if (*p != '<') {
            cr_assert(depth > 0 || *p == '\n' || *p == ' ', "text outside the root at offset %td", p - s);
            p++;
            continue;
        }
        p++;
        int closing = *p == '/';
        if (closing)
            p++;
        const char *name = p;
        while (name_char(*p))
            p++;
        size_t n = (size_t)(p - name);
        cr_assert(n > 0 && !(name[0] >= '0' && name[0] <= '9'), "invalid tag name at offset %td", name - s);
        if (closing) {
            cr_assert(depth > 0 && len[depth - 1] == n && !strncmp(stack[depth - 1], name, n),
                      "</%.*s> closes the wrong element at offset %td", (int)n, name, name - s);
            depth--;
            cr_assert_eq(*p, '>', "junk in an end tag at offset %td", p - s);
            p++;
            continue;
        }
        /* attributes: name="value" */
        for (;;) {
            while (*p == ' ' || *p == '\n')
                p++;
            if (*p == '>' || (*p == '/' && p[1] == '>'))
                break;
            const char *attr = p;
            while (name_char(*p))
                p++;
            cr_assert(p > attr && *p == '=' && p[1] == '"', "bad attribute at offset %td", attr - s);
            p += 2;
            for (; *p && *p != '"'; p++) {
                cr_assert_neq(*p, '<', "'<' in an attribute value at offset %td", p - s);
                if (*p == '&')
                    cr_assert(entity_ok(p), "bare '&' in an attribute at offset %td", p - s);
            }
            cr_assert_eq(*p, '"', "unterminated attribute");
            p++;
        }
        if (depth == 0)
            roots++;
        if (*p == '/') {
            p += 2;
            continue;
        }
        p++;
        cr_assert_lt(depth, 64u, "nesting too deep");
        stack[depth] = name;
        len[depth++] = n;
    }
    cr_expect_eq(depth, 0u, "unclosed elements");
    cr_expect_eq(roots, 1, "one root element");
    cr_expect(!strncmp(strstr(s, "<svg"), "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39));
}

struct rect {
    double x, y, w, h;
    uint64_t id;
};

/* The block rectangles of a problem's picture, each with the id from its tooltip. */
static size_t problem_rects(const char *svg, struct rect *r, size_t max)
{
    size_t n = 0;
    for (const char *p = svg; (p = strstr(p, "<rect class=\"block ")); p++) {
        cr_assert_lt(n, max);
        const char *x = strstr(p, " x=\"");
        cr_assert_not_null(x);
        cr_assert_eq(sscanf(x, " x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &r[n].x, &r[n].y, &r[n].w, &r[n].h),
                     4);
        const char *t = strstr(p, "<title>block ");
        cr_assert_not_null(t);
        cr_assert_eq(sscanf(t, "<title>block %lu", &r[n].id), 1);
        n++;
    }
    return n;
}

/* Four blocks; the live load is 150 bytes on [2, 6): 0 [0,4) 100, 1 [2,6) 50, 2 [4,10) 100, 3 [6,8) 30. */
static const char problem[] = "id,lower,upper,size\n10,0,4,100\n11,2,6,50\n12,4,10,100\n13,6,8,30\n";

Test(svg, problem_rectangles_follow_the_documented_scale)
{
    char in[128], sol[128], out[128];
    snprintf(in, sizeof in, "%s/p.csv", tmp);
    snprintf(sol, sizeof sol, "%s/sol.csv", tmp);
    snprintf(out, sizeof out, "%s/p.svg", tmp);
    write_file(in, problem);
    char *argv[] = {"plan", "--problem", in, "-o", sol, "--svg", out, NULL};
    cr_assert_eq(run_plan(7, argv), WS_EXIT_OK);

    /* The offsets the planner chose, from the solution file. */
    struct ws_plan_buffer b[4];
    FILE *f = fopen(sol, "r");
    cr_assert_not_null(f);
    char header[64];
    cr_assert(fgets(header, sizeof header, f));
    uint64_t peak = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(fscanf(f, "%lu,%ld,%ld,%lu,%lu", &b[i].id, &b[i].lower, &b[i].upper, &b[i].size, &b[i].offset), 5);
        if (b[i].offset + b[i].size > peak)
            peak = b[i].offset + b[i].size;
    }
    fclose(f);
    cr_expect_eq(peak, 150, "an optimal layout of four blocks");

    char *svg = slurp(out);
    expect_well_formed(svg);
    struct rect r[8];
    size_t n = problem_rects(svg, r, 8);
    cr_assert_eq(n, 4, "one rectangle per block");
    /* t0 = 0, t1 = 10; top = 1.1 * max(peak, load bound 150, live peak 150). */
    double top = 1.1 * (double)(peak > 150 ? peak : 150);
    for (int i = 0; i < 4; i++) {
        const struct rect *m = NULL;
        for (size_t k = 0; k < n; k++)
            if (r[k].id == b[i].id)
                m = &r[k];
        cr_assert_not_null(m, "block %lu drawn", b[i].id);
        double x = WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH * (double)b[i].lower / 10;
        double w = WS_SVG_PLOT_WIDTH * (double)(b[i].upper - b[i].lower) / 10;
        double y = WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT * (1 - (double)(b[i].offset + b[i].size) / top);
        double h = WS_SVG_PLOT_HEIGHT * (double)b[i].size / top;
        cr_expect(fabs(m->x - x) < 0.006, "block %lu: x %.2f, expected %.3f", b[i].id, m->x, x);
        cr_expect(fabs(m->w - w) < 0.006, "block %lu: width %.2f, expected %.3f", b[i].id, m->w, w);
        cr_expect(fabs(m->y - y) < 0.006, "block %lu: y %.2f, expected %.3f", b[i].id, m->y, y);
        cr_expect(fabs(m->h - h) < 0.006, "block %lu: height %.2f, expected %.3f", b[i].id, m->h, h);
    }
    /* The bounds are labelled in bytes for people, and the ratio is in the subtitle. */
    cr_expect_eq(count(svg, "<g class=\"panel\""), 1);
    cr_expect_neq(strstr(svg, "150 B"), NULL);
    cr_expect_neq(strstr(svg, "class=\"lb\""), NULL);
    cr_expect_neq(strstr(svg, "class=\"peak\""), NULL);
    cr_expect_neq(strstr(svg, "class=\"live\""), NULL);
    free(svg);
}

Test(svg, unwritable_path_fails_before_anything_is_written)
{
    char in[128], sol[128], out[128];
    snprintf(in, sizeof in, "%s/p.csv", tmp);
    snprintf(sol, sizeof sol, "%s/sol.csv", tmp);
    snprintf(out, sizeof out, "%s/no/such/dir/p.svg", tmp);
    write_file(in, problem);
    char *argv[] = {"plan", "--problem", in, "-o", sol, "--svg", out, NULL};
    cr_expect_eq(run_plan(7, argv), WS_EXIT_USAGE);
    cr_expect_neq(access(out, F_OK), 0, "no picture");
    cr_expect_neq(access(sol, F_OK), 0, "no solution either");

    char dash[] = "-";
    char *argv2[] = {"plan", "--problem", in, "--svg", dash, NULL};
    cr_expect_eq(run_plan(5, argv2), WS_EXIT_USAGE, "'-' would mix the picture with the table");

    /* A bad problem leaves no picture behind. */
    snprintf(out, sizeof out, "%s/p.svg", tmp);
    write_file(in, "id,lower,upper,size\n0,5,4,1\n");
    char *argv3[] = {"plan", "--problem", in, "--svg", out, NULL};
    cr_expect_eq(run_plan(5, argv3), WS_EXIT_USAGE);
    cr_expect_neq(access(out, F_OK), 0, "no picture of a refused problem");
}

Test(svg, large_problem_draws_the_largest_blocks_and_says_so, .timeout = 120)
{
    /* Blocks one after another in time, block i of i + 1 bytes: the smallest five are left out. */
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/big.csv", tmp);
    snprintf(out, sizeof out, "%s/big.svg", tmp);
    size_t n = WS_SVG_MAX_RECTS + 5;
    FILE *f = fopen(in, "w");
    cr_assert_not_null(f);
    fputs("id,lower,upper,size\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%zu,%zu,%zu,%zu\n", i, i, i + 1, i + 1);
    fclose(f);
    char *argv[] = {"plan", "--problem", in, "--svg", out, NULL};
    cr_assert_eq(run_plan(5, argv), WS_EXIT_OK);
    char *svg = slurp(out);
    expect_well_formed(svg);
    cr_expect_eq(count(svg, "<rect class=\"block "), (size_t)WS_SVG_MAX_RECTS);
    cr_expect_eq(strstr(svg, "<title>block 4\n"), NULL, "a smallest block is left out");
    cr_expect_neq(strstr(svg, "<title>block 5\n"), NULL, "the sixth smallest is drawn");
    cr_expect_neq(strstr(svg, "Drawn: the 20,000 largest of 20,005 blocks"), NULL);
    free(svg);
}

/* ---- trace mode ----------------------------------------------------------------------------- */

static sqlite3 *db;

static void exec(const char *sql) { sqltest_exec(db, sql); }
static int64_t query_int(const char *sql) { return sqltest_int(db, sql); }

/* Shape key "s1" (run 1: activations A and B, workspaces W and W2) and a run without a key (run 3:
 * one activation, one workspace). One node name needs escaping in XML. */
static void build_trace(const char *path)
{
    char err[512];
    cr_assert_eq(ws_tracedb_create(path, &db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_tracedb_exec(db, ws_analysis_sql, err, sizeof err), 0, "%s", err);
    exec("INSERT INTO strings(id, value) VALUES (1, 's1'), (2, '/n/matmul'), (3, '/n/attn<&>\"q\"');"
         "INSERT INTO threads(id, os_tid) VALUES (1, 100);"
         "INSERT INTO runs(id, thread_id, shape_key_id, start_ns, end_ns) VALUES (1, 1, 1, 0, 10),"
         "  (3, 1, NULL, 40, 50);"
         "INSERT INTO declarations(level, node_name_id, slot, bytes, alignment, thread_id, ns) VALUES"
         "  (2, 2, 0, 600, 0, 1, 0);"
         "INSERT INTO lifetimes(allocation_id, run_id, class, node_name_id, alloc_step, free_step, alloc_seq,"
         "  start_event, end_event, slot, bytes) VALUES"
         "  (1, 1, 'activation', 2, 0, 2, 0, 0, 4, NULL, 1000),"
         "  (2, 1, 'workspace', 2, 0, 0, 1, 1, 2, 0, 100),"
         "  (3, 1, 'activation', 3, 1, 3, 2, 3, 7, NULL, 300),"
         "  (4, 1, 'workspace', 3, 2, 2, 3, 5, 6, 0, 200),"
         "  (20, 3, 'activation', 2, 0, 1, 0, 0, 2, NULL, 10),"
         "  (21, 3, 'workspace', 2, 0, 0, 1, 1, 2, 0, 10);");
}

Test(svg, trace_draws_one_panel_per_plan)
{
    char path[128], out[128];
    snprintf(path, sizeof path, "%s/trace.db", tmp);
    snprintf(out, sizeof out, "%s/trace.svg", tmp);
    build_trace(path);
    sqlite3_close(db);
    char *argv[] = {"plan", path, "--svg", out, NULL};
    cr_assert_eq(run_plan(4, argv), WS_EXIT_OK);
    char *svg = slurp(out);
    expect_well_formed(svg);
    cr_expect_eq(count(svg, "<g class=\"panel\""), 2);
    cr_expect_neq(strstr(svg, "<g class=\"panel\" transform=\"translate(0 0)\">"), NULL);
    char second[64];
    snprintf(second, sizeof second, "<g class=\"panel\" transform=\"translate(0 %d)\">", WS_SVG_PANEL_HEIGHT);
    cr_expect_neq(strstr(svg, second), NULL);
    char height[32];
    snprintf(height, sizeof height, "height=\"%d\"", 2 * WS_SVG_PANEL_HEIGHT);
    cr_expect_neq(strstr(svg, height), NULL, "the picture holds both panels");
    cr_expect_eq(count(svg, "<rect class=\"block "), 6, "one rectangle per block of either plan");
    cr_expect_eq(count(svg, "<rect class=\"block act"), 3);
    cr_expect_eq(count(svg, "<rect class=\"block ws"), 3);
    /* Titles in plan order, and tooltips naming node, class, slot, bytes and lifetime. */
    const char *s1 = strstr(svg, "shape key s1, run 1"), *none = strstr(svg, "no shape key, run 3");
    cr_assert(s1 && none && s1 < none);
    cr_expect_neq(strstr(svg, "<title>/n/attn&lt;&amp;&gt;&quot;q&quot;\nactivation, no slot, allocation 3\n"
                              "512 B, requested 300 B\noffset "),
                  NULL);
    cr_expect_neq(strstr(svg, "<title>/n/matmul\nworkspace, slot 0, allocation 2\n768 B, requested 100 B\n"), NULL,
                  "workspace grown to its declaration");
    cr_expect_neq(strstr(svg, "event index [1, 2)</title>"), NULL);
    free(svg);

    /* The tables were written as without --svg. */
    char err[512];
    cr_assert_eq(ws_tracedb_open(path, WS_TRACEDB_READ, &db, err, sizeof err), 0, "%s", err);
    cr_expect_eq(query_int("SELECT COUNT(*) FROM plans"), 2);
    sqlite3_close(db);
}

Test(svg, trace_with_unwritable_path_writes_no_tables)
{
    char path[128], out[128];
    snprintf(path, sizeof path, "%s/trace.db", tmp);
    snprintf(out, sizeof out, "%s/missing/trace.svg", tmp);
    build_trace(path);
    sqlite3_close(db);
    char *argv[] = {"plan", path, "--svg", out, NULL};
    cr_expect_eq(run_plan(4, argv), WS_EXIT_USAGE);
    cr_expect_neq(access(out, F_OK), 0);
    char err[512];
    cr_assert_eq(ws_tracedb_open(path, WS_TRACEDB_READ, &db, err, sizeof err), 0, "%s", err);
    cr_expect_eq(query_int("SELECT COUNT(*) FROM plans"), 0, "no tables written");
    sqlite3_close(db);
}
