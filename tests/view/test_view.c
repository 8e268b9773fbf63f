/*
 * wstrace view, looked at the way a person looks at it: a recorded program is analysed and
 * planned, its page is opened in headless Chromium, and what the page rendered (the peak, the
 * blocks drawn, the tables' rows, what hovering a block shows, what clicking selects) is read
 * from the DOM and compared with figures the test queries from the trace with SQL.  The page
 * must not report a script error, and its screenshot must not be blank.  The embedded chunks of
 * allocations are decoded here, by a reader written from docs/view.md, and compared row by row
 * with the trace.  Names with markup and invalid UTF-8 must not break out of the page.
 *
 * Runs only programs (wstrace, wsk, the browser), so it is a TSan runner too.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "cdp.h"
#include "png.h"
#include "sqltest.h"

static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wstrace-view-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

TestSuite(view, .init = make_dir, .fini = remove_dir, .timeout = 240);

static const char *in_dir(const char *name)
{
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static const char *tool(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/bin/%s", WS_BUILD_DIR, name);
    return p;
}

/* Run argv; its stderr into err (when given); returns the exit status. */
static int run(char *const argv[], const char *const env[], char *err, size_t errlen)
{
    char errpath[600];
    snprintf(errpath, sizeof errpath, "%s.stderr", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        const char *rt = getenv("WS_SANITIZER_RUNTIME"); /* must come first in LD_PRELOAD */
        if (rt && *rt && !strcmp(argv[1] ? argv[1] : "", "record"))
            setenv("LD_PRELOAD", rt, 1);
        for (size_t i = 0; env && env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        int null = open("/dev/null", O_WRONLY), e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (err) {
        FILE *f = fopen(errpath, "r");
        size_t n = f ? fread(err, 1, errlen - 1, f) : 0;
        err[n] = '\0';
        if (f)
            fclose(f);
    }
    unlink(errpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A recorded run of the bundled workload (two shape keys), analysed, verified and planned. */
static const char *recorded_trace(void)
{
    const char *trace = in_dir("wsk.db");
    char *rec[] = {(char *)tool("wstrace"),
                   "record",
                   "-o",
                   (char *)trace,
                   "--",
                   (char *)tool("wsk"),
                   "--device",
                   "sim",
                   "--layers",
                   "2",
                   "--hidden",
                   "256",
                   "--heads",
                   "4",
                   "--head-dim",
                   "64",
                   "--intermediate",
                   "512",
                   "--vocab",
                   "1024",
                   "--batch",
                   "1,4",
                   "--kv-len",
                   "96,128",
                   "--max-kv-len",
                   "128",
                   "--runs",
                   "4",
                   "--l1",
                   "envelope",
                   NULL};
    char err[2048];
    cr_assert_eq(run(rec, NULL, err, sizeof err), 0, "recording wsk: %s", err);
    static const char *const steps[] = {"lifetimes", "resolve", "verify", "plan"};
    for (size_t i = 0; i < 4; i++) {
        char *argv[] = {(char *)tool("wstrace"), (char *)steps[i], (char *)trace, NULL};
        cr_assert_eq(run(argv, NULL, err, sizeof err), 0, "wstrace %s: %s", steps[i], err);
    }
    return trace;
}

static void make_view(const char *trace, const char *html, const char *const env[])
{
    char err[2048];
    char *argv[] = {(char *)tool("wstrace"), "view", (char *)trace, "-o", (char *)html, NULL};
    cr_assert_eq(run(argv, env, err, sizeof err), 0, "wstrace view: %s", err);
}

/* ---- the browser ---- */

static struct cdp browser;

static void open_page(const char *html, const char *fragment)
{
    char err[1024], url[1200];
    cr_assert_eq(cdp_start(&browser, 1400, 1000, err, sizeof err), 0, "%s", err);
    snprintf(url, sizeof url, "file://%s%s", html, fragment ? fragment : "");
    cr_assert_eq(cdp_open(&browser, url, "document.body && document.body.dataset.ready === '1'", 1200, err, sizeof err),
                 0, "%s (page errors: %s)", err, browser.errors);
}

static json_t *eval(const char *expr)
{
    char err[1024];
    json_t *v = cdp_eval(&browser, expr, err, sizeof err);
    cr_assert_not_null(v, "%s", err);
    return v;
}

/* Run a statement for its effect. */
static void js(const char *expr) { json_decref(eval(expr)); }

static long long eval_int(const char *expr)
{
    json_t *v = eval(expr);
    long long n = json_is_string(v) ? atoll(json_string_value(v)) : (long long)json_number_value(v);
    json_decref(v);
    return n;
}

static char *eval_text(const char *expr)
{
    json_t *v = eval(expr);
    char *s = strdup(json_is_string(v) ? json_string_value(v) : "");
    json_decref(v);
    return s;
}

/* Wait (bounded) until the page has drawn again after an action. */
static void settle(void)
{
    char err[1024];
    json_t *v = cdp_eval(&browser, "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))",
                         err, sizeof err);
    json_decref(v);
    for (int i = 0; i < 600; i++) {
        if (eval_int("document.body.dataset.ready === '1' ? 1 : 0"))
            return;
        usleep(50000);
    }
    cr_assert(0, "the page did not finish drawing");
}

static void no_script_errors(void)
{
    cr_expect_eq(eval_int("document.body.dataset.errors"), 0, "the page reported script errors");
    cr_expect_eq(browser.nerrors, 0, "the browser reported: %s", browser.errors);
}

static void close_page(void) { cdp_stop(&browser); }

static char *grouped(long long v)
{
    static char out[4][40];
    static int next;
    char digits[32], *o = out[next++ % 4];
    int n = snprintf(digits, sizeof digits, "%lld", v), k = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            o[k++] = ',';
        o[k++] = digits[i];
    }
    o[k] = '\0';
    return o;
}

static char *sql_text(sqlite3 *db, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: no row", sql);
    const char *t = (const char *)sqlite3_column_text(st, 0);
    char *s = strdup(t ? t : "(no node)");
    sqlite3_finalize(st);
    return s;
}

/* ---- what the page shows of a recorded program ---- */

Test(view, recorded_program_in_a_browser)
{
    const char *trace = recorded_trace(), *html = in_dir("wsk.html");
    make_view(trace, html, NULL);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t device =
        sqltest_int(db, "SELECT device FROM live_bytes GROUP BY device ORDER BY MAX(live_bytes) DESC LIMIT 1");
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT MAX(live_bytes) FROM live_bytes WHERE device = %lld", (long long)device);
    int64_t peak = sqltest_int(db, sql);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed') AND device = %lld",
             (long long)device);
    int64_t blocks = sqltest_int(db, sql);
    cr_assert_gt(blocks, 10);

    open_page(html, NULL);
    no_script_errors();
    /* the peak label: the value and its text */
    cr_expect_eq(eval_int("document.getElementById('peak-label').dataset.bytes"), peak);
    char *label = eval_text("document.getElementById('peak-label').textContent");
    cr_expect(strstr(label, grouped(peak)) != NULL, "peak label '%s' lacks %s", label, grouped(peak));
    free(label);
    /* every allocation of the device is one block */
    cr_expect_eq(eval_int("document.getElementById('blocks-count').dataset.count"), blocks);
    /* the tables: one row per row of the trace's result tables, a chip per verdict */
    cr_expect_eq(eval_int("document.querySelectorAll('#table-verifications tbody tr').length"),
                 sqltest_int(db, "SELECT COUNT(*) FROM verifications"));
    cr_expect_eq(eval_int("document.querySelectorAll('#table-resolutions tbody tr').length"),
                 sqltest_int(db, "SELECT COUNT(*) FROM resolutions"));
    char *chips = eval_text("Array.from(document.querySelectorAll('#table-verifications .chip')).map((c) => "
                            "c.textContent).join('|')");
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT verdict, COUNT(*) FROM verifications GROUP BY verdict", -1, &st, NULL),
                 SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        char want[128];
        snprintf(want, sizeof want, "%s: %d", sqlite3_column_text(st, 0), sqlite3_column_int(st, 1));
        cr_expect(strstr(chips, want) != NULL, "verdict chips '%s' lack '%s'", chips, want);
    }
    sqlite3_finalize(st);
    free(chips);
    /* sorting a table by a column: the first row then holds the column's largest value */
    js("(() => { const th = Array.from(document.querySelectorAll('#table-resolutions th'))"
       ".find((t) => t.textContent === 'planner_bytes'); th.click(); th.click(); return 1; })()");
    char *top = eval_text("document.querySelector('#table-resolutions tbody tr td').textContent");
    char *want_top = sql_text(db, "SELECT s.value FROM resolutions r JOIN strings s ON s.id = r.node_name_id"
                                  " ORDER BY r.planner_bytes DESC LIMIT 1");
    int64_t max_resolved = sqltest_int(db, "SELECT MAX(planner_bytes) FROM resolutions");
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM resolutions r JOIN strings s ON s.id = r.node_name_id"
             " WHERE r.planner_bytes = %lld AND s.value = '%s'",
             (long long)max_resolved, top);
    cr_expect_eq(sqltest_int(db, sql), 1, "sorted by planner_bytes, the first row is '%s' (one of the largest: '%s')",
                 top, want_top);
    free(top);
    free(want_top);
    /* the plan panel: the plan of the first shape key, its planned peak */
    cr_expect_eq(eval_int("document.getElementById('plan-panel').hidden ? 0 : 1"), 1);
    char *facts = eval_text("document.getElementById('plan-facts').textContent");
    int64_t planned = sqltest_int(db, "SELECT planned_peak_bytes FROM plans ORDER BY id LIMIT 1");
    char want_planned[64];
    snprintf(want_planned, sizeof want_planned, planned < 1024 ? "planned peak %s B" : "(%s B)", grouped(planned));
    cr_expect(strstr(facts, want_planned) != NULL, "plan facts '%s' lack '%s'", facts, want_planned);
    free(facts);

    /* hovering blocks: what the tooltip says is what the trace holds for that allocation */
    json_t *rect = eval("(() => { const r = document.getElementById('blocks').getBoundingClientRect(); "
                        "return [r.left, r.top, r.width, r.height]; })()");
    double left = json_number_value(json_array_get(rect, 0)), topy = json_number_value(json_array_get(rect, 1));
    double width = json_number_value(json_array_get(rect, 2)), height = json_number_value(json_array_get(rect, 3));
    json_decref(rect);
    char err[1024];
    int hits = 0, named_hits = 0;
    double hit_x = 0, hit_y = 0;
    long long hit_id = -1;
    for (int gy = 1; gy < 16 && hits < 6; gy++)
        for (int gx = 1; gx < 12 && hits < 6; gx++) {
            double x = left + 80 + (width - 100) * gx / 12.0, y = topy + 10 + (height - 40) * gy / 16.0;
            cr_assert_eq(cdp_mouse(&browser, "mouseMoved", x, y, 0, err, sizeof err), 0, "%s", err);
            if (eval_int("document.getElementById('tooltip').hidden ? 0 : 1") == 0)
                continue;
            char *tip = eval_text("document.getElementById('tooltip').textContent");
            const char *hash = strstr(tip, "allocation #");
            cr_assert_not_null(hash, "tooltip without an allocation: %s", tip);
            long long id = atoll(hash + 12);
            /* docs/view.md: an allocation named after a node is that node's */
            char *node = sql_text(db,
                                  "SELECT COALESCE((SELECT s.value FROM allocation_names n JOIN strings s ON s.id ="
                                  " n.name_id WHERE n.allocation_id = a.id AND n.name_id IN (SELECT name_id FROM"
                                  " ranges) ORDER BY n.rowid DESC LIMIT 1), s.value) FROM allocations a LEFT JOIN"
                                  " ranges r ON r.id = a.range_id LEFT JOIN strings s ON s.id = r.name_id"
                                  " WHERE a.id = %lld",
                                  id);
            char *named = sql_text(db,
                                   "SELECT (SELECT s.value FROM allocation_names n JOIN strings s ON s.id = n.name_id"
                                   " WHERE n.allocation_id = %lld ORDER BY n.rowid DESC LIMIT 1)",
                                   id);
            if (strcmp(named, "(no node)") != 0) { /* sql_text's NULL: not named */
                char want_named[600];
                snprintf(want_named, sizeof want_named, "named: %s", named);
                cr_expect(strstr(tip, want_named) != NULL, "tooltip '%s' lacks '%s'", tip, want_named);
                named_hits++;
            }
            free(named);
            char *api = sql_text(db, "SELECT api FROM allocations WHERE id = %lld", id);
            char *addr = sql_text(db, "SELECT printf('0x%%x', address) FROM allocations WHERE id = %lld", id);
            snprintf(sql, sizeof sql, "SELECT bytes FROM allocations WHERE id = %lld", id);
            int64_t bytes = sqltest_int(db, sql);
            char want_bytes[64];
            snprintf(want_bytes, sizeof want_bytes, bytes < 1024 ? "%s B" : "(%s B)", grouped(bytes));
            cr_expect(strncmp(tip, node, strlen(node)) == 0, "tooltip '%s' does not start with node '%s'", tip, node);
            cr_expect(strstr(tip, api) != NULL, "tooltip '%s' lacks API %s", tip, api);
            cr_expect(strstr(tip, addr) != NULL, "tooltip '%s' lacks address %s", tip, addr);
            cr_expect(strstr(tip, want_bytes) != NULL, "tooltip '%s' lacks size %s", tip, want_bytes);
            if (hit_id < 0 || strcmp(node, "(no node)") != 0) {
                hit_x = x, hit_y = y, hit_id = id;
            }
            free(node);
            free(api);
            free(addr);
            free(tip);
            hits++;
        }
    cr_assert_geq(hits, 3, "hovering the blocks panel found %d blocks", hits);
    (void)named_hits; /* how many landed on named buffers depends on the layout */

    /* clicking a block selects its node and lists its allocations */
    cr_assert_eq(cdp_mouse(&browser, "mouseMoved", hit_x, hit_y, 0, err, sizeof err), 0);
    cr_assert_eq(cdp_mouse(&browser, "mousePressed", hit_x, hit_y, 0, err, sizeof err), 0);
    cr_assert_eq(cdp_mouse(&browser, "mouseReleased", hit_x, hit_y, 0, err, sizeof err), 0);
    settle();
    for (int i = 0; i < 100 && eval_int("document.getElementById('selection-panel').hidden ? 0 : 1") == 0; i++)
        usleep(50000);
    /* the node of an allocation: the node its name names, else its range's (docs/view.md) */
    snprintf(sql, sizeof sql,
             "WITH node_of AS (SELECT a.id, COALESCE((SELECT n.name_id FROM allocation_names n WHERE"
             " n.allocation_id = a.id AND n.name_id IN (SELECT name_id FROM ranges) ORDER BY n.rowid DESC LIMIT 1),"
             " r.name_id) AS name_id FROM allocations a LEFT JOIN ranges r ON r.id = a.range_id WHERE a.status = 0"
             " AND a.memory IN ('device', 'managed'))"
             " SELECT COUNT(*) FROM node_of WHERE name_id = (SELECT name_id FROM node_of WHERE id = %lld)",
             hit_id);
    int64_t of_node = sqltest_int(db, sql);
    if (of_node > 0)
        cr_expect_eq(eval_int("document.querySelectorAll('#selection-table tbody tr').length"), of_node);
    /* Esc clears the selection: every block is drawn again */
    js("(() => { window.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'})); return 1; })()");
    settle();

    /* a run selected: the window is that run, and its allocations are drawn */
    js("(() => { const s = document.getElementById('run'); s.value = s.options[2].value; "
       "s.dispatchEvent(new Event('change')); return 1; })()");
    settle();
    int64_t run_id = eval_int("Number(document.getElementById('run').options[2].textContent.split(' ')[1])");
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed') AND run_id = %lld"
             " AND device = %lld",
             (long long)run_id, (long long)device);
    int64_t in_run = sqltest_int(db, sql);
    long long drawn = eval_int("document.getElementById('blocks-count').dataset.count");
    cr_expect_geq(drawn, in_run, "run %lld: %lld blocks drawn, the run has %lld", (long long)run_id, drawn,
                  (long long)in_run);
    cr_expect_lt(drawn, blocks, "a run shows fewer blocks than the whole trace");
    /* the wheel zooms: the window shrinks */
    char *before = eval_text("document.getElementById('window-label').textContent");
    json_t *live = eval("(() => { const r = document.getElementById('live').getBoundingClientRect(); "
                        "return [r.left + r.width / 2, r.top + r.height / 2]; })()");
    cr_assert_eq(cdp_mouse(&browser, "mouseWheel", json_number_value(json_array_get(live, 0)),
                           json_number_value(json_array_get(live, 1)), -300, err, sizeof err),
                 0, "%s", err);
    json_decref(live);
    settle();
    char *after = eval_text("document.getElementById('window-label').textContent");
    cr_expect(strcmp(before, after) != 0, "the wheel did not zoom: %s", after);
    free(before);
    free(after);
    no_script_errors();

    /* the screenshot is a picture, not a blank page */
    js("(() => { document.getElementById('zoom-reset').click(); window.scrollTo(0, 0); return 1; })()");
    settle();
    size_t len = 0;
    unsigned char *png = cdp_screenshot(&browser, &len, err, sizeof err);
    cr_assert_not_null(png, "%s", err);
    int w = 0, h = 0;
    unsigned char *rgb = png_rgb(png, len, &w, &h);
    cr_assert_not_null(rgb, "the screenshot is not a PNG");
    cr_expect_eq(w, 1400);
    size_t npx = (size_t)w * (size_t)h, differs = 0, coloured = 0;
    for (size_t i = 0; i < npx; i++) {
        const unsigned char *p = rgb + 3 * i;
        differs += p[0] != rgb[0] || p[1] != rgb[1] || p[2] != rgb[2];
        int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
        int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
        coloured += mx - mn > 40; /* the class colours, not greys */
    }
    cr_expect_gt(differs, npx / 5, "the screenshot is mostly one colour");
    cr_expect_gt(coloured, npx / 50, "the screenshot shows almost no coloured block or band");
    FILE *f = fopen(in_dir("screenshot.png"), "wb");
    if (f) {
        fwrite(png, 1, len, f);
        fclose(f);
    }
    free(rgb);
    free(png);
    close_page();
    sqlite3_close(db);
}

/* ---- the embedded chunks, read back ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static unsigned char *unbase64(const char *s, size_t n, size_t *out)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char *o = malloc(n / 4 * 3 + 3);
    unsigned v = 0;
    int bits = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *at = s[i] == '=' ? NULL : strchr(alphabet, s[i]);
        if (!at || !s[i])
            continue;
        v = v << 6 | (unsigned)(at - alphabet);
        if ((bits += 6) >= 8)
            o[k++] = (unsigned char)(v >> (bits -= 8));
    }
    *out = k;
    return o;
}

static uint64_t varint(const unsigned char *p, size_t *at, size_t n)
{
    uint64_t v = 0;
    for (int shift = 0; *at < n; shift += 7) {
        unsigned char b = p[(*at)++];
        v |= (uint64_t)(b & 127) << shift;
        if (!(b & 128))
            break;
    }
    return v;
}

static int64_t unzigzag(uint64_t v) { return v & 1 ? -(int64_t)(v >> 1) - 1 : (int64_t)(v >> 1); }

/* Every record of every chunk element (docs/view.md), checked against the allocations table. */
static size_t check_chunks(const char *html, sqlite3 *db, int64_t t0)
{
    size_t len, records = 0;
    char *page = read_file(html, &len);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(
        sqlite3_prepare_v2(db, "SELECT alloc_ns, free_ns, bytes FROM allocations WHERE id = ?1", -1, &st, NULL),
        SQLITE_OK);
    for (char *at = page; (at = strstr(at, "<script type=\"application/octet-stream\" id=\"wsc-")) != NULL;) {
        char *body = strchr(at, '>') + 1, *end = strstr(body, "</script>");
        cr_assert_not_null(end);
        size_t zn, n;
        unsigned char *z = unbase64(body, (size_t)(end - body), &zn);
        uLongf cap = (uLongf)zn * 64 + 1024;
        unsigned char *raw = malloc(cap);
        cr_assert_eq(uncompress(raw, &cap, z, (uLong)zn), Z_OK, "a chunk is not zlib data");
        n = cap;
        size_t p = 0;
        int64_t t = t0, id = 0;
        while (p < n) {
            t += (int64_t)varint(raw, &p, n);
            uint64_t life = varint(raw, &p, n);
            varint(raw, &p, n); /* y */
            int64_t bytes = (int64_t)varint(raw, &p, n);
            for (int k = 0; k < 6; k++) /* node, class, run, thread, api, device */
                varint(raw, &p, n);
            id += unzigzag(varint(raw, &p, n));
            varint(raw, &p, n); /* seq */
            varint(raw, &p, n); /* layer */
            varint(raw, &p, n); /* region */
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, id);
            cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "record of allocation %lld not in the trace", (long long)id);
            cr_expect_eq(sqlite3_column_int64(st, 0), t, "allocation %lld: time", (long long)id);
            cr_expect_eq(sqlite3_column_int64(st, 2), bytes, "allocation %lld: bytes", (long long)id);
            if (life == 0)
                cr_expect_eq(sqlite3_column_type(st, 1), SQLITE_NULL, "allocation %lld: never freed", (long long)id);
            else
                cr_expect_eq(sqlite3_column_int64(st, 1), t + (int64_t)life - 1, "allocation %lld: free",
                             (long long)id);
            records++;
        }
        free(raw);
        free(z);
        at = end;
    }
    sqlite3_finalize(st);
    free(page);
    return records;
}

/* The node of every record of the chunks, by allocation id (ids and nodes: n entries each). */
static size_t chunk_nodes(const char *html, int64_t **ids, int64_t **nodes)
{
    size_t len, count = 0, cap = 0;
    char *page = read_file(html, &len);
    *ids = NULL, *nodes = NULL;
    for (char *at = page; (at = strstr(at, "<script type=\"application/octet-stream\" id=\"wsc-")) != NULL;) {
        char *body = strchr(at, '>') + 1, *end = strstr(body, "</script>");
        cr_assert_not_null(end);
        size_t zn, n, p = 0;
        unsigned char *z = unbase64(body, (size_t)(end - body), &zn);
        uLongf raw_len = (uLongf)zn * 64 + 1024;
        unsigned char *raw = malloc(raw_len);
        cr_assert_eq(uncompress(raw, &raw_len, z, (uLong)zn), Z_OK, "a chunk is not zlib data");
        n = raw_len;
        int64_t id = 0;
        while (p < n) {
            uint64_t field[14];
            for (int k = 0; k < 14; k++)
                field[k] = varint(raw, &p, n);
            id += unzigzag(field[10]);
            if (count == cap) {
                cap = cap ? 2 * cap : 256;
                *ids = realloc(*ids, cap * sizeof **ids);
                *nodes = realloc(*nodes, cap * sizeof **nodes);
                cr_assert(*ids && *nodes);
            }
            (*ids)[count] = id;
            (*nodes)[count++] = (int64_t)field[4] - 1; /* node index + 1, 0: no node */
        }
        free(raw);
        free(z);
        at = end;
    }
    free(page);
    return count;
}

/* The page's data object, read from the file. */
static json_t *page_data(const char *html)
{
    size_t len;
    char *page = read_file(html, &len);
    const char *tag = "<script type=\"application/json\" id=\"ws-data\">";
    char *body = strstr(page, tag), *end = body ? strstr(body, "</script>") : NULL;
    cr_assert(body && end, "no ws-data in the page");
    body += strlen(tag);
    json_error_t jerr;
    json_t *d = json_loadb(body, (size_t)(end - body), 0, &jerr);
    cr_assert_not_null(d, "ws-data: %s", jerr.text);
    free(page);
    return d;
}

/* wsk names each weight buffer after the node that reads it (nvtxMemRegionsName); the buffers
 * are allocated before any node runs.  docs/view.md: an allocation named after a node is that
 * node's, so stacking and colouring by node show the weights under their node, and the page
 * carries every name for the block's tooltip. */
Test(view, named_allocations_are_their_nodes_and_keep_their_names)
{
    const char *trace = recorded_trace(), *html = in_dir("named.html");
    make_view(trace, html, NULL);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    static const char drawn[] = "SELECT id FROM allocations WHERE status = 0 AND memory IN ('device', 'managed')";
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(DISTINCT n.allocation_id) FROM allocation_names n JOIN strings s ON s.id = n.name_id"
             " WHERE n.allocation_id IN (%s) AND n.name_id IN (SELECT name_id FROM ranges WHERE kind = 'push')"
             " AND n.allocation_id IN (SELECT allocation_id FROM allocation_names GROUP BY allocation_id"
             " HAVING COUNT(*) = 1)",
             drawn);
    int64_t node_named = sqltest_int(db, sql);
    cr_assert_gt(node_named, 10, "wsk names its weights after their nodes");
    json_t *d = page_data(html), *nodes = json_object_get(d, "nodes"), *names = json_object_get(d, "allocation_names");
    snprintf(sql, sizeof sql, "SELECT COUNT(DISTINCT allocation_id) FROM allocation_names WHERE allocation_id IN (%s)",
             drawn);
    cr_expect_eq((int64_t)json_array_size(names), sqltest_int(db, sql), "every drawn allocation's name is in the page");
    int64_t *ids, *rec_nodes;
    size_t n = chunk_nodes(html, &ids, &rec_nodes), checked = 0;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT s.value FROM allocation_names n JOIN strings s ON s.id = n.name_id"
                                    " WHERE n.allocation_id = ?1 AND n.name_id IN (SELECT name_id FROM ranges WHERE"
                                    " kind = 'push') AND (SELECT COUNT(*) FROM allocation_names m WHERE"
                                    " m.allocation_id = ?1) = 1",
                                    -1, &st, NULL),
                 SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, ids[i]);
        if (sqlite3_step(st) != SQLITE_ROW)
            continue;
        const char *want = (const char *)sqlite3_column_text(st, 0);
        const char *got = rec_nodes[i] >= 0 ? json_string_value(json_array_get(nodes, (size_t)rec_nodes[i])) : NULL;
        cr_expect(got && !strcmp(got, want), "allocation %lld named '%s' is under node '%s'", (long long)ids[i], want,
                  got ? got : "(no node)");
        checked++;
    }
    sqlite3_finalize(st);
    cr_expect_eq((int64_t)checked, node_named);
    size_t i;
    json_t *e;
    json_array_foreach(names, i, e)
    {
        char *want = sql_text(db,
                              "SELECT s.value FROM allocation_names n JOIN strings s ON s.id = n.name_id"
                              " WHERE n.allocation_id = %lld ORDER BY n.rowid DESC LIMIT 1",
                              (long long)json_integer_value(json_array_get(e, 0)));
        cr_expect_str_eq(json_string_value(json_array_get(e, 1)), want);
        free(want);
    }
    free(ids), free(rec_nodes);
    json_decref(d);
    sqlite3_close(db);
}

/* The layers of a partition against its budget: one bar per partition, as many layers drawn as
 * fitting as the trace's partition_layers says, the caption's budget the partition's.  The first
 * budget is the cost of layer 0 alone, so that bar has a layer on each side of the cut. */
Test(view, layers_against_the_budget)
{
    const char *trace = recorded_trace(), *html = in_dir("partition.html");
    char err[2048], budgets[64];
    char *first[] = {(char *)tool("wstrace"), "partition", (char *)trace, "--budget", "1T", NULL};
    cr_assert_eq(run(first, NULL, err, sizeof err), 0, "wstrace partition: %s", err);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t one = sqltest_int(db, "SELECT cumulative_bytes FROM partition_layers WHERE ordinal = 0");
    int64_t layers = sqltest_int(db, "SELECT layers FROM partitions");
    sqlite3_close(db);
    cr_assert_gt(layers, 1);
    snprintf(budgets, sizeof budgets, "%lld,1T", (long long)one);
    char *argv[] = {(char *)tool("wstrace"), "partition", (char *)trace, "--budget", budgets, NULL};
    cr_assert_eq(run(argv, NULL, err, sizeof err), 0, "wstrace partition: %s", err);
    make_view(trace, html, NULL);
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    open_page(html, NULL);
    no_script_errors();
    cr_expect_eq(eval_int("document.querySelectorAll('#partition-panel figure.partition').length"), 2);
    for (int id = 1; id <= 2; id++) {
        char expr[256], sql[256];
        snprintf(expr, sizeof expr,
                 "document.querySelectorAll('#partition-panel figure[data-partition=\"%d\"] rect.layer-seg.fits')"
                 ".length",
                 id);
        snprintf(sql, sizeof sql, "SELECT SUM(fits) FROM partition_layers WHERE partition_id = %d", id);
        cr_expect_eq(eval_int(expr), sqltest_int(db, sql), "partition %d", id);
        snprintf(expr, sizeof expr,
                 "document.querySelectorAll('#partition-panel figure[data-partition=\"%d\"] rect.layer-seg').length",
                 id);
        cr_expect_eq(eval_int(expr), layers, "partition %d: every layer drawn", id);
    }
    cr_expect_eq(sqltest_int(db, "SELECT layers_fit FROM partitions WHERE id = 1"), 1);
    char *cap = eval_text("document.querySelector('#partition-panel figure[data-partition=\"1\"] figcaption')"
                          ".textContent");
    cr_expect(strstr(cap, grouped(one)) != NULL, "caption '%s' lacks the budget %s", cap, grouped(one));
    cr_expect(strstr(cap, "1 of ") != NULL, "caption '%s'", cap);
    free(cap);
    cr_expect_eq(eval_int("document.querySelectorAll('#table-partition_layers tbody tr').length"),
                 sqltest_int(db, "SELECT COUNT(*) FROM partition_layers"));
    sqlite3_close(db);
    close_page();
}

Test(view, chunks_hold_every_allocation_and_bands_take_over_for_wide_windows)
{
    const char *trace = recorded_trace(), *html = in_dir("lod.html");
    static const char *const env[] = {"WSTRACE_VIEW_CHUNK", "16", NULL};
    make_view(trace, html, env);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t t0 =
        sqltest_int(db, "SELECT MIN(lo) FROM (SELECT MIN(first_ns) AS lo FROM threads"
                        " UNION ALL SELECT MIN(start_ns) FROM ranges UNION ALL SELECT MIN(start_ns) FROM runs"
                        " UNION ALL SELECT MIN(alloc_ns) FROM allocations UNION ALL SELECT MIN(ns) FROM launches)");
    int64_t all =
        sqltest_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed')");
    cr_expect_eq((int64_t)check_chunks(html, db, t0), all, "nothing lost, nothing invented");

    /* A limit on the blocks drawn one by one between what lives across chunks and everything:
     * the whole trace is an overview, a narrow window is drawn block by block. */
    open_page(html, NULL);
    long long spanning = eval_int("JSON.parse(document.getElementById('ws-data').textContent).detail.spanning.n");
    cdp_stop(&browser);
    cr_assert_lt(spanning + 8, all, "the trace needs allocations that stay inside their chunks");
    char fragment[64];
    snprintf(fragment, sizeof fragment, "#detail=%lld", spanning + (all - spanning) / 4);
    open_page(html, fragment);
    no_script_errors();
    cr_expect_eq(eval_int("document.getElementById('blocks-count').dataset.count"), 0);
    char *status = eval_text("document.getElementById('blocks-count').textContent");
    cr_expect(strstr(status, "overview") != NULL, "'%s'", status);
    free(status);
    int64_t peak = sqltest_int(db, "SELECT MAX(live_bytes) FROM live_bytes");
    cr_expect_eq(eval_int("document.getElementById('peak-label').dataset.bytes"), peak);
    /* zoomed in far enough, the blocks come back from the chunks the window needs */
    for (int i = 0; i < 12 && eval_int("document.getElementById('blocks-count').dataset.count") == 0; i++) {
        js("(() => { document.getElementById('zoom-in').click(); return 1; })()");
        settle();
    }
    cr_expect_gt(eval_int("document.getElementById('blocks-count').dataset.count"), 0, "zooming in shows blocks");
    no_script_errors();
    close_page();
    sqlite3_close(db);
}

/* ---- names that are markup, or not UTF-8 ---- */

Test(view, hostile_names_stay_text)
{
    const char *trace = in_dir("names.db"), *html = in_dir("names.html");
    sqlite3 *db = NULL;
    char *msg = NULL;
    /* an empty trace from the schema the tools write: record a program that does nothing */
    char *rec[] = {(char *)tool("wstrace"), "record", "-o", (char *)trace, "--", "/bin/true", NULL};
    char err[2048];
    cr_assert_eq(run(rec, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    const char *sql =
        "INSERT OR REPLACE INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (1, 1, NULL, 1000, 9000);"
        "INSERT INTO strings(id, value) VALUES (101, '</script><script>window.pwned = 1</script>'),"
        " (102, '<img src=x onerror=\"window.pwned = 2\">'), (103, CAST(X'2F6D6F64656C2FFF' AS TEXT)),"
        " (104, 'quote \" backslash \\ amp & line' || char(8232) || 'sep <!-- -->');"
        "INSERT INTO ranges VALUES (1, 1, 1, 101, 0, 'push', 'nvtx', NULL, 0, NULL, 1000, 2000),"
        " (2, 1, 1, 102, 0, 'push', 'nvtx', NULL, 0, NULL, 2000, 3000),"
        " (3, 1, 1, 103, 0, 'push', 'nvtx', NULL, 0, NULL, 3000, 4000),"
        " (4, 1, 1, 104, 0, 'push', 'nvtx', NULL, 0, NULL, 4000, 5000);"
        "INSERT INTO allocations VALUES"
        " (1, 'cudaMalloc', 'device', 0, 4096, 256, 256, 0, NULL, 1, 1, NULL, 1100, 1900, 'cudaFree', 1, 1, NULL),"
        " (2, 'cudaMalloc', 'device', 0, 8192, 256, 256, 0, NULL, 1, 2, NULL, 2100, 2900, 'cudaFree', 1, 2, NULL),"
        " (3, 'cudaMalloc', 'device', 0, 4096, 256, 256, 0, NULL, 1, 3, NULL, 3100, 3900, 'cudaFree', 1, 3, NULL),"
        " (4, 'cudaMalloc', 'device', 0, 8192, 256, 256, 0, NULL, 1, 4, NULL, 4100, 4900, 'cudaFree', 1, 4, NULL);";
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s", msg ? msg : "");
    sqlite3_close(db);
    make_view(trace, html, NULL);
    open_page(html, NULL);
    no_script_errors();
    cr_expect_eq(eval_int("typeof window.pwned === 'undefined' ? 1 : 0"), 1, "a name ran as script");
    cr_expect_eq(eval_int("document.querySelectorAll('img').length"), 0, "a name became an element");
    cr_expect_eq(eval_int("Array.from(document.scripts).filter((s) => s.id !== 'ws-data' && "
                          "s.textContent.includes('pwned')).length"),
                 0);
    json_t *nodes = eval("JSON.parse(document.getElementById('ws-data').textContent).nodes");
    static const char *const want[] = {"</script><script>window.pwned = 1</script>",
                                       "<img src=x onerror=\"window.pwned = 2\">", "/model/\\xff",
                                       "quote \" backslash \\ amp & line\xe2\x80\xa8sep <!-- -->"};
    for (size_t k = 0; k < 4; k++) {
        int found = 0;
        size_t i;
        json_t *v;
        json_array_foreach(nodes, i, v) found |= !strcmp(json_string_value(v), want[k]);
        cr_expect(found, "node name %zu is not shown as written", k);
    }
    json_decref(nodes);
    cr_expect_eq(eval_int("document.getElementById('blocks-count').dataset.count"), 4);
    close_page();
}

/* ---- a trace with nothing in it, and bad input ---- */

Test(view, empty_trace_and_bad_input)
{
    const char *trace = in_dir("empty.db"), *html = in_dir("empty.html");
    char *rec[] = {(char *)tool("wstrace"), "record", "-o", (char *)trace, "--", "/bin/true", NULL};
    char err[2048];
    cr_assert_eq(run(rec, NULL, err, sizeof err), 0, "%s", err);
    make_view(trace, html, NULL);
    open_page(html, NULL);
    no_script_errors();
    cr_expect_eq(eval_int("document.getElementById('plan-panel').hidden ? 1 : 0"), 1, "no plan, no panel");
    cr_expect_eq(eval_int("document.querySelectorAll('#table-panels .panel').length"), 0, "no tables, no panels");
    close_page();

    const char *out = in_dir("bad.html");
    char *missing[] = {(char *)tool("wstrace"), "view", (char *)in_dir("missing.db"), "-o", (char *)out, NULL};
    char *two[] = {(char *)tool("wstrace"), "view", (char *)trace, (char *)trace, NULL};
    char *bogus[] = {(char *)tool("wstrace"), "view", (char *)trace, "--bogus", NULL};
    char *unwritable[] = {
        (char *)tool("wstrace"), "view", (char *)trace, "-o", (char *)in_dir("no/such/dir.html"), NULL};
    char *noarg[] = {(char *)tool("wstrace"), "view", (char *)trace, "-o", NULL};
    char *const *cases[] = {missing, two, bogus, unwritable, noarg};
    for (size_t i = 0; i < 5; i++) {
        cr_expect_eq(run(cases[i], NULL, err, sizeof err), 2, "case %zu", i);
        int lines = 0;
        for (const char *p = err; *p; p++)
            lines += *p == '\n';
        cr_expect_eq(lines, 1, "case %zu: one line, got '%s'", i, err);
        cr_expect(!strncmp(err, "wstrace: ", 9), "case %zu: '%s'", i, err);
        cr_expect(access(out, F_OK) != 0, "case %zu left an output", i);
    }
}
