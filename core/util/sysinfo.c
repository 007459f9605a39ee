/*
 * sysinfo.c — facts about the machine and the build (see sysinfo.h).
 */
#include "util/sysinfo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__clang__)
#define SYSINFO_COMPILER __VERSION__
#elif defined(__GNUC__)
#define SYSINFO_COMPILER "gcc " __VERSION__
#elif defined(__VERSION__)
#define SYSINFO_COMPILER __VERSION__
#else
#define SYSINFO_COMPILER "unknown"
#endif

void sysinfo_trim(char *t) {
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = '\0';
}

const char *sysinfo_compiler(void) { return SYSINFO_COMPILER; }

void sysinfo_host(char *out, size_t cap) {
    if (!cap) return;
    if (gethostname(out, cap) != 0) snprintf(out, cap, "unknown");
    out[cap - 1] = '\0';
}

void sysinfo_cpuinfo(const char *key, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t kl = strlen(key);
    while (!out[0] && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0) continue;
        const char *r = line + kl;
        while (*r == ' ' || *r == '\t') r++;
        if (*r != ':') continue;
        r++;
        while (*r == ' ' || *r == '\t') r++;
        snprintf(out, cap, "%s", r); /* a value longer than out is cut, not an error */
        sysinfo_trim(out);
    }
    fclose(f);
}

void sysinfo_cpu_model(char *out, size_t cap) {
    static const char *const keys[] = {"model name", "Model", "Hardware", "cpu model", "Processor"};
    out[0] = '\0';
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !out[0]; k++) sysinfo_cpuinfo(keys[k], out, cap);
    if (!out[0]) snprintf(out, cap, "unknown");
}

int sysinfo_command(const char *cmd, char *out, size_t cap, int *any_output) {
    out[0] = '\0';
    if (any_output) *any_output = 0;
    fflush(NULL); /* popen's child must not duplicate unflushed stdio buffers */
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char buf[256];
    int first = 1;
    while (fgets(buf, sizeof buf, p)) {
        if (any_output) *any_output = 1;
        if (first) {
            snprintf(out, cap, "%s", buf);
            sysinfo_trim(out);
            first = 0;
        }
    }
    int st = pclose(p);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return 0;
}

double sysinfo_loadavg(void) {
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

int sysinfo_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 1 << 20 ? (int)n : 0;
}
