/*
 * nvtx_prog: an NVTX client written the way libraries use NVTX 3 (the header-only nvtx3 headers,
 * the tool found through NVTX_INJECTION64_PATH), on the simulated device.  test_nvtx runs it
 * under libwstrace.so, one scenario per argv[1], and compares the trace with the "key=value"
 * lines it prints: what NVTX returned to it and what it counted itself.
 *
 *   domains     unbalanced pops in several domains and threads, a domain created twice,
 *               interleaved domains, start/end ranges ended twice or never started
 *   attributes  categories, colours and every payload type on ranges, start/end ranges, marks
 *   memory      the memory extension: heaps, region batches, resize, unregistration by pointer
 *               and by handle, naming, heap reset and unregistration, a heap whose memory is
 *               freed under it, the process-wide heap, an unknown region
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtPayload.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "nvtx_prog: %s failed: %d at line %d\n", #call, (int)err_, __LINE__);                      \
            exit(70);                                                                                                  \
        }                                                                                                              \
    } while (0)

static nvtxEventAttributes_t named(const char *message)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message;
    return a;
}

/* ---- domains ------------------------------------------------------------------------------------ */

static int negative_pops; /* pops that NVTX answered with a negative level, counted here */

static int pop(const char *key, int level)
{
    printf("%s=%d\n", key, level);
    if (level < 0)
        __atomic_add_fetch(&negative_pops, 1, __ATOMIC_RELAXED);
    return level;
}

static void *domains_worker(void *arg)
{
    (void)arg;
    printf("worker_push=%d\n", nvtxRangePushA("worker-range"));
    pop("worker_pop", nvtxRangePop());
    pop("worker_pop_again", nvtxRangePop()); /* nothing open on this thread */
    return NULL;
}

static int mode_domains(void)
{
    void *m[4];
    printf("push_a=%d\n", nvtxRangePushA("A"));
    nvtxDomainHandle_t x = nvtxDomainCreateA("X");
    pop("pop_x_empty", nvtxDomainRangePop(x)); /* X has nothing open: A must stay open */
    CHECK(cudaMalloc(&m[0], 101));
    pop("pop_a", nvtxRangePop());

    nvtxDomainHandle_t x2 = nvtxDomainCreateA("X"), y = nvtxDomainCreateW(L"Y");
    printf("same_handle=%d\n", x == x2);
    nvtxEventAttributes_t xr = named("x-range");
    printf("push_x=%d\n", nvtxDomainRangePushEx(x, &xr));
    CHECK(cudaMalloc(&m[1], 102));
    pop("pop_x2", nvtxDomainRangePop(x2)); /* the second handle of "X" closes it */
    pop("pop_y_empty", nvtxDomainRangePop(y));
    pop("pop_y_empty_again", nvtxDomainRangePop(y));
    pop("pop_default_empty", nvtxRangePop());

    /* Interleaved: outer (default), x-inner (X), d-inner (default). */
    printf("push_outer=%d\n", nvtxRangePushA("outer"));
    nvtxEventAttributes_t xi = named("x-inner");
    printf("push_x_inner=%d\n", nvtxDomainRangePushEx(x, &xi));
    printf("push_d_inner=%d\n", nvtxRangePushA("d-inner"));
    pop("pop_y_inside", nvtxDomainRangePop(y));
    pop("pop_d_inner", nvtxRangePop());
    CHECK(cudaMalloc(&m[2], 103)); /* innermost open: x-inner */
    pop("pop_outer", nvtxRangePop());
    CHECK(cudaMalloc(&m[3], 104)); /* still x-inner */
    pop("pop_x_inner", nvtxDomainRangePop(x));

    /* Start/end: an id never returned, and an id ended twice. */
    nvtxRangeEnd((nvtxRangeId_t)987654321);
    nvtxEventAttributes_t ys = named("y-startend");
    nvtxRangeId_t id = nvtxDomainRangeStartEx(y, &ys);
    nvtxDomainRangeEnd(y, id);
    nvtxDomainRangeEnd(y, id);
    printf("unmatched_ends=2\n");

    /* Another thread's unbalanced pop leaves this thread's open range alone. */
    printf("push_main_open=%d\n", nvtxRangePushA("main-open"));
    pthread_t t;
    if (pthread_create(&t, NULL, domains_worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 71;
    pop("pop_main_open", nvtxRangePop());
    printf("negative_pops=%d\n", negative_pops);
    for (int i = 0; i < 4; i++)
        CHECK(cudaFree(m[i]));
    return 0;
}

/* ---- attributes ------------------------------------------------------------------------------- */

static void push_payload(const char *name, int32_t type, uint64_t bits, int32_t reserved0)
{
    nvtxEventAttributes_t a = named(name);
    a.payloadType = type;
    a.payload.ullValue = bits;
    a.reserved0 = reserved0;
    nvtxRangePushEx(&a);
    nvtxRangePop();
}

static int mode_attributes(void)
{
    nvtxNameCategoryA(1, "cat-one");
    nvtxNameCategoryW(2, L"cat-two");
    nvtxDomainHandle_t d = nvtxDomainCreateA("attr-domain");
    nvtxDomainNameCategoryA(d, 1, "dom-cat-one");
    nvtxDomainNameCategoryA(d, 1, "dom-cat-renamed"); /* the last name holds */

    nvtxEventAttributes_t a = named("p-u64");
    a.category = 1;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF112233u;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 0x8000000000000005ull;
    nvtxRangePushEx(&a);
    nvtxRangePop();

    nvtxEventAttributes_t v = named("p-i64");
    v.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    v.payload.llValue = -42;
    nvtxRangePushEx(&v);
    nvtxRangePop();
    v = named("p-double");
    v.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    v.payload.dValue = 3.25;
    nvtxRangePushEx(&v);
    nvtxRangePop();
    v = named("p-u32");
    v.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    v.payload.uiValue = 4000000000u;
    nvtxRangePushEx(&v);
    nvtxRangePop();
    v = named("p-i32");
    v.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    v.payload.iValue = -7;
    nvtxRangePushEx(&v);
    nvtxRangePop();
    v = named("p-float");
    v.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
    v.payload.fValue = 1.5f;
    nvtxRangePushEx(&v);
    nvtxRangePop();
    push_payload("p-ext", NVTX_PAYLOAD_TYPE_EXT, 0x1234, 2); /* two binary payloads, not decoded */
    push_payload("p-unknown", 99, 77, 0);
    v = named("p-none"); /* no attribute at all */
    nvtxRangePushEx(&v);
    nvtxRangePop();

    nvtxEventAttributes_t se = named("se-attr");
    se.category = 2;
    se.colorType = NVTX_COLOR_ARGB;
    se.color = 0xFF00FF00u;
    se.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    se.payload.iValue = 5;
    nvtxRangeEnd(nvtxRangeStartEx(&se));

    nvtxEventAttributes_t dm = named("m-attr");
    dm.category = 1;
    dm.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    dm.payload.dValue = 0.5;
    nvtxDomainMarkEx(d, &dm);

    nvtxEventAttributes_t dr = named("d-attr");
    dr.category = 1;
    dr.colorType = NVTX_COLOR_ARGB;
    dr.color = 0x80FFFFFFu;
    nvtxDomainRangePushEx(d, &dr);
    nvtxDomainRangePop(d);

    /* A colour type that is not ARGB carries no colour. */
    nvtxEventAttributes_t nc = named("c-unknown");
    nc.colorType = NVTX_COLOR_UNKNOWN;
    nc.color = 0xFFFFFFFFu;
    nvtxRangePushEx(&nc);
    nvtxRangePop();
    printf("attribute_ranges=10\n"); /* p-u64 .. p-unknown (8), se-attr, d-attr */
    return 0;
}

/* ---- the memory extension --------------------------------------------------------------------- */

static nvtxMemHeapHandle_t heap_register(nvtxDomainHandle_t d, void *base, size_t bytes, const char *name,
                                         uint32_t category)
{
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = base};
    nvtxMemHeapDesc_t desc = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                              .structSize = sizeof desc,
                              .usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
                              .type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                              .typeSpecificDescSize = sizeof range,
                              .typeSpecificDesc = &range,
                              .category = category,
                              .messageType = name ? NVTX_MESSAGE_TYPE_ASCII : NVTX_MESSAGE_UNKNOWN,
                              .message.ascii = name};
    return nvtxMemHeapRegister(d, &desc);
}

static void regions_register(nvtxDomainHandle_t d, nvtxMemHeapHandle_t heap, const nvtxMemVirtualRangeDesc_t *ranges,
                             size_t n, nvtxMemRegionHandle_t *out)
{
    nvtxMemRegionsRegisterBatch_t b = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                       .structSize = sizeof b,
                                       .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                                       .heap = heap,
                                       .regionCount = n,
                                       .regionDescElementSize = sizeof *ranges,
                                       .regionDescElements = ranges,
                                       .regionHandleElementsOut = out};
    nvtxMemRegionsRegister(d, &b);
}

static void region_unregister(nvtxDomainHandle_t d, uint32_t ref_type, nvtxMemRegionRef_t ref)
{
    nvtxMemRegionsUnregisterBatch_t b = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                         .structSize = sizeof b,
                                         .refType = ref_type,
                                         .refCount = 1,
                                         .refElementSize = sizeof ref,
                                         .refElements = &ref};
    nvtxMemRegionsUnregister(d, &b);
}

static int mode_memory(void)
{
    nvtxDomainHandle_t d = nvtxDomainCreateA("pool");
    char *pool, *pool2, *x;
    nvtxRangePushA("step");

    nvtxRangePushA("setup");
    CHECK(cudaMalloc((void **)&pool, 1 << 20));
    nvtxMemHeapHandle_t heap = heap_register(d, pool, 1 << 20, "my-heap", 4);
    printf("pool=%lld\nheap_is_pool=%d\n", (long long)(intptr_t)pool, (void *)heap == (void *)pool);
    nvtxRangePop();

    nvtxRangePushA("n1");
    nvtxMemVirtualRangeDesc_t ab[2] = {{.size = 1000, .ptr = pool}, {.size = 2000, .ptr = pool + 4096}};
    nvtxMemRegionHandle_t handles[2] = {0};
    regions_register(d, heap, ab, 2, handles);
    printf("handles_are_pointers=%d\n", (void *)handles[0] == (void *)pool && (void *)handles[1] == pool + 4096);
    nvtxRangePop();

    nvtxRangePushA("n2");
    nvtxMemVirtualRangeDesc_t grow = {.size = 3000, .ptr = pool};
    nvtxMemRegionsResizeBatch_t rb = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                      .structSize = sizeof rb,
                                      .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                                      .regionDescCount = 1,
                                      .regionDescElementSize = sizeof grow,
                                      .regionDescElements = &grow};
    nvtxMemRegionsResize(d, &rb);
    region_unregister(d, NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){.handle = handles[1]});
    nvtxMemRegionNameDesc_t nd = {.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER,
                                  .nameType = NVTX_MESSAGE_TYPE_ASCII,
                                  .region.pointer = pool,
                                  .name.ascii = "tensor-a",
                                  .category = 5};
    nvtxMemRegionsNameBatch_t nb = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                    .structSize = sizeof nb,
                                    .regionCount = 1,
                                    .regionElementSize = sizeof nd,
                                    .regionElements = &nd};
    nvtxMemRegionsName(d, &nb);
    nvtxRangePop();

    nvtxRangePushA("n3");
    nvtxMemVirtualRangeDesc_t c = {.size = 500, .ptr = pool + 8192};
    regions_register(d, heap, &c, 1, NULL);
    nvtxMemHeapReset(d, heap); /* ends A and C */
    nvtxRangePop();

    nvtxRangePushA("n4");
    nvtxMemVirtualRangeDesc_t dd = {.size = 100, .ptr = pool};
    regions_register(d, heap, &dd, 1, NULL);
    nvtxMemHeapUnregister(d, heap); /* ends D */
    nvtxRangePop();

    nvtxRangePushA("n5");
    CHECK(cudaMalloc((void **)&pool2, 65536));
    nvtxMemHeapHandle_t heap2 = heap_register(d, pool2 + 1024, 4096, NULL, 0); /* inside the allocation */
    nvtxMemVirtualRangeDesc_t e = {.size = 256, .ptr = pool2 + 1024};
    regions_register(d, heap2, &e, 1, NULL);
    CHECK(cudaFree(pool2)); /* frees heap2 and E with it */
    CHECK(cudaMalloc((void **)&x, 777));
    nvtxMemVirtualRangeDesc_t pw = {.size = 777, .ptr = x};
    regions_register(d, NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE, &pw, 1, NULL);
    region_unregister(d, NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){.pointer = x});
    CHECK(cudaFree(x));
    region_unregister(d, NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){.pointer = pool + 12345});
    printf("unknown_region=%lld\n", (long long)(intptr_t)(pool + 12345));
    nvtxRangePop();

    CHECK(cudaFree(pool));
    nvtxRangePop();
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: nvtx_prog domains|attributes|memory\n");
        return 2;
    }
    if (strcmp(argv[1], "domains") == 0)
        return mode_domains();
    if (strcmp(argv[1], "attributes") == 0)
        return mode_attributes();
    if (strcmp(argv[1], "memory") == 0)
        return mode_memory();
    fprintf(stderr, "nvtx_prog: unknown mode '%s'\n", argv[1]);
    return 2;
}
