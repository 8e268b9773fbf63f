/*
 * NVTX 3 injection: the application's NVTX calls arrive here once NVTX has loaded this library
 * through NVTX_INJECTION64_PATH (set by ws_tracer_start when unset).  Node ranges, marks,
 * domains, categories, registered strings, thread names and the memory extension
 * (nvToolsExtMem.h: heaps and the regions registered in them) become spool records.
 *
 * Push/pop depth is kept per thread and per domain, as NVTX defines it: a pop in one domain
 * never closes or hides a range of another.  Every pop is recorded, balanced or not, so the
 * collector can count the unbalanced ones.
 */
#define NVTX_NO_IMPL /* a tool: the declarations and types of NVTX, not its client implementation */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <stddef.h>
#include <wchar.h>

#include "tracer.h"

/* ---- domains: one handle per name ------------------------------------------------------------ */

/*
 * Creating a domain with a name already created returns the first handle, so that one name is
 * one domain for depth, pairing and the trace.  Names are kept in an append-only table that
 * threads extend with a compare-and-swap (no lock); the collector maps handles to names again,
 * so a program with more names than the table holds still gets one row per name.
 */
#define DOMAIN_SLOTS       256
#define DOMAIN_ARENA_BYTES (64u * 1024u)

struct domain_name {
    uint32_t len;
    char text[];
};

static struct domain_name *domain_names[DOMAIN_SLOTS]; /* slot i holds handle i + 1 */
static _Alignas(8) char domain_arena[DOMAIN_ARENA_BYTES];
static size_t domain_arena_used;
static uint64_t next_overflow_domain = DOMAIN_SLOTS + 1; /* handles past the table */
static uint64_t next_string = 1;                         /* registered string handles */
static uint64_t next_range_id = 1;                       /* nvtxRangeStart ids */
static uint64_t next_heap = 1;                           /* heaps without an address */

/* Depth per domain of the calling thread; handles past DEPTH_SLOTS are not tracked. */
#define DEPTH_SLOTS 64
static WS_TLS int32_t depth_of[DEPTH_SLOTS];

static struct domain_name *domain_name_new(const char *name, size_t len)
{
    size_t need = (sizeof(struct domain_name) + len + 7) & ~(size_t)7;
    size_t at = __atomic_fetch_add(&domain_arena_used, need, __ATOMIC_RELAXED);
    if (at > DOMAIN_ARENA_BYTES || need > DOMAIN_ARENA_BYTES - at)
        return NULL;
    struct domain_name *n = (struct domain_name *)(domain_arena + at);
    n->len = (uint32_t)len;
    memcpy(n->text, name, len);
    return n;
}

static int same_name(const struct domain_name *n, const char *name, size_t len)
{
    return n->len == len && memcmp(n->text, name, len) == 0;
}

static uint64_t domain_handle_for(const char *name, size_t len)
{
    struct domain_name *mine = NULL;
    for (size_t i = 0; i < DOMAIN_SLOTS; i++) {
        struct domain_name *n = __atomic_load_n(&domain_names[i], __ATOMIC_ACQUIRE);
        if (!n) {
            if (!mine && !(mine = domain_name_new(name, len)))
                break;
            if (__atomic_compare_exchange_n(&domain_names[i], &n, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return i + 1;
            /* another thread took the slot: n is its name, compared below */
        }
        if (same_name(n, name, len))
            return i + 1; /* an unused copy in the arena, if any, is not reclaimed */
    }
    return __atomic_fetch_add(&next_overflow_domain, 1, __ATOMIC_RELAXED);
}

static inline uint64_t domain_id(nvtxDomainHandle_t d) { return (uint64_t)(uintptr_t)d; }

/* ---- strings --------------------------------------------------------------------------------- */

/* UTF-8 of a wide string, truncated to fit (between characters, and counted in
 * truncated_strings).  A surrogate pair is joined; a lone surrogate or a value beyond U+10FFFF,
 * which UTF-8 cannot encode, becomes U+FFFD. */
static size_t wide_to_utf8(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c >= 0xD800 && c <= 0xDBFF && (uint32_t)w[1] >= 0xDC00 && (uint32_t)w[1] <= 0xDFFF) {
            c = 0x10000 + ((c - 0xD800) << 10) + ((uint32_t)w[1] - 0xDC00);
            w++;
        } else if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) {
            c = 0xFFFD;
        }
        char enc[4];
        size_t k;
        if (c < 0x80) {
            enc[0] = (char)c;
            k = 1;
        } else if (c < 0x800) {
            enc[0] = (char)(0xc0 | (c >> 6));
            enc[1] = (char)(0x80 | (c & 0x3f));
            k = 2;
        } else if (c < 0x10000) {
            enc[0] = (char)(0xe0 | (c >> 12));
            enc[1] = (char)(0x80 | ((c >> 6) & 0x3f));
            enc[2] = (char)(0x80 | (c & 0x3f));
            k = 3;
        } else {
            enc[0] = (char)(0xf0 | ((c >> 18) & 0x07));
            enc[1] = (char)(0x80 | ((c >> 12) & 0x3f));
            enc[2] = (char)(0x80 | ((c >> 6) & 0x3f));
            enc[3] = (char)(0x80 | (c & 0x3f));
            k = 4;
        }
        if (n + k > cap) {
            ws_count_truncated();
            break;
        }
        memcpy(out + n, enc, k);
        n += k;
    }
    return n;
}

/* A message: inline text, or a registered string handle (handle != 0). */
struct message {
    const char *text;
    size_t len;
    uint64_t handle;
    char wide[WS_MAX_STRING];
};

static void message_from(int32_t type, nvtxMessageValue_t value, struct message *m)
{
    m->text = "";
    m->len = 0;
    m->handle = 0;
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
        m->text = value.ascii ? value.ascii : "";
        m->len = strlen(m->text);
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        m->len = wide_to_utf8(value.unicode, m->wide, sizeof m->wide);
        m->text = m->wide;
        break;
    case NVTX_MESSAGE_TYPE_REGISTERED: m->handle = (uint64_t)(uintptr_t)value.registered; break;
    default: break;
    }
}

static void text_message(const char *s, struct message *m)
{
    m->text = s ? s : "";
    m->len = strlen(m->text);
    m->handle = 0;
}

static void wide_message(const wchar_t *s, struct message *m)
{
    m->len = wide_to_utf8(s, m->wide, sizeof m->wide);
    m->text = m->wide;
    m->handle = 0;
}

/* ---- event attributes ------------------------------------------------------------------------ */

struct attributes {
    struct message msg;
    int32_t flags; /* ws_payload | WS_ATTR_COLOR */
    uint64_t payload, category_color;
};

/* Fields past the caller's a->size keep their defaults (an older, smaller structure); a size of 0
 * (a structure zeroed and filled without setting it) is read as the whole structure. */
#define HAS_FIELD(a, field)                                                                                            \
    ((a)->size == 0 || (size_t)(a)->size >= offsetof(nvtxEventAttributes_t, field) + sizeof((a)->field))

static int32_t payload_kind(const nvtxEventAttributes_t *a, uint64_t *bits)
{
    switch (a->payloadType) {
    case NVTX_PAYLOAD_UNKNOWN: *bits = 0; return WS_PAYLOAD_NONE;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: *bits = a->payload.ullValue; return WS_PAYLOAD_U64;
    case NVTX_PAYLOAD_TYPE_INT64: *bits = (uint64_t)a->payload.llValue; return WS_PAYLOAD_I64;
    case NVTX_PAYLOAD_TYPE_DOUBLE: memcpy(bits, &a->payload.dValue, sizeof *bits); return WS_PAYLOAD_DOUBLE;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: *bits = a->payload.uiValue; return WS_PAYLOAD_U32;
    case NVTX_PAYLOAD_TYPE_INT32: *bits = (uint64_t)(int64_t)a->payload.iValue; return WS_PAYLOAD_I32;
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        uint32_t f;
        memcpy(&f, &a->payload.fValue, sizeof f);
        *bits = f;
        return WS_PAYLOAD_FLOAT;
    }
    case NVTX_PAYLOAD_TYPE_EXT: /* binary payloads described by registered schemas: counted, not decoded */
        *bits = (uint64_t)(uint32_t)a->reserved0;
        return WS_PAYLOAD_EXTENSION;
    default: *bits = a->payload.ullValue; return WS_PAYLOAD_OTHER;
    }
}

static void attributes_of(const nvtxEventAttributes_t *a, struct attributes *at)
{
    at->flags = 0;
    at->payload = 0;
    at->category_color = 0;
    message_from(NVTX_MESSAGE_UNKNOWN, (nvtxMessageValue_t){0}, &at->msg);
    if (!a)
        return;
    if (HAS_FIELD(a, message))
        message_from(a->messageType, a->message, &at->msg);
    if (HAS_FIELD(a, category))
        at->category_color = a->category;
    if (HAS_FIELD(a, color) && a->colorType == NVTX_COLOR_ARGB) {
        at->category_color |= (uint64_t)a->color << 32;
        at->flags |= (int32_t)WS_ATTR_COLOR;
    }
    if (HAS_FIELD(a, payload))
        at->flags |= payload_kind(a, &at->payload);
}

static void plain_attributes(struct attributes *at)
{
    at->flags = 0;
    at->payload = 0;
    at->category_color = 0;
}

/* One record carrying a message and the attributes; the registered handle goes to u[handle_slot]. */
static void emit_event(uint8_t type, uint8_t api, uint64_t domain, const struct attributes *at, int handle_slot,
                       uint64_t u2)
{
    uint32_t n;
    struct ws_rec *r = ws_rec_string(type, at->msg.text, at->msg.len, &n);
    if (!r)
        return;
    r->api = api;
    r->status = at->flags;
    r->u[0] = domain;
    r->u[2] = u2;
    r->u[handle_slot] = at->msg.handle;
    r->u[4] = at->payload;
    r->u[5] = at->category_color;
    ws_rec_commit(n);
}

/* A string-carrying record: u0, the string, u2 and u3. */
static void emit_named(uint8_t type, uint8_t api, uint64_t u0, const struct message *m, uint64_t u2, uint64_t u3)
{
    uint32_t n;
    struct ws_rec *r = ws_rec_string(type, m->text, m->len, &n);
    if (!r)
        return;
    r->api = api;
    r->u[0] = u0;
    r->u[2] = u2;
    r->u[3] = u3;
    ws_rec_commit(n);
}

static struct ws_rec *plain_record(uint8_t type, uint8_t api)
{
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->type = type;
    r->api = api;
    r->ns = ws_now();
    return r;
}

/* ---- push / pop (shared with the explicit API) ------------------------------------------- */

static int push(uint8_t api, uint64_t domain, const struct attributes *at)
{
    int depth = NVTX_NO_PUSH_POP_TRACKING;
    if (domain < DEPTH_SLOTS)
        depth = depth_of[domain]++;
    if (!ws_hook_enter())
        return depth;
    int saved = errno;
    emit_event(WS_REC_PUSH, api, domain, at, 2, 0);
    ws_hook_leave(saved);
    return depth;
}

int ws_push(uint8_t api, uint64_t domain, const char *text, size_t len, uint64_t handle)
{
    struct attributes at;
    plain_attributes(&at);
    at.msg.text = text;
    at.msg.len = len;
    at.msg.handle = handle;
    return push(api, domain, &at);
}

/* Every pop is recorded; status carries the depth returned, -1 when the domain had nothing open. */
int ws_pop(uint8_t api, uint64_t domain)
{
    int depth = NVTX_NO_PUSH_POP_TRACKING;
    if (domain < DEPTH_SLOTS)
        depth = depth_of[domain] > 0 ? --depth_of[domain] : -1;
    if (!ws_hook_enter())
        return depth;
    int saved = errno;
    struct ws_rec *r = plain_record(WS_REC_POP, api);
    if (r) {
        r->status = depth;
        r->u[0] = domain;
        ws_rec_commit(1);
    }
    ws_hook_leave(saved);
    return depth;
}

static int NVTX_API push_a(const char *message)
{
    struct attributes at;
    plain_attributes(&at);
    text_message(message, &at.msg);
    return push(WS_API_nvtx, 0, &at);
}

static int NVTX_API push_w(const wchar_t *message)
{
    struct attributes at;
    plain_attributes(&at);
    wide_message(message, &at.msg);
    return push(WS_API_nvtx, 0, &at);
}

static int NVTX_API push_e(const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    return push(WS_API_nvtx, 0, &at);
}

static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    return push(WS_API_nvtx, domain_id(d), &at);
}

static int NVTX_API pop_default(void) { return ws_pop(WS_API_nvtxRangePop, 0); }
static int NVTX_API domain_pop(nvtxDomainHandle_t d) { return ws_pop(WS_API_nvtxDomainRangePop, domain_id(d)); }

/* ---- start / end ranges --------------------------------------------------------------------- */

static nvtxRangeId_t range_start(uint64_t domain, const struct attributes *at)
{
    nvtxRangeId_t id = __atomic_fetch_add(&next_range_id, 1, __ATOMIC_RELAXED);
    if (!ws_hook_enter())
        return id;
    int saved = errno;
    emit_event(WS_REC_RANGE_START, WS_API_nvtx, domain, at, 3, id);
    ws_hook_leave(saved);
    return id;
}

static nvtxRangeId_t NVTX_API start_a(const char *message)
{
    struct attributes at;
    plain_attributes(&at);
    text_message(message, &at.msg);
    return range_start(0, &at);
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *message)
{
    struct attributes at;
    plain_attributes(&at);
    wide_message(message, &at.msg);
    return range_start(0, &at);
}
static nvtxRangeId_t NVTX_API start_e(const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    return range_start(0, &at);
}
static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    return range_start(domain_id(d), &at);
}

static void range_end(uint8_t api, uint64_t domain, nvtxRangeId_t id)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    struct ws_rec *r = plain_record(WS_REC_RANGE_END, api);
    if (r) {
        r->u[0] = domain;
        r->u[2] = id;
        ws_rec_commit(1);
    }
    ws_hook_leave(saved);
}
static void NVTX_API end_default(nvtxRangeId_t id) { range_end(WS_API_nvtxRangeEnd, 0, id); }
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    range_end(WS_API_nvtxDomainRangeEnd, domain_id(d), id);
}

/* ---- marks ------------------------------------------------------------------------------------- */

static void mark(uint64_t domain, const struct attributes *at)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    emit_event(WS_REC_MARK, WS_API_nvtx, domain, at, 3, 0);
    ws_hook_leave(saved);
}
static void NVTX_API mark_a(const char *message)
{
    struct attributes at;
    plain_attributes(&at);
    text_message(message, &at.msg);
    mark(0, &at);
}
static void NVTX_API mark_w(const wchar_t *message)
{
    struct attributes at;
    plain_attributes(&at);
    wide_message(message, &at.msg);
    mark(0, &at);
}
static void NVTX_API mark_e(const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    mark(0, &at);
}
static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    struct attributes at;
    attributes_of(a, &at);
    mark(domain_id(d), &at);
}

/* ---- domains, categories, registered strings, thread names ----------------------------------- */

static nvtxDomainHandle_t domain_create(const struct message *name)
{
    uint64_t id = domain_handle_for(name->text, name->len);
    /* Recorded at every creation: a forked child's trace then names the domains it creates again. */
    if (ws_hook_enter()) {
        int saved = errno;
        emit_named(WS_REC_DOMAIN, WS_API_nvtx, id, name, 0, 0);
        ws_hook_leave(saved);
    }
    return (nvtxDomainHandle_t)(uintptr_t)id;
}
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
    struct message m;
    text_message(name, &m);
    return domain_create(&m);
}
static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
    struct message m;
    wide_message(name, &m);
    return domain_create(&m);
}
/* Handles stay valid: another creator of the same name may still use it. */
static void NVTX_API domain_destroy(nvtxDomainHandle_t d) { (void)d; }

static void name_category(uint64_t domain, uint32_t category, const struct message *name)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    emit_named(WS_REC_CATEGORY, WS_API_nvtx, domain, name, category, 0);
    ws_hook_leave(saved);
}
static void NVTX_API category_a(uint32_t category, const char *name)
{
    struct message m;
    text_message(name, &m);
    name_category(0, category, &m);
}
static void NVTX_API category_w(uint32_t category, const wchar_t *name)
{
    struct message m;
    wide_message(name, &m);
    name_category(0, category, &m);
}
static void NVTX_API domain_category_a(nvtxDomainHandle_t d, uint32_t category, const char *name)
{
    struct message m;
    text_message(name, &m);
    name_category(domain_id(d), category, &m);
}
static void NVTX_API domain_category_w(nvtxDomainHandle_t d, uint32_t category, const wchar_t *name)
{
    struct message m;
    wide_message(name, &m);
    name_category(domain_id(d), category, &m);
}

static nvtxStringHandle_t register_string(uint64_t domain, const struct message *s)
{
    uint64_t handle = __atomic_fetch_add(&next_string, 1, __ATOMIC_RELAXED);
    if (ws_hook_enter()) {
        int saved = errno;
        emit_named(WS_REC_REGISTER_STRING, WS_API_nvtx, domain, s, handle, 0);
        ws_hook_leave(saved);
    }
    return (nvtxStringHandle_t)(uintptr_t)handle;
}
static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *s)
{
    struct message m;
    text_message(s, &m);
    return register_string(domain_id(d), &m);
}
static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    struct message m;
    wide_message(s, &m);
    return register_string(domain_id(d), &m);
}

static void name_thread(uint32_t tid, const struct message *name)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    emit_named(WS_REC_THREAD_NAME, WS_API_nvtx, tid, name, 0, 0);
    ws_hook_leave(saved);
}
static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    struct message m;
    text_message(name, &m);
    name_thread(tid, &m);
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *name)
{
    struct message m;
    wide_message(name, &m);
    name_thread(tid, &m);
}
static void NVTX_API initialize(const void *reserved) { (void)reserved; }

/* ---- the memory extension ----------------------------------------------------------------------- */

/*
 * Heaps and regions of linear virtual memory (NVTX_MEM_TYPE_VIRTUAL_ADDRESS).  As nvToolsExtMem.h
 * says, the address of such a heap is its handle, and so is the address of a region; a heap of
 * another type gets a handle of its own (odd, so it never equals an aligned heap address).
 * Regions of other types carry no address this version can read and are not recorded.
 */
#define FITS(desc, type, field)                                                                                        \
    ((desc)->structSize == 0 || (size_t)(desc)->structSize >= offsetof(type, field) + sizeof((desc)->field))

static int virtual_range(const void *desc, size_t size, uint64_t *ptr, uint64_t *bytes)
{
    if (!desc || size < sizeof(nvtxMemVirtualRangeDesc_t))
        return 0;
    const nvtxMemVirtualRangeDesc_t *v = desc;
    *ptr = (uint64_t)(uintptr_t)v->ptr;
    *bytes = v->size;
    return 1;
}

static void emit_mem_name(uint64_t domain, int32_t type, nvtxMemRegionRef_t ref_or_heap, nvtxMessageValue_t value,
                          uint32_t category, int heap)
{
    struct message m;
    message_from(type, value, &m);
    if (!m.len && !m.handle)
        return;
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_MEM_NAME, m.text, m.len, &n);
    if (!r)
        return;
    r->api = WS_API_nvtxMemRegionsName;
    r->u[0] = domain;
    r->u[2] = m.handle;
    r->u[3] = (uint64_t)(uintptr_t)ref_or_heap.pointer;
    r->u[4] = heap ? 1 : 0;
    r->u[5] = category;
    ws_rec_commit(n);
}

static nvtxMemHeapHandle_t NVTX_API mem_heap_register(nvtxDomainHandle_t d, const nvtxMemHeapDesc_t *desc)
{
    if (!desc || !FITS(desc, nvtxMemHeapDesc_t, typeSpecificDesc))
        return NULL;
    uint64_t ptr = 0, bytes = 0;
    int linear = desc->type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS &&
                 virtual_range(desc->typeSpecificDesc, desc->typeSpecificDescSize, &ptr, &bytes) && ptr != 0;
    uint64_t handle = linear ? ptr : (__atomic_fetch_add(&next_heap, 1, __ATOMIC_RELAXED) << 1) | 1;
    if (!ws_hook_enter())
        return (nvtxMemHeapHandle_t)(uintptr_t)handle;
    int saved = errno;
    uint32_t category = FITS(desc, nvtxMemHeapDesc_t, category) ? desc->category : 0;
    struct ws_rec *r = plain_record(WS_REC_MEM_HEAP, WS_API_nvtxMemHeapRegister);
    if (r) {
        r->u[0] = domain_id(d);
        r->u[2] = handle;
        r->u[3] = ptr;
        r->u[4] = bytes;
        r->u[5] = ws_mem_heap_pack(desc->usage, desc->type, category);
        ws_rec_commit(1);
    }
    if (FITS(desc, nvtxMemHeapDesc_t, message))
        emit_mem_name(domain_id(d), (int32_t)desc->messageType, (nvtxMemRegionRef_t){.pointer = (void *)handle},
                      desc->message, category, 1);
    ws_hook_leave(saved);
    return (nvtxMemHeapHandle_t)(uintptr_t)handle;
}

static void heap_end(uint8_t api, nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    struct ws_rec *r = plain_record(WS_REC_MEM_HEAP_END, api);
    if (r) {
        r->u[0] = domain_id(d);
        r->u[2] = (uint64_t)(uintptr_t)heap;
        ws_rec_commit(1);
    }
    ws_hook_leave(saved);
}
static void NVTX_API mem_heap_unregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap)
{
    heap_end(WS_API_nvtxMemHeapUnregister, d, heap);
}
static void NVTX_API mem_heap_reset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap)
{
    heap_end(WS_API_nvtxMemHeapReset, d, heap);
}

static void NVTX_API mem_regions_register(nvtxDomainHandle_t d, const nvtxMemRegionsRegisterBatch_t *b)
{
    if (!b || !FITS(b, nvtxMemRegionsRegisterBatch_t, regionDescElements) ||
        b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !b->regionDescElements)
        return;
    int out = FITS(b, nvtxMemRegionsRegisterBatch_t, regionHandleElementsOut) && b->regionHandleElementsOut;
    int record = ws_hook_enter();
    int saved = errno;
    for (size_t i = 0; i < b->regionCount; i++) {
        uint64_t ptr, bytes;
        const char *elem = (const char *)b->regionDescElements + i * b->regionDescElementSize;
        if (!virtual_range(elem, b->regionDescElementSize, &ptr, &bytes))
            break;
        if (out)
            b->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)(uintptr_t)ptr;
        struct ws_rec *r = record ? plain_record(WS_REC_MEM_REGION, WS_API_nvtxMemRegionsRegister) : NULL;
        if (r) {
            r->u[0] = domain_id(d);
            r->u[2] = (uint64_t)(uintptr_t)b->heap;
            r->u[3] = ptr;
            r->u[4] = bytes;
            ws_rec_commit(1);
        }
    }
    if (record)
        ws_hook_leave(saved);
}

static void NVTX_API mem_regions_resize(nvtxDomainHandle_t d, const nvtxMemRegionsResizeBatch_t *b)
{
    if (!b || !FITS(b, nvtxMemRegionsResizeBatch_t, regionDescElements) ||
        b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !b->regionDescElements || !ws_hook_enter())
        return;
    int saved = errno;
    for (size_t i = 0; i < b->regionDescCount; i++) {
        uint64_t ptr, bytes;
        const char *elem = (const char *)b->regionDescElements + i * b->regionDescElementSize;
        if (!virtual_range(elem, b->regionDescElementSize, &ptr, &bytes))
            break;
        struct ws_rec *r = plain_record(WS_REC_MEM_RESIZE, WS_API_nvtxMemRegionsResize);
        if (r) {
            r->u[0] = domain_id(d);
            r->u[3] = ptr;
            r->u[4] = bytes;
            ws_rec_commit(1);
        }
    }
    ws_hook_leave(saved);
}

/* A region is referred to by its pointer or by its handle, which is the same value here. */
static void NVTX_API mem_regions_unregister(nvtxDomainHandle_t d, const nvtxMemRegionsUnregisterBatch_t *b)
{
    if (!b || !FITS(b, nvtxMemRegionsUnregisterBatch_t, refElements) || !b->refElements ||
        b->refElementSize < sizeof(nvtxMemRegionRef_t) || !ws_hook_enter())
        return;
    int saved = errno;
    for (size_t i = 0; i < b->refCount; i++) {
        const nvtxMemRegionRef_t *ref =
            (const nvtxMemRegionRef_t *)(const void *)((const char *)b->refElements + i * b->refElementSize);
        struct ws_rec *r = plain_record(WS_REC_MEM_UNREGISTER, WS_API_nvtxMemRegionsUnregister);
        if (r) {
            r->u[0] = domain_id(d);
            r->u[3] = (uint64_t)(uintptr_t)ref->pointer;
            ws_rec_commit(1);
        }
    }
    ws_hook_leave(saved);
}

static void NVTX_API mem_regions_name(nvtxDomainHandle_t d, const nvtxMemRegionsNameBatch_t *b)
{
    if (!b || !FITS(b, nvtxMemRegionsNameBatch_t, regionElements) || !b->regionElements ||
        b->regionElementSize < offsetof(nvtxMemRegionNameDesc_t, reserved0) || !ws_hook_enter())
        return;
    int saved = errno;
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemRegionNameDesc_t *e =
            (const nvtxMemRegionNameDesc_t *)(const void *)((const char *)b->regionElements + i * b->regionElementSize);
        emit_mem_name(domain_id(d), (int32_t)e->nameType, e->region, e->name, e->category, 0);
    }
    ws_hook_leave(saved);
}

/* ---- injection entry points ------------------------------------------------------------------ */

static void install(NvtxFunctionTable table, unsigned size, unsigned slot, NvtxFunctionPointer fn)
{
    if (table && slot >= 1 && slot <= size && table[slot])
        *table[slot] = fn;
}

WS_EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    if (!get_export_table)
        return 0;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks) || !cb->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable core = NULL, core2 = NULL;
    unsigned core_size = 0, core2_size = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
        !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
        return 0;
#define SET(t, s, id, fn) install(t, s, id, (NvtxFunctionPointer)(fn))
    SET(core, core_size, NVTX_CBID_CORE_MarkEx, mark_e);
    SET(core, core_size, NVTX_CBID_CORE_MarkA, mark_a);
    SET(core, core_size, NVTX_CBID_CORE_MarkW, mark_w);
    SET(core, core_size, NVTX_CBID_CORE_RangeStartEx, start_e);
    SET(core, core_size, NVTX_CBID_CORE_RangeStartA, start_a);
    SET(core, core_size, NVTX_CBID_CORE_RangeStartW, start_w);
    SET(core, core_size, NVTX_CBID_CORE_RangeEnd, end_default);
    SET(core, core_size, NVTX_CBID_CORE_RangePushEx, push_e);
    SET(core, core_size, NVTX_CBID_CORE_RangePushA, push_a);
    SET(core, core_size, NVTX_CBID_CORE_RangePushW, push_w);
    SET(core, core_size, NVTX_CBID_CORE_RangePop, pop_default);
    SET(core, core_size, NVTX_CBID_CORE_NameCategoryA, category_a);
    SET(core, core_size, NVTX_CBID_CORE_NameCategoryW, category_w);
    SET(core, core_size, NVTX_CBID_CORE_NameOsThreadA, name_thread_a);
    SET(core, core_size, NVTX_CBID_CORE_NameOsThreadW, name_thread_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, domain_mark);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, domain_category_a);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, domain_category_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, register_a);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, register_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
    SET(core2, core2_size, NVTX_CBID_CORE2_Initialize, initialize);
#undef SET
    return 1;
}

/*
 * Extension modules (nvtxDetail/nvtxExtInit.h) call this once each with their slots; the memory
 * module (NVTX_EXT_MODULEID_MEM) of the compatibility version whose structures are read above
 * gets its heap and region functions.  Slots left empty, and other modules, become no-ops.
 */
WS_EXPORT int NVTX_API InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    if (!info || info->structSize < sizeof(nvtxExtModuleInfo_t))
        return 0;
    if (info->moduleId != NVTX_EXT_MODULEID_MEM || info->compatId != NVTX_EXT_COMPATID_MEM)
        return 1;
    for (size_t s = 0; s < info->segmentsCount; s++) {
        nvtxExtModuleSegment_t *seg = &info->segments[s];
        if (seg->segmentId != 1 || !seg->functionSlots)
            continue;
        static const struct {
            size_t slot;
            intptr_t fn;
        } fns[] = {
            {NVTX3EXT_CBID_nvtxMemHeapRegister, (intptr_t)mem_heap_register},
            {NVTX3EXT_CBID_nvtxMemHeapUnregister, (intptr_t)mem_heap_unregister},
            {NVTX3EXT_CBID_nvtxMemHeapReset, (intptr_t)mem_heap_reset},
            {NVTX3EXT_CBID_nvtxMemRegionsRegister, (intptr_t)mem_regions_register},
            {NVTX3EXT_CBID_nvtxMemRegionsResize, (intptr_t)mem_regions_resize},
            {NVTX3EXT_CBID_nvtxMemRegionsUnregister, (intptr_t)mem_regions_unregister},
            {NVTX3EXT_CBID_nvtxMemRegionsName, (intptr_t)mem_regions_name},
        };
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
            if (fns[i].slot < seg->slotCount)
                seg->functionSlots[fns[i].slot] = fns[i].fn;
    }
    return 1;
}
