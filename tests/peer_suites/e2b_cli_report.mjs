// The e2b-cli peer suite's result lines, from vitest's JSON report (tests/peer_suites/e2b_cli.sh).
//   node e2b_cli_report.mjs REPORT.json
// Prints, per test that did not pass, `PEER-FAIL e2b-cli <class> <test>: <first error line>`,
// then `PEER-SUITE e2b-cli passed=N failed=N skipped=N` last. A failure is a product gap unless
// KNOWN below names it with the reason it cannot pass against a local serve.
import { readFileSync } from 'node:fs'

// test full name -> [class, why]; the why is shown in the docs, the class on the line.
const KNOWN = {
  // e2b-dev/E2B @ b8029973: packages/cli/tests/commands/template/create.test.ts, runCli(): the
  // child CLI gets only PATH, HOME, E2B_DOMAIN and E2B_API_KEY, so NODE_EXTRA_CA_CERTS (serve
  // --tls's private CA) never reaches it and its first request fails TLS verification ("fetch failed"). Against E2B the
  // domain's certificate is publicly trusted; no environment variable of the parent can help.
  'template create cli backend integration template create succeeds with E2B_API_KEY alone':
    ['needs-public-ca', 'the test drops NODE_EXTRA_CA_CERTS from the child CLI'],
}

function firstErrorLine(msg) {
  const lines = String(msg || '').split('\n').map((l) => l.trim()).filter(Boolean)
  if (lines.length === 0) return '(no message)'
  if (!/:\s*$/.test(lines[0])) return lines[0]
  const more = lines.slice(1).find((l) => /error/i.test(l) && !/^at /.test(l))
  return more ? `${lines[0]} ${more}` : lines[0]
}

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
let passed = 0, failed = 0, skipped = 0
for (const file of report.testResults || []) {
  const tests = file.assertionResults || []
  if (tests.length === 0 && file.status === 'failed') {
    // a file that failed to load: every test in it is lost
    failed++
    const name = file.name.replace(/^.*\/packages\/cli\//, '')
    console.log(`PEER-FAIL e2b-cli product-gap ${name}: ${firstErrorLine(file.message)}`)
  }
  for (const t of tests) {
    if (t.status === 'passed') passed++
    else if (t.status === 'failed') {
      failed++
      const [cls] = KNOWN[t.fullName] || ['product-gap']
      console.log(`PEER-FAIL e2b-cli ${cls} ${t.fullName}: ${firstErrorLine((t.failureMessages || [])[0])}`)
    } else skipped++
  }
}
console.log(`PEER-SUITE e2b-cli passed=${passed} failed=${failed} skipped=${skipped}`)
