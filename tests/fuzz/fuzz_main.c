/*
 * fuzz_main.c — the libFuzzer harness; one binary per target, chosen at
 * compile time: -DFUZZ_TARGET=config | sweep | checkpoint | bench (the fuzz
 * section of the Makefile builds build-fuzz/fuzz/fuzz_<target>).  The work is
 * in entry.c, which the replay test (tests/test_fuzz_replay.c) shares.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "entry.h"

#ifndef FUZZ_TARGET
#error "build with -DFUZZ_TARGET=config|sweep|checkpoint|bench"
#endif
#define FUZZ_CAT_(a, b, c) a##b##c
#define FUZZ_CAT(a, b, c) FUZZ_CAT_(a, b, c)
#define FUZZ_FN(t) FUZZ_CAT(fuzz_, t, _one)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    /* a `base:` or `config:` naming /dev/stdin must not wait for a terminal */
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0 && fd != 0) dup2(fd, 0), close(fd);
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return FUZZ_FN(FUZZ_TARGET)(data, size); }
