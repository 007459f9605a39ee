/*
 * bench_fx.c — the scratch directory the bench suites (test_bench*.c)
 * work in, and reading and writing its files.
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/bench/bench.h"
#include "nn/variant.h"
#include "nn/model.h"
#include "run/store.h"
#include "testutil.h"
#include "util/json.h"
#include "bench_fx.h"

char tmpdir[64];

/* Write text to TMP/name; the path into path (256 bytes). */
void put(const char *name, const char *text, char *path) {
    snprintf(path, 256, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert(fputs(text, f) >= 0);
    cr_assert_eq(fclose(f), 0);
}

/* The contents of TMP/name (static buffer; "" if missing). */
const char *slurp(const char *name) {
    static char buf[65536];
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* system(cmd)'s exit status, or -1 if it did not exit. */
int run_sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void mk_tmp(void) {
    strcpy(tmpdir, "/tmp/test_bench_XXXXXX");
    cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

void rm_tmp(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}
