/*
 * Unit tests of the spool reader (collector/spool_reader.c), the collector's pairing of
 * allocations and frees (collector/collector.c) and trace validation (collector/tracedb.c).
 * Spools are built by hand with the structs of common/spool_format.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector.h"
#include "spool_clock.h"
#include "spool_format.h"
#include "spool_reader.h"
#include "trace_util.h"
#include "tracedb.h"
#include "version.h"

TestSuite(spool, .fini = tu_cleanup);
TestSuite(pairing, .fini = tu_cleanup);
TestSuite(tracedb, .fini = tu_cleanup);

/* ---- a spool built by hand ---------------------------------------------------------------- */

enum { MAX_CHUNKS = 8 };

struct spool_builder {
    uint8_t *buf;
    size_t nchunks;
    uint32_t written[MAX_CHUNKS]; /* records written into each chunk, committed or not */
};

static void sb_init(struct spool_builder *b, size_t nchunks)
{
    cr_assert_leq(nchunks, MAX_CHUNKS);
    memset(b, 0, sizeof *b);
    b->nchunks = nchunks;
    b->buf = calloc(1, WS_SPOOL_HEADER_BYTES + nchunks * (size_t)WS_CHUNK_BYTES);
    cr_assert_not_null(b->buf);
    struct ws_spool_header *h = (void *)b->buf;
    memcpy(h->magic, WS_SPOOL_MAGIC, 8);
    h->version = WS_SPOOL_VERSION;
    h->header_bytes = WS_SPOOL_HEADER_BYTES;
    h->chunk_bytes = WS_CHUNK_BYTES;
    h->rec_bytes = WS_REC_BYTES;
    h->pid = 4321;
    h->ppid = 1;
    h->start_ns = 1;
    h->next_chunk = nchunks;
    h->next_thread = 2;
    h->images = 1;
    snprintf(h->backend, sizeof h->backend, "hand-made");
}

static struct ws_spool_header *sb_header(struct spool_builder *b) { return (void *)b->buf; }

static struct ws_chunk_header *sb_chunk(struct spool_builder *b, size_t i)
{
    return (void *)(b->buf + WS_SPOOL_HEADER_BYTES + i * (size_t)WS_CHUNK_BYTES);
}

/* Chunk i belongs to thread `serial` as its seq-th chunk; magic 0 leaves it unpublished. */
static void sb_chunk_init(struct spool_builder *b, size_t i, uint32_t serial, uint64_t seq, int with_magic)
{
    struct ws_chunk_header *c = sb_chunk(b, i);
    c->magic = with_magic ? WS_CHUNK_MAGIC : 0;
    c->thread_serial = serial;
    c->os_tid = 1000 + serial;
    c->seq = seq;
    c->image = 1;
}

/* Append a record (and its string) to chunk i; committed is set separately. */
static struct ws_rec *sb_rec(struct spool_builder *b, size_t i, uint8_t type, uint64_t ns, const char *text)
{
    size_t len = text ? strlen(text) : 0;
    uint32_t n = 1 + ws_string_recs(len);
    cr_assert_leq(b->written[i] + n, WS_CHUNK_RECS);
    struct ws_rec *r = (struct ws_rec *)(sb_chunk(b, i) + 1) + b->written[i];
    memset(r, 0, sizeof *r);
    r->type = type;
    r->ns = ns;
    r->ext = (uint16_t)(n - 1);
    if (text) {
        r->u[1] = len;
        memcpy(r + 1, text, len);
    }
    b->written[i] += n;
    return r;
}

static void sb_commit_all(struct spool_builder *b, size_t i) { sb_chunk(b, i)->committed = b->written[i]; }

static void sb_write(struct spool_builder *b, const char *path, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    size_t all = WS_SPOOL_HEADER_BYTES + b->nchunks * (size_t)WS_CHUNK_BYTES;
    cr_assert_eq(fwrite(b->buf, 1, bytes ? bytes : all, f), bytes ? bytes : all);
    fclose(f);
    free(b->buf);
    b->buf = NULL;
}

static void open_spool(const char *path, struct ws_spool *s)
{
    char err[512] = "";
    cr_assert_eq(ws_spool_open(path, s, err, sizeof err), 0, "ws_spool_open: %s", err);
}

/* ---- reader ---------------------------------------------------------------------------------- */

/* ---- the counter's clock (collector/spool_clock.c) ------------------------------------------- */

/*
 * Pairs (tick, ns), given out of order: (2000, 6000), (1000, 5000), (3000, 9000), and (4000, 8000),
 * which goes back in time and is raised to 9000.  By hand: 1000 -> 2000 is 1 ns a tick, 2000 ->
 * 3000 is 3 ns a tick, 3000 -> 4000 is flat; the mean rate is (9000 - 5000) / (4000 - 1000) = 4/3
 * ns a tick.  So 1500 -> 5500, 2500 -> 7500, 3500 -> 9000, 2000 -> 6000 (a pair itself),
 * 7000 -> 9000 + 3000 * 4/3 = 13000, 400 -> 5000 - 600 * 4/3 = 4200, 1 -> 5000 - 999 * 4/3 =
 * 3668 (rounded down).
 */
Test(spool, counter_ticks_map_piecewise_linearly_and_never_decrease)
{
    const struct ws_clock_pair pairs[] = {{2000, 6000}, {1000, 5000}, {0, 777}, {3000, 9000}, {4000, 8000}};
    struct ws_spool_clock c;
    cr_assert_eq(ws_spool_clock_init(&c, pairs, sizeof pairs / sizeof pairs[0]), 0);
    cr_expect_eq(c.n, 4, "a pair of tick 0 is no pair");
    cr_expect_eq(ws_spool_clock_ns(&c, 1500), 5500);
    cr_expect_eq(ws_spool_clock_ns(&c, 2000), 6000);
    cr_expect_eq(ws_spool_clock_ns(&c, 2500), 7500);
    cr_expect_eq(ws_spool_clock_ns(&c, 3500), 9000);
    cr_expect_eq(ws_spool_clock_ns(&c, 7000), 13000);
    cr_expect_eq(ws_spool_clock_ns(&c, 400), 4200);
    cr_expect_eq(ws_spool_clock_ns(&c, 1), 3668);
    uint64_t last = 0;
    for (uint64_t t = 1; t < 8000; t += 7) {
        uint64_t ns = ws_spool_clock_ns(&c, t);
        cr_assert_geq(ns, last, "the map decreases at tick %llu", (unsigned long long)t);
        last = ns;
    }
    ws_spool_clock_free(&c);

    const struct ws_clock_pair one[] = {{1000, 5000}};
    cr_assert_eq(ws_spool_clock_init(&c, one, 1), 0);
    cr_expect_eq(ws_spool_clock_ns(&c, 1250), 5250, "one pair: a tick counts a nanosecond");
    ws_spool_clock_free(&c);
    cr_expect_neq(ws_spool_clock_init(&c, pairs + 2, 1), 0, "no pair at all");
}

/*
 * A spool timed by the counter: the header's pair (1000, 5000) and chunk 0's (3000, 9000), no
 * other (no boot id: the reader adds none).  Thread 1 (chunk 0): ticks 1500, 2500 (with a string),
 * 4000; thread 2 (chunk 1, no pair): tick 2000.  Expected by hand, 2 ns a tick between the pairs
 * and beyond them: 6000 (thread 1), 7000 (thread 2), 8000 (thread 1, string intact), 11000
 * (thread 1).
 */
Test(spool, records_timed_by_the_counter_come_out_in_nanoseconds)
{
    struct spool_builder b;
    sb_init(&b, 2);
    struct ws_spool_header *h = sb_header(&b);
    h->clock = WS_CLOCK_TSC;
    h->start_tsc = 1000;
    h->start_ns = 5000;
    sb_chunk_init(&b, 0, 1, 0, 1);
    sb_chunk(&b, 0)->cal_tsc = 3000;
    sb_chunk(&b, 0)->cal_ns = 9000;
    sb_rec(&b, 0, WS_REC_ALLOC, 1500, NULL);
    sb_rec(&b, 0, WS_REC_PUSH, 2500, "a node name longer than one record: /model/layers.3/attn/MatMul_q");
    sb_rec(&b, 0, WS_REC_FREE, 4000, NULL);
    sb_commit_all(&b, 0);
    sb_chunk_init(&b, 1, 2, 0, 1);
    sb_rec(&b, 1, WS_REC_ALLOC, 2000, NULL);
    sb_commit_all(&b, 1);
    char path[512];
    tu_path(path, sizeof path, "ticks.spool");
    sb_write(&b, path, 0);

    struct ws_spool s;
    open_spool(path, &s);
    const uint64_t want_ns[] = {6000, 7000, 8000, 11000};
    const uint32_t want_serial[] = {1, 2, 1, 1};
    size_t n = 0, ti;
    const struct ws_rec *r;
    while ((r = ws_spool_next(&s, &ti)) != NULL) {
        cr_assert_lt(n, 4, "more records than were written");
        cr_expect_eq(r->ns, want_ns[n], "record %zu at %llu ns, not %llu", n, (unsigned long long)r->ns,
                     (unsigned long long)want_ns[n]);
        cr_expect_eq(s.threads[ti].serial, want_serial[n]);
        if (r->type == WS_REC_PUSH) {
            size_t len;
            const char *text = ws_rec_text(r, &len);
            cr_expect_eq(len, strlen("a node name longer than one record: /model/layers.3/attn/MatMul_q"));
            cr_expect(memcmp(text, "a node name longer than one record: /model/layers.3/attn/MatMul_q", len) == 0);
        }
        n++;
    }
    cr_expect_eq(n, 4);
    ws_spool_close(&s);
}

/*
 * Records that published themselves (spool format 3, WS_REC_PUBLISHED): chunk 0 counts 1 committed
 * record (time 10), then holds two published ones (20, 30), one whose head is written but not
 * published (40: its writer died), and a published one after it (50).  Expected: 10, 20, 30, each
 * handed out with ext 0, nothing after the unpublished one, nothing counted corrupt.  In a spool
 * of version 2 the mark means nothing: a marked record there is malformed.
 */
Test(spool, records_published_by_their_head_are_read_up_to_the_first_that_is_not)
{
    for (int version = 3; version >= 2; version--) {
        struct spool_builder b;
        sb_init(&b, 1);
        sb_header(&b)->version = (uint32_t)version;
        sb_chunk_init(&b, 0, 1, 0, 1);
        sb_rec(&b, 0, WS_REC_ALLOC, 10, NULL);
        sb_commit_all(&b, 0);
        sb_rec(&b, 0, WS_REC_ALLOC, 20, NULL)->ext = WS_REC_PUBLISHED;
        sb_rec(&b, 0, WS_REC_FREE, 30, NULL)->ext = WS_REC_PUBLISHED;
        sb_rec(&b, 0, WS_REC_ALLOC, 40, NULL);
        sb_rec(&b, 0, WS_REC_ALLOC, 50, NULL)->ext = WS_REC_PUBLISHED;
        if (version == 2)
            sb_chunk(&b, 0)->committed = 2; /* the marked record inside the count */
        char path[512];
        tu_path(path, sizeof path, version == 3 ? "published3.spool" : "published2.spool");
        sb_write(&b, path, 0);

        struct ws_spool s;
        open_spool(path, &s);
        const uint64_t want3[] = {10, 20, 30}, want2[] = {10};
        const uint64_t *want = version == 3 ? want3 : want2;
        size_t nwant = version == 3 ? 3 : 1, n = 0, ti;
        const struct ws_rec *r;
        while ((r = ws_spool_next(&s, &ti)) != NULL) {
            cr_assert_lt(n, nwant, "version %d: a record at %llu beyond the published ones", version,
                         (unsigned long long)r->ns);
            cr_expect_eq(r->ns, want[n], "version %d: record %zu", version, n);
            cr_expect_eq(r->ext, 0, "version %d: handed out without the mark", version);
            n++;
        }
        cr_expect_eq(n, nwant, "version %d", version);
        cr_expect_eq(s.corrupt_records, version == 3 ? 0 : 1, "version %d: corrupt %llu", version,
                     (unsigned long long)s.corrupt_records);
        ws_spool_close(&s);
    }
}

Test(spool, merges_threads_in_time_order_and_trusts_only_committed_records)
{
    struct spool_builder b;
    sb_init(&b, 4);
    /* File order differs from thread and sequence order on purpose. */
    sb_chunk_init(&b, 0, 1, 1, 1); /* thread 1, its second chunk */
    sb_rec(&b, 0, WS_REC_ALLOC, 70, NULL);
    sb_rec(&b, 0, WS_REC_ALLOC, 90, NULL);
    sb_commit_all(&b, 0);
    sb_chunk_init(&b, 1, 2, 0, 1); /* thread 2: two records published, two more written after */
    sb_rec(&b, 1, WS_REC_ALLOC, 20, NULL);
    sb_rec(&b, 1, WS_REC_PUSH, 40, "a node name longer than one record: /model/layers.3/attn/MatMul_q");
    sb_commit_all(&b, 1);
    sb_rec(&b, 1, WS_REC_ALLOC, 60, NULL);
    sb_rec(&b, 1, WS_REC_ALLOC, 80, NULL);
    sb_chunk_init(&b, 2, 1, 0, 1); /* thread 1, its first chunk */
    sb_rec(&b, 2, WS_REC_ALLOC, 10, NULL);
    sb_rec(&b, 2, WS_REC_FREE, 30, NULL);
    sb_rec(&b, 2, WS_REC_ALLOC, 50, NULL);
    sb_commit_all(&b, 2);
    sb_chunk_init(&b, 3, 3, 0, 0); /* claimed, never published: no magic */
    sb_rec(&b, 3, WS_REC_ALLOC, 5, NULL);
    sb_commit_all(&b, 3);
    char path[512];
    tu_path(path, sizeof path, "order.spool");
    sb_write(&b, path, 0);

    struct ws_spool s;
    open_spool(path, &s);
    cr_expect_eq(s.nthreads, 2);
    cr_expect_eq(s.nchunks, 3);
    static const struct {
        uint64_t ns;
        uint32_t serial;
        uint8_t type;
    } want[] = {{10, 1, WS_REC_ALLOC}, {20, 2, WS_REC_ALLOC}, {30, 1, WS_REC_FREE}, {40, 2, WS_REC_PUSH},
                {50, 1, WS_REC_ALLOC}, {70, 1, WS_REC_ALLOC}, {90, 1, WS_REC_ALLOC}};
    const struct ws_rec *r;
    size_t thread, n = 0;
    while ((r = ws_spool_next(&s, &thread)) != NULL) {
        cr_assert_lt(n, sizeof want / sizeof want[0], "more records than were committed (ns %llu)",
                     (unsigned long long)r->ns);
        cr_expect_eq(r->ns, want[n].ns, "record %zu", n);
        cr_expect_eq(r->type, want[n].type, "record %zu", n);
        cr_assert_lt(thread, s.nthreads);
        cr_expect_eq(s.threads[thread].serial, want[n].serial, "record %zu", n);
        cr_expect_eq(s.threads[thread].os_tid, 1000 + want[n].serial);
        if (r->type == WS_REC_PUSH) {
            size_t len;
            const char *text = ws_rec_text(r, &len);
            const char *name = "a node name longer than one record: /model/layers.3/attn/MatMul_q";
            cr_expect_eq(len, strlen(name));
            cr_expect_eq(memcmp(text, name, strlen(name)), 0);
        }
        n++;
    }
    cr_expect_eq(n, sizeof want / sizeof want[0]);
    cr_expect_eq(s.corrupt_records, 0);
    ws_spool_close(&s);
}

Test(spool, equal_times_go_in_thread_order)
{
    struct spool_builder b;
    sb_init(&b, 2);
    sb_chunk_init(&b, 0, 2, 0, 1);
    sb_rec(&b, 0, WS_REC_ALLOC, 100, NULL)->u[1] = 2;
    sb_commit_all(&b, 0);
    sb_chunk_init(&b, 1, 1, 0, 1);
    sb_rec(&b, 1, WS_REC_ALLOC, 100, NULL)->u[1] = 1;
    sb_rec(&b, 1, WS_REC_ALLOC, 100, NULL)->u[1] = 1;
    sb_commit_all(&b, 1);
    char path[512];
    tu_path(path, sizeof path, "ties.spool");
    sb_write(&b, path, 0);
    struct ws_spool s;
    open_spool(path, &s);
    size_t thread;
    uint64_t order[3] = {0};
    for (int i = 0; i < 3; i++) {
        const struct ws_rec *r = ws_spool_next(&s, &thread);
        cr_assert_not_null(r);
        order[i] = r->u[1];
    }
    cr_expect_null(ws_spool_next(&s, &thread));
    cr_expect(order[0] == 1 && order[1] == 1 && order[2] == 2, "order %llu %llu %llu", (unsigned long long)order[0],
              (unsigned long long)order[1], (unsigned long long)order[2]);
    ws_spool_close(&s);
}

Test(spool, malformed_record_skips_the_rest_of_its_chunk)
{
    struct spool_builder b;
    sb_init(&b, 1);
    sb_chunk_init(&b, 0, 1, 0, 1);
    sb_rec(&b, 0, WS_REC_ALLOC, 10, NULL);
    sb_rec(&b, 0, WS_REC_ALLOC, 20, NULL)->type = 200; /* no such record type */
    sb_rec(&b, 0, WS_REC_ALLOC, 30, NULL);
    sb_commit_all(&b, 0);
    char path[512];
    tu_path(path, sizeof path, "bad.spool");
    sb_write(&b, path, 0);
    struct ws_spool s;
    open_spool(path, &s);
    size_t thread;
    const struct ws_rec *r = ws_spool_next(&s, &thread);
    cr_assert_not_null(r);
    cr_expect_eq(r->ns, 10);
    cr_expect_null(ws_spool_next(&s, &thread));
    cr_expect_eq(s.corrupt_records, 2);
    ws_spool_close(&s);
}

Test(spool, only_claimed_and_present_chunks_are_read)
{
    struct spool_builder b;
    sb_init(&b, 3);
    for (size_t i = 0; i < 3; i++) {
        sb_chunk_init(&b, i, (uint32_t)(i + 1), 0, 1);
        sb_rec(&b, i, WS_REC_ALLOC, 10 * (i + 1), NULL);
        sb_commit_all(&b, i);
    }
    sb_header(&b)->next_chunk = 2; /* the third chunk was never claimed */
    char path[512];
    tu_path(path, sizeof path, "claimed.spool");
    sb_write(&b, path, 0);
    struct ws_spool s;
    open_spool(path, &s);
    cr_expect_eq(s.nchunks, 2);
    ws_spool_close(&s);

    sb_init(&b, 3);
    for (size_t i = 0; i < 3; i++) {
        sb_chunk_init(&b, i, (uint32_t)(i + 1), 0, 1);
        sb_rec(&b, i, WS_REC_ALLOC, 10 * (i + 1), NULL);
        sb_commit_all(&b, i);
    }
    /* Claimed three, but the file ends inside the first record of the third chunk (its header
     * is there): that record cannot be read, and it is counted. */
    sb_write(&b, path, WS_SPOOL_HEADER_BYTES + 2 * (size_t)WS_CHUNK_BYTES + 100);
    open_spool(path, &s);
    cr_expect_eq(s.nchunks, 3);
    size_t thread, n = 0;
    while (ws_spool_next(&s, &thread))
        n++;
    cr_expect_eq(n, 2);
    cr_expect_eq(s.corrupt_records, 1);
    ws_spool_close(&s);
}

/* Read every record of a spool: their times in out (up to max), the count returned. */
static size_t read_all(const char *path, uint64_t *out, size_t max, uint64_t *corrupt)
{
    struct ws_spool s;
    open_spool(path, &s);
    size_t thread, n = 0;
    const struct ws_rec *r;
    while ((r = ws_spool_next(&s, &thread)) != NULL) {
        if (n < max)
            out[n] = r->ns;
        n++;
    }
    *corrupt = s.corrupt_records;
    ws_spool_close(&s);
    return n;
}

/*
 * A committed count larger than the chunk holds (a damaged or hostile spool): only the chunk's
 * WS_CHUNK_RECS records are read, never the next chunk's header or records as if they were more of
 * this one.  Chunk 0 of thread 1 is full (times 1..WS_CHUNK_RECS) and claims 9 records more; chunk
 * 1 (thread 1's next) holds 2 records.  Expected: WS_CHUNK_RECS + 2 records in time order, none
 * counted corrupt (the excess names no record at all).
 */
Test(spool, a_committed_count_above_the_capacity_is_clamped)
{
    struct spool_builder b;
    sb_init(&b, 2);
    sb_chunk_init(&b, 0, 1, 0, 1);
    for (uint32_t i = 0; i < WS_CHUNK_RECS; i++)
        sb_rec(&b, 0, WS_REC_ALLOC, 1 + i, NULL);
    sb_chunk(&b, 0)->committed = WS_CHUNK_RECS + 9;
    sb_chunk_init(&b, 1, 1, 1, 1);
    sb_rec(&b, 1, WS_REC_ALLOC, WS_CHUNK_RECS + 1, NULL);
    sb_rec(&b, 1, WS_REC_FREE, WS_CHUNK_RECS + 2, NULL);
    sb_commit_all(&b, 1);
    char path[512];
    tu_path(path, sizeof path, "oversized.spool");
    sb_write(&b, path, 0);
    static uint64_t ns[WS_CHUNK_RECS + 16];
    uint64_t corrupt;
    size_t n = read_all(path, ns, sizeof ns / sizeof ns[0], &corrupt);
    cr_expect_eq(n, WS_CHUNK_RECS + 2);
    for (size_t i = 0; i < n && i < WS_CHUNK_RECS + 2; i++)
        cr_assert_eq(ns[i], i + 1, "record %zu", i);
    cr_expect_eq(corrupt, 0);
}

/*
 * A record whose string runs past the committed records is not whole: it is not handed on, and the
 * rest of its chunk is distrusted.  Thread 1: A (time 10), then B carrying a 150-byte name (1 + 3
 * records), committed = 3, so B's last string record is not committed.  Thread 2: C (time 20),
 * then D whose ext claims 60000 records (far beyond the chunk), all committed.  Expected: A and C
 * only; corrupt = 2 (B's committed records) + 2 (D and the record after it) = 4.
 */
Test(spool, a_string_running_past_the_committed_records_is_not_read)
{
    char name[151];
    memset(name, 'n', 150);
    name[150] = 0;
    struct spool_builder b;
    sb_init(&b, 2);
    sb_chunk_init(&b, 0, 1, 0, 1);
    sb_rec(&b, 0, WS_REC_ALLOC, 10, NULL);
    sb_rec(&b, 0, WS_REC_PUSH, 30, name);
    sb_chunk(&b, 0)->committed = 3;
    sb_chunk_init(&b, 1, 2, 0, 1);
    sb_rec(&b, 1, WS_REC_ALLOC, 20, NULL);
    sb_rec(&b, 1, WS_REC_PUSH, 40, "x")->ext = 60000;
    sb_rec(&b, 1, WS_REC_ALLOC, 50, NULL);
    sb_chunk(&b, 1)->committed = 3;
    char path[512];
    tu_path(path, sizeof path, "overrun.spool");
    sb_write(&b, path, 0);
    uint64_t ns[8], corrupt;
    size_t n = read_all(path, ns, 8, &corrupt);
    cr_assert_eq(n, 2);
    cr_expect(ns[0] == 10 && ns[1] == 20, "%llu %llu", (unsigned long long)ns[0], (unsigned long long)ns[1]);
    cr_expect_eq(corrupt, 4);
}

/*
 * A file cut inside a record (the page that held the rest never reached the disk): 20 records
 * committed, the file ends in the middle of the 11th.  Its first bytes (type, time) are in the
 * file, yet it is torn: 10 records are read, the 10 committed records the cut took are counted.
 * Then 20 records and a name of 66 bytes (head 20, string 21 and 22; 23 committed), the file cut
 * inside record 21: 20 records are read; counted are the 2 the cut took and the head whose string
 * is not whole (3).
 */
Test(spool, records_beyond_the_end_of_a_cut_file_are_not_read)
{
    for (int with_string = 0; with_string <= 1; with_string++) {
        struct spool_builder b;
        sb_init(&b, 1);
        sb_chunk_init(&b, 0, 1, 0, 1);
        for (int i = 0; i < 20; i++)
            sb_rec(&b, 0, WS_REC_ALLOC, 1 + (uint64_t)i, NULL);
        if (with_string) /* records 20 (head), 21 and 22 (its string); the cut falls inside 21 */
            sb_rec(&b, 0, WS_REC_PUSH, 100, "a name of more than sixty-four bytes, so that it takes two records");
        sb_commit_all(&b, 0);
        char path[512];
        tu_path(path, sizeof path, "cut.spool");
        size_t whole = with_string ? 21 : 10;
        sb_write(&b, path, WS_SPOOL_HEADER_BYTES + WS_REC_BYTES /* chunk header */ + whole * WS_REC_BYTES + 24);
        uint64_t ns[32], corrupt;
        size_t n = read_all(path, ns, 32, &corrupt);
        cr_expect_eq(n, with_string ? 20 : 10, "with_string %d", with_string);
        cr_expect_eq(corrupt, with_string ? 3 : 10, "with_string %d: corrupt %llu", with_string, (unsigned long long)corrupt);
        for (size_t i = 0; i < n && i < 32; i++)
            cr_expect_eq(ns[i], i + 1);
    }
}

/* ws_spool_open refuses path with one line that names the file and says why (`because`). */
static void expect_spool_refused(const char *path, const char *because)
{
    char err[512] = "";
    struct ws_spool s;
    cr_expect_eq(ws_spool_open(path, &s, err, sizeof err), -1, "%s was opened", path);
    cr_expect_eq(strncmp(err, path, strlen(path)), 0, "the message names the file: '%s'", err);
    cr_expect_not_null(strstr(err, because), "'%s' does not say '%s'", err, because);
    cr_expect_null(strchr(err, '\n'), "one line: '%s'", err);
}

Test(spool, refuses_what_is_not_a_spool)
{
    char path[512];
    tu_path(path, sizeof path, "missing.spool");
    expect_spool_refused(path, "No such file or directory");

    struct spool_builder b;
    sb_init(&b, 1);
    memcpy(sb_header(&b)->magic, "NOTSPOOL", 8);
    tu_path(path, sizeof path, "magic.spool");
    sb_write(&b, path, 0);
    expect_spool_refused(path, "not a wstrace spool");

    sb_init(&b, 1);
    sb_header(&b)->version = WS_SPOOL_VERSION + 1;
    tu_path(path, sizeof path, "version.spool");
    sb_write(&b, path, 0);
    expect_spool_refused(path, "is not supported");

    sb_init(&b, 1);
    tu_path(path, sizeof path, "short.spool");
    sb_write(&b, path, WS_SPOOL_HEADER_BYTES - 1);
    expect_spool_refused(path, "too short");
}

/* ---- collector: allocations paired with frees ------------------------------------------------ */

#define ADDR_X 0x7f0000001000ull
#define ADDR_Y 0x7f0000002000ull
#define ADDR_Z 0x7f0000003000ull
#define ADDR_W 0x7f0000004000ull

static void alloc_rec(struct spool_builder *b, size_t chunk, uint64_t ns, uint64_t addr, uint64_t bytes, int status)
{
    struct ws_rec *r = sb_rec(b, chunk, WS_REC_ALLOC, ns, NULL);
    r->api = WS_API_cudaMalloc;
    r->status = status;
    r->u[0] = status ? 0 : addr;
    r->u[1] = bytes;
    r->u[2] = status ? 0 : bytes;
    r->u[4] = (uint64_t)WS_MEM_DEVICE << 32;
}

static void free_rec(struct spool_builder *b, size_t chunk, uint64_t ns, uint64_t addr)
{
    struct ws_rec *r = sb_rec(b, chunk, WS_REC_FREE, ns, NULL);
    r->api = WS_API_cudaFree;
    r->u[0] = addr;
}

static sqlite3 *collect(struct spool_builder *b, char *db_path, size_t len)
{
    char spool[512], err[512] = "";
    tu_path(spool, sizeof spool, "pairs.spool");
    tu_path(db_path, len, "pairs.db");
    sb_write(b, spool, 0);
    struct ws_collect_stats st;
    cr_assert_eq(ws_collect_spool(spool, db_path, &st, err, sizeof err), 0, "ws_collect_spool: %s", err);
    return tu_open(db_path);
}

Test(pairing, address_reuse_pairs_each_free_with_the_latest_allocation)
{
    struct spool_builder b;
    sb_init(&b, 2);
    sb_chunk_init(&b, 0, 1, 0, 1);
    alloc_rec(&b, 0, 100, ADDR_X, 10, 0); /* A at X */
    free_rec(&b, 0, 200, ADDR_X);
    alloc_rec(&b, 0, 300, ADDR_X, 20, 0); /* B at X */
    free_rec(&b, 0, 400, ADDR_X);
    alloc_rec(&b, 0, 500, ADDR_Y, 30, 0); /* C at Y, never freed that we saw */
    alloc_rec(&b, 0, 600, ADDR_Y, 40, 0); /* D at Y */
    free_rec(&b, 0, 700, ADDR_Y);
    free_rec(&b, 0, 800, ADDR_Z);         /* nothing traced lives at Z */
    alloc_rec(&b, 0, 900, ADDR_W, 50, 0); /* freed by another thread */
    alloc_rec(&b, 0, 1000, 0, 60, 2);     /* failed */
    sb_commit_all(&b, 0);
    sb_chunk_init(&b, 1, 2, 0, 1);
    free_rec(&b, 1, 950, ADDR_W);
    sb_commit_all(&b, 1);
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);

    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 6);
    static const struct {
        long long bytes, alloc_ns, free_ns, address, free_thread;
        int status;
    } want[] = {
        {10, 100, 200, (long long)ADDR_X, 1, 0},           {20, 300, 400, (long long)ADDR_X, 1, 0},
        {30, 500, TU_NULL, (long long)ADDR_Y, TU_NULL, 0}, {40, 600, 700, (long long)ADDR_Y, 1, 0},
        {50, 900, 950, (long long)ADDR_W, 2, 0},           {60, 1000, TU_NULL, TU_NULL, TU_NULL, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_expect_eq(tu_int(db, "SELECT id FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns), (int64_t)i + 1,
                     "allocations are numbered in call order");
        cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns),
                     want[i].status ? 0 : want[i].bytes, "row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT requested_bytes FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns),
                     want[i].bytes, "row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns),
                     want[i].free_ns, "free time of row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT address FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns),
                     want[i].address, "row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT free_thread_id FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns),
                     want[i].free_thread, "row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT status FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns), want[i].status,
                     "row %zu", i);
        cr_expect_eq(tu_int(db, "SELECT thread_id FROM allocations WHERE alloc_ns=%lld", want[i].alloc_ns), 1);
    }
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 1);
    cr_expect_eq(tu_int(db, "SELECT address FROM api_errors"), (long long)ADDR_Z);
    cr_expect_eq(tu_int(db, "SELECT ns FROM api_errors"), 800);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 0, "end_ns is 0: the process died");
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), 4321);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM threads"), 2);
    sqlite3_close(db);
}

/*
 * A free that failed freed nothing: the allocation stays live until a free that succeeds.  A at X
 * (100); a cudaFree(X) at 200 that returned error 1 (cudaErrorInvalidValue); the real free at
 * 300.  Expected: one allocation, freed at 300; the failed call is a row of api_errors (status 1,
 * address X, time 200), and it closes nothing.  Also a failed free of a live zero-byte request's
 * NULL address is never paired: B (0 bytes, NULL) at 400, a successful allocation C at Y at 500 and
 * its free at 600.
 */
Test(pairing, a_failed_free_closes_nothing)
{
    struct spool_builder b;
    sb_init(&b, 1);
    sb_chunk_init(&b, 0, 1, 0, 1);
    alloc_rec(&b, 0, 100, ADDR_X, 10, 0);
    free_rec(&b, 0, 200, ADDR_X);
    ((struct ws_rec *)(sb_chunk(&b, 0) + 1))[1].status = 1; /* the free at 200 failed */
    free_rec(&b, 0, 300, ADDR_X);
    struct ws_rec *zero = sb_rec(&b, 0, WS_REC_ALLOC, 400, NULL); /* cudaMalloc(&p, 0): success, NULL */
    zero->api = WS_API_cudaMalloc;
    zero->u[4] = (uint64_t)WS_MEM_DEVICE << 32;
    alloc_rec(&b, 0, 500, ADDR_Y, 30, 0);
    free_rec(&b, 0, 600, ADDR_Y);
    sb_commit_all(&b, 0);
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3);
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE alloc_ns = 100"), 300);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 1);
    cr_expect_eq(tu_int(db, "SELECT status FROM api_errors"), 1);
    cr_expect_eq(tu_int(db, "SELECT address FROM api_errors"), (long long)ADDR_X);
    cr_expect_eq(tu_int(db, "SELECT ns FROM api_errors"), 200);
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE alloc_ns = 400"), TU_NULL);
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE alloc_ns = 500"), 600);
    sqlite3_close(db);
}

/* A free and the allocation that reused its address on another thread carry the same time (the
 * tracer times frees before their call, allocations after it, so the free is never later).  Thread
 * order would put the reuse first; the collector must pair as causality says. */
Test(pairing, a_free_and_its_reuse_at_the_same_time_pair_by_causality)
{
    struct spool_builder b;
    sb_init(&b, 2);
    sb_chunk_init(&b, 0, 1, 0, 1); /* thread 1: reuses X at 20, frees it at 30 */
    alloc_rec(&b, 0, 20, ADDR_X, 22, 0);
    free_rec(&b, 0, 30, ADDR_X);
    free_rec(&b, 0, 40, ADDR_Y); /* frees what thread 2 allocated at 40 */
    sb_commit_all(&b, 0);
    sb_chunk_init(&b, 1, 2, 0, 1); /* thread 2: X from 10 to 20 */
    alloc_rec(&b, 1, 10, ADDR_X, 11, 0);
    alloc_rec(&b, 1, 40, ADDR_Y, 33, 0); /* handed to thread 1, which frees it at the same time */
    free_rec(&b, 1, 20, ADDR_X);
    sb_commit_all(&b, 1);
    /* thread 2's records must be in time order: rewrite them as 10 alloc X, 20 free X, 40 alloc Y */
    struct ws_rec *t2 = (struct ws_rec *)(sb_chunk(&b, 1) + 1);
    struct ws_rec tmp = t2[1];
    t2[1] = t2[2];
    t2[2] = tmp;
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0, "no free without an allocation");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 0, "every block freed");
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE bytes=11"), 20);
    cr_expect_eq(tu_int(db, "SELECT free_thread_id FROM allocations WHERE bytes=11"), 2);
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE bytes=22"), 30);
    cr_expect_eq(tu_int(db, "SELECT free_thread_id FROM allocations WHERE bytes=22"), 1);
    cr_expect_eq(tu_int(db, "SELECT thread_id FROM allocations WHERE bytes=33"), 2);
    cr_expect_eq(tu_int(db, "SELECT free_thread_id FROM allocations WHERE bytes=33"), 1);
    cr_expect_eq(tu_int(db, "SELECT free_ns FROM allocations WHERE bytes=33"), 40);
    sqlite3_close(db);
}

/* Strings are bytes: two names that differ only after an embedded NUL are two names, each stored
 * verbatim, and the same one twice is one row. */
Test(pairing, names_with_embedded_nuls_are_stored_verbatim)
{
    static const char a[] = "node\0one", b2[] = "node\0two";
    struct spool_builder b;
    sb_init(&b, 1);
    sb_chunk_init(&b, 0, 1, 0, 1);
    const char *names[] = {a, b2, a};
    for (int i = 0; i < 3; i++) {
        struct ws_rec *r = sb_rec(&b, 0, WS_REC_PUSH, 10 + 10 * (uint64_t)i, "123456789");
        memcpy(r + 1, names[i], sizeof a - 1); /* 8 bytes with a NUL in the middle */
        r->u[1] = sizeof a - 1;
        sb_rec(&b, 0, WS_REC_POP, 15 + 10 * (uint64_t)i, NULL);
    }
    sb_commit_all(&b, 0);
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT name_id) FROM ranges"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(CAST(value AS BLOB)) = '6E6F6465006F6E65'"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(CAST(value AS BLOB)) = '6E6F64650074776F'"), 1);
    sqlite3_close(db);
}

/* Text fields of the header that fill their whole field (no NUL) are read within it. */
Test(pairing, header_strings_without_a_terminator_stay_in_bounds)
{
    struct spool_builder b;
    sb_init(&b, 1);
    struct ws_spool_header *h = sb_header(&b);
    memset(h->backend, 'b', sizeof h->backend);
    memset(h->tool_version, 'v', sizeof h->tool_version);
    memset(h->output, 'o', sizeof h->output);
    sb_chunk_init(&b, 0, 1, 0, 1);
    alloc_rec(&b, 0, 10, ADDR_X, 1, 0);
    sb_commit_all(&b, 0);
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);
    cr_expect_eq(tu_int(db, "SELECT length(value) FROM meta WHERE key='capture_backend'"), 32);
    cr_expect_eq(tu_int(db, "SELECT value = printf('%%.32c', 'b') FROM meta WHERE key='capture_backend'"), 1);
    cr_expect_eq(tu_int(db, "SELECT length(value) FROM meta WHERE key='tracer_version'"), 32);
    sqlite3_close(db);
}

/* The temporary trace is created exclusively and never through a link planted at its name; a
 * temporary file a killed collector left is removed; the destination must be a regular file. */
Test(pairing, temporary_files_are_exclusive_and_stale_ones_removed)
{
    char spool[512], db_path[512], planted[600], victim[512], stale[600], err[512] = "";
    tu_path(spool, sizeof spool, "t.spool");
    tu_path(db_path, sizeof db_path, "t.db");
    tu_path(victim, sizeof victim, "victim");
    struct spool_builder b;
    sb_init(&b, 1);
    sb_chunk_init(&b, 0, 1, 0, 1);
    alloc_rec(&b, 0, 10, ADDR_X, 1, 0);
    sb_commit_all(&b, 0);
    sb_write(&b, spool, 0);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("precious", f);
    fclose(f);
    /* The name this process would use first, planted as a link to the victim. */
    snprintf(planted, sizeof planted, "%s.tmp.%ld", db_path, (long)getpid());
    cr_assert_eq(symlink(victim, planted), 0);
    /* A temporary file of a collector that is gone: a child that has exited. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    snprintf(stale, sizeof stale, "%s.tmp.%ld", db_path, (long)child);
    f = fopen(stale, "w");
    cr_assert_not_null(f);
    fclose(f);

    struct ws_collect_stats st;
    cr_assert_eq(ws_collect_spool(spool, db_path, &st, err, sizeof err), 0, "%s", err);
    char *text = tu_read_file(victim, NULL);
    cr_expect_str_eq(text, "precious", "written through the planted link");
    free(text);
    struct stat ls;
    cr_expect(lstat(planted, &ls) == 0 && S_ISLNK(ls.st_mode), "the planted link is left alone");
    cr_expect_not(tu_exists(stale), "the stale temporary file is removed");
    sqlite3 *db = tu_open(db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1);
    sqlite3_close(db);

    /* A destination that is a link (to the victim) or the spool itself is refused. */
    char link[512];
    tu_path(link, sizeof link, "link.db");
    cr_assert_eq(symlink(victim, link), 0);
    err[0] = 0;
    cr_expect_eq(ws_collect_spool(spool, link, &st, err, sizeof err), -1);
    cr_expect_str_not_empty(err);
    text = tu_read_file(victim, NULL);
    cr_expect_str_eq(text, "precious");
    free(text);
    err[0] = 0;
    cr_expect_eq(ws_collect_spool(spool, spool, &st, err, sizeof err), -1);
    cr_expect_str_not_empty(err);
    db = tu_open(db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1, "the earlier trace is untouched");
    sqlite3_close(db);
}

Test(pairing, ranges_nest_and_unclosed_ones_stay_open)
{
    struct spool_builder b;
    sb_init(&b, 1);
    sb_chunk_init(&b, 0, 1, 0, 1);
    sb_rec(&b, 0, WS_REC_PUSH, 10, "outer")->api = WS_API_nvtx;
    sb_rec(&b, 0, WS_REC_PUSH, 20, "inner")->api = WS_API_nvtx;
    alloc_rec(&b, 0, 30, ADDR_X, 100, 0);
    sb_rec(&b, 0, WS_REC_POP, 40, NULL)->api = WS_API_nvtx;
    alloc_rec(&b, 0, 50, ADDR_Y, 200, 0);
    sb_commit_all(&b, 0);
    sb_header(&b)->end_ns = 60;
    char db_path[512];
    sqlite3 *db = collect(&b, db_path, sizeof db_path);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges"), 2);
    int64_t outer = tu_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='outer'");
    int64_t inner = tu_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='inner'");
    cr_expect_eq(tu_int(db, "SELECT parent_id FROM ranges WHERE id=%lld", (long long)inner), outer);
    cr_expect_eq(tu_int(db, "SELECT depth FROM ranges WHERE id=%lld", (long long)inner), 1);
    cr_expect_eq(tu_int(db, "SELECT end_ns FROM ranges WHERE id=%lld", (long long)inner), 40);
    cr_expect_eq(tu_int(db, "SELECT end_ns FROM ranges WHERE id=%lld", (long long)outer), TU_NULL, "never popped");
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE bytes=100"), inner);
    cr_expect_eq(tu_int(db, "SELECT range_id FROM allocations WHERE bytes=200"), outer);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
    sqlite3_close(db);
}

/* ---- trace validation --------------------------------------------------------------------- */

static void make_trace(char *path, size_t len, const char *name)
{
    char err[512] = "";
    sqlite3 *db = NULL;
    tu_path(path, len, name);
    cr_assert_eq(ws_tracedb_create(path, &db, err, sizeof err), 0, "ws_tracedb_create: %s", err);
    sqlite3_close(db);
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg);
    sqlite3_close(db);
}

/* ws_tracedb_open refuses path; its one-line message contains `contains`. */
static void expect_refused(const char *path, const char *contains)
{
    char err[512] = "";
    sqlite3 *db = (sqlite3 *)(uintptr_t)1;
    cr_expect_eq(ws_tracedb_open(path, WS_TRACEDB_READ, &db, err, sizeof err), -1, "%s was accepted", path);
    cr_expect_null(db);
    cr_expect_str_not_empty(err);
    cr_expect_null(strchr(err, '\n'), "one line: %s", err);
    if (contains)
        cr_expect_not_null(strstr(err, contains), "'%s' does not mention '%s'", err, contains);
}

Test(tracedb, opens_a_current_trace)
{
    char path[512], err[512] = "";
    make_trace(path, sizeof path, "ok.db");
    sqlite3 *db = NULL;
    cr_expect_eq(ws_tracedb_open(path, WS_TRACEDB_READ, &db, err, sizeof err), 0, "%s", err);
    cr_expect_not_null(db);
    cr_expect_eq(tu_int(db, "PRAGMA user_version"), WSTRACE_SCHEMA_VERSION);
    sqlite3_close(db);
}

Test(tracedb, refuses_a_newer_schema_version)
{
    char path[512], sql[64];
    make_trace(path, sizeof path, "newer.db");
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", WSTRACE_SCHEMA_VERSION + 1);
    exec_sql(path, sql);
    expect_refused(path, "newer");
}

Test(tracedb, refuses_a_file_that_is_not_sqlite)
{
    char path[512];
    tu_path(path, sizeof path, "text.db");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 200; i++)
        fputs("this is not an SQLite database\n", f);
    fclose(f);
    expect_refused(path, NULL);
}

Test(tracedb, refuses_a_database_without_meta)
{
    char path[512];
    tu_path(path, sizeof path, "nometa.db");
    exec_sql(path, "CREATE TABLE something(a); PRAGMA user_version = 1;");
    expect_refused(path, NULL);
}

Test(tracedb, refuses_a_trace_missing_ranges)
{
    char path[512];
    make_trace(path, sizeof path, "noranges.db");
    exec_sql(path, "DROP TABLE ranges;");
    expect_refused(path, "ranges");
}

Test(tracedb, refuses_a_missing_file)
{
    char path[512];
    tu_path(path, sizeof path, "missing.db");
    expect_refused(path, NULL);
    cr_expect_not(tu_exists(path), "opening for reading creates nothing");
}
