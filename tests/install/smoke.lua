-- The scenario of the install checks (prefix.sh, deb.sh, dockerfile.sh): copied into an empty
-- directory and run there with the installed binary against the local provider. The second test
-- needs the programs the .deb Depends on beyond bwrap: a sandbox link is made with `ip` and its
-- rules loaded with `nft` (platform/net/network.c; without them serve runs sandboxes loopback only).
local t = require("abx.test")

t.test("an installed abxlua runs a command in a local sandbox", function(ctx)
  local r = ctx.base_sandbox.commands:run("echo hello from $(uname -s)")
  t.eq(r.exit_code, 0)
  t.eq(r.stdout, "hello from Linux\n")
end)

t.test("a local sandbox has a network link and takes outbound rules", function(ctx)
  local sbx = ctx.base_sandbox
  local info = sbx:get_info()
  t.ok(info.abx_network and info.abx_network.host_address,
    "no sandbox link (abxNetwork.host_address): ip or nft missing? see the serve log")
  sbx:update_network({ deny_out = { "10.0.0.0/8" } })
  t.eq(sbx:get_info().network.deny_out[1], "10.0.0.0/8")
end)
