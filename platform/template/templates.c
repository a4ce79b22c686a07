/*
 * templates.c: the built-in templates other than base. Contract in templates.h.
 */
#include "templates.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs.h"

/* cmake/embed_file.cmake outputs (CMakeLists.txt ABX_CI_FILES): platform/code_interpreter/ */
extern const unsigned char abx_code_interpreter_server[], abx_ci_charts[], abx_ci_formats[],
    abx_ci_startup[], abx_ci_kernel_config[], abx_code_interpreter_execd_code[];
extern const size_t abx_code_interpreter_server_len, abx_ci_charts_len, abx_ci_formats_len,
    abx_ci_startup_len, abx_ci_kernel_config_len, abx_code_interpreter_execd_code_len;

#define CI_DIR "opt/abx/code-interpreter"

/* The layer's files: the server and its execd /code module, the modules its Python kernels import
 * at start, and the kernel config that makes every kernel run startup.py (IPython reads
 * /etc/ipython whichever user the kernel runs as). `part` is the layer's part (rootfs.h): "root" or "etc". */
static const struct ci_file {
  const char *part, *path;
  const unsigned char *data;
  const size_t *len;
} ci_files[] = {
    {"root", CI_DIR "/server.py", abx_code_interpreter_server, &abx_code_interpreter_server_len},
    {"root", CI_DIR "/abx_charts.py", abx_ci_charts, &abx_ci_charts_len},
    {"root", CI_DIR "/abx_formats.py", abx_ci_formats, &abx_ci_formats_len},
    {"root", CI_DIR "/startup.py", abx_ci_startup, &abx_ci_startup_len},
    {"etc", "ipython/ipython_kernel_config.py", abx_ci_kernel_config, &abx_ci_kernel_config_len},
    {"root", CI_DIR "/execd_code.py", abx_code_interpreter_execd_code,
     &abx_code_interpreter_execd_code_len},
};

/* The server logs to stderr; start_cmd's output goes to the start log (template_start.h). */
static const char ci_start[] = "/usr/bin/python3 /" CI_DIR "/server.py";
static const char ci_ready[] =
    "curl -s -o /dev/null -w '%{http_code}' http://localhost:49999/health | grep -q 200";
/* The entrypoint OpenSandbox's code-interpreter image documents (sdks/code-interpreter/<lang>/
 * README.md @3bb6fad: entrypoint ["/opt/code-interpreter/code-interpreter.sh"]): there it starts
 * Jupyter; here start_cmd already did, so it only stays in the foreground. */
#define OS_ENTRYPOINT "opt/code-interpreter/code-interpreter.sh"
static const char os_entrypoint[] =
    "#!/bin/sh\n# the code interpreter is started by the template's start_cmd (abxlua serve)\n"
    "exec tail -f /dev/null\n";

static int write_all(const char *path, const unsigned char *data, size_t n, mode_t mode)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0)
    return -1;
  size_t at = 0;
  while (at < n) {
    ssize_t k = write(fd, data + at, n - at);
    if (k <= 0) {
      close(fd);
      return -1;
    }
    at += (size_t)k;
  }
  return close(fd);
}

static int code_interpreter(char *err, size_t errlen)
{
  struct abx_template *t = abx_template_builtin("code-interpreter-v1", err, errlen);
  if (!t)
    return -1;
  char p[4200];
  const char *dirs[] = {"root/opt", "root/opt/abx", "root/" CI_DIR, "etc/ipython",
                        "root/opt/code-interpreter"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", t->layer, dirs[i]);
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
      goto fail;
  }
  for (size_t i = 0; i < sizeof ci_files / sizeof ci_files[0]; i++) {
    const struct ci_file *f = &ci_files[i];
    snprintf(p, sizeof p, "%s/%s/%s", t->layer, f->part, f->path);
    if (write_all(p, f->data, *f->len, 0644) != 0)
      goto fail;
  }
  snprintf(p, sizeof p, "%s/root/" OS_ENTRYPOINT, t->layer);
  if (write_all(p, (const unsigned char *)os_entrypoint, sizeof os_entrypoint - 1, 0755) != 0)
    goto fail;
  t->start_cmd = strdup(ci_start);
  t->ready_cmd = strdup(ci_ready);
  if (!t->start_cmd || !t->ready_cmd) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
fail:
  snprintf(err, errlen, "cannot write the code-interpreter-v1 layer (%s): %s", p, strerror(errno));
  return -1;
}

int abx_templates_builtin_init(char *err, size_t errlen)
{
  return code_interpreter(err, errlen);
}
