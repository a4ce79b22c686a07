/*
 * recover.h: on start, `abxlua serve` removes what crashed predecessors left (issue 5, item 1).
 *
 * Why:     after SIGKILL of serve its sandboxes die (bwrap --die-with-parent; a paused sandbox
 *          only once its freezer group is thawed), but the overlay mounts under its state dir,
 *          its cgroups (cgroup.h layout, abxlua/serve.<pid>) and the state dir itself remain. The
 *          hub network namespace and its veths live only as long as serve's fd and the sandboxes'
 *          namespaces, so they vanish with them.
 * What:    a predecessor is a pid P with a state dir <tmp>/abxlua-serve.<P> (tmp: $TMPDIR and
 *          /tmp) or a cgroup abxlua/serve.<P> beside ours, that is not a live serve: /proc/<P>
 *          is gone or a zombie, or its start time differs from the one recorded in the state
 *          dir's "owner" file, or (no owner file) it is not an `abxlua serve` process. For each:
 *          thaw and SIGKILL the processes in its cgroups, SIGKILL any process whose root is
 *          inside its state dir, lazily unmount every mount under the state dir (deepest first,
 *          /proc/self/mountinfo), remove the state dir (never crossing a mount), then its cgroups.
 *          A live serve's state is never touched. Each removal is logged on stderr:
 *          "abxlua serve: recovered crashed serve <P>: ...".
 * Owner:   abx_recover_claim writes "<pid> <starttime>\n" (starttime: field 22 of /proc/self/stat)
 *          to <state>/owner, so a reused pid is told apart from the serve that made the dir.
 */
#ifndef ABX_SANDBOX_RECOVER_H
#define ABX_SANDBOX_RECOVER_H

/* Remove what crashed predecessors left (after abx_cgroup_init). Returns how many were found. */
int abx_recover_stale(void);

/* Record this serve as the owner of `state_dir`. 0 or -1. */
int abx_recover_claim(const char *state_dir);

#endif
