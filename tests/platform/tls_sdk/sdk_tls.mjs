// The official E2B JS SDK, unmodified, in its default addressing against `abxlua serve --tls`:
// the process gets only E2B_API_KEY, E2B_DOMAIN=<domain>:<port> and NODE_EXTRA_CA_CERTS, so the
// SDK derives https://api.<domain>:<port> (control plane), https://49983-<id>.<domain>:<port>
// (envd), signed file URLs on that host and getHost(p) = <p>-<id>.<domain>:<port>
// (docs/protocol/e2b-v2-and-peers.md §1.5). Run by tests/platform/test_tls.py; prints one
// "ok <step>" line per step and exits 1 at the first failure.
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_DEBUG']) {
  assert.equal(process.env[v], undefined, `${v} must not be set: the domain alone must do`)
}
const domain = process.env.E2B_DOMAIN
const step = (name) => console.log(`ok ${name}`)

async function until(what, fn, ms = 20_000) {
  const end = Date.now() + ms
  let last
  while (Date.now() < end) {
    try {
      const v = await fn()
      if (v !== undefined) return v
    } catch (e) {
      last = e
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ''}`)
}

let sbx
try {
  sbx = await Sandbox.create('base', { timeoutMs: 120_000, secure: true })
  assert.equal(sbx.sandboxDomain, domain, 'the API reports the domain with its port')
  step(`create ${sbx.sandboxId}`)

  const r = await sbx.commands.run('echo hello-$((6*7)); id -un')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello-42\nuser\n')
  step('command')

  await sbx.files.write('/home/user/tls.txt', 'over TLS')
  assert.equal(await sbx.files.read('/home/user/tls.txt'), 'over TLS')
  step('write and read a file')

  const down = await sbx.downloadUrl('/home/user/tls.txt')
  const du = new URL(down)
  assert.equal(du.protocol, 'https:')
  assert.equal(du.host, `49983-${sbx.sandboxId}.${domain}`)
  assert.ok(du.searchParams.get('signature'), `a signed URL: ${down}`)
  const got = await fetch(down)
  assert.equal(got.status, 200, `download ${got.status} ${await got.clone().text()}`)
  assert.equal(await got.text(), 'over TLS')
  du.searchParams.set('signature', 'v1_' + 'x'.repeat(43))
  const forged = await fetch(du)
  assert.equal(forged.status, 401, `a forged signature answers ${forged.status}`)
  step('download through a signed URL')

  const up = await sbx.uploadUrl('/home/user/uploaded.txt')
  const form = new FormData()
  form.append('file', new Blob(['sent by URL']), 'uploaded.txt')
  const put = await fetch(up, { method: 'POST', body: form })
  assert.equal(put.status, 200, `upload ${put.status} ${await put.clone().text()}`)
  assert.equal(await sbx.files.read('/home/user/uploaded.txt'), 'sent by URL')
  step('upload through a signed URL')

  const marker = `tls-${sbx.sandboxId}`
  await sbx.files.write('/home/user/www/index.html', marker)
  const server = await sbx.commands.run('python3 -m http.server 8080 --bind 0.0.0.0', {
    background: true,
    cwd: '/home/user/www',
  })
  const host = sbx.getHost(8080)
  assert.equal(host, `8080-${sbx.sandboxId}.${domain}`)
  const page = await until('the in-sandbox server through getHost', async () => {
    const res = await fetch(`https://${host}/`)
    return res.status === 200 ? res.text() : undefined
  })
  assert.equal(page, marker)
  await server.kill()
  step('getHost')

  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await again.commands.run('cat /home/user/tls.txt')).stdout, 'over TLS')
  step('connect')
} finally {
  if (sbx) await sbx.kill()
}
step('kill')
