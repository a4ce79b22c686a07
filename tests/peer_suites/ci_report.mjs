// The code-interpreter suite's result (tests/peer_suites/code_interpreter.sh): reads vitest's JSON
// report and prints the per-file table (file, passed, failed, skipped), the totals per language
// the test runs, and the machine-readable lines of tests/peer_suites/run.sh's protocol: a
// `PEER-FAIL code-interpreter <class> <file> > <test>: <first line of its error>` per failing test
// and a last `PEER-SUITE code-interpreter passed=N failed=N skipped=N`.
//   node ci_report.mjs REPORT.json SUITE_JS_DIR "KERNEL ..."
// A test's language: env_vars/<lang>.test.ts, the `cwd <lang>` tests, defaultKernels' js and ts
// tests; every other test runs python. A failure's class (run.sh's class names):
//   missing-kernel  the server named a missing kernel, or the test's language (or a default
//                   context it expects) has no kernel among KERNEL ... (the host's kernelspecs)
//   needs-internet  a name that did not resolve or a network that is unreachable
//   product-gap     anything else: what abxlua's code-interpreter-v1 does differently from E2B's
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'

const [reportPath, jsDir, kernelList = ''] = process.argv.slice(2)
const data = JSON.parse(readFileSync(reportPath, 'utf8'))
const have = new Set(kernelList.split(/\s+/).filter(Boolean))
// server.py KERNELS: a language has a kernel when one of these kernelspecs is installed
const KERNELS = { python: ['python3'], javascript: ['javascript', 'jslab'], typescript: ['tslab', 'javascript'],
  r: ['r', 'ir'], bash: ['bash'], java: ['java'] }
const hasKernel = (lang) => (KERNELS[lang] ?? [lang]).some((k) => have.has(k))
const ALIAS = { js: 'javascript', ts: 'typescript', r: 'r', bash: 'bash', java: 'java', python: 'python',
  javascript: 'javascript', typescript: 'typescript' }

function languageOf(file, title) {
  const env = file.match(/env_vars\/(\w+)\.test\.ts$/)
  if (env) return ALIAS[env[1]] ?? env[1]
  const cwd = file.endsWith('cwd.test.ts') && title.match(/^cwd (\w+)/)
  if (cwd) return ALIAS[cwd[1]] ?? cwd[1]
  if (file.endsWith('defaultKernels.test.ts')) return /\bts kernel\b/.test(title) ? 'typescript' : 'javascript'
  return 'python'
}

function classify(lang, message) {
  if (/is not available in this template|no Jupyter kernel/.test(message)) return 'missing-kernel'
  if (!hasKernel(lang)) return 'missing-kernel'
  if (/to include 'javascript'/.test(message) && !hasKernel('javascript')) return 'missing-kernel'
  if (/ENOTFOUND|EAI_AGAIN|ENETUNREACH|getaddrinfo|name resolution|Could not resolve host/.test(message))
    return 'needs-internet'
  return 'product-gap'
}

const files = []
const byLang = {}
const failures = []
const total = { passed: 0, failed: 0, skipped: 0 }
for (const suite of data.testResults ?? []) {
  const file = relative(jsDir, suite.name)
  const row = { file, passed: 0, failed: 0, skipped: 0 }
  const results = suite.assertionResults ?? []
  for (const t of results) {
    const lang = languageOf(file, t.title ?? '')
    byLang[lang] ??= { passed: 0, failed: 0, skipped: 0 }
    const kind = t.status === 'passed' ? 'passed' : t.status === 'failed' ? 'failed' : 'skipped'
    row[kind]++
    byLang[lang][kind]++
    if (kind === 'failed') {
      const msg = (t.failureMessages ?? []).join('\n')
      const first = msg.split('\n').find((l) => l.trim()) ?? ''
      failures.push({ file, name: t.fullName, lang, cls: classify(lang, msg), message: first.trim().slice(0, 240) })
    }
  }
  if (!results.length && suite.status === 'failed') { // a file that failed to load
    row.failed++
    failures.push({ file, name: '(the file failed to load)', lang: '-', cls: 'product-gap',
      message: String(suite.message ?? '').split('\n')[0].slice(0, 240) })
  }
  for (const k of ['passed', 'failed', 'skipped']) total[k] += row[k]
  files.push(row)
}
files.sort((a, b) => a.file.localeCompare(b.file))

const w = Math.max(24, ...files.map((r) => r.file.length))
const line = (f, p, x, s) => `| ${f.padEnd(w)} | ${String(p).padStart(6)} | ${String(x).padStart(6)} | ${String(s).padStart(7)} |`
const rule = `|${'-'.repeat(w + 2)}|-------:|-------:|--------:|`
console.log()
console.log(line('file', 'passed', 'failed', 'skipped'))
console.log(rule)
for (const r of files) console.log(line(r.file, r.passed, r.failed, r.skipped))
console.log(line(`total (${files.length} files)`, total.passed, total.failed, total.skipped))
console.log()
console.log(line('language (kernel installed?)', 'passed', 'failed', 'skipped'))
console.log(rule)
for (const [lang, r] of Object.entries(byLang).sort())
  console.log(line(`${lang} (${hasKernel(lang) ? 'yes' : 'no'})`, r.passed, r.failed, r.skipped))
console.log()
const classes = {}
const words = (cls) => cls.replaceAll('-', ' ') // the human list: "product gap"
for (const f of failures) classes[words(f.cls)] = (classes[words(f.cls)] ?? 0) + 1
if (failures.length) {
  console.log(`failing tests (${failures.length}: ${Object.entries(classes).map(([c, n]) => `${n} ${c}`).join(', ')}):`)
  for (const f of failures) console.log(`- [${words(f.cls)}] ${f.file} > ${f.name} (${f.lang})\n    ${f.message}`)
  console.log()
}
// one line each, no newline inside (run.sh reads them line by line)
const flat = (x) => String(x).replace(/\s+/g, ' ').trim()
for (const f of failures)
  console.log(`PEER-FAIL code-interpreter ${f.cls} ${flat(`${f.file} > ${f.name}`)}: ${flat(f.message)}`)
console.log(`PEER-SUITE code-interpreter passed=${total.passed} failed=${total.failed} skipped=${total.skipped}`)
