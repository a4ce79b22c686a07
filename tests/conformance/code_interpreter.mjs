// Conformance of the code interpreter: the official @e2b/code-interpreter JS SDK (npm, pinned with
// its lockfile in ci-<version>/), unmodified, against `abxlua serve`'s built-in
// code-interpreter-v1 template (issue 11 part 5). run.sh starts the server and sets
// CONFORMANCE_SDK_DIR (the pin), CONFORMANCE_MODE and the SDK's own variables exactly as for
// conformance.mjs (url: E2B_API_URL + E2B_SANDBOX_URL, the code interpreter reached through the
// E2b-Sandbox-Id/E2b-Sandbox-Port: 49999 headers the package sends; tls: only E2B_DOMAIN and the
// CA, https://49999-<id>.<domain>). Wire protocol: docs/protocol/envd-protocol.md §10,
// docs/protocol/e2b-v2-and-peers.md §3.
// Prints `ok - name` / `not ok - name: error` per check, then `N passed, N failed`; exit 1 on any
// failure. Every sandbox is killed at the end.
import assert from 'node:assert/strict'
import path from 'node:path'
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

const SDK_DIR = process.env.CONFORMANCE_SDK_DIR
const MODE = process.env.CONFORMANCE_MODE
if (!SDK_DIR || !['url', 'tls'].includes(MODE)) {
  console.error('code_interpreter.mjs: run it through run.sh (CONFORMANCE_SDK_DIR, CONFORMANCE_MODE)')
  process.exit(2)
}
const pkgDir = path.join(SDK_DIR, 'node_modules/@e2b/code-interpreter')
const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))
const ci = await import(pathToFileURL(path.join(pkgDir, pkg.module ?? pkg.main)).href)
const { Sandbox } = ci
const only = process.argv.slice(2)
console.log(`# @e2b/code-interpreter ${pkg.version}, mode ${MODE}, template ${Sandbox.defaultTemplate}`)

let passed = 0
let failed = 0
const sandboxes = []
async function check(name, fn) {
  if (only.length && !only.some((w) => name.includes(w))) return
  const t0 = Date.now()
  try {
    await fn()
    passed++
    console.log(`ok - ${name} (${Date.now() - t0} ms)`)
  } catch (e) {
    failed++
    console.log(`not ok - ${name}: ${e?.stack ?? e}`)
  }
}

let sbx
await check('Sandbox.create() gives code-interpreter-v1, ready to run code', async () => {
  sbx = await Sandbox.create({ timeoutMs: 300_000 })
  sandboxes.push(sbx)
  const info = await sbx.getInfo()
  assert.equal(info.templateId, 'code-interpreter-v1')
  const ex = await sbx.runCode('1 + 1')
  assert.equal(ex.text, '2')
})

await check('runCode: state persists, results, isMainResult, executionCount', async () => {
  await sbx.runCode('x = 41')
  const ex = await sbx.runCode('x + 1')
  assert.equal(ex.text, '42')
  assert.equal(ex.results.length, 1)
  assert.equal(ex.results[0].isMainResult, true)
  assert.equal(ex.error, undefined)
  assert.ok(Number.isInteger(ex.executionCount) && ex.executionCount >= 2, `count ${ex.executionCount}`)
})

await check('runCode: logs.stdout/stderr and onStdout/onStderr callbacks', async () => {
  const out = []
  const err = []
  const ex = await sbx.runCode("import sys\nprint('hello')\nprint('warn', file=sys.stderr)", {
    onStdout: (m) => out.push(m.line), onStderr: (m) => err.push(m.line),
  })
  assert.deepEqual(ex.logs.stdout, ['hello\n'])
  assert.deepEqual(ex.logs.stderr, ['warn\n'])
  assert.deepEqual(out, ['hello\n'])
  assert.deepEqual(err, ['warn\n'])
})

await check('runCode: an exception is execution.error with name, value, traceback', async () => {
  const ex = await sbx.runCode('1 / 0')
  assert.ok(ex.error, 'no error')
  assert.equal(ex.error.name, 'ZeroDivisionError')
  assert.equal(ex.error.value, 'division by zero')
  assert.match(ex.error.traceback, /ZeroDivisionError/)
})

await check('runCode: a matplotlib figure is a png result (display_data, not main)', async () => {
  const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  const png = ex.results.find((r) => r.png)
  assert.ok(png, `results ${JSON.stringify(ex.results.map((r) => r.formats()))}`)
  assert.equal(png.isMainResult, false)
  assert.ok(Buffer.from(png.png, 'base64').subarray(1, 4).toString() === 'PNG')
})

await check('runCode: envs apply to that execution only', async () => {
  const code = "import os\nos.environ.get('ABX_CI', 'unset')"
  assert.equal((await sbx.runCode(code, { envs: { ABX_CI: 'here' } })).text, 'here')
  assert.equal((await sbx.runCode(code)).text, 'unset')
})

await check('createCodeContext/listCodeContexts/restartCodeContext/removeCodeContext', async () => {
  const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
  assert.ok(ctx.id)
  assert.equal(ctx.language, 'python')
  assert.equal(ctx.cwd, '/tmp')
  assert.equal((await sbx.runCode('import os\nos.getcwd()', { context: ctx })).text, '/tmp')
  await sbx.runCode('y = 7', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, '7')
  const other = await sbx.runCode('y')
  assert.equal(other.error?.name, 'NameError', 'the default context sees y')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'not listed')
  await sbx.restartCodeContext(ctx)
  assert.equal((await sbx.runCode('y', { context: ctx })).error?.name, 'NameError', 'state kept on restart')
  await sbx.removeCodeContext(ctx)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'still listed')
  await assert.rejects(sbx.runCode('1', { context: ctx }), (e) => /not found/i.test(e.message))
})

await check('runCode with context and language together is refused', async () => {
  const ctx = await sbx.createCodeContext()
  await assert.rejects(sbx.runCode('1', { context: ctx, language: 'python' }))
  await sbx.removeCodeContext(ctx.id)
})

await check('language java: no kernel in this template, a clear error naming it', async () => {
  await assert.rejects(sbx.runCode('1 + 1', { language: 'java' }),
    (e) => /java/.test(e.message) && /kernel/.test(e.message))
  await assert.rejects(sbx.createCodeContext({ language: 'java' }), (e) => /kernel/.test(e.message))
})

await check('code runs as root in a context whose cwd is /root (as on E2B)', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python', cwd: '/root' })
  const ex = await sbx.runCode('import os\nos.getcwd(), os.getuid()', { context: ctx })
  assert.equal(ex.text, "('/root', 0)")
  await sbx.removeCodeContext(ctx.id)
})

await check('commands and files still work in a code-interpreter sandbox', async () => {
  await sbx.files.write('/home/user/from_sdk.txt', 'written by the SDK')
  const ex = await sbx.runCode("open('/home/user/from_sdk.txt').read()")
  assert.equal(ex.text, 'written by the SDK')
  const r = await sbx.commands.run('whoami')
  assert.equal(r.stdout.trim(), 'user')
})

for (const s of sandboxes) await s.kill().catch(() => {})
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
