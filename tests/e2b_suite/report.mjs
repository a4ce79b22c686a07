// The E2B suite's result (tests/e2b_suite/run.sh): reads the index run.sh wrote (one line per test
// file: path, vitest JSON report, exit status, seconds) and prints the per-file table (file,
// passed, failed, skipped, seconds), the totals, and each failing test with the first line of its
// error. A file without a report (vitest crashed or timed out) counts as one failure, with the end
// of its log.
// For `make peer-suites` (tests/peer_suites/run.sh, whose header defines the protocol) it ends with
// one `PEER-FAIL e2b-js-sdk <class> <test>: <error>` line per failing test and the line
// `PEER-SUITE e2b-js-sdk passed=N failed=N skipped=N`. A failure's class comes from KNOWN below,
// by test identity (file and full name): the tests that reach hosts outside this machine
// (needs-internet) and the one that needs E2B's `httpbin` template (e2b-only-template); every
// other failure is a product-gap.
import { readFileSync, existsSync } from 'node:fs'

// Known failures that are not abxlua's: [file, full test name, class, why]. Sources: the test
// bodies at e2b-dev/E2B@b8029973 packages/js-sdk/tests/sandbox/{internetAccess,network}.test.ts.
const KNOWN = [
  // curl https://connectivitycheck.gstatic.com/generate_204 must answer 204
  ['tests/sandbox/internetAccess.test.ts', /internet access enabled/, 'needs-internet', 'curls connectivitycheck.gstatic.com'],
  ['tests/sandbox/internetAccess.test.ts', /internet access default/, 'needs-internet', 'curls connectivitycheck.gstatic.com'],
  // curl https://1.1.1.1 / https://8.8.8.8 must answer (the allowed address) before the denied one is checked
  ['tests/sandbox/network.test.ts', /allow specific IP with deny all traffic/, 'needs-internet', 'curls https://1.1.1.1'],
  ['tests/sandbox/network.test.ts', /deny specific IP address/, 'needs-internet', 'curls https://1.1.1.1'],
  ['tests/sandbox/network.test.ts', /allow takes precedence over deny/, 'needs-internet', 'curls https://1.1.1.1 and 8.8.8.8'],
  ['tests/sandbox/network.test.ts', /updateNetwork/, 'needs-internet', 'curls https://8.8.8.8 and 1.1.1.1'],
  // Sandbox.create(httpbinTemplate): a template of E2B's cloud
  ['tests/sandbox/network.test.ts', /httpbin/, 'e2b-only-template', 'Sandbox.create of E2B\'s httpbin template'],
]
const classify = (file, name) => KNOWN.find(([f, re]) => f === file && re.test(name))?.[2] ?? 'product-gap'

const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').filter(Boolean).map((l) => l.split('\t'))
const table = []
const failures = []
const total = { passed: 0, failed: 0, skipped: 0, seconds: 0 }
for (const [file, report, rc, seconds] of rows) {
  const row = { file, passed: 0, failed: 0, skipped: 0, seconds: Number(seconds) }
  let data
  try {
    data = existsSync(report) ? JSON.parse(readFileSync(report, 'utf8')) : undefined
  } catch {}
  if (!data) {
    row.failed = 1
    const log = existsSync(report.replace(/\.json$/, '.log')) ? readFileSync(report.replace(/\.json$/, '.log'), 'utf8') : ''
    failures.push({ file, name: `(the file did not run: exit ${rc}${rc === '124' ? ', timed out' : ''})`, message: log.trim().split('\n').slice(-3).join(' | ') })
  } else {
    for (const suite of data.testResults ?? []) {
      for (const t of suite.assertionResults ?? []) {
        if (t.status === 'passed') row.passed++
        else if (t.status === 'failed') {
          row.failed++
          const msg = (t.failureMessages ?? []).join('\n').split('\n').find((l) => l.trim()) ?? ''
          failures.push({ file, name: t.fullName, message: msg.trim().slice(0, 300) })
        } else row.skipped++
      }
      // a file that failed to load has no assertion results, only a message
      if (!(suite.assertionResults ?? []).length && suite.status === 'failed') {
        row.failed++
        failures.push({ file, name: '(the file failed to load)', message: String(suite.message ?? '').split('\n')[0].slice(0, 300) })
      }
    }
  }
  for (const k of ['passed', 'failed', 'skipped', 'seconds']) total[k] += row[k]
  table.push(row)
}

const w = Math.max(4, ...table.map((r) => r.file.length))
const line = (f, p, x, s, t) => `| ${f.padEnd(w)} | ${String(p).padStart(6)} | ${String(x).padStart(6)} | ${String(s).padStart(7)} | ${String(t).padStart(7)} |`
console.log()
console.log(line('file', 'passed', 'failed', 'skipped', 'seconds'))
console.log(`|${'-'.repeat(w + 2)}|-------:|-------:|--------:|--------:|`)
for (const r of table) console.log(line(r.file, r.passed, r.failed, r.skipped, r.seconds.toFixed(1)))
console.log(line(`total (${table.length} files, ${total.passed + total.failed + total.skipped} tests)`, total.passed, total.failed, total.skipped, total.seconds.toFixed(0)))
console.log()
if (failures.length) {
  console.log(`failing tests (${failures.length}):`)
  for (const f of failures) console.log(`- ${f.file} > ${f.name}\n    ${f.message}`)
}
console.log()
for (const f of failures) {
  const name = `${f.file} > ${f.name}`.replaceAll(': ', ' - ')
  console.log(`PEER-FAIL e2b-js-sdk ${classify(f.file, f.name)} ${name}: ${f.message.split('\n')[0]}`)
}
console.log(`PEER-SUITE e2b-js-sdk passed=${total.passed} failed=${total.failed} skipped=${total.skipped}`)
