/*
 * floor.c: `abx-bench-floor JOB`, the libcurl floor of `make bench` (floor.h) and the machine
 * floors the harness measures itself.
 *   jobs against serve (BENCH_URL, BENCH_KEY): ttfc cmd stream_collect stream_cb file_big
 *     files_small fanout: the exchanges of tests/bench/abx/bench.lua, sizes from the same
 *     variables (BENCH_N, BENCH_BYTES, BENCH_SANDBOXES, BENCH_CMDS, BENCH_FILEOPS)
 *   machine: pipe and loopback TCP throughput (BENCH_BYTES through each), fork+exec of /bin/true
 *     and `bash -c true` (BENCH_N each)
 * Every result is verified (exit code, stdout, length, sha256); a mismatch exits 1, so the sample
 * is a failure, not a number. Writes {"ok":true,"metrics":{name:[values]}} to BENCH_OUT.
 */
#include "floor.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB 1048576.0

static json_t *metrics;

static void put(const char *name, double v)
{
  json_t *a = json_object_get(metrics, name);
  if (!a) {
    a = json_array();
    json_object_set_new(metrics, name, a);
  }
  json_array_append_new(a, json_real(v));
}

static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "floor: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static long param(const char *name)
{
  const char *v = getenv(name);
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  if (!v || !*v || *end || n <= 0)
    die("%s must be a positive integer (run through tests/bench/bench.py)", name);
  return n;
}

static void check_true(const struct fresult *r, const char *what)
{
  if (r->exit_code != 0 || r->out_bytes || r->err_bytes)
    die("%s: exit %d, %zu stdout bytes, %zu stderr bytes", what, r->exit_code, r->out_bytes,
        r->err_bytes);
}

static void run_ok(struct fclient *c, const struct fsandbox *s, const char *cmd, struct fresult *r)
{
  if (floor_run(c, s, cmd, 60, 1, 0, r) < 0)
    die("command %s failed", cmd);
}

static void job_ttfc(struct fclient *c)
{
  long n = param("BENCH_N");
  struct fsandbox s;
  struct fresult r;
  for (long i = 0; i < n; i++) {
    double t0 = floor_now_ms();
    if (floor_create(c, 300, &s) < 0)
      die("create failed");
    run_ok(c, &s, "true", &r);
    put("ttfc_ms", floor_now_ms() - t0);
    check_true(&r, "first command");
    fresult_free(&r);
    if (floor_kill(c, &s) < 0)
      die("kill failed");
  }
  for (long i = 0; i < n; i++) {
    double t0 = floor_now_ms();
    if (floor_create(c, 300, &s) < 0 || floor_kill(c, &s) < 0)
      die("create + kill failed");
    put("create_kill_ms", floor_now_ms() - t0);
  }
}

static void job_cmd(struct fclient *c)
{
  long n = param("BENCH_N");
  struct fsandbox s;
  struct fresult r;
  if (floor_create(c, 600, &s) < 0)
    die("create failed");
  run_ok(c, &s, "true", &r);
  check_true(&r, "warm-up command");
  for (long i = 0; i < n; i++) {
    double t0 = floor_now_ms();
    run_ok(c, &s, "true", &r);
    put("cmd_ms", floor_now_ms() - t0);
    check_true(&r, "command");
  }
  floor_kill(c, &s);
}

static void job_stream(struct fclient *c, int keep)
{
  long n = param("BENCH_BYTES");
  if (n % 64)
    die("BENCH_BYTES must be a multiple of 64");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "yes %.63s | head -c %ld", FLOOR_LINE, n);
  struct fsandbox s;
  struct fresult r;
  if (floor_create(c, 600, &s) < 0)
    die("create failed");
  double t0 = floor_now_ms();
  if (floor_run(c, &s, cmd, 600, keep, !keep, &r) < 0)
    die("stream failed");
  double dt = (floor_now_ms() - t0) / 1000;
  if (r.exit_code != 0 || r.err_bytes)
    die("exit %d, %zu stderr bytes", r.exit_code, r.err_bytes);
  if (r.out_bytes != (size_t)n)
    die("stdout: %zu bytes, want %ld", r.out_bytes, n);
  if (keep) {
    for (long off = 0; off + 64 <= n; off += 1048576)
      if (memcmp(r.out.data + off, FLOOR_LINE, 64) != 0)
        die("stdout differs at byte %ld", off);
  } else if (r.bad_at >= 0) {
    die("a chunk is off the pattern at offset %lld", r.bad_at);
  }
  fresult_free(&r);
  floor_kill(c, &s);
  put(keep ? "stream_mib_s" : "stream_cb_mib_s", (double)n / MIB / dt);
}

static void sha_hex(const void *p, size_t n, char out[65])
{
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(p, n, d);
  for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
    sprintf(out + 2 * i, "%02x", d[i]);
}

static void job_file_big(struct fclient *c)
{
  long n = param("BENCH_BYTES");
  if (n % 1048576)
    die("BENCH_BYTES must be a multiple of 1 MiB");
  unsigned char *data = malloc((size_t)n);
  if (!data)
    die("out of memory");
  for (long i = 0; i < n / 1048576; i++) { /* the blocks of bench.lua's big_data */
    unsigned char *b = data + i * 1048576;
    char head[16];
    snprintf(head, sizeof head, "%08ld", i);
    memcpy(b, head, 8);
    for (long j = 8; j < 1048576; j++)
      b[j] = (unsigned char)(((j * 131) ^ (j >> 7)) & 0xff);
  }
  char sum[65], got[65];
  sha_hex(data, (size_t)n, sum);
  struct fsandbox s;
  if (floor_create(c, 600, &s) < 0)
    die("create failed");
  double t0 = floor_now_ms();
  if (floor_write(c, &s, "/tmp/big.bin", data, (size_t)n) < 0)
    die("write failed");
  double w = (floor_now_ms() - t0) / 1000;
  free(data);
  struct fbuf back = {0};
  t0 = floor_now_ms();
  if (floor_read(c, &s, "/tmp/big.bin", &back) < 0)
    die("read failed");
  double r = (floor_now_ms() - t0) / 1000;
  if (back.len != (size_t)n)
    die("read-back: %zu bytes, want %ld", back.len, n);
  sha_hex(back.data, back.len, got);
  if (strcmp(sum, got) != 0)
    die("read-back sha256 differs");
  fbuf_free(&back);
  floor_kill(c, &s);
  put("write_mib_s", (double)n / MIB / w);
  put("read_mib_s", (double)n / MIB / r);
}

/* ListDir's entries (size is an int64: a JSON string, or a number from a lenient server). */
static long long entry_size(json_t *e)
{
  json_t *v = json_object_get(e, "size");
  return json_is_string(v) ? atoll(json_string_value(v)) : json_integer_value(v);
}

static void job_files_small(struct fclient *c)
{
  long n = param("BENCH_N");
  struct fsandbox s;
  if (floor_create(c, 600, &s) < 0)
    die("create failed");
  char path[128], body[64];
  double t0 = floor_now_ms();
  for (long i = 1; i <= n; i++) {
    snprintf(path, sizeof path, "/home/user/small/f%04ld.txt", i);
    int bl = snprintf(body, sizeof body, "small file %ld\n", i);
    if (floor_write(c, &s, path, body, (size_t)bl) < 0)
      die("write %s failed", path);
  }
  double w = (floor_now_ms() - t0) / 1000;
  struct fbuf out = {0};
  t0 = floor_now_ms();
  if (floor_unary(c, &s, "filesystem.Filesystem/ListDir",
                  "{\"path\":\"/home/user/small\",\"depth\":1}", &out) < 0)
    die("ListDir failed");
  json_t *j = json_loadb(out.data, out.len, 0, NULL);
  json_t *es = json_object_get(j, "entries");
  double l = floor_now_ms() - t0;
  if ((long)json_array_size(es) != n)
    die("%zu entries listed, want %ld", json_array_size(es), n);
  char *seen = calloc((size_t)n + 1, 1);
  size_t k;
  json_t *e;
  json_array_foreach(es, k, e)
  {
    const char *name = json_string_value(json_object_get(e, "name"));
    long i = name && strlen(name) == 9 ? strtol(name + 1, NULL, 10) : 0;
    int bl = snprintf(body, sizeof body, "small file %ld\n", i);
    if (i < 1 || i > n || entry_size(e) != bl)
      die("unexpected entry %s", name ? name : "?");
    seen[i] = 1;
  }
  for (long i = 1; i <= n; i++)
    if (!seen[i])
      die("f%04ld.txt not listed", i);
  free(seen);
  json_decref(j);
  fbuf_free(&out);
  floor_kill(c, &s);
  put("small_write_s", w);
  put("small_list_ms", l);
}

struct fan {
  pthread_t th;
  int i, ncmd, nops, ok;
};

static void *fan_one(void *ud)
{
  struct fan *f = ud;
  struct fclient c;
  fclient_open(&c);
  struct fsandbox s;
  struct fresult r;
  struct fbuf out = {0};
  char cmd[64], want[64], path[64], body[64], json[160];
  if (floor_create(&c, 600, &s) < 0)
    goto done;
  int ok = 1;
  for (int j = 1; ok && j <= f->ncmd; j++) {
    snprintf(cmd, sizeof cmd, "echo c%d", j);
    int wl = snprintf(want, sizeof want, "c%d\n", j);
    ok = floor_run(&c, &s, cmd, 60, 1, 0, &r) == 0 && r.exit_code == 0 &&
         r.out_bytes == (size_t)wl && memcmp(r.out.data, want, (size_t)wl) == 0;
    if (!ok)
      fprintf(stderr, "floor: fan-out %d: command %d failed\n", f->i, j);
    fresult_free(&r);
  }
  for (int k = 1; ok && k <= f->nops / 5; k++) { /* write, read, stat, list, remove */
    snprintf(path, sizeof path, "/tmp/fan-%d.txt", k);
    int bl = snprintf(body, sizeof body, "sandbox %d op %d\n", f->i, k);
    ok = floor_write(&c, &s, path, body, (size_t)bl) == 0 && floor_read(&c, &s, path, &out) == 0 &&
         out.len == (size_t)bl && memcmp(out.data, body, (size_t)bl) == 0;
    snprintf(json, sizeof json, "{\"path\":\"%s\"}", path);
    ok = ok && floor_unary(&c, &s, "filesystem.Filesystem/Stat", json, &out) == 0;
    json_t *j = ok ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    ok = ok && entry_size(json_object_get(j, "entry")) == bl;
    json_decref(j);
    ok = ok && floor_unary(&c, &s, "filesystem.Filesystem/ListDir",
                           "{\"path\":\"/tmp\",\"depth\":1}", &out) == 0;
    snprintf(want, sizeof want, "\"fan-%d.txt\"", k);
    ok = ok && strstr(out.data, want) != NULL;
    ok = ok && floor_unary(&c, &s, "filesystem.Filesystem/Remove", json, &out) == 0;
    if (!ok)
      fprintf(stderr, "floor: fan-out %d: file operations on %s failed\n", f->i, path);
  }
  f->ok = floor_kill(&c, &s) == 0 && ok;
done:
  fbuf_free(&out);
  fclient_close(&c);
  return NULL;
}

static void job_fanout(void)
{
  long nsb = param("BENCH_SANDBOXES"), ncmd = param("BENCH_CMDS"), nops = param("BENCH_FILEOPS");
  struct fan *fs = calloc((size_t)nsb, sizeof *fs);
  double t0 = floor_now_ms();
  for (long i = 0; i < nsb; i++) {
    fs[i] = (struct fan){.i = (int)i + 1, .ncmd = (int)ncmd, .nops = (int)nops};
    if (pthread_create(&fs[i].th, NULL, fan_one, &fs[i]) != 0)
      die("pthread_create failed");
  }
  int bad = 0;
  for (long i = 0; i < nsb; i++) {
    pthread_join(fs[i].th, NULL);
    bad += !fs[i].ok;
  }
  double wall = (floor_now_ms() - t0) / 1000;
  free(fs);
  if (bad)
    die("%d of %ld sandboxes failed", bad, nsb);
  put("fanout_s", wall);
}

/* ---- machine floors ------------------------------------------------------------------------- */

/* Writes n bytes of zeros to fd in 1 MiB writes; exits the (child) process. */
static void pump(int fd, long n)
{
  static char buf[1 << 20];
  for (long left = n; left > 0;) {
    ssize_t w = write(fd, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
    if (w <= 0)
      _exit(1);
    left -= w;
  }
  _exit(0);
}

/* Reads fd to its end; returns the byte count. */
static long drain(int fd)
{
  static char buf[1 << 20];
  long got = 0;
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0)
    got += r;
  return got;
}

static int wait_ok(pid_t pid)
{
  int st;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void machine(void)
{
  long n = param("BENCH_BYTES"), reps = param("BENCH_N");
  int p[2];
  if (pipe(p) < 0)
    die("pipe");
  double t0 = floor_now_ms();
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    pump(p[1], n);
  }
  close(p[1]);
  long got = drain(p[0]);
  close(p[0]);
  double dt = (floor_now_ms() - t0) / 1000;
  if (!wait_ok(pid) || got != n)
    die("pipe: %ld of %ld bytes", got, n);
  put("pipe_mib_s", (double)n / MIB / dt);

  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 1) < 0 ||
      getsockname(ls, (struct sockaddr *)&a, &al) < 0)
    die("loopback listen");
  t0 = floor_now_ms();
  pid = fork();
  if (pid == 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0)
      _exit(1);
    pump(s, n);
  }
  int cs = accept(ls, NULL, NULL);
  got = cs < 0 ? -1 : drain(cs);
  dt = (floor_now_ms() - t0) / 1000;
  close(cs);
  close(ls);
  if (!wait_ok(pid) || got != n)
    die("loopback TCP: %ld of %ld bytes", got, n);
  put("tcp_mib_s", (double)n / MIB / dt);

  char *const argv_true[] = {"/bin/true", NULL};
  char *const argv_bash[] = {"bash", "-c", "true", NULL};
  for (int k = 0; k < 2; k++) {
    for (long i = 0; i < reps; i++) {
      t0 = floor_now_ms();
      pid = fork();
      if (pid == 0) {
        if (k == 0)
          execv("/bin/true", argv_true);
        else
          execvp("bash", argv_bash);
        _exit(127);
      }
      if (pid < 0 || !wait_ok(pid))
        die("%s did not exit 0", k ? "bash -c true" : "/bin/true");
      put(k ? "bash_true_ms" : "fork_exec_ms", floor_now_ms() - t0);
    }
  }
}

int main(int argc, char **argv)
{
  const char *job = argc > 1 ? argv[1] : "";
  const char *outp = getenv("BENCH_OUT");
  if (!outp)
    die("BENCH_OUT is not set");
  floor_init();
  metrics = json_object();
  if (strcmp(job, "machine") == 0) {
    machine();
  } else if (strcmp(job, "fanout") == 0) {
    job_fanout();
  } else {
    struct fclient c;
    static const char *jobs[] = {"ttfc",      "cmd",      "stream_collect",
                                 "stream_cb", "file_big", "files_small"};
    int k = -1;
    for (int i = 0; i < 6; i++)
      if (strcmp(job, jobs[i]) == 0)
        k = i;
    if (k < 0) {
      fprintf(stderr, "usage: abx-bench-floor "
                      "ttfc|cmd|stream_collect|stream_cb|file_big|files_small|fanout|machine\n");
      return 2;
    }
    fclient_open(&c);
    if (k == 0)
      job_ttfc(&c);
    else if (k == 1)
      job_cmd(&c);
    else if (k == 2 || k == 3)
      job_stream(&c, k == 2);
    else if (k == 4)
      job_file_big(&c);
    else
      job_files_small(&c);
    fclient_close(&c);
  }
  json_t *doc = json_pack("{s:b,s:O}", "ok", 1, "metrics", metrics);
  if (json_dump_file(doc, outp, JSON_COMPACT) < 0)
    die("cannot write %s", outp);
  json_decref(doc);
  json_decref(metrics);
  return 0;
}
