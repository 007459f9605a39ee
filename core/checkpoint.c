/* checkpoint.c — see checkpoint.h. */
#include "checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char MAGIC[] = "GATEDCKPT1\n";

int checkpoint_save(const char *path, const char *config_json, const Arena *a, const TrainState *ts, char *err,
                    size_t cap) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, cap, "%s: cannot write checkpoint: %s", tmp, strerror(errno));
        return -1;
    }
    uint32_t rs = sizeof(real);
    uint64_t jl = strlen(config_json), n = a->total;
    int ok = fwrite(MAGIC, 1, sizeof MAGIC - 1, f) == sizeof MAGIC - 1 && fwrite(&rs, sizeof rs, 1, f) == 1 &&
             fwrite(&jl, sizeof jl, 1, f) == 1 && fwrite(config_json, 1, jl, f) == jl &&
             fwrite(&n, sizeof n, 1, f) == 1 && fwrite(a->w, sizeof(real), n, f) == n &&
             fwrite(a->m, sizeof(real), n, f) == n && fwrite(a->v, sizeof(real), n, f) == n &&
             fwrite(ts, sizeof *ts, 1, f) == 1;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, cap, "%s: cannot write checkpoint: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Open a checkpoint and read its header: *json (malloc'd) is the config.
 * 1 (f positioned at the arena), 0 absent, -1 error (message in err). */
static int open_header(const char *path, FILE **fp, char **json, char *err, size_t cap) {
    *fp = NULL;
    *json = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, cap, "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    char magic[sizeof MAGIC];
    uint32_t rs = 0;
    uint64_t jl = 0;
    if (fread(magic, 1, sizeof MAGIC - 1, f) != sizeof MAGIC - 1 || memcmp(magic, MAGIC, sizeof MAGIC - 1) ||
        fread(&rs, sizeof rs, 1, f) != 1 || rs != sizeof(real) || fread(&jl, sizeof jl, 1, f) != 1 ||
        jl > (1u << 20)) {
        snprintf(err, cap, "%s: not a gated checkpoint (or from another build)", path);
        fclose(f);
        return -1;
    }
    char *js = malloc(jl + 1);
    if (!js) {
        snprintf(err, cap, "%s: out of memory", path);
        fclose(f);
        return -1;
    }
    if (fread(js, 1, jl, f) != jl) {
        snprintf(err, cap, "%s: truncated checkpoint", path);
        free(js);
        fclose(f);
        return -1;
    }
    js[jl] = 0;
    *fp = f;
    *json = js;
    return 1;
}

/* The arena and the training state, after the header. */
static int read_body(FILE *f, const char *path, Arena *a, TrainState *ts, char *err, size_t cap) {
    uint64_t n = 0;
    if (fread(&n, sizeof n, 1, f) != 1 || n != a->total || fread(a->w, sizeof(real), n, f) != n ||
        fread(a->m, sizeof(real), n, f) != n || fread(a->v, sizeof(real), n, f) != n ||
        fread(ts, sizeof *ts, 1, f) != 1) {
        snprintf(err, cap, "%s: truncated or mismatched checkpoint", path);
        return -1;
    }
    return 0;
}

int checkpoint_load(const char *path, const char *config_json, Arena *a, TrainState *ts, char *err, size_t cap) {
    FILE *f;
    char *json;
    int rc = open_header(path, &f, &json, err, cap);
    if (rc <= 0) return rc;
    if (strcmp(json, config_json) != 0) {
        snprintf(err, cap, "%s: checkpoint belongs to a different configuration", path);
        rc = -1;
    } else
        rc = read_body(f, path, a, ts, err, cap) ? -1 : 1;
    free(json);
    fclose(f);
    return rc;
}

int checkpoint_read(const char *path, char **json, Arena *a, TrainState *ts, char *err, size_t cap) {
    FILE *f;
    int rc = open_header(path, &f, json, err, cap);
    if (rc <= 0) return rc;
    if (a && read_body(f, path, a, ts, err, cap)) {
        free(*json);
        *json = NULL;
        rc = -1;
    }
    fclose(f);
    return rc;
}
