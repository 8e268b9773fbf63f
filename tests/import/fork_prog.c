/*
 * fork_prog N: a CUDA program (simulated device) that forks until it is N processes.  Process k
 * (0 = the parent) opens NVTX range "proc/k", makes k + 1 device allocations of (k + 1) MiB
 * and frees all but the last, then closes the range.  So process k contributes k + 1
 * allocations, k frees and one range; its peak live bytes are (k + 1) MiB * 2 when k >= 1
 * (an allocation is live while the next one is made) and 1 MiB for k = 0.
 */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int work(int k)
{
    char name[32];
    snprintf(name, sizeof name, "proc/%d", k);
    nvtxRangePushA(name);
    void *prev = NULL;
    size_t bytes = (size_t)(k + 1) << 20;
    for (int i = 0; i <= k; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, bytes) != cudaSuccess)
            return 1;
        if (prev && cudaFree(prev) != cudaSuccess)
            return 1;
        prev = p;
    }
    nvtxRangePop();
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8;
    if (n < 1 || n > 64)
        return 2;
    for (int k = 1; k < n; k++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            return work(k);
    }
    int rc = work(0);
    for (int k = 1; k < n; k++) {
        int status = 0;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
    }
    return rc;
}
