/*
 * test_blas_kernel.c — cli/blas_kernel.h: which OpenBLAS kernel
 * `gated sweep --verify-code` re-executes a stored run on.  The stored text
 * is untrusted (a merged database): only a known kernel name may come out,
 * and only for the same OpenBLAS build; everything else is refused with a
 * printable reason.  Nothing here sets OPENBLAS_CORETYPE: the environment
 * is only built, never used.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/blas_kernel.h"

#define BUILD(k) "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY " k " MAX_THREADS=64"

static int pick(const char *stored, const char *mine, char *kernel, char *why) {
    return blas_kernel_pick(stored, mine, kernel, 32, why, 400);
}

static void no_control_bytes(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        cr_assert(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in \"%s\"", *p, s);
}

Test(blas_kernel, same_build_and_kernel_needs_nothing) {
    char k[32] = "x", why[400] = "";
    cr_assert_eq(pick(BUILD("Haswell"), BUILD("Haswell"), k, why), 0);
    cr_assert_str_empty(k);
}

Test(blas_kernel, another_kernel_of_the_same_build_is_forced_when_the_cpu_runs_it) {
    char k[32], why[400] = "";
    int here = blas_kernel_runs_here("Prescott");
#if defined(__x86_64__)
    cr_assert_eq(here, 1, "every x86-64 CPU this suite runs on has SSE3");
#endif
    int r = pick(BUILD("Prescott"), BUILD("SkylakeX"), k, why);
    if (here == 1) {
        cr_assert_eq(r, 1, "%s", why);
        cr_assert_str_eq(k, "Prescott");
    } else {
        cr_assert_eq(r, -1);
    }
}

Test(blas_kernel, a_kernel_is_forced_only_where_this_cpu_runs_it) {
    /* Whichever way this CPU answers, pick must agree with it: on a CPU
     * with AVX-512 (this project's Xeon) every name here is forced, and
     * the refusal branch runs only where one is missing (an AVX2-only
     * machine refuses SkylakeX and Cooperlake). */
    const char *names[] = {"SkylakeX", "Cooperlake", "Haswell", "Zen", "Sandybridge"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char stored[120], k[32], why[400] = "";
        snprintf(stored, sizeof stored, BUILD("%s"), names[i]);
        int here = blas_kernel_runs_here(names[i]);
        cr_assert(here == 0 || here == 1, "%s is a known kernel", names[i]);
        int r = pick(stored, BUILD("Prescott"), k, why);
        if (here) {
            cr_assert_eq(r, 1, "%s: %s", names[i], why);
            cr_assert_str_eq(k, names[i]);
        } else {
            cr_assert_eq(r, -1, "%s", names[i]);
            cr_assert(strstr(why, "cannot run"), "%s", why);
        }
    }
}

Test(blas_kernel, another_openblas_build_is_refused) {
    char k[32], why[400] = "";
    cr_assert_eq(pick("OpenBLAS 0.3.26 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64",
                      BUILD("Haswell"), k, why),
                 -1);
    cr_assert(strstr(why, "another OpenBLAS build"), "%s", why);
    cr_assert_str_empty(k);
    cr_assert_eq(pick(BUILD("Prescott") " EXTRA", BUILD("Haswell"), k, why), -1);
}

Test(blas_kernel, a_build_that_is_not_dynamic_arch_cannot_switch) {
    char k[32], why[400] = "";
    cr_assert_eq(pick("OpenBLAS 0.3.21 NO_AFFINITY Prescott MAX_THREADS=64",
                      "OpenBLAS 0.3.21 NO_AFFINITY Haswell MAX_THREADS=64", k, why),
                 -1);
    cr_assert(strstr(why, "DYNAMIC_ARCH"), "%s", why);
}

Test(blas_kernel, hostile_stored_text_never_comes_out_as_a_kernel) {
    const char *bad[] = {
        BUILD("$(touch PWNED)"),
        BUILD("Prescott\nOPENBLAS_CORETYPE=x"),
        BUILD("prescott"),             /* names are matched exactly */
        BUILD("PrescottX"),            /* a prefix is not a name */
        "OpenBLAS 0.3.21 DYNAMIC_ARCH", /* no kernel at all */
        "",
        "\x1b[2J\x1b[H Prescott",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char k[32], why[400] = "";
        int r = pick(bad[i], BUILD("Haswell"), k, why);
        cr_assert_eq(r, -1, "case %zu", i);
        cr_assert_str_empty(k, "case %zu", i);
        cr_assert_str_not_empty(why);
        no_control_bytes(why);
    }
    char k[32], why[400] = "";
    cr_assert_eq(blas_kernel_pick(NULL, BUILD("Haswell"), k, 32, why, sizeof why), -1);
    cr_assert_eq(blas_kernel_runs_here("$(id)"), -1);
    cr_assert_eq(blas_kernel_runs_here(NULL), -1);
}

Test(blas_kernel, the_environment_gets_exactly_one_coretype) {
    char *env[] = {"PATH=/usr/bin", "OPENBLAS_CORETYPE=Haswell", "HOME=/root", "OPENBLAS_CORETYPE=Zen", NULL};
    char *own = NULL;
    char **e = blas_kernel_env(env, "Prescott", &own);
    cr_assert_not_null(e);
    int n = 0, core = 0;
    for (; e[n]; n++)
        if (strncmp(e[n], "OPENBLAS_CORETYPE=", 18) == 0) {
            core++;
            cr_assert_str_eq(e[n], "OPENBLAS_CORETYPE=Prescott");
        }
    cr_assert_eq(core, 1);
    cr_assert_eq(n, 3, "PATH, HOME and the one coretype");
    cr_assert_str_eq(e[0], "PATH=/usr/bin");
    cr_assert_str_eq(e[1], "HOME=/root");
    free(e);
    free(own);
}
