/* dump.c — see dump.h. */
#include "run/dump.h"

#include "nn/sparse.h"
#include "util/json.h"
#include "util/outfile.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_tensor(FILE *f, const char *name, const char *type, int ndim, const int *dims, const void *data,
                       size_t n) {
    fprintf(f, "tensor %s %s %d", name, type, ndim);
    for (int i = 0; i < ndim; i++) fprintf(f, " %d", dims[i]);
    fputc('\n', f);
    if (strcmp(type, "f32") == 0 && sizeof(real) != 4) {
        const real *r = data;
        for (size_t i = 0; i < n; i++) {
            float v = (float)r[i];
            fwrite(&v, 4, 1, f);
        }
    } else {
        fwrite(data, 4, n, f);
    }
    fputc('\n', f);
}

/* ev NULL: the training dump (params, outputs, grads); else the evaluation
 * dump (its cfg lines, no grads, out.dropped). */
static int write_dump(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets,
                      const DumpEval *ev) {
    OutFile o; /* util/outfile.h: a temporary beside path, renamed over it when complete */
    char oerr[512];
    if (outfile_open(&o, path, oerr, sizeof oerr)) {
        errno = errno ? errno : EIO;
        return -1;
    }
    FILE *f = o.f;
    fprintf(f, "GATED-DUMP 1\n");
    char json[8192];
    config_to_json(c, json, sizeof json);
    /* one "cfg key value" line per key, read back from the canonical JSON
     * (util/json.h) so there is a single formatter of config values */
    Json *j = json_parse(json, NULL, 0);
    if (!j || j->type != JSON_OBJ) {
        json_free(j);
        outfile_abort(&o);
        return -1;
    }
    for (int i = 0; i < j->n; i++) {
        const Json *v = j->v[i];
        const char *t = v->type == JSON_BOOL ? (v->num ? "true" : "false") : v->str ? v->str : "null";
        fprintf(f, "cfg %s %s\n", j->keys[i], t);
    }
    json_free(j);
    if (ev && ev->quant) fprintf(f, "cfg xcheck.quant %s\n", ev->quant);
    if (ev && ev->drop) fprintf(f, "cfg xcheck.drop %s\n", ev->drop);
    for (int pass = 0; pass < (ev ? 1 : 2); pass++)
        for (int i = 0; i < m->p.n; i++) {
            const Tensor *t = &m->p.t[i];
            char name[80];
            snprintf(name, sizeof name, "%s.%s", pass ? "grad" : "param", t->name);
            put_tensor(f, name, "f32", t->ndim, t->shape, (pass ? m->p.g : m->p.w) + t->off, t->n);
        }
    int bt[2] = {m->B, m->T}, btv[3] = {m->B, m->T, m->V}, one[1] = {1};
    put_tensor(f, "input.tokens", "i32", 2, bt, tokens, (size_t)m->B * m->T);
    put_tensor(f, "input.targets", "i32", 2, bt, targets, (size_t)m->B * m->T);
    put_tensor(f, "out.logits", "f32", 3, btv, m->logits, (size_t)m->B * m->T * m->V);
    real loss = (real)m->loss;
    put_tensor(f, "out.loss", "f32", 1, one, &loss, 1);
    /* each sparse layer's selection (nn/sparse.h: (B, T, k) key positions, -1 past a row's n_t) */
    for (int l = 0; l < m->L; l++) {
        const int *sel = sparse_selection(m, l);
        int btk[3] = {m->B, m->T, m->cfg.attn.topk};
        char name[32];
        snprintf(name, sizeof name, "sparse.l%d", l);
        if (sel) put_tensor(f, name, "i32", 3, btk, sel, (size_t)m->B * m->T * m->cfg.attn.topk);
    }
    if (ev && ev->drop && ev->dropped) {
        int nl[1] = {m->L}, *cnt = malloc(sizeof *cnt * (size_t)m->L);
        if (!cnt) {
            outfile_abort(&o);
            errno = ENOMEM;
            return -1;
        }
        for (int l = 0; l < m->L; l++) cnt[l] = (int)ev->dropped[l];
        put_tensor(f, "out.dropped", "i32", 1, nl, cnt, (size_t)m->L);
        free(cnt);
    }
    fprintf(f, "end\n");
    if (outfile_commit(&o, oerr, sizeof oerr)) {
        errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int dump_write(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets) {
    return write_dump(path, c, m, tokens, targets, NULL);
}

int dump_write_eval(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets,
                    const DumpEval *ev) {
    static const DumpEval none = {0};
    return write_dump(path, c, m, tokens, targets, ev ? ev : &none);
}
