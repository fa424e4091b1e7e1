/* Where a tool's output file really is, before it is written by the usual
 * "temporary file beside it, fsync, rename" replace.
 *
 * Why: rename(2) replaces the directory entry it is given, whatever it is.
 * Given a symlink it replaces the link (its target never changes); given a
 * device or a FIFO (`--out /dev/null`, `/dev/stdout` on a pipe, run as root
 * in /dev) it puts a regular file in place of the node. So the entry is
 * looked at first: a symlink is followed to the file it names (the replace
 * then happens beside that file, as editors do), and an existing node that is
 * not a regular file is written in place, since nothing can be swapped in
 * atomically for a device or a pipe.
 *
 * Thread safety: reentrant (no shared state); it only reads the file
 * system, which may of course change between the look and the write. */
#ifndef WM_CONTROL_OUT_PATH_H
#define WM_CONTROL_OUT_PATH_H

#include <stdbool.h>

/* Looks at path (at most 40 symlinks deep, like the kernel). On success
 * returns 0, sets *target to a malloc'd path the caller frees and *in_place:
 *   false: *target is a regular file or names nothing yet (a dangling
 *          symlink's end included): replace it atomically beside *target;
 *   true:  *target exists and is a device, FIFO or socket: open and write it
 *          as it is (no temporary file, no rename, no fsync).
 * On failure returns an errno value and sets *target to NULL: EISDIR for a
 * directory, ELOOP for too many links, ENOMEM, or what lstat/readlink/
 * realpath returned (EACCES, ENOTDIR, ...). */
int wm_out_path_resolve(const char *path, char **target, bool *in_place);

#endif
