/*
 * sweep_child.c — the child processes of `gated sweep`: each run is a
 * `gated train` started with posix_spawn (its environment's thread counts
 * and claim owner set, its output to a log), waited for while the sweep's
 * claims are refreshed, and its end recorded (cmd_sweep.c, top).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/outfile.h"
#include "util/util.h"
#include "sweep_int.h"

extern char **environ;


int cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* environ without OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / GATED_RUN_OWNER,
 * plus the first two set to threads and GATED_RUN_OWNER to owner (the
 * sweep's claim token, so the child can accept the claim made for it).
 * The strings of environ are shared; free only the array and the three
 * added entries (*own). */
char **child_env(int threads, const char *owner, char *own[3]) {
    size_t n = 0;
    while (environ[n])
        n++;
    size_t ol = strlen(owner) + 24;
    char **env = malloc((n + 4) * sizeof *env);
    own[0] = malloc(48);
    own[1] = malloc(48);
    own[2] = malloc(ol);
    if (!env || !own[0] || !own[1] || !own[2]) {
        free(env), free(own[0]), free(own[1]), free(own[2]);
        own[0] = own[1] = own[2] = NULL;
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16) != 0 && strncmp(environ[i], "OPENBLAS_NUM_THREADS=", 21) != 0 &&
            strncmp(environ[i], "GATED_RUN_OWNER=", 16) != 0)
            env[k++] = environ[i];
    snprintf(own[0], 48, "OMP_NUM_THREADS=%d", threads);
    snprintf(own[1], 48, "OPENBLAS_NUM_THREADS=%d", threads);
    snprintf(own[2], ol, "GATED_RUN_OWNER=%s", owner);
    env[k++] = own[0];
    env[k++] = own[1];
    env[k++] = own[2];
    env[k] = NULL;
    return env;
}

/* DIR/logs/NAME.SUFFIX, with bytes of NAME outside [A-Za-z0-9._,=+-] as '_'. */
char *log_path(const char *logdir, const char *name, const char *suffix) {
    size_t n = strlen(logdir) + strlen(name) + strlen(suffix) + 4;
    char *p = malloc(n);
    if (!p)
        return NULL;
    size_t o = (size_t)snprintf(p, n, "%s/", logdir);
    for (const char *c = name; *c; c++) {
        char ch = *c;
        int ok =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("._,=+-", ch);
        p[o++] = ok && !(c == name && ch == '.') ? ch : '_';
    }
    snprintf(p + o, n - o, "%s", suffix);
    return p;
}

/* Start `gated train` for run r into db, with checkpoints in ckptdir,
 * stdout and stderr to log, and the extra arguments extra (NULL-terminated)
 * after the run's own; the child's pid into *pid.  0 ok, -1 (message
 * printed). */
int spawn_train(const SweepRun *r, const Sweep *sw, const char *db, const char *data, const char *ckptdir,
                const char *const *extra, char **envp, const char *log, pid_t *pid) {
    int argc = 0, nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    char **argv = calloc((size_t)(3 + 2 * r->noverrides + 10 + nextra), sizeof *argv);
    if (!argv) {
        fprintf(stderr, "gated sweep: out of memory\n");
        return -1;
    }
    argv[argc++] = "gated";
    argv[argc++] = "train";
    argv[argc++] = sw->base;
    for (int i = 0; i < r->noverrides; i++) {
        argv[argc++] = "--set";
        argv[argc++] = r->overrides[i];
    }
    argv[argc++] = "--name";
    argv[argc++] = r->name;
    argv[argc++] = "--db";
    argv[argc++] = (char *)db;
    argv[argc++] = "--data";
    argv[argc++] = (char *)data;
    argv[argc++] = "--ckpt";
    argv[argc++] = (char *)ckptdir;
    for (int i = 0; i < nextra; i++)
        argv[argc++] = (char *)extra[i];
    argv[argc] = NULL;

    /* a new file renamed over the log (util/outfile.h): a link or another
     * file planted as logs/NAME.log is replaced, never truncated or written */
    char ferr[1024];
    int fd = outfile_fresh_fd(log, ferr, sizeof ferr);
    if (fd < 0) {
        fprintf(stderr, "gated sweep: %s\n", ferr);
        free(argv);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, fd, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, fd, 2);
    if (rc == 0)
        rc = posix_spawn(pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    free(argv);
    if (rc != 0) {
        fprintf(stderr, "gated sweep: cannot start %s: %s\n", r->name, strerror(rc));
        return -1;
    }
    return 0;
}

/* Start job j's child.  0 ok, -1 (message printed). */
int spawn_job(Job *j, const Sweep *sw, const SweepOpts *o, char **envp, const char *logdir,
              const char *ckptdir) {
    static const char *const resume[] = {"--resume", NULL};
    j->log = log_path(logdir, j->run->name, ".log");
    if (!j->log) {
        fprintf(stderr, "gated sweep: out of memory\n");
        return -1;
    }
    if (spawn_train(j->run, sw, o->db, o->data, ckptdir, j->resume ? resume : NULL, envp, j->log, &j->pid))
        return -1;
    j->t0 = util_now();
    return 0;
}

/* The last lines of a log, indented, to stderr. */
void print_tail(const char *path, int lines) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char buf[4096];
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        start = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    }
    if (fseek(f, start, SEEK_SET) != 0)
        start = 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\r' || buf[i] == '\0')
            buf[i] = '\n';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    const char *p = buf + n;
    int k = 0;
    while (p > buf && k < lines) {
        p--;
        if (*p == '\n')
            k++;
    }
    if (*p == '\n')
        p++;
    while (*p) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        if (len > 0) {
            char line[4096];
            snprintf(line, sizeof line, "%.*s", len, p);
            fputs("    | ", stderr);
            store_fput_escaped(stderr, line); /* a child's output may hold escape codes */
            fputc('\n', stderr);
        }
        p += len + (e != NULL);
    }
}

/* After job j's child exited with wait status ws: end the sweep's claim
 * (marking a run the child left 'running' failed, or killed for SIGKILL /
 * SIGTERM / SIGINT), read the stored status, report. */
void finish_job(Job *j, int ws, Store *st, const char *owner, int done, int total) {
    char buf[16], why[160] = "";
    const SweepRun *r = j->run;
    int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0, code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (sig)
        snprintf(why, sizeof why, "gated train was killed by signal %d (%s)", sig, strsignal(sig));
    else if (code != 0)
        snprintf(why, sizeof why, "gated train exited with status %d", code);
    int killed = sig == SIGKILL || sig == SIGTERM || sig == SIGINT || code == 128 + SIGINT || code == 128 + SIGTERM;
    int ended = store_run_release(st, r->run_id, owner, killed ? "killed" : "failed",
                                  *why ? why : "gated train exited 0 but left the run running");
    if (ended < 0)
        fprintf(stderr, "gated sweep: %s\n", store_errmsg(st));
    const char *s = store_run_status(st, r->run_id, buf, sizeof buf);
    double dt = util_now() - j->t0;
    if (!sig && code == 0 && s && (strcmp(s, "finished") == 0 || strcmp(s, "diverged") == 0)) {
        j->outcome = s[0] == 'f' ? OUT_FINISHED : OUT_DIVERGED;
        printf("[%d/%d] %s %s (%.1f s)\n", done, total, s, r->name, dt);
        fflush(stdout);
        return;
    }
    j->outcome = OUT_FAILED;
    if (!*why)
        snprintf(why, sizeof why, "gated train exited 0 but the run is %s", ended > 0 ? "running" : s ? s : "not in the database");
    printf("[%d/%d] FAILED %s (%.1f s): %s; status %s; log %s\n", done, total, r->name, dt, why, s ? s : "-", j->log);
    fflush(stdout);
    print_tail(j->log, 12);
}

volatile sig_atomic_t stop_requested;
void on_stop(int sig) { stop_requested = sig; }

/* Seconds between refreshes of this sweep's claims (well inside
 * STORE_STALE_SECONDS, after which an unrefreshed claim is void). */
#define CLAIM_REFRESH_S 5

/* Wait for a child to exit, refreshing this sweep's claims every
 * CLAIM_REFRESH_S seconds meanwhile (*last_refresh: CLOCK_MONOTONIC
 * seconds).  The child's pid, or -1 with errno (EINTR: a stop signal
 * arrived; check stop_requested).  SIGCHLD is blocked only in here, so
 * children start with the mask the sweep had. */
pid_t wait_child(int *ws, Store *st, const char *owner, double *last_refresh, int forwarded) {
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    pid_t pid;
    for (;;) {
        if (util_now() - *last_refresh >= CLAIM_REFRESH_S) {
            if (store_claim_refresh(st, owner))
                fprintf(stderr, "gated sweep: %s\n", store_errmsg(st));
            *last_refresh = util_now();
        }
        pid = waitpid(-1, ws, WNOHANG);
        if (pid != 0)
            break; /* a child, or an error */
        if (stop_requested && !forwarded) {
            errno = EINTR;
            pid = -1;
            break;
        }
        double left = CLAIM_REFRESH_S - (util_now() - *last_refresh);
        if (left < 0.01)
            left = 0.01;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        if (sigtimedwait(&chld, NULL, &ts) < 0 && errno == EINTR) {
            pid = -1;
            break;
        }
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}
