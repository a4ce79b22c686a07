-- abx.run.sandbox_cli.create: `abxlua sandbox create`: a sandbox tagged e2e=<run id> (the run id
-- is E2E_RUN_ID, --run-id, or a new `cli-<hex>`), so `abxlua cleanup --run-id ID` finds it.
-- JSON: {sandbox_id, template_id, run_id, metadata, timeout, envd_version, domain}.
-- An interrupt after the platform created the sandbox but before it was reported kills it.
local a = require("abx.run.sandbox_cli.args")
local common = require("abx.run.sandbox_cli.common")

local M = {}

M.DESCRIPTION = "Create a sandbox (tagged e2e=<run id>); prints its id."

function M.configure(cmd)
  cmd:option("--template", "Template id or alias.", "base")
  cmd:option("--timeout", "TTL in seconds.", "300"):convert(a.seconds("--timeout"))
  cmd:option("--metadata", "Metadata KEY=VALUE (repeatable); e2e is the run tag."):count("*")
  cmd:option("--env", "Environment variable KEY=VALUE of every process (repeatable)."):count("*")
    :target("envs")
  cmd:option("--run-id", "The e2e tag value (default: E2E_RUN_ID, else a new cli-<hex>).")
end

function M.execute(args, env)
  local metadata, err = a.pairs(args.metadata, "--metadata",
    { e2e = "is the run tag: use --run-id" })
  if not metadata then return nil, err end
  local envs, eerr = a.pairs(args.envs, "--env")
  if not envs then return nil, eerr end
  if args.run_id then
    if not args.run_id:match("^[%w%-_]+$") then
      return nil, "--run-id may only contain letters, digits, '-' and '_'"
    end
    env.run_id = args.run_id
  end
  local conn = env:open()
  local sbx = conn:create({ template = args.template, timeout = args.timeout,
    metadata = metadata, envs = envs })
  -- owned until reported: an interrupt or an error before the answer is out kills it
  env:finally(function() if not env.emitted then conn:kill(sbx.id) end end)
  local info = sbx:get_info()
  env:emit({ sandbox_id = sbx.id, template_id = info.template_id, run_id = env.run_id,
    metadata = common.plain(info.metadata), timeout = args.timeout,
    envd_version = info.envd_version, domain = info.domain, end_at = info.end_at },
    string.format("%s\n", sbx.id))
  env:say(string.format("created %s (template %s, e2e=%s, ends %s)", sbx.id,
    tostring(info.template_id), env.run_id, tostring(info.end_at)))
  return 0
end

return M
