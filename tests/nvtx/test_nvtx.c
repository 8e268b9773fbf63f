/*
 * NVTX end to end: nvtx_prog (tests/nvtx/nvtx_prog.c) and wsk run on the simulated device under
 * libwstrace.so and the traces are checked with SQL.  Expected numbers are what the program did
 * or printed (NVTX's own return values, its own counts), or derived by hand in the comments from
 * the calls nvtx_prog makes; never taken from the tracer.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_util.h"

TestSuite(nvtx, .fini = tu_cleanup);

#define NVTX_PROG WS_BUILD_DIR "/tests/nvtx_prog"
#define WSK       WS_BUILD_DIR "/bin/wsk"
#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void run_ok(struct tu_result *r, const char *trace, const char *const *argv)
{
    tu_run_traced(r, trace, NULL, argv);
    cr_assert(r->exited && r->code == 0, "traced %s %s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", argv[0], argv[1],
              r->code, r->signal, r->out, r->err);
    cr_expect_str_empty(r->err, "stderr of the traced program: %s", r->err);
}

static void wstrace_ok(const char *const *argv)
{
    struct tu_result r;
    const char *san = tu_sanitizer_preload();
    tu_run(&r, san ? (const char *const[]){san, NULL} : NULL, argv);
    cr_assert(r.exited && r.code == 0, "%s %s: exit %d\n%s", argv[0], argv[1], r.code, r.err);
    tu_result_free(&r);
}

/* Id of the one range with this name (asserts there is exactly one). */
static int64_t range_id(sqlite3 *db, const char *name)
{
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='%s'", name),
                 1, "ranges named %s", name);
    return tu_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='%s'", name);
}

static int64_t domain_named(sqlite3 *db, const char *name)
{
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM domains d JOIN strings s ON s.id=d.name_id WHERE s.value='%s'", name),
                 1, "domain rows named %s", name);
    return tu_int(db, "SELECT d.id FROM domains d JOIN strings s ON s.id=d.name_id WHERE s.value='%s'", name);
}

/* ---- domains and unbalanced pops ------------------------------------------------------------- */

Test(nvtx, each_domain_keeps_its_own_depth)
{
    char trace[512];
    tu_path(trace, sizeof trace, "domains.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(NVTX_PROG, "domains"));

    /* NVTX returns the 0-based level of the range pushed or popped, negative when there is none. */
    static const struct {
        const char *key;
        int level; /* -1: any negative value */
    } levels[] = {
        {"push_a", 0},
        {"pop_x_empty", -1},
        {"pop_a", 0},
        {"push_x", 0},
        {"pop_x2", 0},
        {"pop_y_empty", -1},
        {"pop_y_empty_again", -1},
        {"pop_default_empty", -1},
        {"push_outer", 0},
        {"push_x_inner", 0},
        {"push_d_inner", 1},
        {"pop_y_inside", -1},
        {"pop_d_inner", 1},
        {"pop_outer", 0},
        {"pop_x_inner", 0},
        {"push_main_open", 0},
        {"worker_push", 0},
        {"worker_pop", 0},
        {"worker_pop_again", -1},
        {"pop_main_open", 0},
    };
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        long long got = tu_kv(r.out, levels[i].key);
        if (levels[i].level < 0)
            cr_expect_lt(got, 0, "%s returned %lld", levels[i].key, got);
        else
            cr_expect_eq(got, levels[i].level, "%s returned %lld", levels[i].key, got);
    }
    cr_expect_eq(tu_kv(r.out, "same_handle"), 1, "creating \"X\" again gives the first handle");

    sqlite3 *db = tu_open(trace);
    long long negative = tu_kv(r.out, "negative_pops");
    cr_expect_eq(negative, 6);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_errors WHERE kind='pop'"), negative);
    cr_expect_eq(tu_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='unbalanced_pops'"), negative);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_errors WHERE kind='end'"), tu_kv(r.out, "unmatched_ends"));
    cr_expect_eq(tu_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='unmatched_range_ends'"),
                 tu_kv(r.out, "unmatched_ends"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_errors WHERE kind='end' AND range_ref=987654321 "
                            "AND api='nvtxRangeEnd' AND domain_id=0"),
                 1);

    /* Domains: the default, X (created twice: one row) and Y. */
    int64_t x = domain_named(db, "X"), y = domain_named(db, "Y");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM domains"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM domains WHERE id=0 AND name_id IS NULL"), 1);
    /* unbalanced pops by domain: X once, Y three times, the default domain twice (main, worker) */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM range_errors WHERE kind='pop' AND domain_id=%lld "
                        "AND api='nvtxDomainRangePop'",
                        (long long)x),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_errors WHERE kind='pop' AND domain_id=%lld", (long long)y), 3);
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM range_errors WHERE kind='pop' AND domain_id=0 AND api='nvtxRangePop'"), 2);

    /* Every range closed, each by the pop of its own domain. */
    int64_t a = range_id(db, "A"), xr = range_id(db, "x-range"), outer = range_id(db, "outer");
    int64_t xi = range_id(db, "x-inner"), di = range_id(db, "d-inner"), open = range_id(db, "main-open");
    range_id(db, "worker-range");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE end_ns IS NULL"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE kind='push'"), 7);
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)a), 0);
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)xr), x);
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)xi), x);
    /* The pop of Y inside d-inner happened in d-inner and closed nothing. */
    cr_expect_eq(tu_int(db,
                        "SELECT range_id FROM range_errors WHERE kind='pop' AND domain_id=%lld "
                        "ORDER BY ns DESC LIMIT 1",
                        (long long)y),
                 di);
    /* Nesting: outer > x-inner > d-inner, whatever the domains. */
    cr_expect_eq(tu_int(db, "SELECT parent_id FROM ranges WHERE id=%lld", (long long)xi), outer);
    cr_expect_eq(tu_int(db, "SELECT parent_id FROM ranges WHERE id=%lld", (long long)di), xi);
    cr_expect_eq(tu_int(db, "SELECT depth FROM ranges WHERE id=%lld", (long long)di), 2);
    /* The default-domain pops closed d-inner then outer; x-inner outlived outer. */
    cr_expect_eq(tu_int(db,
                        "SELECT (SELECT end_ns FROM ranges WHERE id=%lld) < (SELECT end_ns FROM ranges WHERE "
                        "id=%lld)",
                        (long long)outer, (long long)xi),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE id=%lld AND end_ns IS NOT NULL", (long long)open), 1);

    /* Attribution: 101 in A (the pop of X before it changed nothing), 102 in x-range, 103 and 104
     * in x-inner (the innermost open range, before and after outer closed). */
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE requested_bytes=101"), a);
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE requested_bytes=102"), xr);
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE requested_bytes=103"), xi);
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE requested_bytes=104"), xi);
    sqlite3_close(db);

    /* summary reports them */
    struct tu_result s;
    tu_run(&s, NULL, ARGV(WS_BUILD_DIR "/bin/wstrace", "summary", trace));
    cr_assert(s.exited && s.code == 0, "summary: %s", s.err);
    cr_expect(strstr(s.out, "NVTX domains             3\n") != NULL, "%s", s.out);
    cr_expect(strstr(s.out, "unbalanced NVTX pops     6\n") != NULL, "%s", s.out);
    cr_expect(strstr(s.out, "unmatched range ends     2\n") != NULL, "%s", s.out);
    tu_result_free(&s);
    tu_result_free(&r);
}

/* ---- categories, colours, payloads ------------------------------------------------------------- */

Test(nvtx, categories_colours_and_payloads)
{
    char trace[512];
    tu_path(trace, sizeof trace, "attributes.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(NVTX_PROG, "attributes"));
    sqlite3 *db = tu_open(trace);
    int64_t d = domain_named(db, "attr-domain");

    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM categories"), 3);
    static const struct {
        int domain; /* 0 default, 1 attr-domain */
        int category;
        const char *name;
    } cats[] = {{0, 1, "cat-one"}, {0, 2, "cat-two"}, {1, 1, "dom-cat-renamed"}};
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM categories c JOIN strings s ON s.id=c.name_id "
                            "WHERE c.domain_id=%lld AND c.category=%d AND s.value='%s'",
                            cats[i].domain ? (long long)d : 0LL, cats[i].category, cats[i].name),
                     1, "category %s", cats[i].name);

    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_attributes"), tu_kv(r.out, "attribute_ranges"));
    /* Payloads: integers as SQLite integers (a uint64 above 2^63-1 as its signed bit pattern:
     * 0x8000000000000005 - 2^64 = -9223372036854775803), floating point as REAL. */
    static const struct {
        const char *range, *type, *value; /* value: SQL literal compared with payload */
    } pays[] = {
        {"p-u64", "uint64", "-9223372036854775803"},
        {"p-i64", "int64", "-42"},
        {"p-double", "double", "3.25"},
        {"p-u32", "uint32", "4000000000"},
        {"p-i32", "int32", "-7"},
        {"p-float", "float", "1.5"},
        {"p-ext", "extension", "2"},
        {"p-unknown", "unknown", "77"},
        {"se-attr", "int32", "5"},
    };
    for (size_t i = 0; i < sizeof pays / sizeof pays[0]; i++) {
        int64_t id = range_id(db, pays[i].range);
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM range_attributes WHERE range_id=%lld AND payload_type='%s' "
                            "AND payload=%s",
                            (long long)id, pays[i].type, pays[i].value),
                     1, "payload of %s", pays[i].range);
    }
    cr_expect_eq(tu_int(db, "SELECT typeof(payload)='real' FROM range_attributes WHERE range_id=%lld",
                        (long long)range_id(db, "p-float")),
                 1);
    /* Colours: ARGB as given (0xFF112233 = 4279312947, 0xFF00FF00 = 4278255360, 0x80FFFFFF = 2164260863). */
    int64_t u64 = range_id(db, "p-u64"), se = range_id(db, "se-attr"), dr = range_id(db, "d-attr");
    cr_expect_eq(tu_int(db, "SELECT color FROM range_attributes WHERE range_id=%lld", (long long)u64), 4279312947LL);
    cr_expect_eq(tu_int(db, "SELECT category FROM range_attributes WHERE range_id=%lld", (long long)u64), 1);
    cr_expect_eq(tu_int(db, "SELECT color FROM range_attributes WHERE range_id=%lld", (long long)se), 4278255360LL);
    cr_expect_eq(tu_int(db, "SELECT category FROM range_attributes WHERE range_id=%lld", (long long)se), 2);
    cr_expect_eq(tu_int(db, "SELECT kind='startend' FROM ranges WHERE id=%lld", (long long)se), 1);
    cr_expect_eq(tu_int(db, "SELECT color FROM range_attributes WHERE range_id=%lld", (long long)dr), 2164260863LL);
    cr_expect_eq(tu_int(db, "SELECT payload IS NULL AND payload_type IS NULL FROM range_attributes WHERE range_id=%lld",
                        (long long)dr),
                 1);
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)dr), d);
    /* No attribute row for a range without attributes or with a colour that is not ARGB. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM range_attributes WHERE range_id IN (%lld, %lld)",
                        (long long)range_id(db, "p-none"), (long long)range_id(db, "c-unknown")),
                 0);
    /* The mark in attr-domain. */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM marks m JOIN mark_attributes a ON a.mark_id=m.id JOIN strings s "
                        "ON s.id=m.name_id WHERE s.value='m-attr' AND m.domain_id=%lld AND a.category=1 AND "
                        "a.payload_type='double' AND a.payload=0.5 AND a.color IS NULL",
                        (long long)d),
                 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- the memory extension ------------------------------------------------------------------------ */

/* The allocations row of the region or allocation at this address and size. */
static int64_t row_at(sqlite3 *db, long long address, long long requested, const char *memory)
{
    cr_assert_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE address=%lld AND requested_bytes=%lld AND memory='%s'",
                        address, requested, memory),
                 1, "%s row at %lld of %lld bytes", memory, address, requested);
    return tu_int(db, "SELECT id FROM allocations WHERE address=%lld AND requested_bytes=%lld AND memory='%s'", address,
                  requested, memory);
}

static void expect_text(sqlite3 *db, const char *want, const char *sql_fmt, long long id)
{
    char *got = tu_text(db, sql_fmt, id);
    cr_expect_str_eq(got ? got : "(null)", want, "%s (id %lld)", sql_fmt, id);
    free(got);
}

Test(nvtx, memory_extension_heaps_and_regions)
{
    char trace[512];
    tu_path(trace, sizeof trace, "memory.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(NVTX_PROG, "memory"));
    cr_expect_eq(tu_kv(r.out, "heap_is_pool"), 1, "a linear heap's handle is its address");
    cr_expect_eq(tu_kv(r.out, "handles_are_pointers"), 1, "a region's handle is its address");
    long long pool = tu_kv(r.out, "pool");
    sqlite3 *db = tu_open(trace);

    /* Three allocations from CUDA (pool, pool2, x), six regions (A, B, C, D, E, PW). */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE memory='device'"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE memory='region'"), 6);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_regions"), 6);
    int64_t pool_id = row_at(db, pool, 1 << 20, "device");
    int64_t ra = row_at(db, pool, 1000, "region"), rb = row_at(db, pool + 4096, 2000, "region");
    int64_t rc = row_at(db, pool + 8192, 500, "region"), rd = row_at(db, pool, 100, "region");
    int64_t pool2_id = tu_int(db, "SELECT id FROM allocations WHERE memory='device' AND requested_bytes=65536");
    int64_t x_id = tu_int(db, "SELECT id FROM allocations WHERE memory='device' AND requested_bytes=777");
    int64_t re = tu_int(db, "SELECT id FROM allocations WHERE memory='region' AND requested_bytes=256");
    int64_t rpw = tu_int(db, "SELECT id FROM allocations WHERE memory='region' AND requested_bytes=777");

    /* A: registered at 1000 bytes in n1, grown to 3000 in n2, ended by the heap reset in n3. */
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE id=%lld", (long long)ra), 3000);
    cr_expect_eq(tu_int(db, "SELECT resizes FROM memory_regions WHERE allocation_id=%lld", (long long)ra), 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM memory_region_resizes WHERE allocation_id=%lld AND bytes=3000 "
                        "AND range_id=%lld",
                        (long long)ra, (long long)range_id(db, "n2")),
                 1);
    struct {
        int64_t id;
        const char *node, *free_node, *free_api;
        int64_t container;
    } regions[] = {
        {ra, "n1", "n3", "nvtxMemHeapReset", pool_id}, {rb, "n1", "n2", "nvtxMemRegionsUnregister", pool_id},
        {rc, "n3", "n3", "nvtxMemHeapReset", pool_id}, {rd, "n4", "n4", "nvtxMemHeapUnregister", pool_id},
        {re, "n5", "n5", "cudaFree", pool2_id},        {rpw, "n5", "n5", "nvtxMemRegionsUnregister", x_id},
    };
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++) {
        long long id = regions[i].id;
        cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE id=%lld", id), range_id(db, regions[i].node),
                     "node of region %zu", i);
        cr_expect_eq(tu_int(db, "SELECT free_range_id FROM allocations WHERE id=%lld", id),
                     range_id(db, regions[i].free_node), "node that ended region %zu", i);
        expect_text(db, regions[i].free_api, "SELECT free_api FROM allocations WHERE id=%lld", id);
        expect_text(db, "nvtxMemRegionsRegister", "SELECT api FROM allocations WHERE id=%lld", id);
        cr_expect_eq(tu_int(db, "SELECT container_id FROM memory_regions WHERE allocation_id=%lld", id),
                     regions[i].container, "container of region %zu", i);
        expect_text(db, "device", "SELECT memory FROM memory_regions WHERE allocation_id=%lld", id);
        cr_expect_eq(tu_int(db, "SELECT domain_id FROM memory_regions WHERE allocation_id=%lld", id),
                     domain_named(db, "pool"));
    }
    cr_expect_eq(tu_int(db, "SELECT heap_id IS NULL FROM memory_regions WHERE allocation_id=%lld", (long long)rpw), 1,
                 "a region of the process-wide heap");

    /* Heaps: the pool (4 regions, 1 reset, unregistered) and pool2's inner heap (freed with it). */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_heaps"), 2);
    int64_t h1 = tu_int(db, "SELECT id FROM memory_heaps WHERE address=%lld", pool);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM memory_heaps h JOIN strings s ON s.id=h.name_id WHERE h.id=%lld "
                        "AND s.value='my-heap' AND h.category=4 AND h.bytes=1048576 AND h.handle=%lld AND "
                        "h.allocation_id=%lld AND h.regions=4 AND h.resets=1 AND h.end_api='nvtxMemHeapUnregister' "
                        "AND h.usage='sub-allocator' AND h.type='virtual-address' AND h.range_id=%lld",
                        (long long)h1, pool, (long long)pool_id, (long long)range_id(db, "setup")),
                 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM memory_heaps WHERE allocation_id=%lld AND bytes=4096 AND regions=1 "
                        "AND end_api='cudaFree' AND name_id IS NULL AND address=(SELECT address + 1024 FROM "
                        "allocations WHERE id=%lld)",
                        (long long)pool2_id, (long long)pool2_id),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_regions WHERE heap_id=%lld", (long long)h1), 4);

    /* The name given to A; the unregistration of an unknown region. */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocation_names n JOIN strings s ON s.id=n.name_id WHERE "
                        "n.allocation_id=%lld AND s.value='tensor-a' AND n.category=5",
                        (long long)ra),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors WHERE api='nvtxMemRegionsUnregister' AND address=%lld",
                        tu_kv(r.out, "unknown_region")),
                 1);

    /* Live bytes count what CUDA holds, never a region on top of its heap: peak = pool + pool2
     * (1048576 + 65536 = 1114112; x, 777 bytes, comes after pool2 is freed). */
    cr_expect_eq(tu_int(db, "SELECT MAX(live_bytes) FROM live_bytes"), 1114112);
    cr_expect_eq(tu_int(db, "SELECT COALESCE(SUM(bytes), 0) FROM device_allocations"), 1048576 + 65536 + 777);
    sqlite3_close(db);

    /* The analysis classifies the regions, not the allocations that hold them.  The run is the
     * outermost range "step": A (n1 -> n3) and B (n1 -> n2) are activations, C, D, E and PW
     * workspace of the node that registered them. */
    wstrace_ok(ARGV(TU_WSTRACE, "lifetimes", trace));
    db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM lifetimes"), 6);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM lifetimes l JOIN allocations a ON a.id=l.allocation_id "
                            "WHERE a.memory <> 'region'"),
                 0);
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++) {
        const char *want = i < 2 ? "activation" : "workspace";
        expect_text(db, want, "SELECT class FROM lifetimes WHERE allocation_id=%lld", (long long)regions[i].id);
    }
    cr_expect_eq(tu_int(db, "SELECT bytes FROM lifetimes WHERE allocation_id=%lld", (long long)ra), 3000);
    sqlite3_close(db);

    struct tu_result s;
    tu_run(&s, NULL, ARGV(TU_WSTRACE, "summary", trace));
    cr_assert(s.exited && s.code == 0, "summary: %s", s.err);
    /* Heaps: the pool's ends (n4) before pool2's starts (n5): peak 1048576.  Regions, each at its
     * largest size: A (3000) and B (2000) together in n1-n2, then A and C (3500), then D, E, PW
     * alone: peak 5000. */
    cr_expect(strstr(s.out, "NVTX heaps               2, peak 1.0 MiB (1048576)\n") != NULL, "%s", s.out);
    cr_expect(strstr(s.out, "NVTX regions             6, peak 4.9 KiB (5000)\n") != NULL, "%s", s.out);
    tu_result_free(&s);
    tu_result_free(&r);
}

Test(nvtx, clients_run_unchanged_without_the_tracer)
{
    /* No tool: NVTX's own no-ops (pops answer NVTX_NO_PUSH_POP_TRACKING, heaps NULL). */
    for (int i = 0; i < 3; i++) {
        static const char *const modes[] = {"domains", "attributes", "memory"};
        struct tu_result r;
        const char *san = tu_sanitizer_preload();
        tu_run(&r, san ? (const char *const[]){san, NULL} : NULL, ARGV(NVTX_PROG, modes[i]));
        cr_expect(r.exited && r.code == 0, "%s: exit %d: %s", modes[i], r.code, r.err);
        tu_result_free(&r);
    }
}

/* ---- wsk: the annotated arena against allocation on the fly --------------------------------- */

/* Per node and class: count, bytes, steps; per node: the resolution.  One text for comparing. */
static char *per_node_figures(const char *trace)
{
    wstrace_ok(ARGV(TU_WSTRACE, "lifetimes", trace));
    wstrace_ok(ARGV(TU_WSTRACE, "resolve", trace));
    sqlite3 *db = tu_open(trace);
    char *lifetimes = tu_text(db, "SELECT group_concat(line, char(10)) FROM (SELECT s.value || ' ' || l.class || ' ' "
                                  "|| COUNT(*) || ' ' || SUM(l.bytes) || ' ' || group_concat(l.alloc_step || '-' || "
                                  "COALESCE(l.free_step, 'x') || ':' || l.bytes, ',') AS line FROM lifetimes l "
                                  "LEFT JOIN strings s ON s.id=l.node_name_id GROUP BY s.value, l.class "
                                  "ORDER BY s.value, l.class)");
    char *resolutions = tu_text(db, "SELECT group_concat(line, char(10)) FROM (SELECT s.value || ' ' || "
                                    "COALESCE(r.planner_profile_bytes, 'null') || ' ' || "
                                    "COALESCE(r.estimate_bytes, 'null') || ' ' || COALESCE(r.planner_bytes, 'null') "
                                    "|| ' ' || r.planner_source || ' ' || r.ort_cost_bytes || ' ' || r.ort_source "
                                    "AS line FROM resolutions r JOIN strings s ON s.id=r.node_name_id "
                                    "ORDER BY s.value)");
    sqlite3_close(db);
    cr_assert_not_null(lifetimes);
    cr_assert_not_null(resolutions);
    size_t n = strlen(lifetimes) + strlen(resolutions) + 16;
    char *all = malloc(n);
    cr_assert_not_null(all);
    snprintf(all, n, "%s\n--\n%s", lifetimes, resolutions);
    free(lifetimes);
    free(resolutions);
    return all;
}

Test(nvtx, annotated_arena_analyses_like_dynamic_allocation, .timeout = 300)
{
    /* Two shape keys, and a first region of 4 KiB so that the arena grows inside the runs. */
    char dyn[512], arena[512];
    tu_path(dyn, sizeof dyn, "dynamic.db");
    tu_path(arena, sizeof arena, "arena.db");
    struct tu_result r;
    run_ok(&r, dyn,
           ARGV(WSK, "--device", "sim", "--batch", "1,3", "--kv-len", "40,96", "--runs", "4", "--alloc", "dynamic"));
    tu_result_free(&r);
    run_ok(&r, arena,
           ARGV(WSK, "--device", "sim", "--batch", "1,3", "--kv-len", "40,96", "--runs", "4", "--alloc", "arena",
                "--arena-initial-chunk", "4096", "--nvtx-mem"));
    tu_result_free(&r);

    sqlite3 *db = tu_open(arena);
    /* Every region of the arena is one heap; every buffer of the runs one region. */
    long long regions = tu_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='arena_regions'");
    cr_expect_gt(regions, 1, "the arena grew inside the runs");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_heaps"), regions);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_heaps WHERE allocation_id IS NULL OR end_ns IS NULL"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_regions WHERE container_id IS NULL OR heap_id IS NULL"), 0);
    long long region_rows = tu_int(db, "SELECT COUNT(*) FROM allocations WHERE memory='region'");
    sqlite3_close(db);
    db = tu_open(dyn);
    long long run_allocs = tu_int(db, "SELECT COUNT(*) FROM allocations WHERE run_id IS NOT NULL");
    sqlite3_close(db);
    cr_expect_eq(region_rows, run_allocs, "one region per buffer the dynamic mode allocates in its runs");

    char *a = per_node_figures(dyn), *b = per_node_figures(arena);
    cr_expect_gt(strlen(a), 100);
    cr_expect_str_eq(b, a, "per-node lifetimes and resolutions differ:\narena:\n%s\ndynamic:\n%s", b, a);
    free(a);
    free(b);
}

Test(nvtx, nvtx_mem_needs_the_arena)
{
    struct tu_result r;
    const char *san = tu_sanitizer_preload();
    tu_run(&r, san ? (const char *const[]){san, NULL} : NULL, ARGV(WSK, "--device", "sim", "--nvtx-mem"));
    cr_expect(r.exited && r.code == 2, "exit %d", r.code);
    cr_expect_eq(tu_lines(r.err), 1, "one line: %s", r.err);
    cr_expect(strstr(r.err, "--nvtx-mem needs --alloc arena") != NULL, "%s", r.err);
    tu_result_free(&r);
}

/* ---- schema/README.md: the NVTX example queries on traces that hold NVTX data ------------------ */

/* The SQL of the example whose title line starts with title, run on trace: its row count. */
static int example_rows(const char *title, const char *trace)
{
    size_t len;
    char *doc = tu_read_file(WS_SOURCE_DIR "/schema/README.md", &len);
    char *at = strstr(doc, title);
    cr_assert_not_null(at, "schema/README.md has no example '%s'", title);
    char *sql = strstr(at, "```sql\n");
    cr_assert_not_null(sql);
    sql += 7;
    char *end = strstr(sql, "```");
    cr_assert_not_null(end);
    *end = 0;
    sqlite3 *db = tu_open(trace);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", title, sqlite3_errmsg(db));
    int rows = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        rows++;
    cr_expect_eq(rc, SQLITE_DONE, "%s: %s", title, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(doc);
    return rows;
}

Test(nvtx, schema_readme_nvtx_examples_on_nvtx_traces)
{
    char attributes[512], memory[512], domains[512];
    tu_path(attributes, sizeof attributes, "ex-attributes.db");
    tu_path(memory, sizeof memory, "ex-memory.db");
    tu_path(domains, sizeof domains, "ex-domains.db");
    struct tu_result r;
    run_ok(&r, attributes, ARGV(NVTX_PROG, "attributes"));
    long long ranges = tu_kv(r.out, "attribute_ranges");
    tu_result_free(&r);
    run_ok(&r, memory, ARGV(NVTX_PROG, "memory"));
    tu_result_free(&r);
    run_ok(&r, domains, ARGV(NVTX_PROG, "domains"));
    tu_result_free(&r);
    cr_expect_eq(example_rows("NVTX ranges with their category names", attributes), ranges);
    cr_expect_eq(example_rows("Memory held from CUDA next to memory in use", memory), 2); /* two heaps */
    cr_expect_eq(example_rows("Pops that closed nothing, per domain", domains), 3);       /* X, Y, default */
}
