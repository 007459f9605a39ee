/*
 * sysinfo.h — facts about the machine and the build that records keep:
 * /proc/cpuinfo fields, the CPU's name, the compiler, the host name, and
 * the first line of a command's output.  Used by the store's provenance
 * (run/store.c) and by `gated bench --env` (lab/bench.c).  Nothing here
 * fails: a fact that cannot be read reads as "" or "unknown".
 */
#ifndef GATED_SYSINFO_H
#define GATED_SYSINFO_H

#include <stddef.h>

/* The value of the first "KEY<blanks>: value" line of /proc/cpuinfo into
 * out ("" if none, or no /proc/cpuinfo; a longer value is cut to cap). */
void sysinfo_cpuinfo(const char *key, char *out, size_t cap);
/* The CPU's name: the first of "model name", "Model", "Hardware",
 * "cpu model", "Processor" present in /proc/cpuinfo, else "unknown". */
void sysinfo_cpu_model(char *out, size_t cap);
/* The compiler this was built with, e.g. "gcc 12.2.0" (static storage). */
const char *sysinfo_compiler(void);
/* This machine's host name (gethostname), "unknown" when it fails; always
 * NUL-terminated. */
void sysinfo_host(char *out, size_t cap);
/* The 1-minute load average (getloadavg): runnable processes, averaged;
 * NAN when it cannot be read. */
double sysinfo_loadavg(void);
/* CPUs online (sysconf), 0 when unknown. */
int sysinfo_cpus(void);
/* Cut t's trailing blanks, tabs, CRs and newlines. */
void sysinfo_trim(char *t);
/* Run cmd with popen: the first line of its stdout (trimmed) into out, and
 * in *any_output (may be NULL) whether it wrote anything.  0 if it ran and
 * exited 0, else -1.  Stdio buffers are flushed first, so the child does
 * not repeat them. */
int sysinfo_command(const char *cmd, char *out, size_t cap, int *any_output);

#endif
