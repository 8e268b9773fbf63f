/*
 * NVTX 3 injection: the application's NVTX calls arrive here once NVTX has loaded this library
 * through NVTX_INJECTION64_PATH (set by ws_tracer_start when unset).  Node ranges, marks,
 * domains, registered strings and thread names become spool records.
 */
#include <nvtx3/nvToolsExt.h>
#include <wchar.h>

#include "tracer.h"

static uint64_t next_domain = 1;   /* 0 is the default domain */
static uint64_t next_string = 1;   /* registered string handles */
static uint64_t next_range_id = 1; /* nvtxRangeStart ids */

/* UTF-8 of a wide string, truncated to fit. */
static size_t wide_to_utf8(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
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
        if (n + k > cap)
            break;
        memcpy(out + n, enc, k);
        n += k;
    }
    return n;
}

/* Message of an event attribute: inline text, or a registered string handle (*handle). */
struct message {
    const char *text;
    size_t len;
    uint64_t handle;
    char wide[WS_MAX_STRING];
};

static void message_of(const nvtxEventAttributes_t *a, struct message *m)
{
    m->text = "";
    m->len = 0;
    m->handle = 0;
    if (!a)
        return;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        m->text = a->message.ascii ? a->message.ascii : "";
        m->len = strlen(m->text);
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        m->len = wide_to_utf8(a->message.unicode, m->wide, sizeof m->wide);
        m->text = m->wide;
        break;
    case NVTX_MESSAGE_TYPE_REGISTERED: m->handle = (uint64_t)(uintptr_t)a->message.registered; break;
    default: break;
    }
}

/* One string-carrying record: type, domain, text, registered handle (slot u_handle), extra value in u2. */
static void emit(uint8_t type, uint8_t api, uint64_t domain, const char *text, size_t len, int handle_slot,
                 uint64_t handle, uint64_t u2)
{
    uint32_t n;
    struct ws_rec *r = ws_rec_string(type, text, len, &n);
    if (!r)
        return;
    r->api = api;
    r->u[0] = domain;
    r->u[2] = u2;
    if (handle_slot)
        r->u[handle_slot] = handle;
    ws_rec_commit(n);
}

static void emit_plain(uint8_t type, uint8_t api, uint64_t domain, uint64_t u2, int32_t status)
{
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->type = type;
    r->api = api;
    r->status = status;
    r->ns = ws_now();
    r->u[0] = domain;
    r->u[2] = u2;
    ws_rec_commit(1);
}

/* ---- push / pop (shared with the explicit API) ------------------------------------------- */

int ws_push(uint8_t api, uint64_t domain, const char *text, size_t len, uint64_t handle)
{
    int depth = ws_self.nvtx_depth++;
    if (!ws_hook_enter())
        return depth;
    int saved = errno;
    /* PUSH: u0 domain, u1 length, u2 registered handle */
    emit(WS_REC_PUSH, api, domain, text, len, 2, handle, handle);
    ws_hook_leave(saved);
    return depth;
}

int ws_pop(uint8_t api, uint64_t domain)
{
    if (ws_self.nvtx_depth <= 0)
        return -1;
    int depth = --ws_self.nvtx_depth;
    if (!ws_hook_enter())
        return depth;
    int saved = errno;
    emit_plain(WS_REC_POP, api, domain, 0, depth);
    ws_hook_leave(saved);
    return depth;
}

static int push_ex(uint64_t domain, const nvtxEventAttributes_t *a)
{
    struct message m;
    message_of(a, &m);
    return ws_push(WS_API_nvtx, domain, m.text, m.len, m.handle);
}

static int NVTX_API push_a(const char *message)
{
    return ws_push(WS_API_nvtx, 0, message ? message : "", message ? strlen(message) : 0, 0);
}

static int NVTX_API push_w(const wchar_t *message)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(message, buf, sizeof buf);
    return ws_push(WS_API_nvtx, 0, buf, len, 0);
}

static int NVTX_API push_e(const nvtxEventAttributes_t *a) { return push_ex(0, a); }
static int NVTX_API pop_default(void) { return ws_pop(WS_API_nvtx, 0); }
static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return push_ex((uint64_t)(uintptr_t)d, a);
}
static int NVTX_API domain_pop(nvtxDomainHandle_t d) { return ws_pop(WS_API_nvtx, (uint64_t)(uintptr_t)d); }

/* ---- start / end ranges --------------------------------------------------------------------- */

static nvtxRangeId_t range_start(uint64_t domain, const char *text, size_t len, uint64_t handle)
{
    nvtxRangeId_t id = __atomic_fetch_add(&next_range_id, 1, __ATOMIC_RELAXED);
    if (!ws_hook_enter())
        return id;
    int saved = errno;
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_RANGE_START, text, len, &n);
    if (r) {
        r->api = WS_API_nvtx;
        r->u[0] = domain;
        r->u[2] = id;
        r->u[3] = handle;
        ws_rec_commit(n);
    }
    ws_hook_leave(saved);
    return id;
}

static nvtxRangeId_t NVTX_API start_a(const char *message)
{
    return range_start(0, message ? message : "", message ? strlen(message) : 0, 0);
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *message)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(message, buf, sizeof buf);
    return range_start(0, buf, len, 0);
}
static nvtxRangeId_t start_attr(uint64_t domain, const nvtxEventAttributes_t *a)
{
    struct message m;
    message_of(a, &m);
    return range_start(domain, m.text, m.len, m.handle);
}
static nvtxRangeId_t NVTX_API start_e(const nvtxEventAttributes_t *a) { return start_attr(0, a); }
static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return start_attr((uint64_t)(uintptr_t)d, a);
}

static void range_end(uint64_t domain, nvtxRangeId_t id)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    emit_plain(WS_REC_RANGE_END, WS_API_nvtx, domain, id, 0);
    ws_hook_leave(saved);
}
static void NVTX_API end_default(nvtxRangeId_t id) { range_end(0, id); }
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { range_end((uint64_t)(uintptr_t)d, id); }

/* ---- marks ------------------------------------------------------------------------------------- */

static void mark(uint64_t domain, const char *text, size_t len, uint64_t handle)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_MARK, text, len, &n);
    if (r) {
        r->api = WS_API_nvtx;
        r->u[0] = domain;
        r->u[3] = handle;
        ws_rec_commit(n);
    }
    ws_hook_leave(saved);
}
static void NVTX_API mark_a(const char *message) { mark(0, message ? message : "", message ? strlen(message) : 0, 0); }
static void NVTX_API mark_w(const wchar_t *message)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(message, buf, sizeof buf);
    mark(0, buf, len, 0);
}
static void mark_attr(uint64_t domain, const nvtxEventAttributes_t *a)
{
    struct message m;
    message_of(a, &m);
    mark(domain, m.text, m.len, m.handle);
}
static void NVTX_API mark_e(const nvtxEventAttributes_t *a) { mark_attr(0, a); }
static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    mark_attr((uint64_t)(uintptr_t)d, a);
}

/* ---- domains, registered strings, thread names ---------------------------------------------- */

static nvtxDomainHandle_t domain_create(const char *name, size_t len)
{
    uint64_t id = __atomic_fetch_add(&next_domain, 1, __ATOMIC_RELAXED);
    if (ws_hook_enter()) {
        int saved = errno;
        emit(WS_REC_DOMAIN, WS_API_nvtx, id, name, len, 0, 0, 0);
        ws_hook_leave(saved);
    }
    return (nvtxDomainHandle_t)(uintptr_t)id;
}
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
    return domain_create(name ? name : "", name ? strlen(name) : 0);
}
static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(name, buf, sizeof buf);
    return domain_create(buf, len);
}
static void NVTX_API domain_destroy(nvtxDomainHandle_t d) { (void)d; }

static nvtxStringHandle_t register_string(uint64_t domain, const char *s, size_t len)
{
    uint64_t handle = __atomic_fetch_add(&next_string, 1, __ATOMIC_RELAXED);
    if (ws_hook_enter()) {
        int saved = errno;
        emit(WS_REC_REGISTER_STRING, WS_API_nvtx, domain, s, len, 0, 0, handle);
        ws_hook_leave(saved);
    }
    return (nvtxStringHandle_t)(uintptr_t)handle;
}
static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *s)
{
    return register_string((uint64_t)(uintptr_t)d, s ? s : "", s ? strlen(s) : 0);
}
static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(s, buf, sizeof buf);
    return register_string((uint64_t)(uintptr_t)d, buf, len);
}

static void name_thread(uint32_t tid, const char *name, size_t len)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    emit(WS_REC_THREAD_NAME, WS_API_nvtx, tid, name, len, 0, 0, 0);
    ws_hook_leave(saved);
}
static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    name_thread(tid, name ? name : "", name ? strlen(name) : 0);
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *name)
{
    char buf[WS_MAX_STRING];
    size_t len = wide_to_utf8(name, buf, sizeof buf);
    name_thread(tid, buf, len);
}
static void NVTX_API initialize(const void *reserved) { (void)reserved; }

/* ---- injection entry point ------------------------------------------------------------------ */

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
    SET(core, core_size, NVTX_CBID_CORE_NameOsThreadA, name_thread_a);
    SET(core, core_size, NVTX_CBID_CORE_NameOsThreadW, name_thread_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, domain_mark);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domain_start);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domain_end);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, register_a);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, register_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domain_create_w);
    SET(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy);
    SET(core2, core2_size, NVTX_CBID_CORE2_Initialize, initialize);
#undef SET
    return 1;
}
