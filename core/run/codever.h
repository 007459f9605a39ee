/*
 * codever.h — the code version of this build, and whether a result
 * recorded by another build still stands.
 *
 * The commit and dirty flag are those of the source tree when the binary
 * was built (tools/build_version.sh writes them into a generated header on
 * every `make`), never read from the working directory at run time: a
 * binary run from anywhere records the code it was built from.  The store
 * records them with every run (store.h, Provenance); `gated sweep` asks
 * codever_same_results whether a finished run is still valid.
 */
#ifndef GATED_CODEVER_H
#define GATED_CODEVER_H

/* The commit the binary was built from (40 lowercase hex digits), or
 * "unknown" when its source tree was not a git checkout. */
const char *codever_commit(void);
/* 1 when the source tree had uncommitted changes outside results/ at build
 * time, 0 when clean, -1 unknown (not a git checkout). */
int codever_dirty(void);
/* The build's optimisation and sanitizer flags (the Makefile's GATED_CFLAGS:
 * $(OPT) $(SANFLAGS)), or "unknown". */
const char *codever_cflags(void);

/* The source paths that compute results (what a run records): a change
 * anywhere else (the CLI, the report, docs, results) leaves them valid.
 * NULL-terminated. */
extern const char *const codever_result_paths[];

/* 1 when v is a commit as codever_commit gives them (40 lowercase hex
 * digits: never an option to git, never "unknown"), else 0. */
int codever_is_commit(const char *v);

/* Whether nothing under paths changed between commits a and b (both 40 hex
 * digits): 1 unchanged, 0 changed or not known (ctx is the callback's). */
typedef int (*CodeverUnchanged)(void *ctx, const char *a, const char *b, const char *const *paths);

/* Whether a result recorded by a build of (code_a, cflags_a) is valid for a
 * build of (code_b, cflags_b): 1 when the cflags are equal and either the
 * code versions are the same string or both are commits between which
 * unchanged(ctx, a, b, codever_result_paths) says nothing changed; else 0
 * (a NULL string is never equal to anything). */
int codever_same_results(const char *code_a, const char *cflags_a, const char *code_b, const char *cflags_b,
                         CodeverUnchanged unchanged, void *ctx);

/* A CodeverUnchanged asking git (`git diff --quiet a b -- paths`) in the
 * source tree this binary was built from, or in the directory ctx (a
 * const char *) when not NULL: 0 when that tree is gone, is not a checkout
 * or lacks either commit.  Answers about the build's tree are cached. */
int codever_git_unchanged(void *ctx, const char *a, const char *b, const char *const *paths);

#endif
