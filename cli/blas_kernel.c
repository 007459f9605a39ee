/*
 * blas_kernel.c — which OpenBLAS kernel a verification re-executes on
 * (blas_kernel.h).
 */
#include "blas_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/store.h"

/* The x86-64 kernels of OpenBLAS's DYNAMIC_ARCH builds, by the name
 * openblas_get_config() reports and OPENBLAS_CORETYPE takes, with the CPU
 * features each needs.  (AMD-only ones that need SSE4a, FMA4 or XOP are
 * left out: they are never forced.) */
enum { K_PRESCOTT, K_CORE2, K_ATOM, K_PENRYN, K_DUNNINGTON, K_NEHALEM, K_SANDYBRIDGE, K_HASWELL, K_ZEN, K_SKYLAKEX,
       K_COOPERLAKE, K_N };
static const char *const kernel_names[K_N] = {"Prescott", "Core2",   "Atom", "Penryn",   "Dunnington", "Nehalem",
                                              "Sandybridge", "Haswell", "Zen",  "SkylakeX", "Cooperlake"};

static int kernel_index(const char *name, size_t len) {
    for (int k = 0; k < K_N; k++)
        if (strlen(kernel_names[k]) == len && strncmp(kernel_names[k], name, len) == 0) return k;
    return -1;
}

/* __builtin_cpu_supports takes only literals, hence the switch. */
static int cpu_runs(int k) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    switch (k) {
    case K_PRESCOTT: return __builtin_cpu_supports("sse3") != 0;
    case K_CORE2:
    case K_ATOM: return __builtin_cpu_supports("ssse3") != 0;
    case K_PENRYN:
    case K_DUNNINGTON: return __builtin_cpu_supports("sse4.1") != 0;
    case K_NEHALEM: return __builtin_cpu_supports("sse4.2") != 0;
    case K_SANDYBRIDGE: return __builtin_cpu_supports("avx") != 0;
    case K_HASWELL:
    case K_ZEN: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case K_SKYLAKEX:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512cd");
    case K_COOPERLAKE: return cpu_runs(K_SKYLAKEX) && __builtin_cpu_supports("avx512bf16");
    default: return 0;
    }
#else
    (void)k;
    return 0;
#endif
}

int blas_kernel_runs_here(const char *name) {
    int k = name ? kernel_index(name, strlen(name)) : -1;
    return k < 0 ? -1 : cpu_runs(k);
}

/* The config text split around its kernel token: the kernel's index (-1:
 * none known), the text before and after it.  Tokens are separated by
 * single spaces, as openblas_get_config() writes them. */
typedef struct {
    int k;
    size_t at, len; /* the kernel token's offset and length */
} Split;

static Split split(const char *s) {
    Split o = {-1, 0, 0};
    for (size_t i = 0; s[i];) {
        size_t j = i;
        while (s[j] && s[j] != ' ') j++;
        int k = kernel_index(s + i, j - i);
        if (k >= 0) {
            o.k = k, o.at = i, o.len = j - i;
            return o;
        }
        i = s[j] ? j + 1 : j;
    }
    return o;
}

/* Whether a and b are equal but for their kernel tokens. */
static int same_build(const char *a, Split sa, const char *b, Split sb) {
    return sa.at == sb.at && strncmp(a, b, sa.at) == 0 && strcmp(a + sa.at + sa.len, b + sb.at + sb.len) == 0;
}

static int has_token(const char *s, const char *tok) {
    size_t n = strlen(tok);
    for (const char *p = s; (p = strstr(p, tok)) != NULL; p += n)
        if ((p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

int blas_kernel_pick(const char *stored, const char *mine, char *kernel, size_t kcap, char *why, size_t wcap) {
    char q[200];
    if (kcap) kernel[0] = '\0';
    if (!stored || !mine) {
        snprintf(why, wcap, "the OpenBLAS build is not known");
        return -1;
    }
    if (strcmp(stored, mine) == 0) return 0;
    Split ss = split(stored), sm = split(mine);
    if (ss.k < 0 || sm.k < 0 || !same_build(stored, ss, mine, sm)) {
        snprintf(why, wcap, "made with another OpenBLAS build (\"%s\"; this one: ", store_escape(stored, q, sizeof q));
        size_t u = strlen(why);
        snprintf(why + u, wcap > u ? wcap - u : 0, "\"%s\"), whose rounding this build cannot reproduce",
                 store_escape(mine, q, sizeof q));
        return -1;
    }
    if (!has_token(mine, "DYNAMIC_ARCH")) {
        snprintf(why, wcap, "made on OpenBLAS kernel %s; this OpenBLAS has only %s (not a DYNAMIC_ARCH build)",
                 kernel_names[ss.k], kernel_names[sm.k]);
        return -1;
    }
    if (!cpu_runs(ss.k)) {
        snprintf(why, wcap, "made on OpenBLAS kernel %s, which this CPU cannot run (its own: %s)", kernel_names[ss.k],
                 kernel_names[sm.k]);
        return -1;
    }
    snprintf(kernel, kcap, "%s", kernel_names[ss.k]);
    return 1;
}

char **blas_kernel_env(char *const *env, const char *kernel, char **own) {
    size_t n = 0;
    while (env[n]) n++;
    char **e = malloc((n + 2) * sizeof *e);
    size_t l = strlen(kernel) + sizeof "OPENBLAS_CORETYPE=";
    *own = malloc(l);
    if (!e || !*own) {
        free(e), free(*own), *own = NULL;
        return NULL;
    }
    snprintf(*own, l, "OPENBLAS_CORETYPE=%s", kernel);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], "OPENBLAS_CORETYPE=", 18) != 0) e[k++] = env[i];
    e[k++] = *own;
    e[k] = NULL;
    return e;
}
