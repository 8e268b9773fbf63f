/* Kernel launches. On the simulated device a kernel is a host function void f(void **args).
 *
 * Two ways in: cudaLaunchKernel & co. with func either such a host function or an nvcc host stub;
 * and nvcc 13's own path, where a stub calls __cudaGetKernel once and then __cudaLaunchKernel with
 * the handle. nvcc-built modules announce their stubs from a constructor through
 * __cudaRegisterFunction(hostFun -> deviceName); wssim_register_host_kernel() gives the host
 * implementation for a device name. A launch resolves stub or handle -> name -> host function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

typedef void (*sim_host_kernel_fn)(void **args);

/* A kernel handle (cudaKernel_t, CUfunction): a stub registered by __cudaRegisterFunction (its
 * address is the handle), a function of a driver module (host_fun NULL), or a host function
 * launched by address that a driver launch needed a handle for (direct, device_name NULL). */
struct sim_function {
    struct sim_function *next;
    const void *module;
    const void *host_fun;
    char *device_name;
    void (*direct)(void **args);
};

/* A host kernel, and the sizes of its parameters when they were registered: a graph kernel node
 * keeps a copy of its arguments, which it can make only knowing their sizes. */
struct sim_host_kernel {
    struct sim_host_kernel *next;
    char *device_name; /* NULL: a host function launched by address (wssim_register_function_params) */
    sim_host_kernel_fn fn;
    unsigned nparams;
    size_t *sizes; /* NULL: no layout registered */
};

/* Both lists are guarded by sim_lock. */
static struct sim_function *functions;
static struct sim_host_kernel *host_kernels;

static struct sim_host_kernel *find_host_kernel(const char *device_name)
{
    for (struct sim_host_kernel *k = host_kernels; k; k = k->next)
        if (k->device_name && strcmp(k->device_name, device_name) == 0)
            return k;
    return NULL;
}

static struct sim_host_kernel *find_host_function(sim_host_kernel_fn fn)
{
    for (struct sim_host_kernel *k = host_kernels; k; k = k->next)
        if (!k->device_name && k->fn == fn)
            return k;
    return NULL;
}

/* Registers (or replaces) a host kernel by device name, or a layout for a host function
 * (device_name NULL); sizes NULL keeps no layout.  sim_lock held. */
static int register_locked(const char *device_name, sim_host_kernel_fn fn, unsigned nparams, const size_t *sizes)
{
    struct sim_host_kernel *k = device_name ? find_host_kernel(device_name) : find_host_function(fn);
    size_t *copy = NULL;
    if (sizes) {
        copy = malloc((nparams ? nparams : 1) * sizeof *copy);
        if (!copy)
            return -1;
        memcpy(copy, sizes, nparams * sizeof *copy);
    }
    if (!k) {
        k = calloc(1, sizeof *k);
        char *name = device_name ? strdup(device_name) : NULL;
        if (!k || (device_name && !name)) {
            free(k);
            free(name);
            free(copy);
            return -1;
        }
        k->device_name = name;
        k->next = host_kernels;
        host_kernels = k;
    }
    k->fn = fn;
    if (sizes || device_name) { /* a plain re-registration by name forgets an older layout */
        free(k->sizes);
        k->sizes = copy;
        k->nparams = sizes ? nparams : 0;
    }
    return 0;
}

enum { MAX_PARAMS = 1024 };

int wssim_register_host_kernel(const char *device_name, void (*fn)(void **args))
{
    if (!device_name || !fn)
        return -1;
    pthread_mutex_lock(&sim_lock);
    int rc = register_locked(device_name, fn, 0, NULL);
    pthread_mutex_unlock(&sim_lock);
    return rc;
}

int wssim_register_host_kernel_params(const char *device_name, void (*fn)(void **args), unsigned nparams,
                                      const size_t *param_sizes)
{
    if (!device_name || !fn || nparams > MAX_PARAMS || (nparams && !param_sizes))
        return -1;
    static const size_t none = 0;
    pthread_mutex_lock(&sim_lock);
    int rc = register_locked(device_name, fn, nparams, nparams ? param_sizes : &none);
    pthread_mutex_unlock(&sim_lock);
    return rc;
}

int wssim_register_function_params(void (*fn)(void **args), unsigned nparams, const size_t *param_sizes)
{
    if (!fn || nparams > MAX_PARAMS || (nparams && !param_sizes))
        return -1;
    static const size_t none = 0;
    pthread_mutex_lock(&sim_lock);
    int rc = register_locked(NULL, fn, nparams, nparams ? param_sizes : &none);
    pthread_mutex_unlock(&sim_lock);
    return rc;
}

/* ---- registration entry points called by nvcc-generated constructors ---- */

void **__cudaRegisterFatBinary(void *fatCubin)
{
    void **module = malloc(sizeof *module);
    if (!module)
        return NULL;
    *module = fatCubin;
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(module, SIM_MODULE, 0, module);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(module);
        return NULL;
    }
    return module;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle; /* nothing to link: there is no device code */
}

char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global)
{
    /* A __device__ variable's host shadow is the variable on the simulated device: remember its
     * size for cudaMemcpyToSymbol and cudaGetSymbolSize. */
    (void)fatCubinHandle, (void)deviceAddress, (void)deviceName, (void)ext, (void)constant, (void)global;
    if (!hostVar || size == 0)
        return;
    pthread_mutex_lock(&sim_lock);
    const struct sim_entry *e = sim_table_get(hostVar);
    if (!e || e->kind == SIM_VARIABLE)
        sim_table_put(hostVar, SIM_VARIABLE, size, NULL);
    pthread_mutex_unlock(&sim_lock);
}

static void forget_function_locked(struct sim_function *f)
{
    /* The stub may have been registered again by a later module; that mapping stays. */
    struct sim_entry *stub = sim_table_get(f->host_fun);
    if (stub && stub->data == f)
        sim_table_del(f->host_fun);
    sim_table_del(f);
    free(f->device_name);
    free(f);
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
    if (!hostFun || !deviceName)
        return;
    struct sim_function *f = calloc(1, sizeof *f);
    char *name = strdup(deviceName);
    if (!f || !name) { /* the kernel stays unknown: its launches fail, nothing else does */
        free(f);
        free(name);
        return;
    }
    *f = (struct sim_function){.module = fatCubinHandle, .host_fun = hostFun, .device_name = name};
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *old = sim_table_get(hostFun);
    if (old && old->kind == SIM_STUB) /* the same stub again: the newer registration wins */
        sim_table_del(hostFun);
    if (sim_table_put(hostFun, SIM_STUB, 0, f) == 0 && sim_table_put(f, SIM_KERNEL, 0, f) == 0) {
        f->next = functions;
        functions = f;
    } else {
        sim_table_del(hostFun);
        free(name);
        free(f);
    }
    pthread_mutex_unlock(&sim_lock);
}

static void forget_module_locked(const void *module)
{
    struct sim_function **link = &functions;
    while (*link) {
        struct sim_function *f = *link;
        if (f->module == module) {
            *link = f->next;
            forget_function_locked(f);
        } else {
            link = &f->next;
        }
    }
}

void sim_forget_module_kernels(const void *module)
{
    pthread_mutex_lock(&sim_lock);
    forget_module_locked(module);
    pthread_mutex_unlock(&sim_lock);
}

void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(fatCubinHandle, SIM_MODULE);
    if (known) {
        forget_module_locked(fatCubinHandle);
        sim_table_del(fatCubinHandle);
    }
    pthread_mutex_unlock(&sim_lock);
    if (known)
        free(fatCubinHandle);
}

/* ---- kernel handles for the driver: module functions and host functions ---- */

/* Registers a new handle; sim_lock held.  NULL when memory runs out. */
static struct sim_function *new_handle_locked(const void *module, const char *name, sim_host_kernel_fn direct)
{
    struct sim_function *f = calloc(1, sizeof *f);
    char *copy = name ? strdup(name) : NULL;
    if (!f || (name && !copy) || sim_table_put(f, SIM_KERNEL, 0, f) != 0) {
        free(f);
        free(copy);
        return NULL;
    }
    *f = (struct sim_function){.next = functions, .module = module, .device_name = copy, .direct = direct};
    functions = f;
    return f;
}

cudaError_t sim_kernel_handle(const void *func, void **handle)
{
    if (!func || !handle)
        return cudaErrorInvalidDeviceFunction;
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(func);
    struct sim_function *f = NULL;
    if (e && (e->kind == SIM_STUB || e->kind == SIM_KERNEL)) {
        f = e->data;
    } else if (e) {
        err = cudaErrorInvalidDeviceFunction; /* memory, a stream or another handle is not code */
    } else {
        for (f = functions; f && f->direct != (sim_host_kernel_fn)func; f = f->next)
            ;
        if (!f && !(f = new_handle_locked(NULL, NULL, (sim_host_kernel_fn)func)))
            err = cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&sim_lock);
    if (err == cudaSuccess)
        *handle = f;
    return err;
}

cudaError_t sim_module_kernel(const void *module, const char *name, void **handle)
{
    if (!module || !name || !handle)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&sim_lock);
    struct sim_function *f = functions;
    while (f && !(f->module == module && !f->host_fun && f->device_name && strcmp(f->device_name, name) == 0))
        f = f->next;
    if (!f)
        f = new_handle_locked(module, name, NULL);
    pthread_mutex_unlock(&sim_lock);
    if (!f)
        return cudaErrorMemoryAllocation;
    *handle = f;
    return cudaSuccess;
}

int sim_is_kernel_handle(const void *handle)
{
    pthread_mutex_lock(&sim_lock);
    int known = handle && sim_table_has(handle, SIM_KERNEL);
    pthread_mutex_unlock(&sim_lock);
    return known;
}

/* Names live as long as their handle. */
const char *sim_kernel_name(const void *handle)
{
    pthread_mutex_lock(&sim_lock);
    const struct sim_function *f = handle && sim_table_has(handle, SIM_KERNEL) ? handle : NULL;
    const char *name = f ? f->device_name : NULL;
    pthread_mutex_unlock(&sim_lock);
    return name;
}

/* ---- kernels without a host implementation ---- */

static pthread_once_t noop_once = PTHREAD_ONCE_INIT;
static int noop_kernels;

static void read_noop_setting(void)
{
    const char *text = getenv("WSSIM_NOOP_KERNELS");
    if (!text || strcmp(text, "0") == 0 || text[0] == '\0')
        return;
    if (strcmp(text, "1") == 0) {
        noop_kernels = 1;
        return;
    }
    fprintf(stderr, "wssim: WSSIM_NOOP_KERNELS='%s' is neither 0 nor 1; kernels without a host implementation fail\n",
            text);
}

int sim_noop_kernels(void)
{
    pthread_once(&noop_once, read_noop_setting);
    return noop_kernels;
}

/* ---- launch configuration pushed by <<<...>>> and popped by the stub, per host thread ---- */

struct launch_config {
    dim3 grid, block;
    size_t shared_mem;
    cudaStream_t stream;
};

enum { CONFIG_STACK_DEPTH = 16 };
static _Thread_local struct launch_config config_stack[CONFIG_STACK_DEPTH];
static _Thread_local unsigned config_depth;

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream)
{
    if (config_depth == CONFIG_STACK_DEPTH)
        return 1;
    config_stack[config_depth++] = (struct launch_config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    if (config_depth == 0)
        return sim_result(cudaErrorMissingConfiguration);
    const struct launch_config *c = &config_stack[--config_depth];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shared_mem;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    if (!kernel)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(hostFun);
    struct sim_function *f = e && e->kind == SIM_STUB ? e->data : NULL;
    pthread_mutex_unlock(&sim_lock);
    if (!f)
        return sim_result(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)f;
    return cudaSuccess;
}

/* ---- launching ---- */

/* Limits of sim_fill_properties: a launch the device would refuse is refused here too. */
static int config_valid(dim3 grid, dim3 block)
{
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024)
        return 0;
    if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        return 0;
    return block.x <= 1024 && block.y <= 1024 && block.z <= 64;
}

/* Resolves what a launch names to the host function that runs it, with sim_lock held:
 * a registered stub or kernel handle goes through its device name; anything else is taken to be
 * a host kernel itself. Returns NULL when a registered kernel has no host implementation
 * (*named set: a no-op under WSSIM_NOOP_KERNELS) or func is not code. */
static sim_host_kernel_fn resolve_named_locked(const void *func, const struct sim_host_kernel **entry, int *named)
{
    struct sim_entry *e = sim_table_get(func);
    *entry = NULL;
    *named = 0;
    if (e && (e->kind == SIM_STUB || e->kind == SIM_KERNEL)) {
        const struct sim_function *f = e->data;
        if (f->direct) {
            *entry = find_host_function(f->direct);
            return f->direct;
        }
        const struct sim_host_kernel *k = find_host_kernel(f->device_name);
        *entry = k;
        *named = 1;
        return k ? k->fn : NULL;
    }
    if (e) /* memory, a stream or another handle is not code */
        return NULL;
    *entry = find_host_function((sim_host_kernel_fn)func);
    return (sim_host_kernel_fn)func;
}

static void noop_kernel(void **args) { (void)args; }

cudaError_t sim_kernel_layout_locked(const void *func, unsigned *nparams, const size_t **sizes)
{
    const struct sim_host_kernel *k;
    static const size_t none = 0;
    int named;
    if (!func)
        return cudaErrorInvalidDeviceFunction;
    sim_host_kernel_fn fn = resolve_named_locked(func, &k, &named);
    if (!fn && named && sim_noop_kernels()) { /* a no-op keeps no arguments */
        *nparams = 0;
        *sizes = &none;
        return cudaSuccess;
    }
    cudaError_t err = !fn ? cudaErrorInvalidDeviceFunction : !k || !k->sizes ? cudaErrorNotSupported : cudaSuccess;
    if (err == cudaSuccess) {
        *nparams = k->nparams;
        *sizes = k->sizes;
    }
    return err;
}

cudaError_t sim_run_kernel(const void *func, dim3 grid, dim3 block, void **args)
{
    const struct sim_host_kernel *k;
    if (!func)
        return cudaErrorInvalidDeviceFunction;
    if (!config_valid(grid, block))
        return cudaErrorInvalidConfiguration;
    int named;
    pthread_mutex_lock(&sim_lock);
    sim_host_kernel_fn fn = resolve_named_locked(func, &k, &named);
    if (fn) {
        sim_stats.launches++;
    } else if (named && sim_noop_kernels()) {
        sim_stats.noop_launches++;
        fn = noop_kernel;
    }
    pthread_mutex_unlock(&sim_lock);
    if (!fn)
        return cudaErrorInvalidDeviceFunction;
    fn(args); /* outside the lock: a kernel may call the runtime */
    return cudaSuccess;
}

cudaError_t sim_launch(const void *func, dim3 grid, dim3 block, size_t smem, void **args, cudaStream_t stream)
{
    if (!func)
        return sim_result(cudaErrorInvalidDeviceFunction);
    if (!config_valid(grid, block))
        return sim_result(cudaErrorInvalidConfiguration);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_KERNEL, .func = func, .grid = grid, .block = block, .smem = smem,
                   .args = args);
    return sim_result(sim_run_kernel(func, grid, block, args));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream)
{
    return sim_launch(func, gridDim, blockDim, sharedMem, args, stream);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                        cudaStream_t stream)
{
    return sim_launch(func, gridDim, blockDim, sharedMem, args, stream);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    if (!config)
        return sim_result(cudaErrorInvalidValue);
    return sim_launch(func, config->gridDim, config->blockDim, config->dynamicSmemBytes, args, config->stream);
}

/* Only registered handles are launched: a handle is never called as a function. */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
    pthread_mutex_lock(&sim_lock);
    int known = kernel && sim_table_has(kernel, SIM_KERNEL);
    pthread_mutex_unlock(&sim_lock);
    if (!known)
        return sim_result(cudaErrorInvalidDeviceFunction);
    return sim_launch(kernel, gridDim, blockDim, sharedMem, args, stream);
}

SIM_ALIAS(__cudaLaunchKernel_ptsz, __cudaLaunchKernel);
SIM_ALIAS(cudaLaunchKernel_ptsz, cudaLaunchKernel);
SIM_ALIAS(cudaLaunchCooperativeKernel_ptsz, cudaLaunchCooperativeKernel);
SIM_ALIAS(cudaLaunchKernelExC_ptsz, cudaLaunchKernelExC);
