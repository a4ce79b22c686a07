// The SDK way of `make bench`: the official e2b package (2.51.0, pinned in package.json and
// package-lock.json, `npm ci` here), unmodified, against the harness's `abxlua serve` in url mode
// (E2B_API_KEY, E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN, as tests/conformance/run.sh gives it).
//   node bench.mjs <job>     job: ttfc cmd stream_collect stream_cb file_big files_small fanout
// The same workloads as tests/bench/abx/bench.lua, sizes from the same variables (BENCH_N,
// BENCH_BYTES, BENCH_SANDBOXES, BENCH_CMDS, BENCH_FILEOPS); each result is verified (exit code,
// stdout, length, sha256) and a mismatch exits 1, so the sample is a failure, not a number.
// Writes {"ok": true, "metrics": {name: [values]}} to BENCH_OUT.
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Sandbox } from 'e2b'

const job = process.argv[2]
const param = (name) => {
  const v = Number(process.env[name])
  if (!process.env[name] || !Number.isFinite(v)) throw new Error(`${name} is not set (run through tests/bench/bench.py)`)
  return v
}
const now = () => Number(process.hrtime.bigint()) / 1e6 // ms, monotonic
const emit = (metrics) => writeFileSync(process.env.BENCH_OUT, JSON.stringify({ ok: true, metrics }) + '\n')
const fail = (msg) => { throw new Error(msg) }
const create = (timeoutMs = 600_000) => Sandbox.create('base', { timeoutMs })
const checkTrue = (r, what) => {
  if (r.exitCode !== 0 || r.stdout !== '' || r.stderr !== '') fail(`${what}: exit ${r.exitCode}, stdout ${JSON.stringify(r.stdout)}`)
}
const MiB = 1048576
const LINE = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_' // 63 bytes + "\n"
const streamCmd = (n) => `yes ${LINE} | head -c ${n}`

// Block i of the big file: "%08d" of i, then the fixed pattern of bench.lua (same bytes).
function bigData (n) {
  const buf = Buffer.alloc(n)
  const pat = Buffer.alloc(MiB)
  for (let j = 8; j < MiB; j++) pat[j] = ((j * 131) ^ (j >> 7)) & 0xff
  for (let i = 0; i < n / MiB; i++) {
    pat.write(String(i).padStart(8, '0'), 0, 'latin1')
    pat.copy(buf, i * MiB)
  }
  return buf
}

const jobs = {
  async ttfc () {
    const n = param('BENCH_N'); const ttfc = []; const ck = []
    for (let i = 0; i < n; i++) {
      const t0 = now()
      const s = await create(300_000)
      const r = await s.commands.run('true')
      ttfc.push(now() - t0)
      checkTrue(r, 'first command')
      if (!(await s.kill())) fail('kill returned false')
    }
    for (let i = 0; i < n; i++) {
      const t0 = now()
      const s = await create(300_000)
      const killed = await s.kill()
      ck.push(now() - t0)
      if (!killed) fail('kill returned false')
    }
    return { ttfc_ms: ttfc, create_kill_ms: ck }
  },
  async cmd () {
    const n = param('BENCH_N'); const lat = []
    const s = await create()
    checkTrue(await s.commands.run('true'), 'warm-up command')
    for (let i = 0; i < n; i++) {
      const t0 = now()
      const r = await s.commands.run('true')
      lat.push(now() - t0)
      checkTrue(r, `command ${i}`)
    }
    await s.kill()
    return { cmd_ms: lat }
  },
  async stream_collect () {
    const n = param('BENCH_BYTES')
    const s = await create()
    const t0 = now()
    const r = await s.commands.run(streamCmd(n), { timeoutMs: 600_000 })
    const dt = (now() - t0) / 1000
    if (r.exitCode !== 0 || r.stderr !== '') fail(`exit ${r.exitCode} stderr ${r.stderr}`)
    if (r.stdout.length !== n) fail(`stdout length ${r.stdout.length}, want ${n}`)
    for (let off = 0; off + 64 <= n; off += MiB) {
      if (r.stdout.slice(off, off + 64) !== LINE + '\n') fail(`stdout differs at byte ${off}`)
    }
    await s.kill()
    return { stream_mib_s: [n / MiB / dt] }
  },
  async stream_cb () {
    const n = param('BENCH_BYTES'); let got = 0; let bad = null
    const s = await create()
    const t0 = now()
    // keeps nothing itself (the SDK still collects stdout into the result, as it always does)
    const r = await s.commands.run(streamCmd(n), {
      timeoutMs: 600_000,
      onStdout: (chunk) => {
        const k = got % 64
        const want = k === 63 ? '\n' : LINE[k]
        if (bad === null && chunk[0] !== want) bad = got
        got += chunk.length
      },
    })
    const dt = (now() - t0) / 1000
    if (r.exitCode !== 0) fail(`exit ${r.exitCode}`)
    if (got !== n) fail(`onStdout saw ${got} bytes, want ${n}`)
    if (bad !== null) fail(`a chunk is off the pattern at offset ${bad}`)
    await s.kill()
    return { stream_cb_mib_s: [n / MiB / dt] }
  },
  async file_big () {
    const n = param('BENCH_BYTES')
    const s = await create()
    let data = bigData(n)
    const sum = createHash('sha256').update(data).digest('hex')
    let t0 = now()
    await s.files.write('/tmp/big.bin', data.buffer.slice(data.byteOffset, data.byteOffset + data.length))
    const w = (now() - t0) / 1000
    data = null
    t0 = now()
    const back = await s.files.read('/tmp/big.bin', { format: 'bytes' })
    const r = (now() - t0) / 1000
    if (back.length !== n) fail(`read-back length ${back.length}, want ${n}`)
    if (createHash('sha256').update(back).digest('hex') !== sum) fail('read-back sha256 differs')
    await s.kill()
    return { write_mib_s: [n / MiB / w], read_mib_s: [n / MiB / r] }
  },
  async files_small () {
    const n = param('BENCH_N')
    const s = await create()
    const name = (i) => `f${String(i).padStart(4, '0')}.txt`
    let t0 = now()
    for (let i = 1; i <= n; i++) await s.files.write(`/home/user/small/${name(i)}`, `small file ${i}\n`)
    const w = (now() - t0) / 1000
    t0 = now()
    const entries = await s.files.list('/home/user/small')
    const l = now() - t0
    if (entries.length !== n) fail(`${entries.length} entries listed, want ${n}`)
    const seen = new Map(entries.map((e) => [e.name, e.size]))
    for (let i = 1; i <= n; i++) {
      if (seen.get(name(i)) !== `small file ${i}\n`.length) fail(`size of ${name(i)}: ${seen.get(name(i))}`)
    }
    await s.kill()
    return { small_write_s: [w], small_list_ms: [l] }
  },
  async fanout () {
    const nsb = param('BENCH_SANDBOXES'); const ncmd = param('BENCH_CMDS'); const nops = param('BENCH_FILEOPS')
    const t0 = now()
    const one = async (i) => {
      const s = await create()
      try {
        for (let j = 1; j <= ncmd; j++) {
          const r = await s.commands.run(`echo c${j}`)
          if (r.exitCode !== 0 || r.stdout !== `c${j}\n`) fail(`command ${j}: ${JSON.stringify(r.stdout)}`)
        }
        for (let k = 1; k <= Math.floor(nops / 5); k++) {
          const p = `/tmp/fan-${k}.txt`; const body = `sandbox ${i} op ${k}\n`
          await s.files.write(p, body)
          if ((await s.files.read(p)) !== body) fail(`read-back of ${p} differs`)
          if ((await s.files.getInfo(p)).size !== body.length) fail(`size of ${p}`)
          if (!(await s.files.list('/tmp')).some((e) => e.name === `fan-${k}.txt`)) fail(`${p} not listed`)
          await s.files.remove(p)
        }
      } finally {
        await s.kill()
      }
    }
    const res = await Promise.allSettled(Array.from({ length: nsb }, (_, i) => one(i + 1)))
    const wall = (now() - t0) / 1000
    const bad = res.filter((r) => r.status === 'rejected')
    if (bad.length) fail(`${bad.length} of ${nsb} sandboxes failed, e.g. ${bad[0].reason}`)
    return { fanout_s: [wall] }
  },
}

if (!jobs[job]) {
  console.error(`bench.mjs: job must be one of ${Object.keys(jobs).join(', ')}, not '${job}'`)
  process.exit(2)
}
try {
  emit(await jobs[job]())
} catch (e) {
  console.error(`bench.mjs ${job}: ${e?.stack ?? e}`)
  process.exit(1)
}
