#include "spool_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "identity.h"

static int thread_cmp(const void *a, const void *b)
{
    const struct ws_chunk_header *x = *(const struct ws_chunk_header *const *)a;
    const struct ws_chunk_header *y = *(const struct ws_chunk_header *const *)b;
    if (x->thread_serial != y->thread_serial)
        return x->thread_serial < y->thread_serial ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Records of chunk c a reader may trust: the committed ones that lie inside the file (a spool cut
 * short keeps every complete record before the cut).  *cut receives how many committed records
 * the cut took. */
static uint32_t chunk_readable(const struct ws_spool *s, const struct ws_chunk_header *c, uint32_t *cut)
{
    uint32_t n = __atomic_load_n(&c->committed, __ATOMIC_ACQUIRE);
    if (n > WS_CHUNK_RECS)
        n = WS_CHUNK_RECS;
    size_t off = (size_t)((const uint8_t *)c - s->map) + sizeof *c;
    uint64_t inside = (s->size - off) / WS_REC_BYTES; /* index_chunks keeps only whole chunk headers */
    *cut = n > inside ? n - (uint32_t)inside : 0;
    if (n > inside)
        return (uint32_t)inside;
    /* Version 3: then the records that published themselves, the partner of ws_rec_put() in
     * libtrace/tracer.h (acquire: the rest of such a record was stored before its tag). */
    if (s->hdr->version >= 3) {
        const struct ws_rec *r = (const struct ws_rec *)(c + 1);
        while (n < WS_CHUNK_RECS && n < inside &&
               __atomic_load_n(&r[n].tag, __ATOMIC_ACQUIRE) >> 16 == WS_REC_PUBLISHED)
            n++;
    }
    return n;
}

uint32_t ws_spool_chunk_records(const struct ws_spool *s, const struct ws_chunk_header *c)
{
    uint32_t cut;
    return chunk_readable(s, c, &cut);
}

/* A record's continuation count, without the WS_REC_PUBLISHED mark. */
static inline uint32_t rec_ext(const struct ws_rec *r) { return r->ext & WS_REC_EXT_MASK; }

static int check_header(const struct ws_spool *s, const char *path, char *err, size_t errlen)
{
    const struct ws_spool_header *h = s->hdr;
    if (s->size < WS_SPOOL_HEADER_BYTES || memcmp(h->magic, WS_SPOOL_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a wstrace spool", path);
        return -1;
    }
    /* Every version up to ours: version 2 only added record types. */
    if (h->version == 0 || h->version > WS_SPOOL_VERSION || h->chunk_bytes != WS_CHUNK_BYTES ||
        h->rec_bytes != WS_REC_BYTES || h->header_bytes != WS_SPOOL_HEADER_BYTES) {
        snprintf(err, errlen, "%s: spool format version %u is not supported by this wstrace (%u)", path, h->version,
                 WS_SPOOL_VERSION);
        return -1;
    }
    return 0;
}

/* Group the valid chunks by thread, each thread's chunks in sequence order. */
static int index_chunks(struct ws_spool *s)
{
    uint64_t claimed = __atomic_load_n(&s->hdr->next_chunk, __ATOMIC_ACQUIRE);
    /* A chunk counts when its header is in the file; the last one may be cut short. */
    uint64_t present =
        (s->size - WS_SPOOL_HEADER_BYTES + WS_CHUNK_BYTES - sizeof(struct ws_chunk_header)) / WS_CHUNK_BYTES;
    uint64_t n = claimed < present ? claimed : present;
    const struct ws_chunk_header **all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return -1;
    size_t valid = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct ws_chunk_header *c = (const void *)(s->map + WS_SPOOL_HEADER_BYTES + i * (uint64_t)WS_CHUNK_BYTES);
        /* A chunk claimed by a thread killed before it wrote its header holds nothing. */
        if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) == WS_CHUNK_MAGIC && c->thread_serial != 0)
            all[valid++] = c;
    }
    qsort(all, valid, sizeof *all, thread_cmp);
    size_t nthreads = 0;
    for (size_t i = 0; i < valid; i++)
        if (i == 0 || all[i]->thread_serial != all[i - 1]->thread_serial)
            nthreads++;
    s->threads = calloc(nthreads ? nthreads : 1, sizeof *s->threads);
    s->heap = calloc(nthreads ? nthreads : 1, sizeof *s->heap);
    if (!s->threads || !s->heap) {
        free(all);
        return -1;
    }
    size_t t = 0;
    for (size_t i = 0; i < valid; t++) {
        size_t j = i;
        while (j < valid && all[j]->thread_serial == all[i]->thread_serial)
            j++;
        struct ws_spool_thread *th = &s->threads[t];
        th->serial = all[i]->thread_serial;
        th->os_tid = all[i]->os_tid;
        th->nchunks = j - i;
        th->chunks = malloc(th->nchunks * sizeof *th->chunks);
        if (!th->chunks) {
            free(all);
            return -1;
        }
        memcpy(th->chunks, all + i, th->nchunks * sizeof *th->chunks);
        i = j;
    }
    s->nthreads = nthreads;
    s->nchunks = valid;
    free(all);
    return 0;
}

/* The record at a cursor over thread t's chunks, or NULL at its end.  A record that is not whole
 * (unknown type, string running past the committed ones) ends the trust in its chunk; with count
 * set, what is skipped is counted in corrupt_records. */
static const struct ws_rec *peek_at(struct ws_spool *s, const struct ws_spool_thread *t, size_t *chunk_at,
                                    uint32_t *rec_at, uint32_t *committed, int count)
{
    while (*chunk_at < t->nchunks) {
        const struct ws_chunk_header *c = t->chunks[*chunk_at];
        if (*rec_at == 0) {
            uint32_t cut; /* counted once per chunk, when the spool is opened */
            *committed = chunk_readable(s, c, &cut);
        }
        if (*rec_at < *committed) {
            const struct ws_rec *r = (const struct ws_rec *)(c + 1) + *rec_at;
            if (r->type > WS_REC_NONE && r->type < WS_REC_TYPE_COUNT && *rec_at + 1u + rec_ext(r) <= *committed &&
                (!(r->ext & WS_REC_PUBLISHED) || (s->hdr->version >= 3 && rec_ext(r) == 0)))
                return r;
            if (count)
                s->corrupt_records += *committed - *rec_at; /* the rest of this chunk is not trusted */
        }
        (*chunk_at)++;
        *rec_at = 0;
    }
    return NULL;
}

static const struct ws_rec *thread_peek(struct ws_spool *s, struct ws_spool_thread *t)
{
    return peek_at(s, t, &t->chunk_at, &t->rec_at, &t->committed, 1);
}

static int heap_less(struct ws_spool *s, size_t a, size_t b)
{
    const struct ws_rec *x = thread_peek(s, &s->threads[a]);
    const struct ws_rec *y = thread_peek(s, &s->threads[b]);
    if (x->ns != y->ns)
        return x->ns < y->ns;
    return s->threads[a].serial < s->threads[b].serial;
}

static void heap_swap(struct ws_spool *s, size_t i, size_t j)
{
    size_t tmp = s->heap[i];
    s->heap[i] = s->heap[j];
    s->heap[j] = tmp;
}

static void heap_down(struct ws_spool *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->heap_len && heap_less(s, s->heap[l], s->heap[m]))
            m = l;
        if (r < s->heap_len && heap_less(s, s->heap[r], s->heap[m]))
            m = r;
        if (m == i)
            return;
        heap_swap(s, i, m);
        i = m;
    }
}

static void heap_up(struct ws_spool *s, size_t i)
{
    while (i > 0 && heap_less(s, s->heap[i], s->heap[(i - 1) / 2])) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static int open_clock(struct ws_spool *s);

/* Version 3 says which clock times the records; earlier ones are all CLOCK_MONOTONIC. */
static int h_clock_tsc(const struct ws_spool_header *h) { return h->version >= 3 && h->clock == WS_CLOCK_TSC; }

int ws_spool_open(const char *path, struct ws_spool *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto fail;
    }
    s->size = (size_t)st.st_size;
    if (s->size < WS_SPOOL_HEADER_BYTES) {
        snprintf(err, errlen, "%s: not a wstrace spool (too short)", path);
        goto fail;
    }
    void *m = mmap(NULL, s->size, PROT_READ, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        goto fail;
    }
    s->map = m;
    s->hdr = m;
    if (check_header(s, path, err, errlen) != 0)
        goto fail;
    if (index_chunks(s) != 0) {
        snprintf(err, errlen, "%s: out of memory while indexing the spool", path);
        goto fail;
    }
    s->tsc = h_clock_tsc(s->hdr);
    if (s->tsc && open_clock(s) != 0) {
        snprintf(err, errlen, "%s: out of memory while reading the spool's clock", path);
        goto fail;
    }
    /* Committed records that a cut took: counted here, once (a chunk's head is peeked many times). */
    for (size_t i = 0; i < s->nthreads; i++)
        for (size_t k = 0; k < s->threads[i].nchunks; k++) {
            uint32_t cut;
            chunk_readable(s, s->threads[i].chunks[k], &cut);
            s->corrupt_records += cut;
        }
    for (size_t i = 0; i < s->nthreads; i++)
        if (thread_peek(s, &s->threads[i]))
            s->heap[s->heap_len++] = i;
    for (size_t i = s->heap_len; i-- > 0;)
        heap_down(s, i);
    return 0;
fail:
    ws_spool_close(s);
    return -1;
}

/* The calibration pairs of a spool timed by the counter (spool_clock.h): the header's, the
 * chunks', and, on the writer's boot, one read now. */
static int open_clock(struct ws_spool *s)
{
    const struct ws_spool_header *h = s->hdr;
    struct ws_clock_pair *pairs = calloc(s->nchunks + 3, sizeof *pairs);
    if (!pairs)
        return -1;
    size_t n = 0;
    pairs[n++] = (struct ws_clock_pair){h->start_tsc, h->start_ns};
    uint64_t end_ns = __atomic_load_n(&h->end_ns, __ATOMIC_ACQUIRE);
    if (end_ns)
        pairs[n++] = (struct ws_clock_pair){__atomic_load_n(&h->end_tsc, __ATOMIC_RELAXED), end_ns};
    for (size_t i = 0; i < s->nthreads; i++)
        for (size_t k = 0; k < s->threads[i].nchunks; k++) {
            const struct ws_chunk_header *c = s->threads[i].chunks[k];
            if (c->cal_tsc)
                pairs[n++] = (struct ws_clock_pair){c->cal_tsc, c->cal_ns};
        }
#if defined(__x86_64__)
    char boot[sizeof h->boot_id];
    ws_boot_id(boot, sizeof boot);
    if (boot[0] && strncmp(boot, h->boot_id, sizeof boot) == 0) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        uint64_t a = (uint64_t)hi << 32 | lo;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        uint64_t b = (uint64_t)hi << 32 | lo;
        pairs[n++] = (struct ws_clock_pair){a + (b - a) / 2, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec};
    }
#endif
    int rc = ws_spool_clock_init(&s->clock, pairs, n);
    free(pairs);
    return rc;
}

/* What the reader hands out for r, the head record of thread t: r itself, or its copy with the
 * time in nanoseconds (counter ticks) and without the WS_REC_PUBLISHED mark.  NULL when memory
 * runs out. */
static const struct ws_rec *hand_out(struct ws_spool *s, struct ws_spool_thread *t, const struct ws_rec *r)
{
    if (!s->tsc && !(r->ext & WS_REC_PUBLISHED))
        return r;
    size_t need = 1u + rec_ext(r);
    if (need > t->view_cap) {
        struct ws_rec *v = realloc(t->view, need * sizeof *v);
        if (!v)
            return NULL;
        t->view = v;
        t->view_cap = need;
    }
    memcpy(t->view, r, need * sizeof *r);
    t->view->ext = (uint16_t)rec_ext(r);
    if (s->tsc)
        t->view->ns = ws_spool_clock_ns(&s->clock, r->ns);
    return t->view;
}

/* Advance thread ti past its head record and restore the heap at position pos. */
static const struct ws_rec *take_head(struct ws_spool *s, size_t ti, size_t pos)
{
    struct ws_spool_thread *t = &s->threads[ti];
    const struct ws_rec *r = hand_out(s, t, thread_peek(s, t));
    if (!r)
        return NULL;
    t->rec_at += 1u + rec_ext(r);
    if (!thread_peek(s, t)) {
        s->heap[pos] = s->heap[--s->heap_len];
        if (pos == s->heap_len)
            return r;
    }
    /* Times only grow along a thread, but a damaged spool may say otherwise: restore both ways. */
    heap_up(s, pos);
    heap_down(s, pos);
    return r;
}

const struct ws_rec *ws_spool_next(struct ws_spool *s, size_t *thread)
{
    if (s->heap_len == 0)
        return NULL;
    *thread = s->heap[0];
    return take_head(s, s->heap[0], 0);
}

/* At most this many records of equal time are looked at per thread for a tie. */
#define TIE_SCAN 64

int ws_spool_find_tied(struct ws_spool *s, size_t except, uint64_t ns, uint8_t type, uint64_t address, size_t *thread)
{
    for (size_t h = 0; h < s->heap_len; h++) {
        size_t ti = s->heap[h];
        const struct ws_spool_thread *t = &s->threads[ti];
        if (ti == except)
            continue;
        size_t chunk_at = t->chunk_at;
        uint32_t rec_at = t->rec_at, committed = t->committed;
        for (int k = 0; k < TIE_SCAN; k++) {
            const struct ws_rec *r = peek_at(s, t, &chunk_at, &rec_at, &committed, 0);
            if (!r || (s->tsc ? ws_spool_clock_ns(&s->clock, r->ns) : r->ns) != ns)
                break;
            if (r->type == type && r->status == 0 && r->u[0] == address) {
                *thread = ti;
                return 1;
            }
            rec_at += 1u + rec_ext(r);
        }
    }
    return 0;
}

const struct ws_rec *ws_spool_next_of(struct ws_spool *s, size_t thread)
{
    for (size_t pos = 0; pos < s->heap_len; pos++)
        if (s->heap[pos] == thread)
            return take_head(s, thread, pos);
    return NULL;
}

void ws_spool_close(struct ws_spool *s)
{
    if (s->map)
        munmap((void *)s->map, s->size);
    if (s->fd >= 0)
        close(s->fd);
    for (size_t i = 0; i < s->nthreads; i++) {
        free(s->threads[i].chunks);
        free(s->threads[i].view);
    }
    free(s->threads);
    ws_spool_clock_free(&s->clock);
    free(s->heap);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
