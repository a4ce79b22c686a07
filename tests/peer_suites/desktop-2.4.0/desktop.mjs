// E2B's desktop SDK (@e2b/desktop, pinned in package.json), unmodified, against the local
// `desktop` template (scenarios/templates/desktop) on `abxlua serve --tls` (issue 25 item 3).
// Run by ../e2b_desktop.sh with E2B_API_KEY, E2B_DOMAIN and NODE_EXTRA_CA_CERTS set. Each check
// calls SDK methods and looks for their visible effect: the screenshot's pixels (the PNG decoded
// here: RFC 2083 / PNG spec §9 filters), the X server's state read back with commands (xdotool),
// the text typed into an xterm written by the shell it reached, the window a file or URL opened in,
// the noVNC page and the RFB greeting through the stream URL.
// Prints `ok|FAIL <check>: <detail>` per check, then `PEER-FAIL e2b-desktop <class> <check>:
// <first error line>` per failure and `PEER-SUITE e2b-desktop passed=N failed=N skipped=0` last.
// Exit status 0 (the lines are the result).
import { Sandbox, CommandExitError } from '@e2b/desktop'
import { inflateSync } from 'node:zlib'
import tls from 'node:tls'
import { randomBytes } from 'node:crypto'

const TEMPLATE = process.env.E2B_DESKTOP_TEMPLATE || 'desktop'
const results = []
let sbx = null
let createError = null

function paeth(a, b, c) {
  const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c)
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c
}

// {width, height, bpp, pixels} of an 8-bit RGB or RGBA non-interlaced PNG; throws otherwise.
function pngDecode(buf) {
  if (buf.subarray(0, 8).toString('binary') !== '\x89PNG\r\n\x1a\n') throw new Error('no PNG signature')
  let pos = 8, ihdr = null
  const idat = []
  while (pos < buf.length) {
    const n = buf.readUInt32BE(pos), type = buf.subarray(pos + 4, pos + 8).toString('latin1')
    const body = buf.subarray(pos + 8, pos + 8 + n)
    if (type === 'IHDR') ihdr = body
    else if (type === 'IDAT') idat.push(body)
    pos += 12 + n
  }
  if (!ihdr) throw new Error('no IHDR')
  const width = ihdr.readUInt32BE(0), height = ihdr.readUInt32BE(4)
  const depth = ihdr[8], ctype = ihdr[9], interlace = ihdr[12]
  if (depth !== 8 || (ctype !== 2 && ctype !== 6) || interlace !== 0)
    throw new Error(`unsupported PNG: depth ${depth}, colour type ${ctype}, interlace ${interlace}`)
  const bpp = ctype === 2 ? 3 : 4, stride = width * bpp
  const raw = inflateSync(Buffer.concat(idat)), out = Buffer.alloc(stride * height)
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1))
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0, b = y ? out[(y - 1) * stride + x] : 0
      const c = x >= bpp && y ? out[(y - 1) * stride + x - bpp] : 0
      const pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][f]
      if (pred === undefined) throw new Error(`bad filter ${f} on row ${y}`)
      out[y * stride + x] = (line[x] + pred) & 0xff
    }
  }
  return { width, height, bpp, pixels: out }
}

// How many pixels differ between two decoded screenshots of one size.
function changedPixels(p, q) {
  if (p.width !== q.width || p.height !== q.height) throw new Error('screenshots differ in size')
  let n = 0
  for (let i = 0; i < p.width * p.height; i++)
    for (let k = 0; k < 3; k++)
      if (p.pixels[i * p.bpp + k] !== q.pixels[i * q.bpp + k]) { n++; break }
  return n
}

// How many of the changed pixels lie inside the rectangle x, y, w, h.
function changedInside(p, q, x, y, w, h) {
  let n = 0
  for (let j = Math.max(0, y); j < Math.min(p.height, y + h); j++)
    for (let i = Math.max(0, x); i < Math.min(p.width, x + w); i++) {
      const a = (j * p.width + i) * p.bpp, b = (j * q.width + i) * q.bpp
      if (p.pixels[a] !== q.pixels[b] || p.pixels[a + 1] !== q.pixels[b + 1] || p.pixels[a + 2] !== q.pixels[b + 2]) n++
    }
  return n
}

// A screenshot once the screen has settled: two in a row (1 s apart) differing in < 200 pixels,
// or the last after 30 s.
async function settledShot() {
  let prev = pngDecode(Buffer.from(await sbx.screenshot()))
  for (let k = 0; k < 30; k++) {
    await new Promise((r) => setTimeout(r, 1000))
    const cur = pngDecode(Buffer.from(await sbx.screenshot()))
    if (changedPixels(prev, cur) < 200) return cur
    prev = cur
  }
  return prev
}

async function geometry(id) {
  const g = await sh(`xdotool getwindowgeometry --shell ${id}`)
  const v = Object.fromEntries(g.stdout.trim().split('\n').map((l) => l.split('=')))
  return { x: Number(v.X), y: Number(v.Y), w: Number(v.WIDTH), h: Number(v.HEIGHT) }
}

async function sh(cmd, opts) {
  try {
    return await sbx.commands.run(cmd, opts)
  } catch (e) {
    if (e instanceof CommandExitError) return e
    throw e
  }
}

// Polls `probe` (async, truthy = done) every 500 ms for at most `s` seconds; its last value.
async function until(s, probe) {
  const end = Date.now() + s * 1000
  let v
  while (!(v = await probe()) && Date.now() < end) await new Promise((r) => setTimeout(r, 500))
  return v
}

async function windowsNamed(name) {
  const r = await sh(`xdotool search --onlyvisible --name ${JSON.stringify(name)}`)
  return r.exitCode === 0 ? r.stdout.trim().split('\n').filter(Boolean) : []
}

async function check(name, fn) {
  if (!sbx) {
    results.push({ name, ok: false, detail: `no sandbox: ${createError}` })
    return
  }
  try {
    const detail = await fn()
    results.push({ name, ok: true, detail })
  } catch (e) {
    results.push({ name, ok: false, detail: String(e && e.message ? e.message : e).split('\n')[0] })
  }
}

function must(cond, msg) {
  if (!cond) throw new Error(msg)
}

// The noVNC page and the RFB greeting through the stream URL: an HTTPS GET of the page, then a
// WebSocket upgrade on /websockify (RFC 6455 §4.1, subprotocol "binary" as noVNC asks) whose first
// binary frame must begin "RFB 003." (RFC 6143 §7.1.1).
function rfbGreeting(url) {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: u.hostname, servername: u.hostname, port: Number(u.port || 443) })
    const timer = setTimeout(() => { s.destroy(); reject(new Error('no RFB greeting in 30 s')) }, 30000)
    let buf = Buffer.alloc(0)
    s.on('secureConnect', () => {
      s.write(`GET /websockify HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n\r\n')
    })
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = buf.subarray(0, end).toString('latin1')
      if (!/^HTTP\/1\.1 101/.test(head)) {
        clearTimeout(timer), s.destroy()
        return reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`))
      }
      const frame = buf.subarray(end + 4)
      if (frame.length < 2) return
      const len = frame[1] & 0x7f
      if (frame.length < 2 + len) return
      clearTimeout(timer), s.destroy()
      resolve(frame.subarray(2, 2 + len).toString('latin1'))
    })
    s.on('error', (e) => { clearTimeout(timer); reject(e) })
  })
}

try {
  sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 900_000 })
} catch (e) {
  createError = String(e && e.message ? e.message : e).split('\n')[0]
}

let before = null, xtermId = null
await check('create (Xvfb and an XFCE session started by the SDK)', async () => {
  const r = await sh('pgrep -x xfce4-session && pgrep -x xfwm4 && pgrep -x xfdesktop')
  must(r.exitCode === 0, 'the XFCE processes are not all running')
  return `sandbox ${sbx.sandboxId}`
})
await check('screenshot', async () => {
  before = pngDecode(Buffer.from(await sbx.screenshot()))
  const size = await sbx.getScreenSize()
  must(before.width === size.width && before.height === size.height,
    `PNG ${before.width}x${before.height}, screen ${size.width}x${size.height}`)
  must(size.width === 1024 && size.height === 768, `screen ${size.width}x${size.height}, not 1024x768`)
  return `PNG ${before.width}x${before.height}, the screen's size`
})
await check('launch an application (gtk-launch debian-xterm)', async () => {
  const old = new Set((await sh('xdotool search --onlyvisible --class xterm')).stdout.trim().split('\n').filter(Boolean))
  before = await settledShot()
  await sbx.launch('debian-xterm')
  const ids = await until(60, async () => {
    const r = await sh('xdotool search --onlyvisible --class xterm')
    const now = r.stdout.trim().split('\n').filter((w) => w && !old.has(w))
    return now.length ? now : null
  })
  must(ids, 'no new xterm window in 60 s')
  xtermId = ids[0]
  await sh(`xdotool windowmove --sync ${xtermId} 200 150`)
  const after = await settledShot()
  const r = await geometry(xtermId)
  const inside = changedInside(before, after, r.x, r.y, r.w, r.h)
  must(inside > 0.5 * r.w * r.h, `${inside} of the window's ${r.w * r.h} pixels changed`)
  return `window ${xtermId} at ${r.x},${r.y} ${r.w}x${r.h}: ${inside} of its pixels changed in the screenshot`
})
await check('mouse move', async () => {
  await sbx.moveMouse(700, 600)
  const a = pngDecode(Buffer.from(await sbx.screenshot()))
  await sbx.moveMouse(900, 700)
  const b = pngDecode(Buffer.from(await sbx.screenshot()))
  const p = await sbx.getCursorPosition()
  must(p.x === 900 && p.y === 700, `cursor at ${p.x},${p.y}`)
  // the screenshot (scrot --pointer) draws the pointer: what changed is the pointer, here and there
  const total = changedPixels(a, b)
  const near = changedInside(a, b, 690, 590, 48, 48) + changedInside(a, b, 890, 690, 48, 48)
  must(total > 20 && near === total, `${total} pixels changed, ${near} near the two pointer positions`)
  return `the pointer moved from 700,600 to 900,700: ${total} pixels changed, all at the two places`
})
await check('mouse click focuses the clicked window', async () => {
  must(xtermId, 'no xterm was launched')
  const r = await geometry(xtermId)
  const x = r.x + Math.floor(r.w / 2), y = r.y + Math.floor(r.h / 2)
  await sbx.leftClick(1000, 740) // the desktop, away from the xterm
  const away = await until(10, async () => ((await sbx.getCurrentWindowId()) !== xtermId ? 1 : null))
  must(away, 'a click on the desktop left the focus on the xterm')
  await sbx.leftClick(x, y)
  const got = await until(10, async () => ((await sbx.getCurrentWindowId()) === xtermId ? xtermId : null))
  must(got, `focus on ${await sbx.getCurrentWindowId()}, not the xterm ${xtermId}`)
  return `a click on the desktop took the focus away, one at ${x},${y} gave it to the xterm`
})
await check('keyboard type and press', async () => {
  must(xtermId, 'no xterm was launched')
  await sh('rm -f /tmp/abx-typed.txt')
  await sbx.write('echo abx-typed-$((6*7)) > /tmp/abx-typed.txt')
  await sbx.press('enter')
  const r = await until(20, async () => {
    const c = await sh('cat /tmp/abx-typed.txt')
    return c.exitCode === 0 && c.stdout.trim() === 'abx-typed-42' ? c : null
  })
  must(r, 'the shell in the xterm did not write abx-typed-42')
  return 'the xterm\'s shell ran the typed line (abx-typed-42)'
})
await check('open a file (xdg-open)', async () => {
  const path = '/home/user/abx-note.txt'
  await sbx.files.write(path, 'a note for the desktop check\n')
  await sbx.open(path)
  const ids = await until(60, () => windowsNamed(`abx-viewer: ${path}`).then((w) => (w.length ? w : null)))
  must(ids, `no window "abx-viewer: ${path}" in 60 s`)
  const less = await sh(`pgrep -a less`)
  must(less.stdout.includes(path), `no viewer holds ${path}: ${less.stdout.trim()}`)
  return `window ${ids[0]} shows ${path}`
})
await check('open a URL (xdg-open, the browser)', async () => {
  await sbx.files.write('/tmp/abx-www/page.html',
    '<!doctype html><title>abx-url-check</title><p>the desktop check</p>\n')
  const srv = await sbx.commands.run('cd /tmp/abx-www && exec python3 -m http.server 8123 --bind 127.0.0.1',
    { background: true, timeoutMs: 0 })
  await until(20, async () => (await sh('curl -sf http://127.0.0.1:8123/page.html || python3 -c "import urllib.request as u; u.urlopen(\'http://127.0.0.1:8123/page.html\')"')).exitCode === 0)
  await sbx.open('http://127.0.0.1:8123/page.html')
  const ids = await until(90, () => windowsNamed('abx-url-check').then((w) => (w.length ? w : null)))
  await srv.kill().catch(() => {})
  must(ids, 'no window titled abx-url-check in 90 s')
  return `window ${ids[0]}: the page's title`
})
await check('VNC stream URL (noVNC page and RFB through the ingress)', async () => {
  await sbx.stream.start()
  const url = sbx.stream.getUrl()
  const res = await fetch(url)
  const html = await res.text()
  must(res.status === 200 && /noVNC/.test(html), `GET ${url}: ${res.status}`)
  const greeting = await rfbGreeting(url)
  must(/^RFB 003\.\d{3}\n/.test(greeting), `greeting ${JSON.stringify(greeting)}`)
  await sbx.stream.stop()
  return `${new URL(url).host}: the noVNC page, then ${JSON.stringify(greeting.trim())} over the WebSocket`
})

if (sbx) await sbx.kill().catch(() => {})
let passed = 0, failed = 0
for (const r of results) {
  console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}: ${r.detail}`)
  r.ok ? passed++ : failed++
}
for (const r of results)
  if (!r.ok) console.log(`PEER-FAIL e2b-desktop product-gap ${r.name}: ${r.detail}`)
console.log(`PEER-SUITE e2b-desktop passed=${passed} failed=${failed} skipped=0`)
