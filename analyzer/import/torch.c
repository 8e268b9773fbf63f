/*
 * PyTorch CUDA memory snapshot -> trace.  The snapshot is a pickled dict (torch/cuda/memory.py,
 * _snapshot): "segments" (the allocator's state when the snapshot was taken: device segments and
 * the blocks inside them) and "device_traces" (per device, the allocator's recorded actions:
 * alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map,
 * segment_unmap, oom, snapshot).  Blocks become device allocations; segments become rows of
 * memory 'reserved' (the device's view, which the analyses do not count as allocations).
 * Nodes are synthesized from the allocations' frames: docs/import.md, "PyTorch snapshots".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import.h"

#define CUDA_ERROR_MEMORY_ALLOCATION 2
#define THREAD                       1

struct open_block {
    int64_t device, address, alloc_id_slot; /* index into blocks */
};

struct block { /* a pending allocation row */
    struct ws_alloc_row row;
    const struct ws_pv *frames;
    int live;
};

struct importer {
    struct ws_trace_writer w;
    struct ws_import_stats *st;
    enum ws_node_rule rule;
    const char *path;
    int have_time;
    int64_t ordinal, first_ns, last_ns, cur_ns;
    int bad_time;
    /* blocks and segments still open, by (device, address): linear lists searched from the end */
    struct block *blocks;
    size_t nblocks, capblocks;
    struct block *segs;
    size_t nsegs, capsegs;
    /* the node occurrence being built on the current device */
    int64_t occ_id, occ_name, occ_start, root_id, next_range, next_alloc, run;
    /* stacks by frames list (the pickle shares equal lists) */
    const struct ws_pv **stack_keys;
    int64_t *stack_ids;
    size_t nstacks, capstacks;
    int64_t skipped_actions, before_history_blocks, before_history_segments, unmatched_frees;
};

static int64_t pv_int(const struct ws_pv *v, int64_t dflt)
{
    return v && (v->kind == WS_PV_INT || v->kind == WS_PV_BOOL) ? v->i : dflt;
}

static const char *pv_str(const struct ws_pv *v) { return v && v->kind == WS_PV_STR ? v->s : NULL; }

static int grow(void *pp, size_t *cap, size_t n, size_t elem)
{
    void **p = pp;
    if (n < *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, next * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = next;
    return 0;
}

/* ---- frames: stacks and node names ---- */

static int is_library_file(const char *f)
{
    int packaged = strstr(f, "site-packages/") || strstr(f, "dist-packages/");
    return strstr(f, "/torch/") || strncmp(f, "torch/", 6) == 0 || (strstr(f, "/lib/python3") && !packaged) ||
           strncmp(f, "<frozen", 7) == 0;
}

static const struct ws_pv *frame_at(const struct ws_pv *frames, size_t i)
{
    return frames->items[i]->kind == WS_PV_DICT ? frames->items[i] : NULL;
}

/* The frame that names the node: the innermost Python frame outside torch and the standard
 * library, else the innermost Python frame, else the innermost frame. */
static const struct ws_pv *naming_frame(const struct ws_pv *frames)
{
    if (!frames || frames->kind != WS_PV_LIST || frames->len == 0)
        return NULL;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < frames->len; i++) {
            const struct ws_pv *f = frame_at(frames, i);
            const char *file = f ? pv_str(ws_pv_get(f, "filename")) : NULL;
            if (!file)
                continue;
            size_t n = strlen(file);
            int py = n > 3 && strcmp(file + n - 3, ".py") == 0;
            if (pass == 2 || (pass == 1 && py) || (pass == 0 && py && !is_library_file(file)))
                return f;
        }
    return NULL;
}

static void node_name(const struct ws_pv *frame, enum ws_node_rule rule, char *out, size_t len)
{
    const char *file = pv_str(ws_pv_get(frame, "filename")), *fn = pv_str(ws_pv_get(frame, "name"));
    int64_t line = pv_int(ws_pv_get(frame, "line"), 0);
    if (!fn)
        fn = "?";
    if (rule == WS_NODE_FRAME) {
        const char *base = strrchr(file, '/');
        snprintf(out, len, "%s:%lld:%s", base ? base + 1 : file, (long long)line, fn);
        return;
    }
    const char *path = strstr(file, "site-packages/");
    path = path ? path + 14 : (strrchr(file, '/') ? strrchr(file, '/') + 1 : file);
    size_t n = 0;
    for (const char *c = path; *c && n + 1 < len; c++)
        out[n++] = *c == '/' ? '.' : *c;
    out[n] = 0;
    if (n > 3 && strcmp(out + n - 3, ".py") == 0)
        out[n -= 3] = 0;
    if (n > 9 && strcmp(out + n - 9, ".__init__") == 0)
        out[n -= 9] = 0;
    snprintf(out + n, len - n, ".%s", fn);
}

static int64_t stack_of(struct importer *im, const struct ws_pv *frames)
{
    if (!frames || frames->kind != WS_PV_LIST || frames->len == 0)
        return 0;
    for (size_t i = 0; i < im->nstacks; i++)
        if (im->stack_keys[i] == frames)
            return im->stack_ids[i];
    size_t n = frames->len;
    int64_t *fn = calloc(n, sizeof *fn), *file = calloc(n, sizeof *file), *line = calloc(n, sizeof *line);
    int64_t id = -1;
    if (!fn || !file || !line)
        goto out;
    for (size_t d = 0; d < n; d++) {
        const struct ws_pv *f = frame_at(frames, d);
        const char *a = f ? pv_str(ws_pv_get(f, "name")) : NULL, *b = f ? pv_str(ws_pv_get(f, "filename")) : NULL;
        fn[d] = a ? ws_writer_string(&im->w, a) : WS_UNKNOWN;
        file[d] = b ? ws_writer_string(&im->w, b) : WS_UNKNOWN;
        line[d] = f ? pv_int(ws_pv_get(f, "line"), WS_UNKNOWN) : WS_UNKNOWN;
        if (fn[d] == -1 || file[d] == -1)
            goto out;
    }
    id = ws_writer_stack(&im->w, n, fn, file, line);
    size_t keys_cap = im->capstacks;
    if (id > 0 && grow(&im->stack_keys, &keys_cap, im->nstacks, sizeof *im->stack_keys) != 0)
        id = -1;
    if (id > 0 && grow(&im->stack_ids, &im->capstacks, im->nstacks, sizeof *im->stack_ids) != 0)
        id = -1;
    if (id > 0) {
        im->stack_keys[im->nstacks] = frames;
        im->stack_ids[im->nstacks++] = id;
    }
out:
    free(fn);
    free(file);
    free(line);
    return id;
}

/* ---- node occurrences ---- */

static int close_occurrence(struct importer *im, int64_t end_ns)
{
    if (!im->occ_id)
        return 0;
    struct ws_range_row r = {.id = im->occ_id,
                             .thread = THREAD,
                             .end_thread = THREAD,
                             .name = im->occ_name,
                             .parent = im->root_id,
                             .depth = 1,
                             .run = im->run,
                             .start_ns = im->occ_start,
                             .end_ns = end_ns,
                             .kind = "push",
                             .source = "frames"};
    im->occ_id = 0;
    im->st->ranges++;
    return ws_writer_range(&im->w, &r);
}

/* The occurrence an allocation with these frames belongs to: the current one when the frames
 * name the same node, else a new one (0 when the frames name nothing). */
static int64_t occurrence_for(struct importer *im, const struct ws_pv *frames, int64_t ns)
{
    const struct ws_pv *f = naming_frame(frames);
    if (!f || !pv_str(ws_pv_get(f, "filename"))) {
        if (close_occurrence(im, ns) != 0)
            return -1;
        return 0;
    }
    char name[1024];
    node_name(f, im->rule, name, sizeof name);
    int64_t id = ws_writer_string(&im->w, name);
    if (id < 0)
        return -1;
    if (im->occ_id && im->occ_name == id)
        return im->occ_id;
    if (close_occurrence(im, ns) != 0)
        return -1;
    im->occ_id = ++im->next_range;
    im->occ_name = id;
    im->occ_start = ns;
    return im->occ_id;
}

/* ---- rows ---- */

static struct block *find_open(struct block *v, size_t n, int64_t device, int64_t address)
{
    for (size_t i = n; i-- > 0;)
        if (v[i].live && v[i].row.device == device && v[i].row.address == address)
            return &v[i];
    return NULL;
}

static int write_block(struct importer *im, struct block *b)
{
    int64_t id = ws_writer_alloc(&im->w, &b->row);
    if (id < 0)
        return -1;
    b->live = 0;
    im->st->allocations++;
    im->st->frees += b->row.free_ns != WS_UNKNOWN;
    int64_t stack = stack_of(im, b->frames);
    if (stack < 0)
        return -1;
    return stack > 0 ? ws_writer_alloc_stack(&im->w, id, stack) : 0;
}

static struct block *open_row(struct importer *im, struct block **v, size_t *n, size_t *cap, int64_t device,
                              int64_t address)
{
    struct block *old = find_open(*v, *n, device, address);
    /* The same address handed out again without a recorded free: the earlier row stays unfreed
     * (its free fell outside the recorded history), as the collector does. */
    if (old && write_block(im, old) != 0)
        return NULL;
    if (grow(v, cap, *n, sizeof **v) != 0)
        return NULL;
    struct block *b = &(*v)[(*n)++];
    memset(b, 0, sizeof *b);
    ws_alloc_row_init(&b->row);
    b->row.device = device;
    b->row.address = address;
    b->row.thread = THREAD;
    b->row.id = ++im->next_alloc;
    b->live = 1;
    return b;
}

static int64_t event_ns(struct importer *im, const struct ws_pv *e)
{
    const struct ws_pv *t = ws_pv_get(e, "time_us");
    int64_t ns = ++im->ordinal;
    if (im->have_time && t && __builtin_mul_overflow(pv_int(t, 0), 1000, &ns))
        im->bad_time = 1; /* reported by the caller: no nanosecond time fits it */
    if (!im->first_ns || ns < im->first_ns)
        im->first_ns = ns;
    if (ns > im->last_ns)
        im->last_ns = ns;
    im->cur_ns = ns;
    return ns;
}

static int on_event(struct importer *im, int64_t device, const struct ws_pv *e)
{
    const char *action = pv_str(ws_pv_get(e, "action"));
    int64_t addr = pv_int(ws_pv_get(e, "addr"), WS_UNKNOWN), size = pv_int(ws_pv_get(e, "size"), 0);
    int64_t stream = pv_int(ws_pv_get(e, "stream"), WS_UNKNOWN), ns = event_ns(im, e);
    const struct ws_pv *frames = ws_pv_get(e, "frames");
    struct block *b;
    if (!action) {
        im->skipped_actions++;
        return 0;
    }
    if (strcmp(action, "alloc") == 0) {
        int64_t occ = occurrence_for(im, frames, ns);
        if (occ < 0 || !(b = open_row(im, &im->blocks, &im->nblocks, &im->capblocks, device, addr)))
            return -1;
        b->row.api = "torch.alloc";
        b->row.memory = "device";
        b->row.requested = b->row.bytes = size;
        b->row.stream = stream;
        b->row.alloc_ns = ns;
        b->row.range = occ;
        b->row.run = im->run;
        b->frames = frames;
        return 0;
    }
    if (strcmp(action, "free_requested") == 0 || strcmp(action, "free_completed") == 0) {
        b = find_open(im->blocks, im->nblocks, device, addr);
        if (!b) {
            if (strcmp(action, "free_completed") == 0)
                return 0; /* its free_requested already said so */
            im->unmatched_frees++;
            return ws_writer_api_error(&im->w, "torch.free", 0, addr, THREAD, im->occ_id, ns);
        }
        b->row.free_ns = ns;
        b->row.free_api = "torch.free";
        b->row.free_thread = THREAD;
        b->row.free_range = im->occ_id ? im->occ_id : WS_UNKNOWN;
        b->row.free_stream = stream;
        return strcmp(action, "free_completed") == 0 ? write_block(im, b) : 0;
    }
    if (strcmp(action, "segment_alloc") == 0 || strcmp(action, "segment_map") == 0) {
        if (!(b = open_row(im, &im->segs, &im->nsegs, &im->capsegs, device, addr)))
            return -1;
        b->row.api = action[8] == 'a' ? "cudaMalloc" : "cuMemMap";
        b->row.memory = "reserved";
        b->row.requested = b->row.bytes = size;
        b->row.stream = stream;
        b->row.alloc_ns = ns;
        b->row.range = im->occ_id ? im->occ_id : WS_UNKNOWN;
        b->row.run = im->run;
        return 0;
    }
    if (strcmp(action, "segment_free") == 0 || strcmp(action, "segment_unmap") == 0) {
        b = find_open(im->segs, im->nsegs, device, addr);
        if (!b) {
            im->unmatched_frees++;
            return ws_writer_api_error(&im->w, action[8] == 'f' ? "cudaFree" : "cuMemUnmap", 0, addr, THREAD,
                                       im->occ_id, ns);
        }
        b->row.free_ns = ns;
        b->row.free_api = action[8] == 'f' ? "cudaFree" : "cuMemUnmap";
        b->row.free_thread = THREAD;
        b->row.free_range = im->occ_id ? im->occ_id : WS_UNKNOWN;
        return write_block(im, b);
    }
    if (strcmp(action, "oom") == 0) {
        struct ws_alloc_row r;
        ws_alloc_row_init(&r);
        r.api = "torch.alloc";
        r.memory = "device";
        r.device = device;
        r.requested = size;
        r.status = CUDA_ERROR_MEMORY_ALLOCATION;
        r.stream = stream;
        r.thread = THREAD;
        r.range = im->occ_id ? im->occ_id : WS_UNKNOWN;
        r.alloc_ns = ns;
        r.run = im->run;
        r.id = ++im->next_alloc;
        im->st->allocations++;
        return ws_writer_alloc(&im->w, &r) < 0 ? -1 : 0;
    }
    if (strcmp(action, "snapshot") == 0) {
        int64_t name = ws_writer_string(&im->w, "snapshot");
        im->st->marks++;
        return name < 0 ? -1 : ws_writer_mark(&im->w, THREAD, name, 0, im->occ_id, ns);
    }
    im->skipped_actions++; /* e.g. 'annotate' (metadata on a live block): no row of ours holds it */
    return 0;
}

/* ---- the state at snapshot time: what the recorded history does not cover ---- */

static int before_history(struct importer *im, const struct ws_pv *segments)
{
    for (size_t i = 0; segments && i < segments->len; i++) {
        const struct ws_pv *seg = segments->items[i];
        int64_t device = pv_int(ws_pv_get(seg, "device"), 0), base = pv_int(ws_pv_get(seg, "address"), WS_UNKNOWN);
        int64_t total = pv_int(ws_pv_get(seg, "total_size"), 0);
        struct block *b;
        if (seg->kind != WS_PV_DICT || base == WS_UNKNOWN)
            continue;
        if (!find_open(im->segs, im->nsegs, device, base)) {
            if (!(b = open_row(im, &im->segs, &im->nsegs, &im->capsegs, device, base)))
                return -1;
            b->row.api = pv_int(ws_pv_get(seg, "is_expandable"), 0) ? "cuMemMap" : "cudaMalloc";
            b->row.memory = "reserved";
            b->row.requested = b->row.bytes = total;
            b->row.stream = pv_int(ws_pv_get(seg, "stream"), WS_UNKNOWN);
            b->row.alloc_ns = im->first_ns;
            b->frames = ws_pv_get(seg, "frames");
            im->before_history_segments++;
        }
        const struct ws_pv *blocks = ws_pv_get(seg, "blocks");
        int64_t at = base;
        for (size_t k = 0; blocks && blocks->kind == WS_PV_LIST && k < blocks->len; k++) {
            const struct ws_pv *blk = blocks->items[k];
            int64_t size = pv_int(ws_pv_get(blk, "size"), 0), addr = pv_int(ws_pv_get(blk, "address"), at);
            const char *state = pv_str(ws_pv_get(blk, "state"));
            at = (int64_t)((uint64_t)addr + (uint64_t)size); /* wraps, never overflows */
            if (!state || strncmp(state, "active", 6) != 0 || find_open(im->blocks, im->nblocks, device, addr))
                continue;
            /* PyTorch 2.0 and older: frames and requested size live in the block's history */
            const struct ws_pv *history = ws_pv_get(blk, "history"), *h0 = NULL;
            if (history && history->kind == WS_PV_LIST && history->len > 0)
                h0 = history->items[0];
            int64_t requested = pv_int(ws_pv_get(blk, "requested_size"), pv_int(ws_pv_get(h0, "real_size"), size));
            if (!(b = open_row(im, &im->blocks, &im->nblocks, &im->capblocks, device, addr)))
                return -1;
            b->row.api = "torch.alloc";
            b->row.memory = "device";
            b->row.requested = requested;
            b->row.bytes = size;
            b->row.alloc_ns = im->first_ns;
            b->frames = ws_pv_get(blk, "frames") ? ws_pv_get(blk, "frames") : ws_pv_get(h0, "frames");
            im->before_history_blocks++;
        }
    }
    return 0;
}

static int flush_open(struct importer *im)
{
    for (size_t i = 0; i < im->nblocks; i++)
        if (im->blocks[i].live && write_block(im, &im->blocks[i]) != 0)
            return -1;
    for (size_t i = 0; i < im->nsegs; i++)
        if (im->segs[i].live && write_block(im, &im->segs[i]) != 0)
            return -1;
    return 0;
}

/* ---- reading ---- */

static int read_file(const char *path, unsigned char **data, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return -1;
    }
    *len = (size_t)sb.st_size;
    *data = malloc(*len + 1);
    int ok = *data && fread(*data, 1, *len, f) == *len;
    fclose(f);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot read: %s", path, *data ? strerror(errno) : "out of memory");
        free(*data);
        *data = NULL;
        return -1;
    }
    return 0;
}

static int has_times(const struct ws_pv *traces)
{
    for (size_t d = 0; d < traces->len; d++) {
        const struct ws_pv *t = traces->items[d];
        for (size_t i = 0; t->kind == WS_PV_LIST && i < t->len; i++)
            if (ws_pv_get(t->items[i], "time_us"))
                return 1;
    }
    return 0;
}

static const char *format_of(const struct ws_pv *segments, int have_time)
{
    for (size_t i = 0; segments && i < segments->len; i++) {
        const struct ws_pv *blocks = ws_pv_get(segments->items[i], "blocks");
        for (size_t k = 0; blocks && blocks->kind == WS_PV_LIST && k < blocks->len; k++) {
            if (ws_pv_get(blocks->items[k], "history"))
                return "2.0 (block history, no times)";
            if (ws_pv_get(blocks->items[k], "frames"))
                return "2.1 or later (block frames, times in microseconds)";
        }
    }
    return have_time ? "2.1 or later (times in microseconds)" : "2.0 or older (no times)";
}

static int import_events(struct importer *im, const struct ws_pv *traces)
{
    for (size_t d = 0; d < traces->len; d++) {
        const struct ws_pv *t = traces->items[d];
        if (t->kind != WS_PV_LIST || t->len == 0)
            continue;
        char root_name[64];
        snprintf(root_name, sizeof root_name, "torch device %zu", d);
        int64_t name = ws_writer_string(&im->w, root_name), start = INT64_MAX, end = INT64_MIN;
        if (name < 0)
            return -1;
        im->root_id = ++im->next_range;
        im->run++;
        for (size_t i = 0; i < t->len; i++) {
            if (t->items[i]->kind != WS_PV_DICT) {
                im->skipped_actions++;
                continue;
            }
            if (on_event(im, (int64_t)d, t->items[i]) != 0)
                return -1;
            if (im->bad_time) {
                snprintf(im->w.err, im->w.errlen, "%s: a time_us of device %zu is out of range", im->path, d);
                return -1;
            }
            start = im->cur_ns < start ? im->cur_ns : start;
            end = im->cur_ns > end ? im->cur_ns : end;
        }
        if (start > end)
            start = end = im->first_ns;
        if (close_occurrence(im, end) != 0)
            return -1;
        /* The device's whole trace is one run: its node occurrences are the run's steps. */
        struct ws_range_row r = {.id = im->root_id,
                                 .thread = THREAD,
                                 .end_thread = THREAD,
                                 .name = name,
                                 .parent = WS_UNKNOWN,
                                 .depth = 0,
                                 .run = im->run,
                                 .start_ns = start,
                                 .end_ns = end,
                                 .kind = "push",
                                 .source = "frames"};
        im->st->ranges++;
        /* the run of this device, written as a runs row so that plan finds it */
        if (ws_writer_range(&im->w, &r) != 0 || ws_writer_run(&im->w, im->run, THREAD, WS_UNKNOWN, start, end) != 0)
            return -1;
        im->root_id = 0;
    }
    return 0;
}

int ws_import_torch_snapshot(const char *snapshot, const char *output, enum ws_node_rule rule,
                             struct ws_import_stats *st, char *err, size_t errlen)
{
    struct importer im;
    unsigned char *data = NULL;
    size_t len = 0;
    struct ws_pickle *pk = NULL;
    const struct ws_pv *root = NULL;
    char perr[700];
    int rc = -1, open = 0;
    memset(&im, 0, sizeof im);
    memset(st, 0, sizeof *st);
    im.st = st;
    im.rule = rule;
    im.path = snapshot;
    if (read_file(snapshot, &data, &len, err, errlen) != 0)
        return -1;
    if (ws_pickle_parse(data, len, &pk, &root, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "%s: not a readable PyTorch memory snapshot: %s", snapshot, perr);
        goto out;
    }
    const struct ws_pv *segments = ws_pv_get(root, "segments"), *traces = ws_pv_get(root, "device_traces");
    if (!segments || segments->kind != WS_PV_LIST || !traces || traces->kind != WS_PV_LIST) {
        snprintf(err, errlen, "%s: not a PyTorch memory snapshot (no 'segments' and 'device_traces' lists)", snapshot);
        goto out;
    }
    im.have_time = has_times(traces);
    if (ws_writer_open(&im.w, output, err, errlen) != 0)
        goto out;
    open = 1;
    if (import_events(&im, traces) != 0 || before_history(&im, segments) != 0 || flush_open(&im) != 0)
        goto out;
    struct ws_process_row p;
    ws_process_row_init(&p, 1, "torch-snapshot");
    p.origin = snapshot;
    p.start_ns = im.first_ns;
    p.end_ns = im.last_ns;
    /* Times since the epoch (PyTorch 2.1 and later) also give the wall clock. */
    if (im.have_time && im.first_ns > 978307200000000000ll) /* after 2001: a wall-clock time */
        p.start_time_unix_ns = im.first_ns;
    st->processes = st->threads = 1;
    if (ws_writer_process(&im.w, &p) != 0 ||
        ws_writer_thread(&im.w, THREAD, 1, 0, WS_UNKNOWN, im.first_ns, im.last_ns) ||
        ws_writer_meta_text(&im.w, "source", "torch-snapshot") != 0 ||
        ws_writer_meta_text(&im.w, "capture_backend", "torch-snapshot") != 0 ||
        ws_writer_meta_text(&im.w, "torch.format", format_of(segments, im.have_time)) != 0 ||
        ws_writer_meta_text(&im.w, "torch.time", im.have_time ? "microseconds" : "event ordinal") != 0 ||
        ws_writer_meta_text(&im.w, "torch.node_rule", rule == WS_NODE_FRAME ? "frame" : "module") != 0 ||
        ws_writer_meta_int(&im.w, "torch.blocks_before_history", im.before_history_blocks) != 0 ||
        ws_writer_meta_int(&im.w, "torch.segments_before_history", im.before_history_segments) != 0 ||
        ws_writer_meta_int(&im.w, "torch.unmatched_frees", im.unmatched_frees) != 0 ||
        ws_writer_meta_int(&im.w, "torch.skipped_actions", im.skipped_actions) != 0 ||
        ws_writer_meta_int(&im.w, "start_ns", im.first_ns) != 0 || ws_writer_meta_int(&im.w, "lost_records", 0) != 0 ||
        ws_writer_meta_text(&im.w, "command_line", "") != 0)
        goto out;
    st->skipped = im.skipped_actions;
    if (!im.have_time)
        snprintf(st->missing, sizeof st->missing,
                 "%s has no times (PyTorch 2.0 or older): times in the trace are event ordinals", snapshot);
    rc = 0;
out:
    if (open && ws_writer_close(&im.w, rc == 0) != 0)
        rc = -1;
    ws_pickle_free(pk);
    free(data);
    free(im.blocks);
    free(im.segs);
    free(im.stack_keys);
    free(im.stack_ids);
    return rc;
}
