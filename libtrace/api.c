/* The explicit API of include/wstrace.h, handed out through wstrace_get_api_v1(). */
#include "wstrace.h"

#include "tracer.h"

int ws_push(uint8_t api, uint64_t domain, const char *text, size_t len, uint64_t handle);
int ws_pop(uint8_t api, uint64_t domain);

static void node_push(const char *name) { ws_push(WS_API_wstrace, 0, name, strlen(name), 0); }
static void node_pop(void) { ws_pop(WS_API_wstrace, 0); }

static void string_event(uint8_t type, const char *s, uint64_t u0, uint64_t u2, uint64_t u3)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    uint32_t n;
    struct ws_rec *r = ws_rec_with_string(type, s, &n);
    if (r) {
        r->api = WS_API_wstrace;
        r->u[0] = u0;
        r->u[2] = u2;
        r->u[3] = u3;
        ws_rec_commit(n);
    }
    ws_hook_leave(saved);
}

static void run_begin(const char *shape_key) { string_event(WS_REC_RUN_BEGIN, shape_key, 0, 0, 0); }

static void run_end(void)
{
    if (!ws_hook_enter())
        return;
    int saved = errno;
    struct ws_rec *r = ws_rec_reserve(1);
    if (r) {
        memset(r, 0, sizeof *r);
        r->type = WS_REC_RUN_END;
        r->api = WS_API_wstrace;
        r->ns = ws_now();
        ws_rec_commit(1);
    }
    ws_hook_leave(saved);
}

static void estimate_workspace(const char *node, uint32_t slot, uint64_t bytes)
{
    string_event(WS_REC_ESTIMATE, node, slot, bytes, 0);
}

static void declare_workspace(const char *node, uint32_t slot, uint64_t bytes, uint64_t alignment)
{
    string_event(WS_REC_DECLARE, node, slot, bytes, alignment);
}

/* DECLARE2: the node then the tactic, one NUL between; each region follows as its own record. */
static void declare(const struct wstrace_workspace *w)
{
    char buf[WS_MAX_STRING];
    const char *tactic = w->tactic ? w->tactic : "";
    size_t nlen = strlen(w->node), tlen = strlen(tactic);
    if (nlen > WS_MAX_STRING - 1)
        nlen = WS_MAX_STRING - 1;
    if (nlen + 1 + tlen > sizeof buf)
        tlen = sizeof buf - nlen - 1;
    memcpy(buf, w->node, nlen);
    buf[nlen] = '\0';
    memcpy(buf + nlen + 1, tactic, tlen);
    uint32_t nregions = w->regions ? w->nregions : 0;
    if (nregions > WSTRACE_MAX_REGIONS)
        nregions = WSTRACE_MAX_REGIONS;
    if (!ws_hook_enter())
        return;
    int saved = errno;
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_DECLARE2, buf, nlen + 1 + tlen, &n);
    if (r) {
        r->api = WS_API_wstrace;
        r->u[0] = w->slot;
        r->u[2] = w->bytes;
        r->u[3] = w->alignment;
        r->u[4] = (uint64_t)(w->level & 0xffu) | (uint64_t)(w->tactic_kind & 0xffu) << 8 |
                  (uint64_t)(uint32_t)w->device << 32;
        r->u[5] = nregions;
        ws_rec_commit(n);
    }
    for (uint32_t i = 0; r && i < nregions; i++) {
        const struct wstrace_region *g = &w->regions[i];
        struct ws_rec *q = ws_rec_with_string(WS_REC_REGION, g->name, &n);
        if (!q)
            break;
        q->api = WS_API_wstrace;
        q->u[0] = g->offset;
        q->u[2] = g->bytes;
        q->u[3] = i;
        ws_rec_commit(n);
    }
    ws_hook_leave(saved);
}

/* META: the string is key then value; u0 is the key's length. */
static void metadata(const char *key, const char *value)
{
    char buf[WS_MAX_STRING];
    size_t klen = strlen(key), vlen = strlen(value);
    if (klen > WS_MAX_STRING / 2)
        klen = WS_MAX_STRING / 2;
    if (klen + vlen > sizeof buf)
        vlen = sizeof buf - klen;
    memcpy(buf, key, klen);
    memcpy(buf + klen, value, vlen);
    if (!ws_hook_enter())
        return;
    int saved = errno;
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_META, buf, klen + vlen, &n);
    if (r) {
        r->api = WS_API_wstrace;
        r->u[0] = klen;
        ws_rec_commit(n);
    }
    ws_hook_leave(saved);
}

static const struct wstrace_api_v1 api_v1 = {
    .size = sizeof(struct wstrace_api_v1),
    .node_push = node_push,
    .node_pop = node_pop,
    .run_begin = run_begin,
    .run_end = run_end,
    .estimate_workspace = estimate_workspace,
    .declare_workspace = declare_workspace,
    .metadata = metadata,
    .declare = declare,
};

WS_EXPORT const struct wstrace_api_v1 *wstrace_get_api_v1(void) { return ws_enabled ? &api_v1 : NULL; }
