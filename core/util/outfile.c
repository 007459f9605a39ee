/*
 * outfile.c — see outfile.h.  The temporary file is made with mkstemp in
 * the target's directory, named after it (".NAME.tmp-XXXXXX"), so a crash
 * leaves a recognisable file beside the target, never a damaged target.
 */
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void outfile_free(OutFile *o) {
    free(o->target);
    free(o->tmp);
    o->target = o->tmp = NULL;
    o->f = NULL;
}

/* The file a commit replaces: path itself when it does not exist, else
 * the regular file it is or links to.  0, -2 (not a regular file), -1. */
static int resolve_target(OutFile *o, const char *path, mode_t *mode, char *err, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT) return snprintf(err, cap, "%s: %s", path, strerror(errno)), -1;
        struct stat lb;
        if (lstat(path, &lb) == 0) /* a dangling link: its target would be made elsewhere */
            return snprintf(err, cap, "%s: a symbolic link to nothing; give a file name", path), -2;
        mode_t um = umask(0);
        umask(um);
        *mode = 0666 & ~um;
        o->target = strdup(path);
    } else {
        if (!S_ISREG(sb.st_mode))
            return snprintf(err, cap, "%s: %s; give a regular file, or no --out for stdout", path,
                            S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file (a device, FIFO or socket)"),
                   -2;
        *mode = sb.st_mode & 07777;
        o->target = realpath(path, NULL);
    }
    if (!o->target) return snprintf(err, cap, "%s: %s", path, strerror(errno ? errno : ENOMEM)), -1;
    return 0;
}

int outfile_open(OutFile *o, const char *path, char *err, size_t cap) {
    memset(o, 0, sizeof *o);
    if (err && cap) err[0] = '\0';
    mode_t mode = 0644;
    int rc = resolve_target(o, path, &mode, err, cap);
    if (rc) {
        outfile_free(o);
        return rc;
    }
    const char *slash = strrchr(o->target, '/');
    const char *base = slash ? slash + 1 : o->target;
    int dirlen = slash ? (int)(slash - o->target) + 1 : 0;
    size_t n = strlen(o->target) + 32;
    o->tmp = malloc(n);
    if (!o->tmp) {
        snprintf(err, cap, "%s: out of memory", path);
        outfile_free(o);
        return -1;
    }
    snprintf(o->tmp, n, "%.*s.%s.tmp-XXXXXX", dirlen, o->target, base);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        snprintf(err, cap, "%s: cannot create a file beside it: %s", path, strerror(errno));
        outfile_free(o);
        return -1;
    }
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
        snprintf(err, cap, "%s: %s", o->tmp, strerror(errno));
        close(fd);
        unlink(o->tmp);
        outfile_free(o);
        return -1;
    }
    return 0;
}

int outfile_commit(OutFile *o, char *err, size_t cap) {
    if (!o->f || !o->tmp) {
        snprintf(err, cap, "internal: commit of an output file that is not open");
        outfile_abort(o);
        return -1;
    }
    int ok = fflush(o->f) == 0 && !ferror(o->f) && fsync(fileno(o->f)) == 0;
    int e = ok ? 0 : errno;
    if (fclose(o->f) != 0 && ok) ok = 0, e = errno;
    o->f = NULL;
    if (ok && rename(o->tmp, o->target) != 0) ok = 0, e = errno;
    if (!ok) {
        snprintf(err, cap, "%s: %s; it was left as it was", o->target, e ? strerror(e) : "write error");
        outfile_abort(o);
        return -1;
    }
    outfile_free(o);
    return 0;
}

void outfile_abort(OutFile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    outfile_free(o);
}
