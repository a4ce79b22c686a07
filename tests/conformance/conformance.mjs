// Conformance: the official E2B JS SDK (npm `e2b`, one pinned copy per version in
// sdk-<version>/), unmodified, against `abxlua serve` (issue 4 item 8, issue 10 item 8). run.sh
// starts the server and sets CONFORMANCE_SDK_DIR (the pin), CONFORMANCE_MODE and the SDK's own
// variables:
//   url: E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL (envd reached through the
//        E2b-Sandbox-Id/E2b-Sandbox-Port headers), E2B_DOMAIN=localhost
//   tls: E2B_API_KEY, E2B_DOMAIN=<domain>:<port> and NODE_EXTRA_CA_CERTS only: the SDK's default
//        addressing (https://api.<domain>, https://49983-<id>.<domain>, getHost <port>-<id>.<domain>)
// One async check per behaviour; prints `ok - name` or `not ok - name: error` and, for a
// failure, the HTTP exchanges the SDK made during that check that did not succeed (method, URL,
// status, start of the answer), then `N passed, N failed`. Exit 1 on any failure. Everything a
// check creates is killed/deleted in the runner's finally block (after the failure report, so the
// report shows the exchanges as they were when the check failed).
//
// The SDK talks through its own bundled undici (an HTTP/1.1 Agent; no global fetch), so the
// exchanges are recorded from undici's diagnostics channels, which both the bundled and the
// built-in undici publish; nothing is proxied or altered. Checks that need a request the SDK has
// no call for (a route with an invalid body the SDK would refuse client-side, the raw v2 answer)
// use `api()`, a plain fetch with the SDK's own API URL and key.
import assert from 'node:assert/strict'
import diagnostics from 'node:diagnostics_channel'
import http from 'node:http'
import https from 'node:https'
import os from 'node:os'
import path from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

const MODE = process.env.CONFORMANCE_MODE
const SDK_DIR = process.env.CONFORMANCE_SDK_DIR
const need = {
  url: ['E2B_API_KEY', 'E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_DOMAIN', 'CONFORMANCE_SDK_DIR'],
  tls: ['E2B_API_KEY', 'E2B_DOMAIN', 'NODE_EXTRA_CA_CERTS', 'CONFORMANCE_SDK_DIR'],
}[MODE]
if (!need) {
  console.error(`conformance.mjs: CONFORMANCE_MODE must be url or tls (run it through run.sh)`)
  process.exit(2)
}
for (const v of need) {
  if (!process.env[v]) {
    console.error(`conformance.mjs: ${v} is not set (run it through run.sh)`)
    process.exit(2)
  }
}
if (MODE === 'tls' && (process.env.E2B_API_URL || process.env.E2B_SANDBOX_URL)) {
  console.error('conformance.mjs: tls mode gives the SDK only the domain; E2B_API_URL/E2B_SANDBOX_URL must be unset')
  process.exit(2)
}
// The pin's copy of the SDK, by its package.json `module` entry (the ESM build an `import 'e2b'`
// from that directory would load).
const sdkPkg = JSON.parse(readFileSync(path.join(SDK_DIR, 'node_modules/e2b/package.json'), 'utf8'))
const e2b = await import(pathToFileURL(path.join(SDK_DIR, 'node_modules/e2b', sdkPkg.module ?? sdkPkg.main)).href)
const { Sandbox, CommandExitError, FilesystemEventType, FileType, ConnectionConfig, SandboxNotFoundError } = e2b
const SDK_VERSION = sdkPkg.version
const sdkAtLeast = (v) => {
  const a = SDK_VERSION.split('.').map(Number)
  const b = v.split('.').map(Number)
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i]
  return true
}

const API_URL = new URL(new ConnectionConfig().apiUrl) // what the SDK itself uses in this mode
const API_KEY = process.env.E2B_API_KEY
const SANDBOX_URL = process.env.E2B_SANDBOX_URL ? new URL(process.env.E2B_SANDBOX_URL) : undefined
const RUN = randomBytes(4).toString('hex') // tags this run's sandboxes in metadata
const TEMPLATE = 'base'
const CHECK_TIMEOUT_MS = 90_000

// ---- exchange log --------------------------------------------------------------------------------
const exchanges = []
const byRequest = new WeakMap()
const BODY_CAP = 600

function headerValue(headers, name) {
  // undici request headers: a flat array [k, v, k, v] (or a string block in old versions)
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === name) return String(headers[i + 1])
  } else if (typeof headers === 'string') {
    const m = headers.match(new RegExp(`^${name}:\\s*(.*)$`, 'mi'))
    if (m) return m[1].trim()
  }
  return undefined
}

function bodyText(body) {
  if (typeof body === 'string') return body.slice(0, BODY_CAP)
  if (body instanceof Uint8Array) return Buffer.from(body.subarray(0, BODY_CAP)).toString('latin1')
  return undefined
}

diagnostics.subscribe('undici:request:create', ({ request }) => {
  const sid = headerValue(request.headers, 'e2b-sandbox-id')
  const sport = headerValue(request.headers, 'e2b-sandbox-port')
  const x = {
    method: request.method,
    url: `${request.origin}${request.path}`,
    route: sid ? `[E2b-Sandbox-Id ${sid} E2b-Sandbox-Port ${sport}]` : '',
    requestBody: bodyText(request.body),
    bodyKnown: bodyText(request.body) !== undefined, // else it is streamed: bodyChunkSent
    status: undefined,
    body: '',
    error: undefined,
  }
  byRequest.set(request, x)
  exchanges.push(x)
})
diagnostics.subscribe('undici:request:bodyChunkSent', ({ request, chunk }) => {
  const x = byRequest.get(request)
  if (!x || x.bodyKnown || typeof chunk === 'undefined') return
  const t = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1')
  x.requestBody = ((x.requestBody ?? '') + t).slice(0, BODY_CAP)
})
diagnostics.subscribe('undici:request:headers', ({ request, response }) => {
  const x = byRequest.get(request)
  if (x) x.status = response.statusCode
})
diagnostics.subscribe('undici:request:bodyChunkReceived', ({ request, chunk }) => {
  const x = byRequest.get(request)
  if (x && x.body.length < BODY_CAP) x.body += Buffer.from(chunk).toString('latin1').slice(0, BODY_CAP - x.body.length)
})
diagnostics.subscribe('undici:request:error', ({ request, error }) => {
  const x = byRequest.get(request)
  if (x) x.error = String(error?.message ?? error)
})

function printable(s) {
  return s.replace(/[\x00-\x08\x0b-\x1f\x7f-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

// A failed exchange: an HTTP error, a transport error, or a Connect stream whose end message
// carries an error (HTTP 200 with {"error": ...} in the last envelope).
function failedExchange(x) {
  if (x.error || x.status === undefined || x.status >= 400) return true
  return /"error"\s*:\s*\{/.test(x.body) && /application\/connect|"code"/.test(x.body)
}

function describe(x) {
  let s = `    ${x.method} ${x.url} ${x.route}`.trimEnd()
  if (x.requestBody) s += `\n      request body: ${printable(x.requestBody)}`
  s += `\n      -> ${x.error ? `transport error: ${x.error}` : x.status === undefined ? 'no response' : x.status}`
  if (x.body) s += ` ${printable(x.body.trim())}`
  return s
}

// ---- helpers -----------------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function until(what, fn, timeoutMs = 15_000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`)
    await sleep(everyMs)
  }
}

// Sandboxes and snapshots this run created, released after each check and once more at exit.
const liveSandboxes = new Set()
const liveSnapshots = new Set()

async function create(tag, opts = {}, template = TEMPLATE) {
  const sbx = await Sandbox.create(template, {
    timeoutMs: 300_000,
    ...opts,
    metadata: { conformance: RUN, check: tag, ...(opts.metadata ?? {}) },
  })
  liveSandboxes.add(sbx.sandboxId)
  return sbx
}

async function release() {
  for (const id of [...liveSandboxes]) {
    try {
      await Sandbox.kill(id)
      liveSandboxes.delete(id)
    } catch (e) {
      console.log(`# cleanup: kill ${id} failed: ${e.message}`)
    }
  }
  for (const id of [...liveSnapshots]) {
    try {
      await Sandbox.deleteSnapshot(id)
      liveSnapshots.delete(id)
    } catch (e) {
      console.log(`# cleanup: deleteSnapshot ${id} failed: ${e.message}`)
    }
  }
}

// One HTTP GET; resolves {status, body, headers}. `url` says where to connect; `headers` may set
// Host (node:http, because fetch forbids setting Host).
function httpGet(url, headers = {}) {
  const u = new URL(url)
  const mod = u.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = mod.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', headers, setHost: !('Host' in headers) },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c) => (body += c))
        res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }))
      }
    )
    req.setTimeout(20_000, () => req.destroy(new Error('request timed out')))
    req.on('error', reject)
    req.end()
  })
}

// GET `path` on a sandbox port through the platform's ingress, addressed as the SDK's getHost
// says: in tls mode https://<port>-<id>.<domain> itself (wildcard name, the serve's CA); in url
// mode the API port with `Host: <port>-<id>.<domain>` (the names need not resolve).
function portGet(sbx, port, path = '/') {
  const host = sbx.getHost(port)
  if (MODE === 'tls') return httpGet(`https://${host}${path}`)
  return httpGet(new URL(path, API_URL), { Host: host })
}

// The control plane without the SDK: for requests the SDK cannot make (bodies it would refuse
// client-side, fields it no longer sends) and for answers it does not expose (status, raw body).
// Same URL and key as the SDK's; resolves {status, json, text}.
async function api(method, route, body) {
  const init = { method, headers: { 'X-API-KEY': API_KEY } }
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(new URL(route, API_URL), init)
  const text = await res.text()
  let json
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: res.status, json, text }
}

// POST /v2/sandboxes through api(), tagged with this run's metadata, registered for cleanup.
async function apiCreate(tag, body = {}) {
  const r = await api('POST', '/v2/sandboxes', { templateID: TEMPLATE, ...body, metadata: { conformance: RUN, check: tag } })
  if (r.json?.sandboxID) liveSandboxes.add(r.json.sandboxID)
  return r
}

const ttlSeconds = (info) => (info.endAt - info.startedAt) / 1000
const near = (actual, want, slack, what) =>
  assert.ok(Math.abs(actual - want) <= slack, `${what}: ${actual}, expected ${want} ± ${slack}`)
const MiB = 1024 * 1024

// A check that cannot apply in this mode or SDK version throws Skip: the runner prints
// `ok - name # SKIP reason` and counts it apart, so a check never "passes" without checking.
class Skip extends Error {}
const skip = (reason) => {
  throw new Skip(reason)
}

// A line of the check's output that is not a verdict: what the check did in this SDK version.
let currentCheck = ''
const note = (msg) => console.log(`#   ${currentCheck}: ${msg}`)

// The SDK's own request (from the exchange log) since index `from` whose path ends with `suffix`.
function sentBy(from, method, suffix) {
  const x = exchanges.slice(from).find((e) => e.method === method && new URL(e.url).pathname.endsWith(suffix))
  assert.ok(x, `no ${method} …${suffix} recorded`)
  return { path: new URL(x.url).pathname, body: x.requestBody ? JSON.parse(x.requestBody) : undefined }
}

// commands.run, with a failed command's stderr in the error (CommandExitError's message is only
// "exit status N").
async function sh(sbx, cmd) {
  try {
    return await sbx.commands.run(cmd)
  } catch (e) {
    if (e instanceof CommandExitError) throw new Error(`\`${cmd}\` exited ${e.exitCode}: ${e.stderr.trim() || e.stdout.trim()}`)
    throw e
  }
}

async function bootId(sbx) {
  const r = await sbx.commands.run('cat /proc/sys/kernel/random/boot_id')
  assert.match(r.stdout, /^[0-9a-f-]{36}\n$/, `boot_id ${JSON.stringify(r.stdout)}`)
  return r.stdout.trim()
}

// A python3 server on `port` answering every GET with the Host header it received.
async function startHostEcho(sbx, port) {
  await sbx.files.write(
    '/home/user/echo_host.py',
    [
      'import http.server, sys',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def do_GET(self):',
      "        b = (self.headers.get('Host') or '').encode()",
      '        self.send_response(200)',
      "        self.send_header('Content-Length', str(len(b)))",
      '        self.end_headers()',
      '        self.wfile.write(b)',
      '    def log_message(self, *a):',
      '        pass',
      "http.server.ThreadingHTTPServer(('0.0.0.0', int(sys.argv[1])), H).serve_forever()",
      '',
    ].join('\n')
  )
  const h = await sbx.commands.run(`python3 /home/user/echo_host.py ${port}`, { background: true })
  await sbx.commands.run(`for i in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`)
  return h
}

// ---- checks ------------------------------------------------------------------------------------
const checks = []
const check = (name, fn) => checks.push({ name, fn })

check('create with metadata and envs', async () => {
  const sbx = await create('create', {
    metadata: { owner: 'conformance', 'with space': 'a=b&c' },
    envs: { CONF_VAR: 'hello from envs', CONF_OTHER: 'x y' },
    timeoutMs: 120_000,
  })
  assert.match(sbx.sandboxId, /\S/)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { conformance: RUN, check: 'create', owner: 'conformance', 'with space': 'a=b&c' })
  assert.ok(info.endAt > info.startedAt, `endAt ${info.endAt} not after startedAt ${info.startedAt}`)
  const ttl = (info.endAt - info.startedAt) / 1000
  assert.ok(ttl > 100 && ttl <= 121, `TTL ${ttl}s, expected 120s`)
  const statik = await Sandbox.getInfo(sbx.sandboxId)
  assert.deepEqual(statik.metadata, info.metadata)
  const r = await sbx.commands.run('echo "$CONF_VAR|$CONF_OTHER"')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello from envs|x y\n')
  const o = await sbx.commands.run('echo "$CONF_VAR"', { envs: { CONF_VAR: 'per command' } })
  assert.equal(o.stdout, 'per command\n')
})

check('commands run (stdout, stderr, exit code)', async () => {
  const sbx = await create('commands-run')
  const out = []
  const r = await sbx.commands.run('echo out; echo err >&2; pwd; whoami', { onStdout: (d) => out.push(d) })
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'out\n/home/user\nuser\n')
  assert.equal(r.stderr, 'err\n')
  assert.equal(out.join(''), r.stdout)
  await assert.rejects(
    sbx.commands.run('echo partial; exit 3'),
    (e) => e instanceof CommandExitError && e.exitCode === 3 && e.stdout === 'partial\n'
  )
  const cwd = await sbx.commands.run('pwd', { cwd: '/tmp' })
  assert.equal(cwd.stdout, '/tmp\n')
})

check('commands background with stdin: sendStdin, kill', async () => {
  const sbx = await create('commands-stdin')
  let out = ''
  const h = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => (out += d) })
  assert.ok(Number.isInteger(h.pid) && h.pid > 0, `pid ${h.pid}`)
  await sbx.commands.sendStdin(h.pid, 'first line\n')
  await until('the first line echoed by cat', () => out.includes('first line\n'))
  await h.sendStdin(new TextEncoder().encode('second line\n'))
  await until('the second line echoed by cat', () => out.includes('second line\n'))
  assert.equal(await sbx.commands.kill(h.pid), true)
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError && e.exitCode !== 0)
  assert.equal(h.stdout, 'first line\nsecond line\n')
  assert.equal(await sbx.commands.kill(999_999), false, 'kill of an unknown pid must return false (not_found)')
})

check('commands list and connect', async () => {
  const sbx = await create('commands-connect')
  const h = await sbx.commands.run('for i in $(seq 1 600); do echo tick $i; sleep 0.1; done', {
    background: true,
    envs: { CONF_LIST: 'yes' },
    cwd: '/tmp',
  })
  const list = await sbx.commands.list()
  const p = list.find((x) => x.pid === h.pid)
  assert.ok(p, `pid ${h.pid} not in commands.list(): ${JSON.stringify(list)}`)
  assert.equal(p.cmd, '/bin/bash')
  assert.deepEqual(p.args, ['-l', '-c', 'for i in $(seq 1 600); do echo tick $i; sleep 0.1; done'])
  assert.equal(p.envs.CONF_LIST, 'yes')
  assert.equal(p.cwd, '/tmp')
  await h.disconnect()
  let seen = ''
  const c = await sbx.commands.connect(h.pid, { onStdout: (d) => (seen += d) })
  assert.equal(c.pid, h.pid)
  await until('output through the connected handle', () => /tick \d+\n/.test(seen))
  assert.equal(await c.kill(), true)
  await assert.rejects(c.wait(), (e) => e instanceof CommandExitError)
  await until('the killed command gone from commands.list()', async () =>
    !(await sbx.commands.list()).some((x) => x.pid === h.pid)
  )
})

check('files write/read text', async () => {
  const sbx = await create('files-text')
  const text = 'héllo, wörld\nsecond line\n'
  const w = await sbx.files.write('/home/user/conf/text.txt', text)
  assert.equal(w.path, '/home/user/conf/text.txt')
  assert.equal(w.name, 'text.txt')
  assert.equal(await sbx.files.read('/home/user/conf/text.txt'), text)
  assert.equal(await sbx.files.read('/home/user/conf/text.txt', { format: 'text' }), text)
  const viaShell = await sbx.commands.run('cat /home/user/conf/text.txt')
  assert.equal(viaShell.stdout, text)
  const many = await sbx.files.write([
    { path: '/home/user/conf/a.txt', data: 'A' },
    { path: '/home/user/conf/b.txt', data: 'B' },
  ])
  assert.equal(many.length, 2)
  assert.equal(await sbx.files.read('/home/user/conf/b.txt'), 'B')
})

check('files write/read bytes', async () => {
  const sbx = await create('files-bytes')
  const bytes = new Uint8Array(70_000)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff
  await sbx.files.write('/home/user/bin.dat', bytes)
  const back = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
  assert.ok(back instanceof Uint8Array, `read bytes gave ${Object.prototype.toString.call(back)}`)
  assert.equal(back.length, bytes.length)
  assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'bytes differ')
  const blob = await sbx.files.read('/home/user/bin.dat', { format: 'blob' })
  assert.equal(blob.size, bytes.length)
  const sum = await sbx.commands.run('sha256sum /home/user/bin.dat | cut -d" " -f1')
  assert.equal(sum.stdout.trim(), createHash('sha256').update(bytes).digest('hex'))
})

check('files list and getInfo', async () => {
  const sbx = await create('files-list')
  await sbx.files.write('/home/user/tree/one.txt', '1')
  await sbx.files.write('/home/user/tree/sub/two.txt', '22')
  const top = await sbx.files.list('/home/user/tree')
  const names = top.map((e) => e.name).sort()
  assert.deepEqual(names, ['one.txt', 'sub'])
  const one = top.find((e) => e.name === 'one.txt')
  assert.equal(one.type, FileType.FILE)
  assert.equal(one.path, '/home/user/tree/one.txt')
  assert.equal(top.find((e) => e.name === 'sub').type, FileType.DIR)
  const deep = await sbx.files.list('/home/user/tree', { depth: 2 })
  assert.ok(deep.some((e) => e.path === '/home/user/tree/sub/two.txt'), JSON.stringify(deep.map((e) => e.path)))
  const info = await sbx.files.getInfo('/home/user/tree/sub/two.txt')
  assert.equal(info.name, 'two.txt')
  assert.equal(info.type, FileType.FILE)
  assert.equal(info.size, 2)
  assert.equal(info.owner, 'user')
  assert.ok(info.modifiedTime instanceof Date && !isNaN(info.modifiedTime), `modifiedTime ${info.modifiedTime}`)
  const dir = await sbx.files.getInfo('/home/user/tree')
  assert.equal(dir.type, FileType.DIR)
  assert.equal(await sbx.files.exists('/home/user/tree/one.txt'), true)
  assert.equal(await sbx.files.exists('/home/user/tree/none.txt'), false)
  await assert.rejects(sbx.files.getInfo('/home/user/tree/none.txt'), (e) => e.name === 'FileNotFoundError' || e.name === 'NotFoundError')
  assert.equal(await sbx.files.makeDir('/home/user/tree/made'), true)
  assert.equal(await sbx.files.makeDir('/home/user/tree/made'), false)
})

check('files rename and remove', async () => {
  const sbx = await create('files-rename')
  await sbx.files.write('/home/user/old.txt', 'moving')
  const moved = await sbx.files.rename('/home/user/old.txt', '/home/user/new.txt')
  assert.equal(moved.path, '/home/user/new.txt')
  assert.equal(moved.name, 'new.txt')
  assert.equal(await sbx.files.exists('/home/user/old.txt'), false)
  assert.equal(await sbx.files.read('/home/user/new.txt'), 'moving')
  await sbx.files.remove('/home/user/new.txt')
  assert.equal(await sbx.files.exists('/home/user/new.txt'), false)
  await sbx.files.write('/home/user/gone/inner.txt', 'x')
  await sbx.files.remove('/home/user/gone')
  assert.equal(await sbx.files.exists('/home/user/gone'), false)
})

check('files watchDir', async () => {
  const sbx = await create('files-watch')
  await sbx.files.makeDir('/home/user/watched')
  const events = []
  const handle = await sbx.files.watchDir('/home/user/watched', (e) => events.push(e))
  try {
    await sbx.files.write('/home/user/watched/w.txt', 'watch me')
    await until('create and write events for w.txt', () =>
      events.some((e) => e.name === 'w.txt' && e.type === FilesystemEventType.CREATE) &&
      events.some((e) => e.name === 'w.txt' && e.type === FilesystemEventType.WRITE)
    )
    await sbx.files.rename('/home/user/watched/w.txt', '/home/user/watched/r.txt')
    await until('a rename event', () => events.some((e) => e.type === FilesystemEventType.RENAME))
    await sbx.files.remove('/home/user/watched/r.txt')
    await until('a remove event for r.txt', () =>
      events.some((e) => e.name === 'r.txt' && e.type === FilesystemEventType.REMOVE)
    )
  } finally {
    await handle.stop()
  }
  const recursive = []
  const h2 = await sbx.files.watchDir('/home/user/watched', (e) => recursive.push(e), { recursive: true })
  try {
    await sbx.files.write('/home/user/watched/deep/x.txt', 'x')
    await until('an event under deep/ with recursive: true', () => recursive.some((e) => e.name.startsWith('deep/x.txt')))
  } finally {
    await h2.stop()
  }
})

// getHost: a python3 http.server on port 8080 in the sandbox, reached through the platform's
// ingress as portGet() addresses it (tls: https://8080-<id>.<domain>; url: the API port with
// `Host: sbx.getHost(8080)`), and in url mode also by the E2b-Sandbox-Id/E2b-Sandbox-Port headers
// against E2B_SANDBOX_URL with Host 127.0.0.1 (tls mode has no E2B_SANDBOX_URL).
check('getHost with an HTTP server in the sandbox', async () => {
  const sbx = await create('gethost')
  const marker = `conformance-${RUN}`
  await sbx.files.write('/home/user/www/index.html', marker)
  const host = sbx.getHost(8080)
  assert.equal(host, `8080-${sbx.sandboxId}.${process.env.E2B_DOMAIN}`)
  const before = await portGet(sbx, 8080)
  assert.equal(before.status, 502, `before the server listens: ${before.status} ${before.body}`)
  const j = JSON.parse(before.body)
  assert.equal(j.sandboxId, sbx.sandboxId)
  assert.equal(j.code, 502)
  const server = await sbx.commands.run('python3 -m http.server 8080 --bind 0.0.0.0', {
    background: true,
    cwd: '/home/user/www',
  })
  const byHost = await until('the server answering through getHost', async () => {
    const r = await portGet(sbx, 8080)
    return r.status === 200 ? r : undefined
  }, 20_000, 200)
  assert.equal(byHost.body, marker)
  if (SANDBOX_URL) {
    const byHeaders = await httpGet(SANDBOX_URL, { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8080' })
    assert.equal(byHeaders.status, 200, `header routing: ${byHeaders.status} ${byHeaders.body}`)
    assert.equal(byHeaders.body, marker)
  } else note('no E2B_SANDBOX_URL in this mode: header routing not checked')
  await server.kill()
})

check('pause and connect', async () => {
  const sbx = await create('pause', { timeoutMs: 120_000 })
  await sbx.files.write('/home/user/survivor.txt', 'still here')
  const counter = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done', { background: true })
  await sbx.commands.run('until [ "$(cat /tmp/count 2>/dev/null || echo 0)" -gt 2 ]; do sleep 0.05; done')
  assert.equal(await sbx.pause(), true)
  assert.equal((await sbx.getInfo()).state, 'paused')
  assert.equal(await Sandbox.pause(sbx.sandboxId), false, 'pausing a paused sandbox must return false (409)')
  const paused = []
  const pager = Sandbox.list({ query: { metadata: { conformance: RUN, check: 'pause' }, state: ['paused'] } })
  while (pager.hasNext) paused.push(...(await pager.nextItems()))
  assert.deepEqual(paused.map((s) => s.sandboxId), [sbx.sandboxId])
  assert.equal(paused[0].state, 'paused')
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120_000 })
  assert.equal(again.sandboxId, sbx.sandboxId)
  assert.equal((await again.getInfo()).state, 'running')
  assert.equal(await again.isRunning(), true)
  assert.equal(await again.files.read('/home/user/survivor.txt'), 'still here')
  const listed = await again.commands.list()
  assert.ok(listed.some((p) => p.pid === counter.pid), `the background counter (pid ${counter.pid}) did not survive the pause`)
  // pause once more, then the instance method connect() resumes it
  assert.equal(await again.pause(), true)
  const resumed = await again.connect()
  assert.equal((await resumed.getInfo()).state, 'running')
  assert.equal(await resumed.files.read('/home/user/survivor.txt'), 'still here')
})

check('snapshot create/list/restore/delete', async () => {
  const src = await create('snapshot-src')
  await src.files.write('/home/user/snap.txt', 'at snapshot time')
  const snap = await src.createSnapshot()
  liveSnapshots.add(snap.snapshotId)
  assert.match(snap.snapshotId, /\S/)
  assert.ok(Array.isArray(snap.names), `names ${JSON.stringify(snap.names)}`)
  await src.files.write('/home/user/snap.txt', 'changed after the snapshot')
  const found = []
  const pager = Sandbox.listSnapshots({ sandboxId: src.sandboxId })
  while (pager.hasNext) found.push(...(await pager.nextItems()))
  assert.ok(found.some((s) => s.snapshotId === snap.snapshotId), `snapshot ${snap.snapshotId} not listed: ${JSON.stringify(found)}`)
  const all = []
  const everything = Sandbox.listSnapshots({ limit: 1 })
  while (everything.hasNext) all.push(...(await everything.nextItems()))
  assert.ok(all.some((s) => s.snapshotId === snap.snapshotId), 'snapshot not in the unfiltered list')
  const a = await create('snapshot-a', {}, snap.snapshotId)
  const b = await create('snapshot-b', {}, snap.snapshotId)
  assert.equal(await a.files.read('/home/user/snap.txt'), 'at snapshot time')
  await a.files.write('/home/user/snap.txt', 'changed in a')
  assert.equal(await b.files.read('/home/user/snap.txt'), 'at snapshot time')
  // DELETE /templates/{id} answers 400 while sandboxes still use the template (reference §4)
  await assert.rejects(Sandbox.deleteSnapshot(snap.snapshotId), (e) => /^400\b/.test(e.message))
  assert.equal(await a.kill(), true)
  assert.equal(await b.kill(), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  liveSnapshots.delete(snap.snapshotId)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
})

check('list paginator with limit 1 and a metadata filter', async () => {
  const mine = []
  for (let i = 0; i < 3; i++) mine.push((await create('list', { metadata: { 'group key': 'g&1=x', idx: String(i) } })).sandboxId)
  await create('list-other', { metadata: { 'group key': 'other' } })
  const pager = Sandbox.list({ query: { metadata: { conformance: RUN, 'group key': 'g&1=x' } }, limit: 1 })
  const seen = []
  let pages = 0
  while (pager.hasNext) {
    const items = await pager.nextItems()
    pages++
    assert.ok(items.length <= 1, `page of ${items.length} with limit 1`)
    for (const s of items) {
      assert.equal(s.metadata['group key'], 'g&1=x')
      assert.equal(s.state, 'running')
      seen.push(s.sandboxId)
    }
    assert.ok(pages <= 10, 'paginator does not end')
  }
  assert.deepEqual([...seen].sort(), [...mine].sort(), `visited ${JSON.stringify(seen)}`)
  const asc = Sandbox.list({ query: { metadata: { conformance: RUN, 'group key': 'g&1=x' } }, limit: 2, order: 'asc' })
  const ordered = []
  while (asc.hasNext) ordered.push(...(await asc.nextItems()))
  assert.deepEqual(ordered.map((s) => s.sandboxId).sort(), [...mine].sort())
  for (let i = 1; i < ordered.length; i++)
    assert.ok(ordered[i - 1].startedAt <= ordered[i].startedAt, `order asc: ${ordered.map((s) => s.startedAt.toISOString())}`)
})

check('kill twice', async () => {
  const sbx = await create('kill')
  assert.equal(await Sandbox.kill(sbx.sandboxId), true)
  liveSandboxes.delete(sbx.sandboxId)
  assert.equal(await Sandbox.kill(sbx.sandboxId), false)
  assert.equal(await sbx.kill(), false)
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), (e) => e.name === 'SandboxNotFoundError')
})

// Signed file URLs (secured sandbox: `signature` from the envdAccessToken, reference
// docs/protocol/envd-protocol.md): the SDK builds them on envd's own host,
// https://49983-<id>.<domain>, which only the default addressing has; with E2B_SANDBOX_URL the URL
// carries no sandbox id at all.
check('signed file URLs: downloadUrl and uploadUrl', async () => {
  if (MODE !== 'tls') skip('url mode: the SDK builds file URLs on E2B_SANDBOX_URL, without the sandbox id')
  const sbx = await create('signed-urls')
  await sbx.files.write('/home/user/signed.txt', 'signed read')
  const down = new URL(await sbx.downloadUrl('/home/user/signed.txt'))
  assert.equal(down.host, `49983-${sbx.sandboxId}.${process.env.E2B_DOMAIN}`)
  assert.match(down.searchParams.get('signature') ?? '', /^v1_/, down.href)
  let r = await fetch(down)
  assert.equal(r.status, 200, `GET ${down.pathname}: ${r.status} ${await r.clone().text()}`)
  assert.equal(await r.text(), 'signed read')
  down.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  r = await fetch(down)
  assert.equal(r.status, 401, `a forged signature: ${r.status}`)
  const up = await sbx.uploadUrl('/home/user/uploaded.txt')
  const form = new FormData()
  form.append('file', new Blob(['signed write']), 'uploaded.txt')
  r = await fetch(up, { method: 'POST', body: form })
  assert.equal(r.status, 200, `POST upload URL: ${r.status} ${await r.clone().text()}`)
  assert.equal(await sbx.files.read('/home/user/uploaded.txt'), 'signed write')
})

// ---- issue 10: v2 lifecycle, limits, fork, lifecycle fidelity, base template ------------------
// Sources: docs/protocol/e2b-v2-and-peers.md §1 (v2 routes and defaults) and
// docs/protocol/e2b-control-plane.md §3 (schemas, per-endpoint behaviour); the pinned SDK's
// dist/index.mjs (what each call sends). Each check runs with both pins: where a pin sends a value
// itself that the check is about (2.50 sends timeout 300 on create and connect), the check also
// asks the route without it through api(), so it never passes on the SDK's default alone.

check('v2 create without timeout: server default 300 s, envdAccessToken', async () => {
  const raw = await apiCreate('v2-create-raw')
  assert.equal(raw.status, 201, `POST /v2/sandboxes {templateID}: ${raw.status} ${raw.text}`)
  assert.match(raw.json.sandboxID ?? '', /\S/)
  assert.equal(typeof raw.json.envdAccessToken, 'string', `envdAccessToken: ${raw.text}`)
  assert.match(raw.json.envdAccessToken, /\S/)
  assert.match(raw.json.envdVersion ?? '', /^\d+\.\d+\.\d+/)
  near(ttlSeconds(await Sandbox.getInfo(raw.json.sandboxID)), 300, 2, 'TTL of a v2 create without timeout')

  const from = exchanges.length
  const sbx = await Sandbox.create(TEMPLATE, { metadata: { conformance: RUN, check: 'v2-create-sdk' } })
  liveSandboxes.add(sbx.sandboxId)
  const sent = sentBy(from, 'POST', '/sandboxes')
  if (sdkAtLeast('2.51.0')) {
    assert.equal(sent.path, '/v2/sandboxes')
    assert.ok(!('timeout' in sent.body) && !('secure' in sent.body), `the SDK sent ${JSON.stringify(sent.body)}`)
  } else note(`e2b ${SDK_VERSION} posts ${sent.path} with timeout ${sent.body.timeout} itself; the default was checked on the raw v2 route`)
  near(ttlSeconds(await sbx.getInfo()), 300, 2, 'TTL of Sandbox.create without timeoutMs')
  assert.equal((await sbx.commands.run('echo secured')).stdout, 'secured\n')
})

// The SDK's isRunning() is envd GET /health, with 502 meaning "not running" and any other error
// thrown (reference control-plane §6): a paused sandbox without autoResume must answer 502 there.
check('isRunning() false on a paused sandbox, true after connect', async () => {
  const sbx = await create('isrunning')
  assert.equal(await sbx.isRunning(), true)
  assert.equal(await sbx.pause(), true)
  assert.equal(await sbx.isRunning(), false)
  await sbx.connect()
  assert.equal(await sbx.isRunning(), true)
})

check('v2 connect: 200 running (TTL only extended), 201 resumed, timeout 0 → 400', async () => {
  const sbx = await create('v2-connect', { timeoutMs: 600_000 })
  const id = sbx.sandboxId
  const end0 = (await sbx.getInfo()).endAt
  const route = `/v2/sandboxes/${id}/connect`
  let r = await api('POST', route, { timeout: 60 })
  assert.equal(r.status, 200, `connect {timeout: 60} on a running sandbox: ${r.status} ${r.text}`)
  assert.equal(r.json.sandboxID, id)
  assert.match(r.json.envdAccessToken ?? '', /\S/, `envdAccessToken: ${r.text}`)
  near(((await sbx.getInfo()).endAt - end0) / 1000, 0, 1.5, 'endAt moved by connect {timeout: 60} (must not shorten)')
  r = await api('POST', route)
  assert.equal(r.status, 200, `connect without a body: ${r.status} ${r.text}`)
  near(((await sbx.getInfo()).endAt - end0) / 1000, 0, 1.5, 'endAt moved by connect without a body (default 300 < 600 left)')
  r = await api('POST', route, { timeout: 900 })
  assert.equal(r.status, 200)
  near(((await sbx.getInfo()).endAt - Date.now()) / 1000, 900, 5, 'seconds left after connect {timeout: 900}')
  const end1 = (await sbx.getInfo()).endAt
  r = await api('POST', route, { timeout: 0 })
  assert.equal(r.status, 400, `connect {timeout: 0}: ${r.status} ${r.text}`)
  r = await api('POST', route, { timeout: 86_401 })
  assert.equal(r.status, 400, `connect {timeout: 86401}: ${r.status} ${r.text}`)
  // the SDK's connect on a running sandbox (2.51 sends {}, 2.50 sends timeout 300): not shortened
  const again = await Sandbox.connect(id)
  assert.equal(again.sandboxId, id)
  near(((await sbx.getInfo()).endAt - end1) / 1000, 0, 1.5, 'endAt moved by Sandbox.connect() (must not shorten)')
  assert.equal(await sbx.pause(), true)
  r = await api('POST', route, {})
  assert.equal(r.status, 201, `connect {} on a paused sandbox: ${r.status} ${r.text}`)
  assert.equal(r.json.sandboxID, id)
  const info = await sbx.getInfo()
  assert.equal(info.state, 'running')
  near((info.endAt - Date.now()) / 1000, 300, 5, 'seconds left after resuming with connect {}')
  r = await api('POST', `/v2/sandboxes/inotthere0000000000000/connect`, {})
  assert.equal(r.status, 404, `connect on an unknown id: ${r.status} ${r.text}`)
})

check('create timeout above 24 h → 400 "Timeout cannot be greater than 24 hours"', async () => {
  await assert.rejects(
    Sandbox.create(TEMPLATE, { timeoutMs: 86_401_000, metadata: { conformance: RUN, check: 'timeout-24h' } }),
    (e) => /^400\b/.test(e.message) && /Timeout cannot be greater than 24 hours/.test(e.message)
  )
  let r = await apiCreate('timeout-24h', { timeout: 86_401 })
  assert.equal(r.status, 400, `v2 create timeout 86401: ${r.status} ${r.text}`)
  assert.match(r.json?.message ?? '', /Timeout cannot be greater than 24 hours/)
  r = await apiCreate('timeout-0', { timeout: 0 })
  assert.equal(r.status, 400, `v2 create timeout 0 (min 1): ${r.status} ${r.text}`)
  r = await apiCreate('timeout-24h-ok', { timeout: 86_400 })
  assert.equal(r.status, 201, `v2 create timeout 86400 (the maximum): ${r.status} ${r.text}`)
  near(ttlSeconds(await Sandbox.getInfo(r.json.sandboxID)), 86_400, 2, 'TTL of a 24 h sandbox')
})

check('fork: per-fork results, files copied, independent; fork of a killed sandbox fails', async () => {
  const src = await create('fork-src')
  await src.files.write('/home/user/fork.txt', 'before fork')
  const srcEnd = (await src.getInfo()).endAt
  const forks = await Sandbox.fork(src.sandboxId, { count: 2, timeoutMs: 120_000 })
  for (const f of forks) if (f instanceof Sandbox) liveSandboxes.add(f.sandboxId)
  assert.equal(forks.length, 2)
  for (const f of forks) if (!(f instanceof Sandbox)) throw f
  const ids = forks.map((f) => f.sandboxId)
  assert.equal(new Set([...ids, src.sandboxId]).size, 3, `ids ${ids} ${src.sandboxId}`)
  for (const f of forks) {
    assert.equal(await f.isRunning(), true)
    assert.equal(await f.files.read('/home/user/fork.txt'), 'before fork')
    near(ttlSeconds(await f.getInfo()), 120, 2, `TTL of fork ${f.sandboxId}`)
  }
  await forks[0].files.write('/home/user/fork.txt', 'changed in fork 0')
  assert.equal(await forks[1].files.read('/home/user/fork.txt'), 'before fork')
  assert.equal(await src.files.read('/home/user/fork.txt'), 'before fork')
  const after = await src.getInfo()
  assert.equal(after.state, 'running')
  near((after.endAt - srcEnd) / 1000, 0, 1.5, 'the source endAt moved by the fork')
  // the instance method, default count; the raw answer's shape
  const one = await src.fork()
  for (const f of one) if (f instanceof Sandbox) liveSandboxes.add(f.sandboxId)
  assert.equal(one.length, 1)
  assert.ok(one[0] instanceof Sandbox, `src.fork(): ${one[0]}`)
  let r = await api('POST', `/sandboxes/${src.sandboxId}/fork`, { count: 1, timeout: 60 })
  for (const x of r.json ?? []) if (x?.sandbox?.sandboxID) liveSandboxes.add(x.sandbox.sandboxID)
  assert.equal(r.status, 201, `POST fork: ${r.status} ${r.text}`)
  assert.ok(Array.isArray(r.json) && r.json.length === 1, r.text)
  assert.match(r.json[0].sandbox?.sandboxID ?? '', /\S/, r.text)
  assert.match(r.json[0].sandbox?.envdAccessToken ?? '', /\S/, r.text)
  assert.equal(r.json[0].error, undefined)
  r = await api('POST', `/sandboxes/${src.sandboxId}/fork`, { count: 0 })
  assert.equal(r.status, 400, `fork count 0: ${r.status} ${r.text}`)
  const dead = await create('fork-killed')
  assert.equal(await dead.kill(), true)
  liveSandboxes.delete(dead.sandboxId)
  await assert.rejects(dead.fork(), (e) => e instanceof SandboxNotFoundError)
})

check('getInfo lifecycle {autoResume, onTimeout}; invalid lifecycle bodies → 400', async () => {
  const plain = await create('lifecycle-kill')
  assert.deepEqual((await plain.getInfo()).lifecycle, { autoResume: false, onTimeout: 'kill' }, 'no lifecycle option')
  const pausing = await create('lifecycle-pause', { lifecycle: { onTimeout: 'pause' } })
  assert.deepEqual((await pausing.getInfo()).lifecycle, { autoResume: false, onTimeout: 'pause' }, "lifecycle {onTimeout: 'pause'}")
  const resuming = await create('lifecycle-resume', { lifecycle: { onTimeout: 'pause', autoResume: true } })
  assert.deepEqual((await resuming.getInfo()).lifecycle, { autoResume: true, onTimeout: 'pause' }, "lifecycle {onTimeout: 'pause', autoResume: true}")
  // what the SDK refuses client-side, the server must refuse too (reference control-plane §3.2)
  let r = await apiCreate('lifecycle-bad', { autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } })
  assert.equal(r.status, 400, `autoPauseMemory false with autoResume: ${r.status} ${r.text}`)
  r = await apiCreate('lifecycle-bad', { autoPauseMemory: false })
  assert.equal(r.status, 400, `autoPauseMemory without autoPause: ${r.status} ${r.text}`)
})

check('autoResume: traffic to a port or to envd resumes a paused sandbox', async () => {
  const sbx = await create('autoresume', { lifecycle: { onTimeout: 'pause', autoResume: true } })
  await startHostEcho(sbx, 8080)
  assert.equal((await portGet(sbx, 8080)).status, 200)
  assert.equal(await sbx.pause(), true)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const r = await portGet(sbx, 8080)
  assert.equal(r.status, 200, `a request to port 8080 of the paused sandbox: ${r.status} ${r.body}`)
  assert.equal((await sbx.getInfo()).state, 'running')
  assert.equal(await sbx.pause(), true)
  assert.equal((await sbx.getInfo()).state, 'paused')
  assert.equal((await sbx.commands.run('echo via envd')).stdout, 'via envd\n')
  assert.equal((await sbx.getInfo()).state, 'running')
  // without autoResume, traffic does not resume it
  const off = await create('autoresume-off', { lifecycle: { onTimeout: 'pause' } })
  await startHostEcho(off, 8080)
  assert.equal(await off.pause(), true)
  const no = await portGet(off, 8080)
  assert.notEqual(no.status, 200, 'a paused sandbox without autoResume answered')
  assert.equal((await off.getInfo()).state, 'paused')
})

check('filesystem-only pause resumes as a fresh boot (processes gone, files kept, new boot_id)', async () => {
  const sbx = await create('fs-pause')
  await sbx.files.write('/home/user/kept.txt', 'kept')
  const boot0 = await bootId(sbx)
  const sleeper = await sbx.commands.run('sleep 600', { background: true })
  // control: a memory pause keeps the boot and the processes
  assert.equal(await sbx.pause(), true)
  const mem = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await bootId(mem), boot0, 'boot_id changed across a memory pause')
  assert.ok((await mem.commands.list()).some((p) => p.pid === sleeper.pid), 'the sleeper did not survive a memory pause')
  // filesystem only
  const from = exchanges.length
  assert.equal(await mem.pause({ keepMemory: false }), true)
  assert.deepEqual(sentBy(from, 'POST', '/pause').body, { memory: false })
  assert.equal((await mem.getInfo()).state, 'paused')
  const cold = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await cold.getInfo()).state, 'running')
  assert.equal(await cold.files.read('/home/user/kept.txt'), 'kept')
  const boot1 = await bootId(cold)
  assert.notEqual(boot1, boot0, 'boot_id unchanged after a filesystem-only pause')
  assert.ok(!(await cold.commands.list()).some((p) => p.pid === sleeper.pid), 'a process survived a filesystem-only pause')
  assert.equal((await cold.commands.run('pgrep -x sleep || true')).stdout, '')
  // connect onResume 'reboot' (memory: false) on a memory pause also cold-boots
  await cold.commands.run('sleep 600', { background: true })
  assert.equal(await cold.pause(), true)
  const from2 = exchanges.length
  const rebooted = await Sandbox.connect(sbx.sandboxId, { onResume: 'reboot' })
  assert.equal(sentBy(from2, 'POST', '/connect').body.memory, false)
  assert.notEqual(await bootId(rebooted), boot1, "boot_id unchanged after connect onResume 'reboot'")
  assert.equal((await rebooted.commands.run('pgrep -x sleep || true')).stdout, '')
  assert.equal(await rebooted.files.read('/home/user/kept.txt'), 'kept')
})

check("onTimeout {action: 'pause', keepMemory: false}: auto-pause, then a fresh boot", async () => {
  const sbx = await create('fs-autopause', { timeoutMs: 10_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
  const boot0 = await bootId(sbx)
  await sbx.files.write('/home/user/kept.txt', 'kept')
  await sbx.commands.run('sleep 600', { background: true })
  assert.deepEqual((await sbx.getInfo()).lifecycle, { autoResume: false, onTimeout: 'pause' })
  await until('the sandbox auto-paused at its timeout', async () => (await Sandbox.getInfo(sbx.sandboxId)).state === 'paused', 30_000, 500)
  const cold = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await cold.files.read('/home/user/kept.txt'), 'kept')
  assert.notEqual(await bootId(cold), boot0, 'boot_id unchanged after a filesystem-only auto-pause')
  assert.equal((await cold.commands.run('pgrep -x sleep || true')).stdout, '')
})

// The limits as seen from inside: the cgroup the sandbox's processes are in (v1 memory/cpu
// controllers, or v2 memory.max/cpu.max), looked up through /proc/self/cgroup, or at the root of
// /sys/fs/cgroup when the sandbox has its own cgroup namespace.
const LIMITS_SH = `
mem= cpu=
for d in "/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)" /sys/fs/cgroup/memory; do
  [ -r "$d/memory.limit_in_bytes" ] && { mem=$(cat "$d/memory.limit_in_bytes"); break; }
done
v2=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
for d in "/sys/fs/cgroup$v2" /sys/fs/cgroup; do
  [ -z "$mem" ] && [ -r "$d/memory.max" ] && mem=$(cat "$d/memory.max")
  [ -r "$d/cpu.max" ] && { cpu=$(cat "$d/cpu.max"); break; }
done
for d in "/sys/fs/cgroup/cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)" /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do
  [ -z "$cpu" ] && [ -r "$d/cpu.cfs_quota_us" ] && { cpu="$(cat "$d/cpu.cfs_quota_us") $(cat "$d/cpu.cfs_period_us")"; break; }
done
echo "mem=$mem"; echo "cpu=$cpu"; echo "nproc=$(nproc)"
`

check('cpuCount/memoryMB of getInfo and metrics match the cgroup limits inside the sandbox', async () => {
  const sbx = await create('limits')
  const info = await sbx.getInfo()
  assert.ok(Number.isInteger(info.cpuCount) && info.cpuCount >= 1, `cpuCount ${info.cpuCount}`)
  assert.ok(Number.isInteger(info.memoryMB) && info.memoryMB >= 128, `memoryMB ${info.memoryMB}`)
  assert.ok(Math.abs(info.memoryMB * MiB - os.totalmem()) > 64 * MiB, `memoryMB ${info.memoryMB} is the host's memory (${Math.round(os.totalmem() / MiB)} MiB), not a limit`)
  const out = (await sh(sbx, LIMITS_SH)).stdout
  const v = Object.fromEntries(out.trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2)))
  assert.match(v.mem ?? '', /^\d+$/, `no memory limit visible inside the sandbox: ${JSON.stringify(v)}`)
  assert.equal(Number(v.mem), info.memoryMB * MiB, `cgroup memory limit ${v.mem} vs memoryMB ${info.memoryMB}`)
  const [quota, period] = (v.cpu ?? '').split(' ')
  if (/^\d+$/.test(quota) && Number(quota) > 0) {
    assert.equal(Number(quota) / Number(period), info.cpuCount, `cgroup cpu quota ${v.cpu} vs cpuCount ${info.cpuCount}`)
  } else {
    assert.equal(Number(v.nproc), info.cpuCount, `no cpu quota inside (${v.cpu}); nproc ${v.nproc} vs cpuCount ${info.cpuCount}`)
    note(`no CPU quota in the sandbox's cgroup (${v.cpu || 'none'}); cpuCount checked against nproc`)
  }
  const m = await until('a metrics sample', async () => (await sbx.getMetrics()).at(-1), 15_000, 500)
  assert.equal(m.cpuCount, info.cpuCount)
  assert.equal(m.memTotal, info.memoryMB * MiB)
})

check('network maskRequestHost seen by a server in the sandbox', async () => {
  const mask = 'masked.example:${PORT}'
  const sbx = await create('mask', { network: { maskRequestHost: mask } })
  await startHostEcho(sbx, 8080)
  const r = await portGet(sbx, 8080)
  assert.equal(r.status, 200, `${r.status} ${r.body}`)
  assert.equal(r.body, 'masked.example:8080', 'the Host header the server in the sandbox received')
  assert.equal((await sbx.getInfo()).network?.maskRequestHost, mask, 'getInfo network.maskRequestHost')
})

check('list startedAfter', async () => {
  const a = await create('started-after', { metadata: { step: 'a' } })
  const aStarted = (await a.getInfo()).startedAt
  await sleep(1_100)
  const cut = new Date()
  await sleep(1_100)
  const b = await create('started-after', { metadata: { step: 'b' } })
  const listed = async (startedAfter) => {
    const out = []
    const pager = Sandbox.list({ query: { metadata: { conformance: RUN, check: 'started-after' }, startedAfter } })
    while (pager.hasNext) out.push(...(await pager.nextItems()))
    return out.map((s) => s.sandboxId).sort()
  }
  assert.deepEqual(await listed(new Date(aStarted.getTime() - 60_000)), [a.sandboxId, b.sandboxId].sort())
  assert.deepEqual(await listed(cut), [b.sandboxId])
  assert.deepEqual(await listed(new Date(Date.now() + 3_600_000)), [])
  const r = await api('GET', '/v2/sandboxes?startedAfter=yesterday')
  assert.equal(r.status, 400, `startedAfter=yesterday: ${r.status} ${r.text}`)
})

check('metrics start/end', async () => {
  const sbx = await create('metrics')
  const started = (await sbx.getInfo()).startedAt
  const all = await until('a metrics sample', async () => {
    const m = await sbx.getMetrics()
    return m.length ? m : undefined
  }, 15_000, 500)
  const s = (d) => Math.floor(d.getTime() / 1000)
  assert.deepEqual(await sbx.getMetrics({ start: new Date(Date.now() + 3_600_000) }), [], 'start an hour ahead')
  assert.deepEqual(await sbx.getMetrics({ end: new Date(started.getTime() - 3_600_000) }), [], 'end an hour before the start')
  const start = new Date(started.getTime() - 1000)
  const end = new Date(Date.now() + 1000)
  const win = await sbx.getMetrics({ start, end })
  assert.ok(win.length >= 1, `no sample in [${start.toISOString()}, ${end.toISOString()}] (unfiltered: ${all.length})`)
  for (const m of win)
    assert.ok(s(m.timestamp) >= s(start) && s(m.timestamp) <= s(end) + 1, `sample at ${m.timestamp.toISOString()} outside the window`)
})

check('files write /0/file as user: parents created and handed to the user', async () => {
  const sbx = await create('upload-parents')
  const w = await sbx.files.write('/0/file', 'zero')
  assert.equal(w.path, '/0/file')
  assert.equal(await sbx.files.read('/0/file'), 'zero')
  await sbx.files.write('/1/2/3/file', 'deep')
  const st = await sbx.commands.run('stat -c "%n %U:%G" /0 /0/file /1 /1/2 /1/2/3 /1/2/3/file')
  assert.equal(st.stdout, ['/0', '/0/file', '/1', '/1/2', '/1/2/3', '/1/2/3/file'].map((p) => `${p} user:user\n`).join(''))
})

check('base template: sudo -n (passwordless for user), python, git, curl', async () => {
  const sbx = await create('base-tools')
  assert.equal((await sh(sbx, 'sudo -n id -u')).stdout, '0\n')
  assert.equal((await sh(sbx, 'sudo -n true && echo ok')).stdout, 'ok\n')
  assert.match((await sh(sbx, 'python --version 2>&1')).stdout, /^Python 3\./)
  assert.equal((await sh(sbx, "python -c 'print(6*7)'")).stdout, '42\n')
  assert.match((await sh(sbx, 'git --version')).stdout, /^git version \d/)
  assert.match((await sh(sbx, 'curl --version')).stdout, /^curl \d/)
})

// ---- runner ------------------------------------------------------------------------------------
const only = process.argv.slice(2)
let passed = 0
let failed = 0
let skipped = 0
console.log(`# e2b ${SDK_VERSION} (${SDK_DIR}) against ${API_URL.origin}, ${MODE} mode (run ${RUN})`)
for (const { name, fn } of checks) {
  if (only.length && !only.some((o) => name.includes(o))) continue
  const from = exchanges.length
  currentCheck = name
  let timer
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`check timed out after ${CHECK_TIMEOUT_MS / 1000}s`)), CHECK_TIMEOUT_MS)
      }),
    ])
    passed++
    console.log(`ok - ${name}`)
  } catch (e) {
    if (e instanceof Skip) {
      skipped++
      console.log(`ok - ${name} # SKIP ${e.message}`)
      continue
    }
    failed++
    const msg = (e?.message ?? String(e)).split('\n').join('\n#   ')
    console.log(`not ok - ${name}: ${e?.name && e.name !== 'Error' ? `${e.name}: ` : ''}${msg}`)
    const mine = exchanges.slice(from)
    const bad = mine.filter(failedExchange)
    if (bad.length) {
      console.log('#   failed exchanges during this check:')
      for (const x of bad.slice(0, 8)) console.log(`#${describe(x)}`)
    } else {
      console.log('#   no HTTP exchange failed; the last ones were:')
      for (const x of mine.slice(-4)) console.log(`#${describe(x)}`)
    }
  } finally {
    clearTimeout(timer)
    await release()
  }
}
await release()
if (liveSandboxes.size || liveSnapshots.size)
  console.log(`# left behind: sandboxes ${[...liveSandboxes]} snapshots ${[...liveSnapshots]}`)
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
process.exit(failed ? 1 : 0)
