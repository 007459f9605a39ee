/*
 * eval.h — a trained model, found again, and evaluated at context lengths
 * beyond the one it was trained at (`gated eval`), and the weights a
 * continued-training run starts from (train.init_from).
 *
 * Contexts.  Brown documents hold about 12,000 byte tokens, so a context of
 * L tokens is BOS followed by L consecutive text tokens of ONE document
 * (split_doc_windows in data.h: non-overlapping chunks from each document's
 * start, spread evenly over the split's documents, which are ordered by
 * genre).  The loss is the mean over all L positions of each window, so a
 * longer context is scored on the same kind of text with more history.
 * The forward pass is the training one: tiled attention with an online
 * softmax, so no T×T score matrix exists at any length (peak memory grows
 * linearly in L).
 *
 * RoPE.  At length L with scaling K (rope.h) the factor is s = L / L_train
 * (at least 1) unless a fixed factor is given; L_train is the checkpoint's
 * model.seq_len.
 *
 * Results go to the trained run's rows (the run must be in the database):
 * metrics eval_loss, eval_ppl, eval_f_attn (mean over layers, on the same
 * windows) and eval_windows at context "split=S,len=L,scaling=K,factor=F"
 * (F printed with %g) and step = the checkpoint's trained steps.  Rewriting
 * the same context replaces the values.
 */
#ifndef GATED_EVAL_H
#define GATED_EVAL_H

#include <stddef.h>

#include "run/config.h"
#include "nn/model.h"
#include "run/infer.h"

/* Where a trained model is: arg is a checkpoint file, or a run (id, name or
 * unique id prefix) in the database at db_path whose checkpoint is found by
 * checkpoint_locate in CKPT_DIR, or with ckpt_dir NULL in DBDIR/checkpoints
 * (where `gated sweep` and `gated train` write them) then ./checkpoints
 * (where `gated train` wrote them before).  A run's checkpoint, and a file
 * when check_file is 1 (gated eval: its results go to the run's rows),
 * must pass checkpoint_check for that database (run/checkpoint.h: not
 * another database's).  Fills cfg (defaults, then the checkpoint's config,
 * resolved), the checkpoint path and the run id (the hash of its config).
 * Returns 0, or 2 (bad input: no such run or file, not a checkpoint, not
 * this database's) with the message in err. */
int trained_locate(const char *arg, const char *db_path, const char *ckpt_dir, int check_file, Config *cfg,
                   char *path, size_t pcap, char id[17], char *err, size_t cap);

/* Load the weights of the trained model `arg` (as trained_locate) into m,
 * whose architecture must match (config_same_architecture); AdamW moments
 * are zeroed: a fresh optimizer.  *steps gets the checkpoint's step count
 * (may be NULL).  0, or 2 with the message in err. */
int trained_load_weights(Model *m, const Config *cfg, const char *arg, const char *db_path, const char *ckpt_dir, long *steps, char *err,
                         size_t cap);

typedef struct {
    const char *db_path, *data_dir, *ckpt_dir;
    const int *lengths; /* context lengths to evaluate */
    int nlengths;
    int scaling;        /* RopeScalingKind */
    double factor;      /* > 0: this s at every length; 0: s = L / L_train */
    int windows;        /* windows per length and split (at most) */
    int val, test;      /* which splits */
    int progress;       /* 1: a progress line on the terminal */
    /* run/infer.h: with any of these, each length (default: the training
     * length when nlengths is 0) is evaluated under these schemes instead
     * of the long-context metrics */
    const QuantSpec *quant;
    int nquant;
    const DropSpec *drop;
    int ndrop;
} EvalOpts;

/* Evaluate the trained model `arg` (as trained_locate) at every length
 * (with quant / drop: the schemes of run/infer.h at each length).
 * Prints one line per (split, length) to stdout.  Returns the exit code:
 * 0, 1 (runtime failure), 2 (bad input). */
int eval_run(const char *arg, const EvalOpts *o);

#endif
