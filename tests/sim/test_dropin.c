/* The simulated device as a drop-in cudart: a program linked against the real libcudart.so runs
 * on it through LD_LIBRARY_PATH alone. */
#include <criterion/criterion.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

/* Runs program with LD_LIBRARY_PATH=<build>/lib/sim and expects exit status 0. */
static void expect_runs_on_simulated_device(const char *program)
{
    char *argv[] = {(char *)program, NULL};
    cr_assert_eq(setenv("LD_LIBRARY_PATH", WS_BUILD_DIR "/lib/sim", 1), 0);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, program, NULL, NULL, argv, environ), 0, "cannot run %s", program);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status), "%s crashed (signal %d)", program, WTERMSIG(status));
    cr_expect_eq(WEXITSTATUS(status), 0, "%s failed; see its stderr above", program);
}

Test(sim_dropin, real_cudart_program_runs_on_the_simulated_device)
{
    expect_runs_on_simulated_device(WS_BUILD_DIR "/tests/sim_dropin_probe");
}

/* Built only with nvcc (WSTRACE_HAVE_NVCC); without it the test is reported as skipped. */
Test(sim_dropin, nvcc_built_program_runs_on_the_simulated_device)
{
#ifdef WSSIM_NVCC_PROBE
    expect_runs_on_simulated_device(WSSIM_NVCC_PROBE);
#else
    cr_skip_test("nvcc was not found when this build was configured: no nvcc-built program to run");
#endif
}
