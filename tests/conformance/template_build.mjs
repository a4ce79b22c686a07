// Conformance of the template build API: the official E2B JS SDK's Template() builder and
// Template.build (npm e2b, pinned in sdk-<version>/), unmodified, against `abxlua serve`
// (platform/build/template_build.h; the SDK's calls: docs/protocol/e2b-v2-and-peers.md §2). run.sh starts
// the server and sets CONFORMANCE_SDK_DIR, CONFORMANCE_MODE and the SDK's variables as for
// conformance.mjs. Prints `ok - name` / `not ok - name: error`, then `N passed, N failed`; exit 1
// on any failure. Every sandbox is killed at the end.
import assert from 'node:assert/strict'
import path from 'node:path'
import { readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'

const SDK_DIR = process.env.CONFORMANCE_SDK_DIR
const MODE = process.env.CONFORMANCE_MODE
if (!SDK_DIR || !['url', 'tls'].includes(MODE)) {
  console.error('template_build.mjs: run it through run.sh (CONFORMANCE_SDK_DIR, CONFORMANCE_MODE)')
  process.exit(2)
}
const pkgDir = path.join(SDK_DIR, 'node_modules/e2b')
const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))
const e2b = await import(pathToFileURL(path.join(pkgDir, pkg.module ?? pkg.main)).href)
const { Sandbox, Template, waitForPort, waitForURL, BuildError } = e2b
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'template_fixture')
const only = process.argv.slice(2)
const name = `conf-web-${MODE}`
console.log(`# e2b ${pkg.version}, mode ${MODE}, template ${name}`)

let passed = 0
let failed = 0
const sandboxes = []
async function check(title, fn) {
  if (only.length && !only.some((w) => title.includes(w))) return
  const t0 = Date.now()
  try {
    await fn()
    passed++
    console.log(`ok - ${title} (${Date.now() - t0} ms)`)
  } catch (e) {
    failed++
    console.log(`not ok - ${title}: ${e?.stack ?? e}`)
  }
}

const recipe = (ready) =>
  Template({ fileContextPath: fixture })
    .fromTemplate('base')
    .copy('app', '/opt/app')
    .runCmd('echo built-in-build > /opt/app/built.txt', { user: 'root' })
    .setEnvs({ GREETING: 'hello' })
    .setWorkdir('/opt/app')
    .setStartCmd('python3 /opt/app/server.py', ready)

let first
await check('Template.build: copy, run, env, workdir, start cmd with waitForPort', async () => {
  const logs = []
  first = await Template.build(recipe(waitForPort(8080)), name, {
    onBuildLogs: (e) => logs.push(e.message),
  })
  assert.ok(first.templateId && first.buildId, JSON.stringify(first))
  assert.ok(logs.some((m) => m.includes('Uploaded')), `the files were uploaded: ${logs.join(' | ')}`)
  assert.ok(logs.some((m) => m.includes('[builder 1/4] COPY app /opt/app')), logs.join(' | '))
})

await check('Sandbox.create(name): files, env, workdir, server from start cmd', async () => {
  const sbx = await Sandbox.create(name, { timeoutMs: 120_000 })
  sandboxes.push(sbx)
  assert.equal((await sbx.getInfo()).templateId, first.templateId)
  const r = await sbx.commands.run('cat /opt/app/built.txt; echo $GREETING; pwd; whoami')
  assert.equal(r.stdout, 'built-in-build\nhello\n/opt/app\nuser\n')
  const scheme = MODE === 'tls' ? 'https' : 'http'
  const host = sbx.getHost(8080)
  const res = MODE === 'tls' ? await fetch(`${scheme}://${host}/`)
    : await fetch(`${process.env.E2B_SANDBOX_URL}/`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8080' } })
  assert.equal(await res.text(), 'hello built-in-build /opt/app')
})

await check('Template.exists, a cached rebuild (no upload), waitForURL', async () => {
  assert.equal(await Template.exists(name), true)
  assert.equal(await Template.exists(`${name}-absent`), false)
  const logs = []
  const t0 = Date.now()
  const again = await Template.build(recipe(waitForURL('http://localhost:8080/')), `${name}:v2`, {
    onBuildLogs: (e) => logs.push(e.message),
  })
  assert.equal(again.templateId, first.templateId)
  assert.ok(logs.some((m) => m.includes("Skipping upload of 'app', already cached")), logs.join(' | '))
  assert.ok(logs.filter((m) => m.startsWith('CACHED [builder')).length >= 3, logs.join(' | '))
  assert.ok(Date.now() - t0 < 15000, `took ${Date.now() - t0} ms`)
  const tags = (await Template.getTags(first.templateId)).map((t) => t.tag).sort()
  assert.deepEqual(tags, ['default', 'v2'])
})

await check('Template() without a from*: the SDK\'s default image e2bdev/base is base', async () => {
  const t = Template().runCmd('echo from-default-image > ~/marker.txt')
  await Template.build(t, `${name}-default`)
  const sbx = await Sandbox.create(`${name}-default`, { timeoutMs: 60_000 })
  sandboxes.push(sbx)
  assert.equal((await sbx.files.read('/home/user/marker.txt')).trim(), 'from-default-image')
})

await check('fromImage of a non-Debian image: BuildError with the platform\'s exact refusal', async () => {
  const t = Template().fromImage('ubuntu:22.04').runCmd('true')
  await assert.rejects(Template.build(t, `${name}-ubuntu`), (e) => {
    assert.ok(e instanceof BuildError, String(e))
    assert.ok(e.message.includes("image 'ubuntu:22.04': image registry docker.io is unreachable from " +
      'this machine: only Debian images (debian:<suite>) are built locally, from Debian packages'), e.message)
    return true
  })
})

await check('a failing step: BuildError with the step\'s message', async () => {
  const bad = Template().fromTemplate('base').runCmd('echo nope; exit 7')
  await assert.rejects(Template.build(bad, `${name}-fails`), (e) => {
    assert.ok(e instanceof BuildError, String(e))
    assert.match(e.message, /exit status 7/)
    return true
  })
})

for (const s of sandboxes) await s.kill().catch(() => {})
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
