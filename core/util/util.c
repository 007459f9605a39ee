/* util.c — see util.h. */
#include "util/util.h"

#include <math.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

double util_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int util_mkdir_p(const char *dir) {
    if (!dir || !*dir) {
        errno = ENOENT;
        return -1;
    }
    char *p = strdup(dir);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            errno = e;
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
    int e = errno;
    free(p);
    errno = e;
    return rc;
}

int util_parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double util_median(const double *x, int n) {
    if (n <= 0) return NAN;
    double small[64], *t = n <= 64 ? small : malloc(sizeof *t * (size_t)n);
    if (!t) return NAN;
    memcpy(t, x, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, cmp_dbl);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    if (t != small) free(t);
    return m;
}
