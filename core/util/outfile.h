/*
 * outfile.h — writing the file a command was told to write (`gated export
 * --out FILE`) without ever harming what is there.
 *
 * The bytes go to a new temporary file beside the target (same directory,
 * so the final rename cannot cross file systems), which replaces the
 * target only once everything was written and flushed to disk.  So a
 * failure at any point leaves the target exactly as it was, and the only
 * file ever removed is the temporary one this code created.  A target
 * that exists and is not a regular file (a device such as /dev/full, a
 * FIFO, a socket, a directory) is refused before anything is written:
 * renaming over it would remove it, writing into it is not what --out
 * means.  A symbolic link to a regular file is followed: the file it
 * points to is replaced and the link stays.  The new file keeps the mode
 * of the one it replaces (a new one gets 0666 less the umask, as fopen's).
 */
#ifndef GATED_OUTFILE_H
#define GATED_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;      /* write here */
    char *target; /* the file that is replaced on commit (a link resolved) */
    char *tmp;    /* the temporary file; NULL once renamed or removed */
} OutFile;

/* Start writing path.  0 with o->f open; -2 when path exists and is not a
 * regular file (nothing created); -1 on another failure (nothing left
 * behind).  The message, naming path, is in err (always NUL-terminated). */
int outfile_open(OutFile *o, const char *path, char *err, size_t cap);

/* Flush, sync and close the temporary file, then rename it over the
 * target.  0, or -1 with the message in err and the temporary file
 * removed (the target untouched).  Frees o either way. */
int outfile_commit(OutFile *o, char *err, size_t cap);

/* Close and remove the temporary file; the target stays as it was.  Safe
 * on an OutFile that failed to open or was committed. */
void outfile_abort(OutFile *o);

#endif
