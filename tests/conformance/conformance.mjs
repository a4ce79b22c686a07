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

// A line of the check's output that is not a verdict: what the check did in this SDK version.
let currentCheck = ''
const note = (msg) => console.log(`#   ${currentCheck}: ${msg}`)

// The SDK's own request (from the exchange log) since index `from` whose path ends with `suffix`.
function sentBy(from, method, suffix) {
  const x = exchanges.slice(from).find((e) => e.method === method && new URL(e.url).pathname.endsWith(suffix))
  assert.ok(x, `no ${method} …${suffix} recorded`)
  return { path: new URL(x.url).pathname, body: x.requestBody ? JSON.parse(x.requestBody) : undefined }
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

// ---- runner ------------------------------------------------------------------------------------
const only = process.argv.slice(2)
let passed = 0
let failed = 0
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
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
