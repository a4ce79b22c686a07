/*
 * templates.h: the local platform's built-in templates other than base.
 *
 * code-interpreter-v1: base's layers plus one layer holding the code-interpreter server at
 *          /opt/abx/code-interpreter/server.py (platform/code_interpreter/server.py, embedded at
 *          build time by CMake, cmake/embed_file.cmake). start_cmd runs it with Debian's
 *          /usr/bin/python3 (python3-jupyter-client, python3-ipykernel and python3-matplotlib come
 *          with the host's /usr, scripts/deps.sh); ready_cmd is the E2B SDK's wait-for-URL check
 *          on http://localhost:49999/health (docs/protocol/e2b-v2-and-peers.md §2 item 3 readyCmd
 *          helpers, §3 template). The name is E2B's (same reference §3, "template
 *          code-interpreter-v1"), so `Sandbox.create()` of @e2b/code-interpreter finds it.
 *          The layer also holds the IPython startup of its Python kernels, E2B's result formats
 *          (chart, data, json, PIL save): abx_charts.py, abx_formats.py and startup.py next to
 *          server.py, and /etc/ipython/ipython_kernel_config.py (its etc part), which runs
 *          startup.py in every kernel (CMakeLists.txt ABX_CI_FILES embeds them all).
 *          Beside it, execd_code.py (OpenSandbox execd's /code routes, reached through envd's
 *          execd port) and /opt/code-interpreter/code-interpreter.sh, the entrypoint OpenSandbox's
 *          code-interpreter SDK passes (the opensandbox flavour's image "opensandbox/code-
 *          interpreter[:tag]" is this template, platform/opensandbox/create.c).
 * Errors:  0, or -1 with a message in err.
 */
#ifndef ABX_TEMPLATE_TEMPLATES_H
#define ABX_TEMPLATE_TEMPLATES_H

#include <stddef.h>

/* The code interpreter's port (docs/protocol/envd-protocol.md §10). */
#define ABX_CODE_INTERPRETER_PORT 49999

/* Register the built-in templates (rootfs.h abx_template_builtin). Called by abx_rootfs_init
 * once base exists. */
int abx_templates_builtin_init(char *err, size_t errlen);

#endif
