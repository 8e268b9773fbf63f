/*
 * A program that reaches CUDA the way Python's ctypes and loader stubs do: it links no CUDA
 * library, opens the runtime (or the driver) with dlopen(RTLD_LOCAL) and asks the handle for entry
 * points.  One scenario per argv[1]; it prints key=value lines the tests compare with the trace.
 *
 *   handle CUDART N        N cudaMalloc/cudaFree pairs (sizes 1000 + i) through dlsym(handle)
 *   vsym CUDART N          the same through dlvsym(handle, name, "libcudart.so.13")
 *   unhooked CUDART        lookups of names that are not hooks, and of a name nothing defines
 *   pseudo                 RTLD_NEXT and RTLD_DEFAULT from the executable and from a library
 *   fork CUDART N K        N children, child i makes i + 1 allocations (sizes 500 + i + j) and
 *                          returns from main; K children make 3 allocations (700..702) and are killed
 *                          by SIGKILL; the parent makes 1 allocation of 100 bytes
 *   driver CUDA            the driver only: cuInit, a device and its primary context, no runtime
 *   plugin CUDART PLUGIN N dlopen PLUGIN (a library carrying a static cudart), then N cudaMalloc
 *                          calls of 4096 bytes through the runtime's handle
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

/* The executable's definition: RTLD_DEFAULT from anywhere in the global scope finds this one. */
const char *lookup_probe(void) { return "exe"; }
const char *lookup_probe_next_from_a(void);
const char *lookup_probe_default_from_a(void);
const char *lookup_probe_b_name(void);

static void *open_or_die(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "lookup_prog: dlopen %s: %s\n", path, dlerror());
        exit(70);
    }
    return h;
}

static void *need(void *p, const char *name)
{
    if (!p) {
        fprintf(stderr, "lookup_prog: no %s\n", name);
        exit(70);
    }
    return p;
}

/* The file of the object that defines address p. */
static const char *object_of(const void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "(none)";
}

static int pairs(malloc_fn m, free_fn f, int n, size_t size0)
{
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        int rc = m(&p, size0 + (size_t)i);
        if (rc != 0 || f(p) != 0) {
            fprintf(stderr, "lookup_prog: allocation %d failed: %d\n", i, rc);
            return 70;
        }
    }
    return 0;
}

static int mode_handle(const char *cudart, int n, int versioned)
{
    void *h = open_or_die(cudart);
    malloc_fn m =
        (malloc_fn)need(versioned ? dlvsym(h, "cudaMalloc", "libcudart.so.13") : dlsym(h, "cudaMalloc"), "cudaMalloc");
    free_fn f = (free_fn)need(versioned ? dlvsym(h, "cudaFree", "libcudart.so.13") : dlsym(h, "cudaFree"), "cudaFree");
    printf("malloc_from=%s\nfree_from=%s\n", object_of((void *)m), object_of((void *)f));
    int rc = pairs(m, f, n, 1000);
    printf("calls=%d\n", n);
    return rc;
}

static int mode_unhooked(const char *cudart)
{
    void *h = open_or_die(cudart);
    typedef int (*count_fn)(int *);
    count_fn count = (count_fn)need(dlsym(h, "cudaGetDeviceCount"), "cudaGetDeviceCount");
    int devices = -1, rc = count(&devices);
    printf("count_from=%s\ncount_rc=%d\ndevices=%d\n", object_of((void *)count), rc, devices);
    printf("version_from=%s\n", object_of(dlvsym(h, "cudaRuntimeGetVersion", "libcudart.so.13")));
    dlerror();
    void *none = dlsym(h, "cudaNoSuchFunction");
    const char *err = dlerror();
    printf("missing_is_null=%d\nmissing_error=%d\n", none == NULL, err != NULL && strstr(err, "cudaNoSuchFunction"));
    return 0;
}

static int mode_pseudo(void)
{
    typedef const char *(*probe_fn)(void);
    probe_fn next = (probe_fn)dlsym(RTLD_NEXT, "lookup_probe");
    const char *a = lookup_probe_next_from_a(), *d = lookup_probe_default_from_a();
    printf("b_is=%s\n", lookup_probe_b_name()); /* probe_b is linked in for what it defines */
    printf("next_from_exe=%s\nnext_from_a=%s\ndefault_from_a=%s\n", next ? next() : "(none)", a ? a : "(none)",
           d ? d : "(none)");
    void *exit_next = dlsym(RTLD_NEXT, "_exit"), *exit_default = dlsym(RTLD_DEFAULT, "_exit");
    printf("exit_next_is_default=%d\nexit_next_from=%s\n", exit_next && exit_next == exit_default,
           object_of(exit_next));
    return 0;
}

static int mode_fork(const char *cudart, int n, int killed)
{
    void *h = open_or_die(cudart);
    malloc_fn m = (malloc_fn)need(dlsym(h, "cudaMalloc"), "cudaMalloc");
    free_fn f = (free_fn)need(dlsym(h, "cudaFree"), "cudaFree");
    for (int i = 0; i < n + killed; i++) {
        fflush(stdout); /* a child that leaves through exit() must not print the parent's lines again */
        pid_t c = fork();
        if (c < 0)
            return 70;
        if (c == 0) {
            if (i < n)
                exit(pairs(m, f, i + 1, 500 + (size_t)i)); /* through exit: destructors run */
            pairs(m, f, 3, 700);
            kill(getpid(), SIGKILL);
            _exit(71);
        }
        int status;
        if (waitpid(c, &status, 0) != c)
            return 70;
        if (i < n && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            return 70;
        if (i >= n && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
            return 70;
        printf(i < n ? "child%d=%ld\n" : "killed%d=%ld\n", i < n ? i : i - n, (long)c);
    }
    return pairs(m, f, 1, 100);
}

static int mode_driver(const char *driver)
{
    void *h = open_or_die(driver);
    typedef int (*init_fn)(unsigned);
    typedef int (*get_fn)(int *, int);
    typedef int (*retain_fn)(void **, int);
    init_fn init = (init_fn)need(dlsym(h, "cuInit"), "cuInit");
    get_fn get = (get_fn)need(dlsym(h, "cuDeviceGet"), "cuDeviceGet");
    retain_fn retain = (retain_fn)need(dlsym(h, "cuDevicePrimaryCtxRetain"), "cuDevicePrimaryCtxRetain");
    int device = -1;
    void *ctx = NULL;
    int rc = init(0);
    if (rc == 0)
        rc = get(&device, 0);
    if (rc == 0)
        rc = retain(&ctx, device);
    printf("driver_rc=%d\ndevice=%d\n", rc, device);
    return rc == 0 ? 0 : 70;
}

static int mode_plugin(const char *cudart, const char *plugin, int n)
{
    open_or_die(plugin);
    void *h = open_or_die(cudart);
    malloc_fn m = (malloc_fn)need(dlsym(h, "cudaMalloc"), "cudaMalloc");
    for (int i = 0; i < n; i++) {
        void *p;
        if (m(&p, 4096) != 0)
            return 70;
    }
    printf("calls=%d\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc = 64;
    if (!strcmp(mode, "handle") && argc == 4)
        rc = mode_handle(argv[2], atoi(argv[3]), 0);
    else if (!strcmp(mode, "vsym") && argc == 4)
        rc = mode_handle(argv[2], atoi(argv[3]), 1);
    else if (!strcmp(mode, "unhooked") && argc == 3)
        rc = mode_unhooked(argv[2]);
    else if (!strcmp(mode, "pseudo") && argc == 2)
        rc = mode_pseudo();
    else if (!strcmp(mode, "fork") && argc == 5)
        rc = mode_fork(argv[2], atoi(argv[3]), atoi(argv[4]));
    else if (!strcmp(mode, "driver") && argc == 3)
        rc = mode_driver(argv[2]);
    else if (!strcmp(mode, "plugin") && argc == 5)
        rc = mode_plugin(argv[2], argv[3], atoi(argv[4]));
    else
        fprintf(stderr, "usage: lookup_prog handle|vsym|unhooked|pseudo|fork|driver|plugin ...\n");
    fflush(stdout);
    return rc;
}
