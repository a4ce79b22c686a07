// sdk_json.mjs: the official e2b SDK 2.51.0 (tests/conformance/sdk-2.51.0, unmodified) builds the
// same templates as the fixture recipes with its own builder calls, and prints what its
// Template.toJSON gives: the TemplateBuildStartV2 body it sends, COPY filesHash computed by its
// calculateFilesHash (sdk-src/template/index.ts instructionsWithHashes). sdk_compare.sh compares
// it with `abxlua template build --dry-run`.
//   node sdk_json.mjs <sdk node_modules dir> <fixtures dir> <tiny|copies>
import path from 'node:path'
import { createRequire } from 'node:module'

const [modules, fixtures, which] = process.argv.slice(2)
const require = createRequire(path.join(modules, 'x.js'))
const { Template, waitForURL, waitForFile } = require('e2b')
const ctx = path.join(fixtures, which)

let t
if (which === 'tiny') {
  t = Template({ fileContextPath: ctx })
    .fromTemplate('base')
    .aptInstall(['python3-flask'])
    .pipInstall(['requests'])
    .npmInstall(['@openai/codex@0.1.0'], { g: true })
    .copy('app/', '/opt/app/', { user: 'user', mode: 0o755 })
    .runCmd(['echo one', 'echo two'], { user: 'root' })
    .runCmd('test -f /opt/app/hello.py')
    .setEnvs({ A_VAR: 'x y', PORT: '8080' })
    .setWorkdir('/opt/app')
    .setUser('user')
    .setStartCmd('python3 /opt/app/hello.py', waitForURL('http://localhost:8080/health'))
} else if (which === 'copies') {
  t = Template({ fileContextPath: ctx })
    .fromImage('debian:bookworm')
    .copy('single.txt', '/opt/single.txt')
    .copy('app', '/opt/app')
    .copy('./app/deep/', '/opt/deep/', { mode: 0o600 })
    .setEnvs({ B: '2' })
    .setReadyCmd(waitForFile("/tmp/it's ready"))
} else {
  throw new Error('unknown fixture ' + which)
}
process.stdout.write(await Template.toJSON(t) + '\n')
