/* A temporary folder per Criterion suite: testdir_make in .init, testdir_remove in .fini. */
#ifndef WS_TESTDIR_H
#define WS_TESTDIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* /tmp/<prefix>_<pid> into dir (len bytes), created. */
static inline void testdir_make(char *dir, size_t len, const char *prefix)
{
    snprintf(dir, len, "/tmp/%s_%d", prefix, (int)getpid());
    mkdir(dir, 0700);
}

static inline void testdir_remove(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

#endif
