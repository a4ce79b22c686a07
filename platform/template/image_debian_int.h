/*
 * image_debian_int.h: what image_debian.c and image_run.c share (not for other modules).
 */
#ifndef ABX_TEMPLATE_IMAGE_DEBIAN_INT_H
#define ABX_TEMPLATE_IMAGE_DEBIAN_INT_H

#include <stddef.h>

/* Run argv (an absolute path; argv[0] is exec'd) with a fixed environment (PATH, HOME=/root,
 * LC_ALL=C, DEBIAN_FRONTEND=noninteractive), stdin /dev/null, in a process group and a mount
 * namespace of its own (mounts it makes, e.g. mmdebstrap's proc/sys/dev in the root, go with its
 * last process). Each output line (stdout and stderr, without the newline) to line(ud, text)
 * when given; the last one kept in last (lastlen bytes). Killed (SIGKILL to its process group)
 * after timeout_s seconds or by abx_image_stop. Returns the exit status (128 + signal when
 * killed by one), 124 on timeout, -2 when stopped, or -1 when it could not start. */
int abx_image_run(const char *const argv[], void (*line)(void *, const char *), void *ud,
                  char *last, size_t lastlen, int timeout_s);

/* 1 once abx_image_stop ran. */
int abx_image_stopping(void);

#endif
