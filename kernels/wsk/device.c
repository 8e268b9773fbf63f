/*
 * device.c - which CUDA runtime wsk runs on.  One binary serves both: linked with the real
 * cudart it runs the CUDA kernels; for --device sim it re-executes itself with the simulated
 * runtime (libwssim under cudart's soname in <exe dir>/../lib/sim) first on the library path.
 * The simulated runtime is recognised by its symbol wssim_is_simulated.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wsk.h"

/* Set in the re-executed process: a second re-execution would loop. */
#define REEXEC_MARKER "WSK_SIM_REEXEC"

static bool runtime_is_simulated(void) { return dlsym(RTLD_DEFAULT, "wssim_is_simulated") != NULL; }

static int real_gpu_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

static int sim_lib_dir(char *out, size_t size, struct wsk_error *err)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: cannot read /proc/self/exe");
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    /* The build tree keeps it in lib/sim, an installation in lib/wstrace/sim. */
    static const char *const candidates[] = {"%s/../lib/sim", "%s/../lib/wstrace/sim"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if ((size_t)snprintf(out, size, candidates[i], exe) >= size)
            return wsk_fail(err, WSK_EXIT_FAIL, "wsk: path of the program too long");
        char lib[PATH_MAX + 64];
        snprintf(lib, sizeof lib, "%s/libcudart.so.13", out);
        if (access(lib, R_OK) == 0)
            return 0;
    }
    return 0; /* the last candidate; the re-executed program reports it if it is missing */
}

static int reexec_on_simulator(char **argv, struct wsk_error *err)
{
    char dir[PATH_MAX + 16], path[2 * PATH_MAX + 32];
    if (sim_lib_dir(dir, sizeof dir, err) != 0)
        return -1;
    if (getenv(REEXEC_MARKER))
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: --device sim: the simulated runtime was not loaded from %s", dir);
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(path, sizeof path, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
    if (setenv("LD_LIBRARY_PATH", path, 1) != 0 || setenv(REEXEC_MARKER, "1", 1) != 0)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: cannot set the environment");
    execv("/proc/self/exe", argv);
    return wsk_fail(err, WSK_EXIT_FAIL, "wsk: cannot re-execute on the simulated runtime");
}

int wsk_select_device(struct wsk_config *cfg, char **argv, struct wsk_error *err)
{
    bool simulated = runtime_is_simulated();
    if (cfg->device == WSK_DEVICE_AUTO)
        cfg->device = simulated || real_gpu_count() < 1 ? WSK_DEVICE_SIM : WSK_DEVICE_CUDA;
    if (cfg->device == WSK_DEVICE_SIM)
        return simulated ? 0 : reexec_on_simulator(argv, err);
    if (!wsk_kernels_for(WSK_DEVICE_CUDA))
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --device cuda needs a build with nvcc (WSTRACE_CUDA=ON)");
    if (simulated)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --device cuda, but the CUDA runtime loaded is the simulated one");
    if (real_gpu_count() < 1)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: --device cuda: no CUDA device found");
    return 0;
}

const struct wsk_kernel_table *wsk_kernels_for(enum wsk_device_kind kind)
{
    if (kind != WSK_DEVICE_CUDA)
        return wsk_host_kernels();
#ifdef WSK_HAVE_CUDA_KERNELS
    return wsk_cuda_kernels();
#else
    return NULL;
#endif
}
