/*
 * report_files.c — `gated report`: every file the report writes, and
 * gnuplot's runs.
 *
 * Files.  Every table, CSV, TeX, data file, script and log goes through
 * util/outfile.h: a temporary file beside the target, renamed over it once
 * complete, so a full disk or any error leaves the previous report's file
 * as it was, and a symbolic link planted in the output folder is replaced,
 * never written through.  rep_open hands out the FILE and keeps its
 * OutFile in R.outs; rep_close commits it, rep_abort drops it.  The output
 * folder and plots/ are made by outfile_mkdir (a symbolic link there is
 * refused).
 *
 * gnuplot.  gnuplot opens its output files itself (following links), so
 * it never runs in the output folder: each plot runs in a private folder
 * (plots/.gnuplot-XXXXXX, mode 0700, made by mkdtemp) holding hard links
 * to the plot's data file and script; the images it makes there are
 * checked to be complete (an SVG ends with </svg>, a PNG with its IEND
 * chunk: gnuplot exits 0 when its write failed on a full disk) and only
 * then renamed into plots/.  Its messages are collected in memory and
 * written as plots/gnuplot.log at the end.
 */
#include "lab/report/kit/report_kit.h"
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int rep_mkdir(R *r, const char *dir) {
    char e[1024];
    if (outfile_mkdir(dir, e, sizeof e)) return rep_fail(r, "%s", e);
    return 0;
}

FILE *rep_open(R *r, const char *path) {
    char e[1024];
    if (rep_grow(r, (void **)&r->outs, &r->outs_cap, r->nouts + 1, sizeof *r->outs)) return NULL;
    OutFile *o = &r->outs[r->nouts];
    if (outfile_open(o, path, e, sizeof e)) {
        rep_fail(r, "%s", e);
        return NULL;
    }
    r->nouts++;
    return o->f;
}

/* The OutFile of f taken out of R.outs (into *o); 0, or -1 if f is not one. */
static int take(R *r, FILE *f, OutFile *o) {
    for (int i = 0; i < r->nouts; i++)
        if (r->outs[i].f == f) {
            *o = r->outs[i];
            r->outs[i] = r->outs[--r->nouts];
            return 0;
        }
    return -1;
}

int rep_close(R *r, FILE *f, const char *path) {
    OutFile o;
    char e[1024];
    if (take(r, f, &o)) return rep_fail(r, "%s: internal: not an open report file", path);
    if (outfile_commit(&o, e, sizeof e)) return rep_fail(r, "%s", e);
    return 0;
}

int rep_finish(R *r, FILE *f, int rc, char *path) {
    if (f) {
        if (rc)
            rep_abort(r, f);
        else if (rep_close(r, f, path))
            rc = -1;
    }
    if (rc == 0 && r->info) fprintf(r->info, "wrote %s\n", path);
    free(path);
    return rc;
}

void rep_abort(R *r, FILE *f) {
    OutFile o;
    if (f && take(r, f, &o) == 0) outfile_abort(&o);
}

void rep_files_end(R *r) {
    while (r->nouts > 0) outfile_abort(&r->outs[--r->nouts]);
    free(r->outs);
    r->outs = NULL;
    if (r->gp_logf) fclose(r->gp_logf);
    free(r->gp_log);
    r->gp_logf = NULL;
    r->gp_log = NULL;
    if (r->gp_dir) {
        (void)rmdir(r->gp_dir);
        free(r->gp_dir);
        r->gp_dir = NULL;
    }
}

int rep_gp_begin(R *r) {
    char *t = rep_fmt(r, "%s/.gnuplot-XXXXXX", r->plots_dir);
    if (!t) return -1;
    if (!mkdtemp(t)) {
        rep_fail(r, "%s: cannot create a folder for gnuplot: %s", r->plots_dir, strerror(errno));
        free(t);
        return -1;
    }
    r->gp_dir = t;
    if (!(r->gp_logf = open_memstream(&r->gp_log, &r->gp_log_len))) return rep_oom(r);
    return 0;
}

int rep_gp_write_log(R *r) {
    if (!r->gp_logf) return 0;
    if (fflush(r->gp_logf) != 0) return rep_oom(r);
    char *p = rep_fmt(r, "%s/gnuplot.log", r->plots_dir), e[1024];
    if (!p) return -1;
    int rc = outfile_write(p, r->gp_log, r->gp_log_len, e, sizeof e) ? rep_fail(r, "%s", e) : 0;
    free(p);
    return rc;
}

/* The whole of file path (heap, *n bytes), or NULL. */
static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            char *q = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!q) break;
            buf = q;
        }
        size_t k = fread(buf + *n, 1, cap - *n, f);
        *n += k;
        if (k == 0) break;
    }
    fclose(f);
    return buf;
}

/* The file name inside the private gnuplot folder (heap). */
static char *in_gp(R *r, const char *base, const char *ext) { return rep_fmt(r, "%s/%s%s", r->gp_dir, base, ext); }

/* Run gnuplot with args (after argv[0]) in the private folder, its output
 * appended to the collected log when log is set.  The exit status, or -1
 * if it could not run. */
int rep_run_gnuplot(R *r, const char *a1, const char *a2, int log) {
    char *lp = log ? in_gp(r, "gnuplot", ".out") : NULL;
    if (log && !lp) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        free(lp);
        return -1;
    }
    if (pid == 0) {
        int fd = lp ? open(lp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600) : open("/dev/null", O_WRONLY);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0 || chdir(r->gp_dir) != 0) _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        char *argv[4] = {r->gp_prog, (char *)a1, (char *)a2, NULL};
        execv(r->gp_prog, argv);
        _exit(127);
    }
    int status, st;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            status = -1;
            break;
        }
    st = status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (lp) {
        size_t n = 0;
        char *text = read_all(lp, &n);
        if (text && n) fwrite(text, 1, n, r->gp_logf);
        free(text);
        unlink(lp);
        free(lp);
    }
    return st;
}

/* Whether an image gnuplot wrote is complete: an SVG ends with </svg>
 * (blanks after it), a PNG with its IEND chunk. */
static int image_complete(const char *path, const char *ext) {
    size_t n = 0;
    char *b = read_all(path, &n);
    int ok = 0;
    if (b && strcmp(ext, "png") == 0)
        ok = n >= 12 && memcmp(b + n - 8, "IEND\xae\x42\x60\x82", 8) == 0;
    else if (b) {
        while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == ' ')) n--;
        ok = n >= 6 && memcmp(b + n - 6, "</svg>", 6) == 0;
    }
    free(b);
    return ok;
}

/* Link plots/BASE.EXT into the private folder (1), or remove that link (0). */
static int gp_link(R *r, const char *base, const char *ext, int make) {
    char *from = rep_fmt(r, "%s/%s%s", r->plots_dir, base, ext), *to = in_gp(r, base, ext);
    int rc = -1;
    if (from && to) {
        if (!make)
            rc = unlink(to) == 0 || errno == ENOENT ? 0 : -1;
        else if ((rc = link(from, to)) != 0)
            rep_fail(r, "%s: cannot link it for gnuplot: %s", from, strerror(errno));
    }
    free(from);
    free(to);
    return rc;
}

int rep_gp_draw(R *r, const char *base, char *why, size_t cap) {
    why[0] = '\0';
    if (gp_link(r, base, ".dat", 1) || gp_link(r, base, ".gp", 1)) {
        gp_link(r, base, ".dat", 0);
        return -1;
    }
    char *script = rep_fmt(r, "%s.gp", base);
    if (!script) return -1;
    int st = rep_run_gnuplot(r, script, NULL, 1), ok = st == 0;
    if (!ok) snprintf(why, cap, "exit %d", st);
    const char *exts[2] = {r->term_svg ? "svg" : NULL, r->term_png ? "png" : NULL};
    for (int i = 0; i < 2; i++) {
        if (!exts[i]) continue;
        char *img = rep_fmt(r, "%s/%s.%s", r->gp_dir, base, exts[i]);
        char *dst = rep_fmt(r, "%s/%s.%s", r->plots_dir, base, exts[i]);
        if (img && dst && ok && !image_complete(img, exts[i])) {
            snprintf(why, cap, "it exited 0 but wrote an incomplete or empty %s.%s (is the disk full?); the previous "
                               "one is kept", base, exts[i]);
            ok = 0;
        }
        if (img && dst && ok && rename(img, dst) != 0) {
            snprintf(why, cap, "%s: %s", dst, strerror(errno));
            ok = 0;
        }
        if (img) unlink(img);
        free(img);
        free(dst);
    }
    free(script);
    gp_link(r, base, ".dat", 0);
    gp_link(r, base, ".gp", 0);
    if (!ok && r->gp_logf) fprintf(r->gp_logf, "gated report: %s.gp: %s\n", base, why);
    return r->failed ? -1 : ok;
}
