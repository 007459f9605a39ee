/*
 * commands.h — subcommands of the `gated` CLI that live in their own files.
 *
 * Each takes the arguments after the command name and returns the exit
 * status: 0 ok, 1 runtime failure, 2 bad usage or bad input.
 */
#ifndef GATED_COMMANDS_H
#define GATED_COMMANDS_H

/* gated sweep SWEEP.yaml [--dry-run] [--index I] [--shard i/N] [--jobs J]
 *                        [--force] [--rerun-failed] [--fail-fast] [--db PATH] [--data DIR] */
int cmd_sweep(int argc, char **argv);
/* gated merge OUT.db IN.db... */
int cmd_merge(int argc, char **argv);
/* gated report [--db PATH] [--sweep NAME] [--format md|csv|tex] [--out DIR] [--no-plots] */
int cmd_report(int argc, char **argv);

/* gated eval RUN|CHECKPOINT... [--sweep NAME] --lengths L1,L2,... [--rope-scaling none|linear|ntk|yarn]
 *            [--factor F] [--windows N] [--split val|test|both] [--db PATH] [--data DIR] [--ckpt DIR] */
int cmd_eval(int argc, char **argv);

/* gated bench [SUITE.yaml] [--filter RE] [--repetitions N] [--min-time S] [--json PATH] [--db PATH]
 *             [--threads N] [--interleave] [--paced] [--list] [--callgrind] [--env] */
int cmd_bench(int argc, char **argv);
/* gated compare BASE.json HEAD.json [--threshold PCT] [--metric NAME] [--fail-missing]; 3 on a regression */
int cmd_compare(int argc, char **argv);

#endif
