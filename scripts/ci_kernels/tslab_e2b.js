// tslab's kernel (npm tslab 1.0.22, dist/main.js startKernel) with E2B's JavaScript kernel's
// outputs, for the code-interpreter-v1 template (scripts/ci_kernels.sh installs it and points the
// jslab and tslab kernelspecs at it):
//   node tslab_e2b.js TSLAB_DIR --config-path CONNECTION_FILE [--js]
// - the value of a cell's last expression is an execute_result whose text/plain is
//   util.inspect(value) (tslab console.logs it; E2B's ijavascript fork answers a result, and its
//   tests read `execution.text`);
// - an exception thrown by the code is an `error` message {ename, evalue, traceback} (tslab prints
//   it to stderr only), compile diagnostics stay on stderr;
// - each execution publishes execute_input with its count (tslab sends none), so clients get
//   number_of_executions as from IPython;
// - a request with stop_on_error false is not aborted for following an error (tslab aborts every
//   request that arrives within 200 ms of one).
// Everything else is tslab's own: this file only wraps createExecutor's console and
// ZmqServer.handleExecute (dist/jupyter.js), looked up at call time by tslab's CommonJS output.
'use strict'
const path = require('path')
const util = require('util')

const [dir, ...args] = process.argv.slice(2)
const at = args.indexOf('--config-path')
if (!dir || at < 0 || !args[at + 1]) {
  console.error('usage: tslab_e2b.js TSLAB_DIR --config-path CONNECTION_FILE [--js]')
  process.exit(2)
}
const executor = require(path.join(dir, 'dist', 'executor.js'))
const jupyter = require(path.join(dir, 'dist', 'jupyter.js'))
const main = require(path.join(dir, 'dist', 'main.js'))

let current = null // the execution being run: {result(data), error(content)}

const createExecutor = executor.createExecutor
executor.createExecutor = (rootDir, convs) =>
  createExecutor(rootDir, convs, {
    log: (value) => (current ? current.result({ 'text/plain': util.inspect(value) }) : console.log(value)),
    error: (...a) => {
      const e = a[0]
      if (a.length === 1 && current && e instanceof Error) {
        current.error({ ename: e.name, evalue: e.message, traceback: [e.stack || String(e)] })
      } else {
        console.error(...a)
      }
    },
  })

jupyter.ZmqServer.prototype.handleExecute = async function (sock, msg) {
  const publish = (type, content) => {
    const m = msg.createReply()
    m.header.msg_type = type
    m.content = content
    m.signAndSend(this.connInfo.key, this.iopub)
  }
  const count = () => this.handler.execCount
  publish('execute_input', { code: msg.content.code, execution_count: count() + 1 })
  current = {
    result: (data) => publish('execute_result', { execution_count: count(), data, metadata: {} }),
    error: (content) => publish('error', content),
  }
  const writeStream = (name, text) => publish('stream', { name, text })
  const writeDisplayData = (data, update) => publish(update ? 'update_display_data' : 'display_data', data)
  let content
  try {
    content = await this.handler.handleExecute(msg.content, writeStream, writeDisplayData)
  } finally {
    current = null
  }
  // tslab aborts whatever arrives within 200 ms of an error (its execQueue.reset(200)); a client
  // that asked not to stop on errors (the template's server does) gets the next one run
  if (content.status === 'error' && msg.content.stop_on_error === false) this.handler.execQueue.reset()
  const reply = msg.createReply()
  reply.header.msg_type = 'execute_reply'
  reply.content = content
  reply.signAndSend(this.connInfo.key, sock)
}

main.startKernel({ configPath: args[at + 1], enableFindLocal: false, jsKernel: args.includes('--js') })
