-- debian-hello.lua: scenario of the debian-hello fixture template (tests/templates/local): a
-- sandbox of a fromImage root is Debian's (its own /usr, not the host's), with the apt package,
-- the start command's output, the recipe's env, and envd's files API.
local t = require("abx.test")

t.test("debian-hello runs Debian's hello from its own root", function(ctx)
  local r = ctx.template_sandbox.commands:run(
    "cat /opt/greeting /tmp/started; echo $DEBIAN_HELLO; head -c 3 /etc/debian_version; echo;"
      .. " test -e /usr/bin/cmake && echo host-usr || echo own-usr")
  t.eq(r.stdout, "Hello, world!\nHello, world!\n1\n12.\nown-usr\n")
end)

t.test("debian-hello's envd writes and reads files as user", function(ctx)
  local sbx = ctx.template_sandbox
  sbx.files:write("/home/user/note.txt", "from the files API\n")
  t.eq(sbx.files:read("/home/user/note.txt"), "from the files API\n")
  t.eq(sbx.commands:run("stat -c %U /home/user/note.txt").stdout, "user\n")
end)
