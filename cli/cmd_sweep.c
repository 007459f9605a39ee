/* cmd_sweep.c — placeholder while the sweep runner is written. */
#include <stdio.h>

#include "commands.h"

int cmd_sweep(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "gated sweep: not implemented yet\n");
    return 2;
}

int cmd_merge(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "gated merge: not implemented yet\n");
    return 2;
}
