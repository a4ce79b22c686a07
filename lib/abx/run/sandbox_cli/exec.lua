-- abx.run.sandbox_cli.exec: `abxlua sandbox exec ID -- CMD [ARG...]`: runs a command in the
-- sandbox through envd (process.Start, as the SDKs' commands.run) and exits with its exit code.
-- One CMD word is a shell command line as given (envd runs it with /bin/bash -l -c); several
-- words are each shell-quoted and joined, so `exec ID -- ls "a b"` lists the one file "a b".
-- stdout and stderr are streamed to ours as they arrive; with --json they are collected into
-- {sandbox_id, cmd, exit_code, stdout, stderr, error} instead. A command killed by a signal
-- (envd's exit code -1) exits 1 with its `error` ("signal: killed"). An interrupt (exit 2) or an
-- error while it runs kills the command in the sandbox (SIGKILL) before the CLI exits.
-- The sandbox is reached with connect (POST /sandboxes/{id}/connect): a paused sandbox is
-- resumed, and its TTL is extended to at least --ttl seconds from now, never shortened.
local a = require("abx.run.sandbox_cli.args")
local core = require("abx.core")

local M = {}

M.DESCRIPTION = "Run a command in a sandbox; exits with its exit code."

function M.configure(cmd)
  cmd:argument("id", "Sandbox id."):convert(a.sandbox_id)
  cmd:argument("cmd", "The command (after --): one word is a shell line, several are quoted."):args("+")
  cmd:option("--cwd", "Working directory.")
  cmd:option("--user", "User to run as (default envd's: user).")
  cmd:option("--env", "Environment variable KEY=VALUE (repeatable)."):count("*"):target("envs")
  cmd:option("--timeout", "Seconds the command may run; envd kills it then.", "60")
    :convert(a.seconds("--timeout"))
  cmd:option("--ttl", "The sandbox lives at least this many seconds from now.", "300")
    :convert(a.seconds("--ttl"))
end

---Quotes a word for bash: as is when it is only safe characters, else in single quotes.
---@param w string
---@return string
function M.quote(w)
  if w ~= "" and w:match("^[%w%%+,./:=@_%-]+$") then return w end
  return "'" .. w:gsub("'", "'\\''") .. "'"
end

---The shell line of the words.
---@param words string[]
---@return string
function M.command_line(words)
  if #words == 1 then return words[1] end
  local q = {}
  for i, w in ipairs(words) do q[i] = M.quote(w) end
  return table.concat(q, " ")
end

function M.execute(args, env)
  local envs, err = a.pairs(args.envs, "--env")
  if not envs then return nil, err end
  local line = M.command_line(args.cmd)
  local sbx = env:open():connect(args.id, { timeout = args.ttl })
  local opts = { cwd = args.cwd, user = args.user, timeout = args.timeout }
  if next(envs) then opts.envs = envs end
  if not env.json then
    opts.keep_output = false
    opts.on_stdout = function(chunk) core.write(chunk, true) end
    opts.on_stderr = function(chunk) core.ewrite(chunk, true) end
  end
  -- started in background so that an interrupt (or any error) can kill the command: envd keeps
  -- a process whose stream was dropped running until its own timeout
  opts.background = true
  local h = sbx.commands:run(line, opts)
  local r
  env:finally(function()
    if not r then h:kill() end
  end)
  r = h:wait()
  env:emit({ sandbox_id = args.id, cmd = line, exit_code = r.exit_code, stdout = r.stdout,
    stderr = r.stderr, error = r.error })
  if r.exit_code < 0 or r.exit_code > 255 then
    if not env.json then env:say("the command ended without an exit code: " .. tostring(r.error)) end
    return 1
  end
  return r.exit_code
end

return M
