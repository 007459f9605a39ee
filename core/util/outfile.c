/*
 * outfile.c — see outfile.h.  The temporary file is made with mkostemp
 * (O_CREAT | O_EXCL, with O_NOFOLLOW added) in the target's directory,
 * named after it (".NAME.tmp-XXXXXX"), so a crash leaves a recognisable
 * file beside the target, never a damaged target.
 */
#include "util/outfile.h"
#include "util/util.h"

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

/* The mode of the new file: a regular file's it replaces, else 0666 less
 * the umask.  0, or -2 (exists and is not a regular file or a link) or -1
 * with the message in err.  lstat: a link at path is never followed. */
static int target_mode(const char *path, mode_t *mode, char *err, size_t cap) {
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (S_ISREG(sb.st_mode)) {
            *mode = sb.st_mode & 07777;
            return 0;
        }
        if (!S_ISLNK(sb.st_mode))
            return snprintf(err, cap, "%s: %s; give a regular file", path,
                            S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file (a device, FIFO or socket)"),
                   -2;
    } else if (errno != ENOENT)
        return snprintf(err, cap, "%s: %s", path, strerror(errno)), -1;
    mode_t um = umask(0);
    umask(um);
    *mode = 0666 & ~um;
    return 0;
}

/* A new temporary file beside path: its descriptor, the name in *tmp
 * (heap), or -1/-2 with the message in err. */
static int make_tmp(const char *path, char **tmp, char *err, size_t cap) {
    mode_t mode = 0644;
    int rc = target_mode(path, &mode, err, cap);
    if (rc) return rc;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    if (!*base) return snprintf(err, cap, "%s: a directory name, not a file name", path), -2;
    size_t n = strlen(path) + 32;
    if (!(*tmp = malloc(n))) return snprintf(err, cap, "%s: out of memory", path), -1;
    snprintf(*tmp, n, "%.*s.%s.tmp-XXXXXX", dirlen, path, base);
    int fd = mkostemp(*tmp, O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "%s: cannot create a file beside it: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    if (fchmod(fd, mode) != 0) {
        snprintf(err, cap, "%s: %s", *tmp, strerror(errno));
        close(fd);
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    return fd;
}

int outfile_open(OutFile *o, const char *path, char *err, size_t cap) {
    memset(o, 0, sizeof *o);
    if (err && cap) err[0] = '\0';
    int fd = make_tmp(path, &o->tmp, err, cap);
    if (fd < 0) return fd;
    if (!(o->target = strdup(path)) || !(o->f = fdopen(fd, "w"))) {
        snprintf(err, cap, "%s: %s", path, strerror(errno ? errno : ENOMEM));
        close(fd);
        unlink(o->tmp);
        outfile_free(o);
        return -1;
    }
    return 0;
}

/* fsync the directory holding path, so the rename survives a crash
 * (best effort: some file systems refuse it). */
static void sync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int outfile_commit(OutFile *o, char *err, size_t cap) {
    if (!o->f || !o->tmp) {
        snprintf(err, cap, "internal: commit of an output file that is not open");
        outfile_abort(o);
        return -1;
    }
    errno = 0;
    int ok = fflush(o->f) == 0 && !ferror(o->f) && fsync(fileno(o->f)) == 0;
    int e = ok ? 0 : errno;
    if (fclose(o->f) != 0 && ok) ok = 0, e = errno;
    o->f = NULL;
    if (ok && rename(o->tmp, o->target) != 0) ok = 0, e = errno;
    if (!ok) {
        snprintf(err, cap, "%s: cannot write: %s; the file was left as it was", o->target,
                 e ? strerror(e) : "write error");
        outfile_abort(o);
        return -1;
    }
    sync_dir(o->target);
    outfile_free(o);
    return 0;
}

void outfile_abort(OutFile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    outfile_free(o);
}

int outfile_write(const char *path, const void *buf, size_t n, char *err, size_t cap) {
    OutFile o;
    int rc = outfile_open(&o, path, err, cap);
    if (rc) return rc;
    if (n && fwrite(buf, 1, n, o.f) != n) {
        snprintf(err, cap, "%s: cannot write: %s; the file was left as it was", path, strerror(errno ? errno : EIO));
        outfile_abort(&o);
        return -1;
    }
    return outfile_commit(&o, err, cap);
}

int outfile_fresh_fd(const char *path, char *err, size_t cap) {
    if (err && cap) err[0] = '\0';
    char *tmp = NULL;
    int fd = make_tmp(path, &tmp, err, cap);
    if (fd < 0) return fd;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_APPEND) != 0 || rename(tmp, path) != 0) {
        snprintf(err, cap, "%s: cannot create: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return fd;
}

int outfile_mkdir(const char *dir, char *err, size_t cap) {
    if (util_mkdir_p(dir) != 0) return snprintf(err, cap, "%s: cannot create directory: %s", dir, strerror(errno)), -1;
    struct stat sb;
    /* a trailing slash makes lstat follow a link: strip them before asking */
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    char *d = strndup(dir, n);
    if (!d) return snprintf(err, cap, "%s: out of memory", dir), -1;
    int lrc = lstat(d, &sb);
    free(d);
    if (lrc != 0) return snprintf(err, cap, "%s: %s", dir, strerror(errno)), -1;
    if (S_ISLNK(sb.st_mode))
        return snprintf(err, cap, "%s: a symbolic link; an output directory must be a real directory (remove the link)",
                        dir),
               -1;
    if (!S_ISDIR(sb.st_mode)) return snprintf(err, cap, "%s: not a directory", dir), -1;
    return 0;
}
