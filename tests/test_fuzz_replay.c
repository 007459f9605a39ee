/*
 * test_fuzz_replay.c — every saved fuzz input through the harnesses' entry
 * points (tests/fuzz/entry.c): the seed corpora tests/fuzz/corpus/<target>/
 * and the regression inputs tests/fuzz/regress/<target>/ (crashes and hangs
 * `make fuzz` found, kept once fixed).  Each file runs in a child process
 * with a 20 s alarm, so one crash or hang names its file and the others
 * still run.  Under `make sanitize` this is ASan + UBSan, as in the fuzzer.
 * Inputs still failing (found, not yet fixed) live in tests/fuzz/crashes/,
 * which this does not read; see tests/fuzz/README.md.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* the entry points themselves (one copy of the code for harness and replay;
 * included rather than linked, so the Makefile's tests/test_*.c build needs
 * nothing extra) */
#include "fuzz/entry.c"

static const char *const TARGETS[] = {"config", "sweep", "checkpoint", "bench", "db"};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Run entry on one file in a child; 0 ok, else cr_expect failures. */
static int replay_file(const char *target, FuzzEntry entry, const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    cr_assert(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "%s: short read", path);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        freopen("/dev/null", "r", stdin);
        alarm(20);
        entry(buf, (size_t)n);
        fflush(NULL);
        _exit(0); /* (no leak check here: LSan in a fork child of a threaded process only warns;
                   * the fuzzer checks leaks) */
    }
    free(buf);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    cr_expect(ok, "%s: %s %d (details: make fuzz-build && build-fuzz/fuzz/fuzz_%s %s)", path,
              WIFSIGNALED(st) ? (WTERMSIG(st) == SIGALRM ? "hung (20 s), signal" : "killed by signal") : "exit status",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), target, path);
    return ok ? 0 : 1;
}

/* Every regular, non-hidden file of DIR (sorted); returns how many ran. */
static int replay_dir(const char *target, FuzzEntry entry, const char *dirpath) {
    DIR *d = opendir(dirpath);
    if (!d) return 0;
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, sizeof *names * (size_t)cap);
            cr_assert(names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dirpath, names[i]);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            replay_file(target, entry, path);
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

static void replay_target(int t) {
    if (access("tests/fuzz/entry.c", R_OK) != 0) cr_skip_test("not run from the repository root");
    FuzzEntry entry = fuzz_entry(TARGETS[t]);
    cr_assert(entry, "no entry for %s", TARGETS[t]);
    fuzz_init();
    char dirpath[256];
    int ran = 0;
    snprintf(dirpath, sizeof dirpath, "tests/fuzz/corpus/%s", TARGETS[t]);
    ran += replay_dir(TARGETS[t], entry, dirpath);
    snprintf(dirpath, sizeof dirpath, "tests/fuzz/regress/%s", TARGETS[t]);
    ran += replay_dir(TARGETS[t], entry, dirpath);
    fuzz_cleanup();
    cr_expect_gt(ran, 0, "no saved inputs for %s under tests/fuzz/", TARGETS[t]);
}

Test(fuzz_replay, config) { replay_target(0); }
Test(fuzz_replay, sweep) { replay_target(1); }
Test(fuzz_replay, checkpoint) { replay_target(2); }
Test(fuzz_replay, bench) { replay_target(3); }
Test(fuzz_replay, db, .timeout = 120) { replay_target(4); }

/* the entries leave nothing behind in TMPDIR */
Test(fuzz_replay, cleanup) {
    char tmp[] = "/tmp/test_fuzz_replay_XXXXXX";
    cr_assert(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
    setenv("TMPDIR", tmp, 1);
    const uint8_t y[] = "model: {d_model: 64}\nmodel.n_head=2\n";
    for (int t = 0; t < 5; t++) fuzz_entry(TARGETS[t])(y, sizeof y - 1);
    fuzz_cleanup();
    fuzz_cleanup(); /* twice is safe */
    cr_expect_eq(rmdir(tmp), 0, "%s not empty after fuzz_cleanup: %s", tmp, strerror(errno));
}
