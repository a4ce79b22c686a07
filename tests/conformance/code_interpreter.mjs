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

// E2B's result formats (platform/code_interpreter/abx_formats.py, abx_charts.py), as the
// package reads them and as e2b-dev/code-interpreter js/tests/charts/*.test.ts, data.test.ts,
// images/bar.test.ts and displayData.test.ts @ 7df1757 check them
await check('runCode: a line chart is result.chart next to its png (E2B chart data)', async () => {
  const ex = await sbx.runCode(`
import datetime
import numpy as np
import matplotlib.pyplot as plt
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
x = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)')
plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel('Time (s)')
plt.ylabel('Amplitude (Hz)')
plt.title('Plot of sin(x) and cos(x)')
plt.show()
`)
  assert.equal(ex.error, undefined, JSON.stringify(ex.error))
  const r = ex.results[0]
  assert.ok(r.png && r.text, `formats ${r.formats()}`)
  assert.deepEqual(r.extra, {})
  const c = r.chart
  assert.equal(c.type, 'line')
  assert.equal(c.title, 'Plot of sin(x) and cos(x)')
  assert.deepEqual([c.x_label, c.y_label, c.x_unit, c.y_unit], ['Time (s)', 'Amplitude (Hz)', 's', 'Hz'])
  assert.deepEqual([c.x_scale, c.y_scale], ['datetime', 'linear'])
  assert.ok(c.x_ticks.every((t) => typeof t === 'string') && !isNaN(new Date(c.x_ticks[0])))
  assert.ok(c.y_ticks.every((t) => typeof t === 'number'))
  assert.ok([...c.x_tick_labels, ...c.y_tick_labels].every((t) => typeof t === 'string'))
  assert.deepEqual(c.elements.map((e) => [e.label, e.points.length]), [['sin(x)', 100], ['cos(x)', 100]])
  assert.ok(c.elements[0].points.every(([px, py]) => typeof px === 'string' && typeof py === 'number'))
  assert.deepEqual(new Date(c.elements[0].points[0][0]), new Date('2023-09-01T00:00:00.000Z'))
})

await check('runCode: a bar chart is result.chart with its bars', async () => {
  const ex = await sbx.runCode(`
import matplotlib.pyplot as plt
plt.figure(figsize=(10, 6))
plt.bar(['Author A', 'Author B', 'Author C', 'Author D'], [100, 200, 300, 400], label='Books Sold', color='blue')
plt.xlabel('Authors')
plt.ylabel('Number of Books Sold')
plt.title('Book Sales by Authors')
plt.tight_layout()
plt.show()
`)
  const c = ex.results[0].chart
  assert.equal(c.type, 'bar')
  assert.equal(c.title, 'Book Sales by Authors')
  assert.deepEqual([c.x_label, c.y_label, c.x_unit, c.y_unit], ['Authors', 'Number of Books Sold', null, null])
  assert.deepEqual(c.elements.map((b) => b.value), [100, 200, 300, 400])
  assert.deepEqual(c.elements.map((b) => b.label), ['Author A', 'Author B', 'Author C', 'Author D'])
  assert.deepEqual(c.elements.map((b) => b.group), Array(4).fill('Books Sold'))
})

await check('runCode: a box-and-whisker plot is result.chart with its boxes', async () => {
  const ex = await sbx.runCode(`
import matplotlib.pyplot as plt
data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots(figsize=(10, 6))
ax.set_title('Exam Scores Distribution')
ax.set_xlabel('Class')
ax.set_ylabel('Score')
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.show()
`)
  const c = ex.results[0].chart
  assert.equal(c.type, 'box_and_whisker')
  assert.deepEqual(c.elements.map((b) => [b.label, b.min, b.first_quartile, b.median, b.third_quartile, b.max, b.outliers]),
    [['Class A', 78, 85, 88, 90, 92, []], ['Class B', 84, 84.75, 88, 90.5, 95, [76]], ['Class C', 75, 79, 82, 86, 88, []]])
})

await check('runCode: a pandas DataFrame is result.data (and html)', async () => {
  const ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})')
  const r = ex.results[0]
  assert.deepEqual(r.data, { a: [1, 2, 3] })
  assert.ok(r.html?.includes('<table'), `formats ${r.formats()}`)
  assert.equal(r.isMainResult, true)
})

await check('runCode: PIL Image.save also displays the image (png), and show() does', async () => {
  const make = 'import numpy\nfrom PIL import Image\n' +
    "image = Image.fromarray((numpy.random.rand(16, 16, 3) * 255).astype('uint8')).convert('RGBA')\n"
  const saved = await sbx.runCode(make + "image.save('test.png')")
  assert.ok(saved.results[0]?.png, `results ${JSON.stringify(saved.results.map((r) => r.formats()))}`)
  const shown = await sbx.runCode(make + "image.show()\nprint('done')")
  assert.equal(shown.results.length, 1)
  assert.ok(shown.results[0].png)
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
