-- Recipe validation (abx.run.recipe.load), every error class with its exact message: the file,
-- the key, the problem and the fix (valid keys listed); and the mapping of each step kind, each
-- ready_cmd helper and the content tag. Runs with tests/templates/unit.yaml (no sandbox is made).
-- Expected: every test passes.
-- args: -j 1 --config tests/templates/unit.yaml
local t = require("abx.test")
local recipe = require("abx.run.recipe")

local ROOT -- made by the first folder()

local function sh(cmd) assert(os.execute(cmd), cmd) end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local n = 0
-- A fresh template folder <ROOT>/<k>/<name> with template.yaml = yaml, <name>.lua, and `extra`
-- (a shell snippet run inside the folder); returns the folder and its template.yaml path.
local function folder(yaml, extra, name)
  if not ROOT then
    ROOT = os.tmpname()
    os.remove(ROOT)
  end
  n = n + 1
  name = name or "tpl"
  local dir = ROOT .. "/" .. n .. "/" .. name
  sh("mkdir -p '" .. dir .. "'")
  if yaml then write(dir .. "/template.yaml", yaml) end
  write(dir .. "/" .. name .. ".lua", "-- script\n")
  if extra then sh("cd '" .. dir .. "' && " .. extra) end
  return dir, dir .. "/template.yaml"
end

local function err_of(dir)
  local ok, e = pcall(recipe.load, dir)
  t.eq(ok, false)
  t.eq(e.kind, "InvalidArgument")
  return e.message
end

local function pat(s) return (s:gsub("%p", "%%%0")) end

-- The message without the line after the file name (tested on its own below).
local function expect(yaml, message_fn, extra, name)
  local dir, file = folder(yaml, extra, name)
  local got = err_of(dir):gsub("^(" .. pat(file) .. "):%d+:", "%1:")
  t.eq(got, message_fn(file, dir))
end

local VALID = "valid: from, from_image, cpu, memory, tags, steps, start_cmd, ready_cmd, "
  .. "ready_timeout, prebuilt"
local KINDS = "apt, pip, npm, copy, run, env, workdir, user"

t.test("unknown, missing and conflicting top-level keys name file, key and the valid keys", function()
  expect("from: base\nstep: []\n", function(f)
    return f .. ": step: unknown key; remove it or use one of the valid keys (" .. VALID .. ")" end)
  expect("steps: [{run: x}]\n", function(f)
    return f .. ": from: missing; give exactly one of from (a template name, e.g. base) and "
      .. "from_image (a Debian image, e.g. debian:bookworm)" end)
  expect("from: base\nfrom_image: debian:bookworm\nsteps: [{run: x}]\n", function(f)
    return f .. ": from: from and from_image are both given; keep exactly one" end)
  expect("- from: base\n", function(f)
    return f .. ": top level: must be a mapping of recipe keys (" .. VALID .. ")" end)
  expect("from: 3\nsteps: [{run: x}]\n", function(f)
    return f .. ": from: must be a non-empty string, got number 3 (e.g. base)" end)
end)

t.test("cpu, memory and tags are checked", function()
  expect("from: base\ncpu: 1.5\nsteps: [{run: x}]\n", function(f)
    return f .. ": cpu: must be a positive whole number, got number 1.5 (e.g. 2)" end)
  expect("from: base\nmemory: \"1024\"\nsteps: [{run: x}]\n", function(f)
    return f .. ": memory: must be a positive whole number, got \"1024\" (e.g. 1024)" end)
  expect("from: base\ntags: [v1, \"bad tag\"]\nsteps: [{run: x}]\n", function(f)
    return f .. ": tags[2]: \"bad tag\" is not a tag: letters, digits, '.', '_' and '-'" end)
  expect("from: base\ntags: [default]\nsteps: [{run: x}]\n", function(f)
    return f .. ": tags[1]: \"default\" is given by abxlua itself (default on deploy, "
      .. "abx-<hash> on build); remove it" end)
end)

t.test("steps: a non-empty list of one-key mappings of a known kind", function()
  expect("from: base\n", function(f)
    return f .. ": steps: missing; give a list of steps (kinds: " .. KINDS .. ")" end)
  expect("from: base\nsteps: []\n", function(f)
    return f .. ": steps: must be a non-empty list of steps, got a list" end)
  expect("from: base\nsteps: [\"make\"]\n", function(f)
    return f .. ": steps[1]: must be a one-key mapping, got \"make\" (e.g. - run: \"make\"; kinds: "
      .. KINDS .. ")" end)
  expect("from: base\nsteps:\n  - run: x\n  - shell: y\n", function(f)
    return f .. ": steps[2].shell: unknown step kind; use one of the valid keys (valid: " .. KINDS
      .. "; run may add user)" end)
  expect("from: base\nsteps:\n  - apt: [a]\n    env: {A: \"1\"}\n", function(f)
    return f .. ": steps[1]: has apt and env; a step is exactly one of " .. KINDS
      .. " (only run may add user)" end)
  expect("from: base\nsteps:\n  - apt: []\n", function(f)
    return f .. ": steps[1].apt: must be a non-empty list of strings, got a list (e.g. "
      .. "[python3-flask])" end)
  expect("from: base\nsteps:\n  - pip: [requests, 2]\n", function(f)
    return f .. ": steps[1].pip[2]: must be a non-empty string, got number 2 (quote numbers: \"1.0\")" end)
  expect("from: base\nsteps:\n  - env: {PORT: 8080}\n", function(f)
    return f .. ": steps[1].env.PORT: must be a string, got number 8080 (quote it: PORT: \"8080\")" end)
  expect("from: base\nsteps:\n  - env: {\"1X\": \"a\"}\n", function(f)
    return f .. ": steps[1].env.1X: is not a variable name ([A-Za-z_][A-Za-z0-9_]*)" end)
  expect("from: base\nsteps:\n  - workdir: [a]\n", function(f)
    return f .. ": steps[1].workdir: must be a non-empty string, got a list (e.g. /opt/app)" end)
  expect("from: base\nsteps:\n  - run: x\n    user: 0\n", function(f)
    return f .. ": steps[1].user: must be a non-empty string, got number 0 (e.g. root)" end)
end)

t.test("copy: keys, mode, and a src that exists inside the folder", function()
  expect("from: base\nsteps:\n  - copy: {src: a, dest: /x, owner: u}\n", function(f)
    return f .. ": steps[1].copy.owner: unknown key; remove it or use one of the valid keys "
      .. "(valid: src, dest, user, mode)" end, "touch a")
  expect("from: base\nsteps:\n  - copy: {dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: must be a non-empty string, got nil nil (e.g. server/)" end)
  expect("from: base\nsteps:\n  - copy: {src: a, dest: /x, mode: 755}\n", function(f)
    return f .. ": steps[1].copy.mode: must be an octal mode in quotes, e.g. \"0755\", got number 755" end,
    "touch a")
  expect("from: base\nsteps:\n  - copy: {src: /etc/passwd, dest: /x}\n", function(f, d)
    return f .. ": steps[1].copy.src: \"/etc/passwd\" is absolute; give a path relative to the "
      .. "template folder " .. d end)
  expect("from: base\nsteps:\n  - copy: {src: sub/../../x, dest: /x}\n", function(f, d)
    return f .. ": steps[1].copy.src: \"sub/../../x\" leaves the template folder " .. d
      .. " (..); copy only files inside it" end)
  expect("from: base\nsteps:\n  - copy: {src: nope/, dest: /x}\n", function(f, d)
    return f .. ": steps[1].copy.src: \"nope/\" does not exist in the template folder " .. d
      .. "; create it or fix the path" end)
  expect("from: base\nsteps:\n  - copy: {src: \"*.py\", dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: \"*.py\" has glob characters; name a file or directory "
      .. "(glob patterns are not supported)" end)
  expect("from: base\nsteps:\n  - copy: {src: ./, dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: \"./\" is the template folder itself; name a file or "
      .. "directory inside it" end)
  expect("from: base\nsteps:\n  - copy: {src: out, dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: \"out\" is a symlink; name the file or directory itself" end,
    "ln -s /etc out")
  expect("from: base\nsteps:\n  - copy: {src: via/passwd, dest: /x}\n", function(f, d)
    return f .. ": steps[1].copy.src: \"via/passwd\" resolves to /etc/passwd, outside the template "
      .. "folder " .. d .. " (a symlink leads out); copy only files inside it" end, "ln -s /etc via")
  expect("from: base\nsteps:\n  - copy: {src: app, dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: app/leak is a symlink to ../../../etc/passwd, outside the "
      .. "template folder; make it point inside the folder or copy the file itself" end,
    "mkdir app && ln -s ../../../etc/passwd app/leak")
  expect("from: base\nsteps:\n  - copy: {src: app, dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: app/d2 is a symlink to a directory (d); the E2B SDK would "
      .. "archive the directory's entries under the link; copy the directory itself" end,
    "mkdir -p app/d && ln -s d app/d2")
  expect("from: base\nsteps:\n  - copy: {src: app, dest: /x}\n", function(f)
    return f .. ": steps[1].copy.src: the template folder has a .dockerignore, which the E2B SDK "
      .. "would apply and abxlua does not; remove it" end, "mkdir app && touch .dockerignore")
end)

t.test("ready_cmd: a string or exactly one helper", function()
  expect("from: base\nsteps: [{run: x}]\nready_cmd: {port: 80, file: /a}\n", function(f)
    return f .. ": ready_cmd: has both file and port; give exactly one of port, url, process, "
      .. "file, timeout" end)
  expect("from: base\nsteps: [{run: x}]\nready_cmd: {tcp: 80}\n", function(f)
    return f .. ": ready_cmd.tcp: unknown key; remove it or use one of the valid keys (valid: "
      .. "port, url, process, file, timeout; status only with url)" end)
  expect("from: base\nsteps: [{run: x}]\nready_cmd: {port: 70000}\n", function(f)
    return f .. ": ready_cmd.port: must be a port number 1..65535, got number 70000" end)
  expect("from: base\nsteps: [{run: x}]\nready_cmd: {file: /a, status: 200}\n", function(f)
    return f .. ": ready_cmd.status: goes with url only (the expected HTTP status); remove it" end)
  expect("from: base\nsteps: [{run: x}]\nready_cmd: [a]\n", function(f)
    return f .. ": ready_cmd: must be a command string or a mapping with one of port, url, "
      .. "process, file, timeout, got a list" end)
end)

t.test("ready_timeout: seconds in 1..600, sent as readyTimeout in whole seconds", function()
  local function bad(v, shown)
    expect("from: base\nsteps: [{run: x}]\nready_cmd: \"true\"\nready_timeout: " .. v .. "\n",
      function(f)
        return f .. ": ready_timeout: must be a number of seconds from 1 to 600 (how long "
          .. "ready_cmd may take at each sandbox start), got " .. shown
          .. " (e.g. ready_timeout: 240)" end)
  end
  bad("0", "number 0")
  bad("-5", "number -5")
  bad("601", "number 601")
  bad("\"120\"", "\"120\"")
  bad("[1]", "a list")
  local d = folder("from: base\nsteps: [{run: x}]\nready_cmd: \"true\"\nready_timeout: 2.5\n")
  local r = recipe.load(d)
  t.eq(r.build.readyTimeout, 3)
  t.eq(math.type(r.build.readyTimeout), "integer")
  d = folder("from: base\nsteps: [{run: x}]\nready_timeout: 600\n")
  t.eq(recipe.load(d).build.readyTimeout, 600)
  d = folder("from: base\nsteps: [{run: x}]\nready_cmd: \"true\"\n")
  t.eq(recipe.load(d).build.readyTimeout, nil, "absent: not sent (the platform's default)")
  t.neq(recipe.load(d).tag, r.tag)
end)

t.test("the folder, template.yaml, the script and YAML syntax errors", function()
  expect("from: base\nsteps: [{run: x}]\n", function(_, d)
    return d .. ": folder: \"Bad_Name\" is not a template name: lower-case letters, digits, '-' "
      .. "and '_', starting with a letter or digit; rename the folder" end, nil, "Bad_Name")
  expect(nil, function(f, _)
    return f .. ": file: missing; a template folder holds template.yaml (the recipe) and tpl.lua "
      .. "(its scenario)" end)
  expect("from: base\nsteps: [{run: x}]\n", function(f, d)
    return f .. ": script: " .. d .. "/tpl.lua is missing; every template folder has its scenario "
      .. "script <name>.lua" end, "rm tpl.lua")
  local dir = folder("from: base\nsteps:\n  - run: [a\n")
  t.match(err_of(dir), "^" .. pat(dir) .. "/template%.yaml:4:1: ")
end)

t.test("an error names the line of the key it is about", function()
  local yaml = "# a comment\nfrom: base\nsteps:\n  - run: x\n  - copy: {src: a,\n"
    .. "            dest: /x, mode: 9}\n  - env: {A: \"1\"}\n    weird: 1\n"
  local dir, file = folder(yaml, "touch a")
  t.match(err_of(dir), "^" .. pat(file) .. ":6: steps%[2%]%.copy%.mode: must be an octal mode")
  write(file, yaml:gsub("mode: 9", "mode: \"0644\""))
  t.match(err_of(dir), "^" .. pat(file) .. ":8: steps%[3%]%.weird: unknown step kind")
  write(file, "from: base\nsteps: [{run: x}]\ntags: [ok, \"n o\"]\ncolour: red\n")
  t.match(err_of(dir), "^" .. pat(file) .. ":4: colour: unknown key")
  write(file, "from: base\nsteps: [{run: x}]\ntags: [ok, \"n o\"]\n")
  t.match(err_of(dir), "^" .. pat(file) .. ":3: tags%[2%]: \"n o\" is not a tag")
  write(file, "steps: [{run: x}]\n")
  t.match(err_of(dir), "^" .. pat(file) .. ": from: missing")
end)

t.test("each step kind and ready_cmd helper maps to the SDK's step", function()
  local dir = folder("from_image: debian:bookworm\nsteps:\n  - apt: python3-flask\n"
    .. "  - run: [a, b]\n  - user: root\nstart_cmd: srv\nready_cmd: {timeout: 2.5}\n")
  local r = recipe.load(dir)
  t.eq(r.build.fromImage, "debian:bookworm")
  t.eq(r.build.fromTemplate, nil)
  t.eq(r.build.steps[1].args, { "apt-get update && DEBIAN_FRONTEND=noninteractive "
    .. "DEBCONF_NOWARNINGS=yes apt-get install -y python3-flask", "root" })
  t.eq(r.build.steps[2].args, { "a && b" })
  t.eq(r.build.steps[3], { type = "USER", args = { "root" }, force = false })
  t.eq(r.build.readyCmd, "sleep 2")
  t.eq(r.build.startCmd, "srv")
  t.match(r.tag, "^abx%-%x%x%x%x%x%x%x%x%x%x%x%x$")
  local helpers = {
    ["{port: 8080}"] = '[ -n "$(ss -Htuln sport = :8080)" ]',
    ["{url: \"http://x/a b\", status: 204}"] = "curl -s -o /dev/null -w \"%{http_code}\" "
      .. "'http://x/a b' | grep -q \"204\"",
    ["{process: server.py}"] = "pgrep server.py > /dev/null",
    ["{file: /tmp/ready}"] = "[ -f /tmp/ready ]",
    ["\"true\""] = "true",
  }
  for yaml, want in pairs(helpers) do
    local d = folder("from: base\nsteps: [{run: x}]\nready_cmd: " .. yaml .. "\n")
    t.eq(recipe.load(d).build.readyCmd, want)
  end
end)

t.test("the content tag follows the recipe and its files", function()
  local dir = folder("from: base\nsteps:\n  - copy: {src: a.txt, dest: /a}\n", "echo 1 > a.txt")
  local tag1 = recipe.load(dir).tag
  t.eq(recipe.load(dir).tag, tag1)
  sh("echo 2 > '" .. dir .. "/a.txt'")
  local tag2 = recipe.load(dir).tag
  t.neq(tag2, tag1)
  write(dir .. "/template.yaml", "from: base\ncpu: 2\nsteps:\n  - copy: {src: a.txt, dest: /a}\n")
  t.neq(recipe.load(dir).tag, tag2)
  sh("rm -rf '" .. ROOT .. "'")
end)

t.test("prebuilt: true stands alone and is the provider's own template", function()
  local dir = folder("prebuilt: true\n", nil, "code-interpreter-v1")
  local r = recipe.load(dir)
  t.eq(r.prebuilt, true)
  t.eq(r.name, "code-interpreter-v1")
  t.eq(r.build, nil, "nothing is built")
  t.eq(r.tag, nil)
  expect("prebuilt: yes please\n", function(f)
    return f .. ": prebuilt: must be true (the provider's own template of this name), got "
      .. "\"yes please\"; for a template built from this folder remove it" end)
  expect("prebuilt: true\nfrom: base\n", function(f)
    return f .. ": from: cannot go with prebuilt: true (nothing is built for a prebuilt template); "
      .. "remove it, or remove prebuilt to build the template from this recipe" end)
end)
