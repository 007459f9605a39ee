/*
 * commands.h — the commands of `gated`, each described in the file that
 * runs it (cli.h's Command) and listed in main.c's command table.
 */
#ifndef GATED_COMMANDS_H
#define GATED_COMMANDS_H

#include "cli.h"

extern const Command cmd_info, cmd_xcheck; /* cmd_info.c */
extern const Command cmd_train;            /* cmd_train.c */
extern const Command cmd_sweep;            /* cmd_sweep.c */
extern const Command cmd_merge;            /* cmd_merge.c */
extern const Command cmd_eval;             /* cmd_eval.c */
extern const Command cmd_report;           /* cmd_report.c */
extern const Command cmd_export;           /* cmd_export.c */
extern const Command cmd_ls, cmd_show;     /* cmd_show.c */
extern const Command cmd_bench, cmd_compare; /* cmd_bench.c */

#endif
