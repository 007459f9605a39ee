/*
 * outfile.h — the one way this program writes an output file (`export
 * --out`, every file of `gated report`, a sweep's logs/NAME.log), without
 * ever harming what is there or what a planted link points to.
 *
 * The bytes go to a new temporary file beside the target (same directory,
 * so the final rename cannot cross file systems; created with O_CREAT |
 * O_EXCL | O_NOFOLLOW, so it is always a new file of ours), which replaces
 * the target only once everything was written, flushed and fsync'ed.  So
 * a failure at any point (a full disk) leaves the target exactly as it
 * was, the caller gets the error, and the only file ever removed is the
 * temporary one this code created.  Nothing is ever opened through the
 * target's name: a symbolic link there is REPLACED by the new file (the
 * file it points to is never opened, truncated or written), and so is a
 * hard link (its other names keep the old bytes).  A target that exists
 * and is neither a regular file nor a symbolic link (a device such as
 * /dev/full, a FIFO, a socket, a directory) is refused before anything is
 * written: renaming over it would remove it, writing into it is not what
 * writing a file means.  The new file keeps the mode of a regular file it
 * replaces (a new one, or one replacing a link, gets 0666 less the umask).
 *
 * Directories: outfile_mkdir makes an output directory (mkdir -p) and
 * refuses one whose last component is a symbolic link or not a
 * directory, so files meant for out/plots never land where a link planted
 * as out/plots points.
 */
#ifndef GATED_OUTFILE_H
#define GATED_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;      /* write here */
    char *target; /* the name the new file takes on commit */
    char *tmp;    /* the temporary file; NULL once renamed or removed */
} OutFile;

/* Start writing path.  0 with o->f open; -2 when path exists and is
 * neither a regular file nor a symbolic link (nothing created); -1 on
 * another failure (nothing left behind).  The message, naming path, is in
 * err (always NUL-terminated). */
int outfile_open(OutFile *o, const char *path, char *err, size_t cap);

/* Flush, sync and close the temporary file, then rename it over the
 * target.  0, or -1 with the message in err and the temporary file
 * removed (the target untouched).  Frees o either way. */
int outfile_commit(OutFile *o, char *err, size_t cap);

/* Close and remove the temporary file; the target stays as it was.  Safe
 * on an OutFile that failed to open or was committed. */
void outfile_abort(OutFile *o);

/* The whole file at once: n bytes of buf as path (open, write, commit). */
int outfile_write(const char *path, const void *buf, size_t n, char *err, size_t cap);

/* A new, empty file at path, for a log another process appends to (a
 * sweep's logs/NAME.log): made as a temporary file and renamed over path
 * at once, so whatever was there (a link, someone's file) is replaced,
 * never truncated or written through.  The open descriptor (O_WRONLY |
 * O_APPEND | O_CLOEXEC), or -1 (-2: path is not a regular file or a link)
 * with the message in err. */
int outfile_fresh_fd(const char *path, char *err, size_t cap);

/* mkdir -p dir, then dir must be a directory that is not a symbolic link
 * (its parents may be links: the caller named them).  0, or -1 with the
 * message in err. */
int outfile_mkdir(const char *dir, char *err, size_t cap);

#endif
