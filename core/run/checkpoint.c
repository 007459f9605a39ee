/* checkpoint.c — see checkpoint.h. */
#include "run/checkpoint.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/config.h"
#include "run/store.h"

static const char MAGIC[] = "GATEDCKPT3\n";
static const char MAGIC_V2[] = "GATEDCKPT2\n"; /* no identity: read, not resumed unchecked (checkpoint.h) */
static const char MAGIC_V1[] = "GATEDCKPT1\n";
#define MAGIC_LEN (sizeof MAGIC - 1)
#define ID_LEN 16 /* a database id or a run id: 16 lowercase hex digits */
#define JSON_MAX (1u << 20)
/* step, rng, ring, spikes, train_time */
#define STATE_BYTES (8 + 8 + 8 * 100 + 8 + 8)

/* ------------------------------------------------------------ checksum */

/* A 64-bit checksum of the bytes before it: four lanes of 64-bit words,
 * each step a bijection of the lane (xor, odd multiply, xorshift), so a
 * change of any one word always changes the result. */
typedef struct {
    uint64_t lane[4];
    unsigned char buf[32];
    size_t nbuf;
    uint64_t len;
} Sum;

static const uint64_t SUM_K = 0x9E3779B97F4A7C15ull;

static void sum_init(Sum *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 4; i++) s->lane[i] = 0x6A09E667F3BCC908ull + (uint64_t)i * 0xBB67AE8584CAA73Bull;
}

static inline uint64_t sum_mix(uint64_t h, uint64_t w) {
    h = (h ^ w) * SUM_K;
    return h ^ (h >> 29);
}

static void sum_block(Sum *s, const unsigned char *p) {
    for (int i = 0; i < 4; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        s->lane[i] = sum_mix(s->lane[i], w);
    }
}

static void sum_add(Sum *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->len += n;
    if (s->nbuf) {
        size_t take = 32 - s->nbuf < n ? 32 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take, p += take, n -= take;
        if (s->nbuf < 32) return;
        sum_block(s, s->buf);
        s->nbuf = 0;
    }
    for (; n >= 32; p += 32, n -= 32) sum_block(s, p);
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

static uint64_t sum_final(Sum *s) {
    memset(s->buf + s->nbuf, 0, 32 - s->nbuf);
    sum_block(s, s->buf);
    uint64_t h = s->len * SUM_K;
    for (int i = 0; i < 4; i++) {
        h = sum_mix(h, s->lane[i]);
        h = (h << 27 | h >> 37) * 0xBF58476D1CE4E5B9ull;
    }
    return h ^ (h >> 31);
}

uint64_t checkpoint_checksum(const void *data, size_t n) {
    Sum s;
    sum_init(&s);
    sum_add(&s, data, n);
    return sum_final(&s);
}

/* ------------------------------------------------------------ checks */

/* The first non-finite value of x[0..n) (or a negative one, when
 * nonneg), or -1. */
static long long bad_value(const real *x, size_t n, int nonneg) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (nonneg && x[i] < 0)) return (long long)i;
    return -1;
}

/* The arena and state must be finite: moments and weights are what the
 * next step reads, and a NaN there would resume as a "divergence".  0, or
 * -1 with what is wrong in err. */
static int check_values(const char *path, const Arena *a, const TrainState *ts, char *err, size_t cap) {
    static const char *const what[3] = {"weight", "AdamW first moment", "AdamW second moment"};
    const real *arr[3] = {a->w, a->m, a->v};
    for (int k = 0; k < 3; k++) {
        long long i = bad_value(arr[k], a->total, k == 2);
        if (i >= 0) {
            snprintf(err, cap, "%s: %s %lld of %zu is %g: not a usable training state", path, what[k], i, a->total,
                     (double)arr[k][i]);
            return -1;
        }
    }
    for (int i = 0; i < 100; i++)
        if (!isfinite(ts->ring[i])) {
            snprintf(err, cap, "%s: loss history entry %d is %g: not a usable training state", path, i, ts->ring[i]);
            return -1;
        }
    if (ts->step < 0 || ts->spikes < 0 || ts->spikes > ts->step || !isfinite(ts->train_time) || ts->train_time < 0) {
        snprintf(err, cap, "%s: bad training state (step %lld, spikes %lld, train time %g s)", path,
                 (long long)ts->step, (long long)ts->spikes, ts->train_time);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ save */

typedef struct {
    FILE *f;
    Sum sum;
    int ok;
} Writer;

static void put(Writer *w, const void *p, size_t n) {
    if (!w->ok) return;
    sum_add(&w->sum, p, n);
    if (n && fwrite(p, 1, n, w->f) != n) w->ok = 0;
}

static void put_u64(Writer *w, uint64_t v) { put(w, &v, 8); }
static void put_f64(Writer *w, double v) { put(w, &v, 8); }

void checkpoint_default_dir(const char *db_path, char *out, size_t cap) {
    const char *slash = strrchr(db_path, '/');
    snprintf(out, cap, "%.*s%scheckpoints", slash ? (int)(slash - db_path) : 0, db_path, slash ? "/" : "");
}

void checkpoint_path(const char *ckdir, const char *db_id, const char *run_id, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s/%s.ckpt", ckdir, db_id, run_id);
}

/* Whether path names something (a file, or anything a reader then refuses). */
static int exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

int checkpoint_locate(Store *st, const char *ckdir, int legacy, const char *run_id, char *out, size_t cap) {
    const char *own = store_db_id(st);
    if (*own) {
        checkpoint_path(ckdir, own, run_id, out, cap);
        if (exists(out)) return 1;
    }
    /* where they were before they were kept by database (format 3 names it) */
    snprintf(out, cap, "%s/%s.ckpt", ckdir, run_id);
    if (exists(out)) return 1;
    if (legacy) {
        snprintf(out, cap, "checkpoints/%s.ckpt", run_id);
        if (exists(out)) return 1;
    }
    /* a database merged into this one: its directory beside ours */
    DIR *d = opendir(ckdir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d)))
        if (store_run_id_valid(e->d_name) && strcmp(e->d_name, own) != 0 && store_db_knows(st, e->d_name) == 1) {
            checkpoint_path(ckdir, e->d_name, run_id, out, cap);
            found = exists(out);
        }
    if (d) closedir(d);
    if (found) return 1;
    if (*own) /* where it would be (for the message that there is none) */
        checkpoint_path(ckdir, own, run_id, out, cap);
    else
        snprintf(out, cap, "%s/%s.ckpt", ckdir, run_id);
    return 0;
}

int checkpoint_save(const char *path, const char *config_json, const char *db_id, const Arena *a,
                    const TrainState *ts, char *err, size_t cap) {
    size_t jl = strlen(config_json);
    if (!store_run_id_valid(db_id)) {
        snprintf(err, cap, "%s: cannot write checkpoint: no database id", path);
        return -1;
    }
    if (jl > JSON_MAX) {
        snprintf(err, cap, "%s: cannot write checkpoint: configuration JSON of %zu bytes", path, jl);
        return -1;
    }
    char why[512];
    if (check_values(path, a, ts, why, sizeof why)) {
        snprintf(err, cap, "not writing a checkpoint at step %lld: %s", (long long)ts->step, why);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    Writer w;
    memset(&w, 0, sizeof w);
    w.ok = 1;
    w.f = fopen(tmp, "wb");
    if (!w.f) {
        snprintf(err, cap, "%s: cannot write checkpoint: %s", tmp, strerror(errno));
        return -1;
    }
    sum_init(&w.sum);
    uint32_t rs = sizeof(real);
    char run_id[17];
    store_run_id(config_json, run_id);
    put(&w, MAGIC, MAGIC_LEN);
    put(&w, &rs, sizeof rs);
    put(&w, db_id, ID_LEN);
    put(&w, run_id, ID_LEN);
    put_u64(&w, jl);
    put(&w, config_json, jl);
    put_u64(&w, a->total);
    put(&w, a->w, sizeof(real) * a->total);
    put(&w, a->m, sizeof(real) * a->total);
    put(&w, a->v, sizeof(real) * a->total);
    put_u64(&w, (uint64_t)ts->step);
    put_u64(&w, ts->data_rng.s);
    for (int i = 0; i < 100; i++) put_f64(&w, ts->ring[i]);
    put_u64(&w, (uint64_t)ts->spikes);
    put_f64(&w, ts->train_time);
    uint64_t sum = sum_final(&w.sum);
    int ok = w.ok && fwrite(&sum, 8, 1, w.f) == 1 && fflush(w.f) == 0 && fsync(fileno(w.f)) == 0;
    int e = ok ? 0 : errno;
    if (fclose(w.f) != 0 && ok) ok = 0, e = errno;
    if (ok && rename(tmp, path) != 0) ok = 0, e = errno;
    if (!ok) {
        snprintf(err, cap, "%s: cannot write checkpoint: %s", path, e ? strerror(e) : "write error");
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ load */

typedef struct {
    FILE *f;
    const char *path;
    Sum sum;
    long long size; /* of the file */
    char *json;
    Config cfg; /* the checkpoint's configuration, resolved */
    uint64_t n; /* arena total */
    int format; /* 2 or 3 */
    char db_id[17], run_id[17]; /* format 3: where it belongs; "" in format 2 */
} Reader;

static int get(Reader *r, void *p, size_t n) {
    if (n && fread(p, 1, n, r->f) != n) return -1;
    sum_add(&r->sum, p, n);
    return 0;
}

static void reader_close(Reader *r) {
    if (r->f) fclose(r->f);
    free(r->json);
    r->f = NULL;
    r->json = NULL;
}

/* Open path for reading if it is a regular file: 1 (r->f open, r->size
 * set), 0 absent, -1 error (message in err).  O_NONBLOCK: a FIFO (or
 * device) put where a checkpoint belongs must not block the open. */
static int open_regular(const char *path, Reader *r, char *err, size_t cap) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, cap, "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, cap, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || !(r->f = fdopen(fd, "rb"))) {
        snprintf(err, cap, "%s: cannot open checkpoint: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    r->size = (long long)sb.st_size;
    return 1;
}

/* Open a checkpoint and check its header: the format, the size of a real,
 * the configuration (it must parse and resolve), the arena size against
 * the file's size.  1 (r->f positioned at the arena), 0 absent, -1 error
 * (message in err; nothing open). */
static int open_header(const char *path, Reader *r, char *err, size_t cap) {
    memset(r, 0, sizeof *r);
    r->path = path;
    sum_init(&r->sum);
    int o = open_regular(path, r, err, cap);
    if (o <= 0) return o;
    char magic[MAGIC_LEN];
    uint32_t rs = 0;
    uint64_t jl = 0;
    if (get(r, magic, MAGIC_LEN)) {
        snprintf(err, cap, "%s: not a gated checkpoint (%lld bytes)", path, r->size);
        goto bad;
    }
    if (memcmp(magic, MAGIC_V1, MAGIC_LEN) == 0) {
        snprintf(err, cap,
                 "%s: checkpoint format 1 (no checksum) is no longer read; start the run over without --resume",
                 path);
        goto bad;
    }
    r->format = memcmp(magic, MAGIC, MAGIC_LEN) == 0 ? 3 : memcmp(magic, MAGIC_V2, MAGIC_LEN) == 0 ? 2 : 0;
    if (!r->format) {
        snprintf(err, cap, "%s: not a gated checkpoint", path);
        goto bad;
    }
    if (get(r, &rs, sizeof rs) || (r->format == 3 && (get(r, r->db_id, ID_LEN) || get(r, r->run_id, ID_LEN))) ||
        get(r, &jl, 8)) {
        snprintf(err, cap, "%s: truncated checkpoint", path);
        goto bad;
    }
    if (r->format == 3 && (!store_run_id_valid(r->db_id) || !store_run_id_valid(r->run_id))) {
        snprintf(err, cap, "%s: corrupt checkpoint (its database or run id is not 16 hex digits)", path);
        goto bad;
    }
    if (rs != sizeof(real)) {
        snprintf(err, cap, "%s: written by a build with %u-byte reals (this one has %zu)", path, (unsigned)rs,
                 sizeof(real));
        goto bad;
    }
    /* all but json and arena */
    long long fixed = (long long)MAGIC_LEN + 4 + (r->format == 3 ? 2 * ID_LEN : 0) + 8 + 8 + STATE_BYTES + 8;
    if (jl > JSON_MAX || (long long)jl > r->size - fixed) {
        snprintf(err, cap, "%s: corrupt checkpoint (configuration length %llu in a file of %lld bytes)", path,
                 (unsigned long long)jl, r->size);
        goto bad;
    }
    r->json = malloc(jl + 1);
    if (!r->json) {
        snprintf(err, cap, "%s: out of memory", path);
        goto bad;
    }
    if (get(r, r->json, jl) || get(r, &r->n, 8)) {
        snprintf(err, cap, "%s: truncated checkpoint", path);
        goto bad;
    }
    r->json[jl] = 0;
    if (memchr(r->json, 0, jl)) {
        snprintf(err, cap, "%s: corrupt checkpoint (a NUL byte in its configuration)", path);
        goto bad;
    }
    ConfigError ce;
    config_defaults(&r->cfg);
    if (config_from_json(&r->cfg, r->json, &ce) || config_resolve(&r->cfg, &ce)) {
        snprintf(err, cap, "%s: corrupt checkpoint (its configuration: %s)", path, ce.msg);
        goto bad;
    }
    char id[17];
    store_run_id(r->json, id);
    if (r->format == 3 && strcmp(id, r->run_id) != 0) {
        snprintf(err, cap, "%s: corrupt checkpoint (run id %s, but its configuration is run %s)", path, r->run_id, id);
        goto bad;
    }
    /* the file is exactly header, 3 x n reals, state, checksum */
    long long arena_bytes = r->size - fixed - (long long)jl;
    if (r->n == 0 || r->n > (uint64_t)arena_bytes / (3 * sizeof(real)) ||
        (long long)(3 * sizeof(real) * r->n) != arena_bytes) {
        snprintf(err, cap, "%s: truncated or corrupt checkpoint (%llu parameters in a file of %lld bytes)", path,
                 (unsigned long long)r->n, r->size);
        goto bad;
    }
    return 1;
bad:
    reader_close(r);
    return -1;
}

/* The arena and the training state after the header; the checksum; every
 * field checked against the checkpoint's configuration.  0 or -1. */
static int read_body(Reader *r, Arena *a, TrainState *ts, char *err, size_t cap) {
    const char *path = r->path;
    if (r->n != a->total) {
        snprintf(err, cap, "%s: holds %llu parameters, the model has %zu", path, (unsigned long long)r->n, a->total);
        return -1;
    }
    uint64_t step, rng, spikes, sum;
    double ring[100], tt;
    if (get(r, a->w, sizeof(real) * a->total) || get(r, a->m, sizeof(real) * a->total) ||
        get(r, a->v, sizeof(real) * a->total) || get(r, &step, 8) || get(r, &rng, 8) || get(r, ring, sizeof ring) ||
        get(r, &spikes, 8) || get(r, &tt, 8)) {
        snprintf(err, cap, "%s: truncated checkpoint", path);
        return -1;
    }
    uint64_t want = sum_final(&r->sum);
    if (fread(&sum, 8, 1, r->f) != 1 || sum != want) {
        snprintf(err, cap, "%s: checksum mismatch: the checkpoint is corrupt", path);
        return -1;
    }
    memset(ts, 0, sizeof *ts);
    ts->step = (int64_t)step;
    ts->data_rng.s = rng;
    memcpy(ts->ring, ring, sizeof ring);
    ts->spikes = (int64_t)spikes;
    ts->train_time = tt;
    if (ts->step < 0 || ts->step > r->cfg.steps) {
        snprintf(err, cap, "%s: corrupt checkpoint (step %lld of a %d-step run)", path, (long long)ts->step,
                 r->cfg.steps);
        return -1;
    }
    return check_values(path, a, ts, err, cap);
}

/* Whether the checkpoint r, holding step `step`, may be read as run_id of
 * the database st: the one check every reader makes (checkpoint.h). */
static int owner_check(const Reader *r, long long step, Store *st, const char *run_id, char *err, size_t cap) {
    const char *path = r->path;
    if (!st) return 0;
    if (r->format == 3 && strcmp(r->run_id, run_id) != 0) {
        snprintf(err, cap, "%s: a checkpoint of run %s, not of run %s", path, r->run_id, run_id);
        return -1;
    }
    if (r->format == 3) {
        int k = store_db_knows(st, r->db_id);
        long long last = k == 1 ? store_run_last_step(st, run_id) : 0;
        if (k < 0 || last < 0) {
            snprintf(err, cap, "%s: %s", store_path(st), store_errmsg(st));
            return -1;
        }
        if (k == 2 || (k == 1 && last == step)) return 0;
        if (k == 1)
            snprintf(err, cap,
                     "%s: a checkpoint of run %s at step %lld written by database %s (merged into %s), where the "
                     "run ends at step %lld: not the stored run's state",
                     path, run_id, step, r->db_id, store_path(st), last);
        else
            snprintf(err, cap,
                     "%s: a checkpoint of run %s written by another database (id %s; %s is %s): not this "
                     "database's run; use the --db it was trained with",
                     path, run_id, r->db_id, store_path(st), *store_db_id(st) ? store_db_id(st) : "without an id");
        return -1;
    }
    /* format 2 names no database: the rows of every step it holds must be here */
    char why[512];
    int has = store_run_rows_through(st, run_id, step, r->cfg.eval_every, why, sizeof why);
    if (has > 0) return 0;
    snprintf(err, cap, "%s: a format-2 checkpoint (it names no database) after step %lld, but %s", path, step,
             has < 0 ? store_errmsg(st) : why);
    return -1;
}

int checkpoint_load(const char *path, const char *config_json, Store *st, Arena *a, TrainState *ts, char *err,
                    size_t cap) {
    Reader r;
    int rc = open_header(path, &r, err, cap);
    if (rc <= 0) return rc;
    char id[17];
    store_run_id(config_json, id);
    if (strcmp(r.json, config_json) != 0) {
        snprintf(err, cap, "%s: checkpoint belongs to a different configuration", path);
        rc = -1;
    } else
        rc = read_body(&r, a, ts, err, cap) || owner_check(&r, ts->step, st, id, err, cap) ? -1 : 1;
    reader_close(&r);
    return rc;
}

int checkpoint_check(const char *path, Store *st, const char *run_id, char *err, size_t cap) {
    Reader r;
    int rc = open_header(path, &r, err, cap);
    if (rc == 0) snprintf(err, cap, "%s: no checkpoint (the run never finished or saved one)", path);
    if (rc <= 0) return -1;
    char id[17];
    store_run_id(r.json, id);
    unsigned char buf[1 << 16];
    uint64_t left = 3 * sizeof(real) * r.n, step = 0, sum;
    unsigned char state[STATE_BYTES];
    rc = 0;
    if (strcmp(id, run_id) != 0) {
        snprintf(err, cap, "%s: a checkpoint of run %s, not of run %s", path, id, run_id);
        rc = -1;
    }
    while (rc == 0 && left) { /* the arena, through the checksum */
        size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
        if (get(&r, buf, n)) rc = -1;
        left -= n;
    }
    if (rc == 0 && get(&r, state, sizeof state)) rc = -1;
    if (rc == 0) {
        uint64_t want = sum_final(&r.sum);
        if (fread(&sum, 8, 1, r.f) != 1 || sum != want) rc = -1;
        if (rc) snprintf(err, cap, "%s: checksum mismatch: the checkpoint is corrupt", path);
        memcpy(&step, state, 8);
    } else if (strcmp(id, run_id) == 0)
        snprintf(err, cap, "%s: truncated checkpoint", path);
    if (rc == 0 && (step > (uint64_t)r.cfg.steps)) {
        snprintf(err, cap, "%s: corrupt checkpoint (step %llu of a %d-step run)", path, (unsigned long long)step,
                 r.cfg.steps);
        rc = -1;
    }
    if (rc == 0) rc = owner_check(&r, (long long)step, st, run_id, err, cap);
    reader_close(&r);
    return rc;
}

int checkpoint_read(const char *path, char **json, Arena *a, TrainState *ts, char *err, size_t cap) {
    Reader r;
    *json = NULL;
    int rc = open_header(path, &r, err, cap);
    if (rc <= 0) return rc;
    if (a && read_body(&r, a, ts, err, cap)) {
        reader_close(&r);
        return -1;
    }
    *json = r.json;
    r.json = NULL;
    reader_close(&r);
    return 1;
}

/* ------------------------------------------------------------ retag */

int checkpoint_retag(const char *path, const char *db_id, char *err, size_t cap) {
    Reader r;
    int rc = open_header(path, &r, err, cap); /* a regular file of a readable format, its size known */
    if (rc == 0) snprintf(err, cap, "%s: no such checkpoint", path);
    if (rc <= 0) return -1;
    int format = r.format;
    long long size = r.size;
    reader_close(&r);
    if (format != 3 || !store_run_id_valid(db_id) || size < (long long)(MAGIC_LEN + 4 + ID_LEN + 8)) {
        snprintf(err, cap, "%s: not a checkpoint that names its database (format %d)", path, format);
        return -1;
    }
    unsigned char *b = malloc((size_t)size);
    FILE *f = b ? fopen(path, "rb") : NULL;
    int ok = f && fread(b, 1, (size_t)size, f) == (size_t)size;
    if (f) fclose(f);
    uint64_t sum;
    if (ok) memcpy(&sum, b + size - 8, 8);
    if (!ok || sum != checkpoint_checksum(b, (size_t)size - 8)) {
        snprintf(err, cap, "%s: %s", path, ok ? "checksum mismatch: the checkpoint is corrupt" : "cannot read it");
        free(b);
        return -1;
    }
    memcpy(b + MAGIC_LEN + 4, db_id, ID_LEN);
    sum = checkpoint_checksum(b, (size_t)size - 8);
    memcpy(b + size - 8, &sum, 8);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    ok = f && fwrite(b, 1, (size_t)size, f) == (size_t)size && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = 0;
    free(b);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, cap, "%s: cannot write checkpoint: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
