-- abx.client.template_files: the files of a template COPY step, as the E2B SDK 2.51 sees them:
-- the list of paths (getAllFilesInPath), their hash (calculateFilesHash) and the upload archive
-- (spoolTarArchive). Sources: sdk-src/template/utils.ts; docs/protocol/e2b-v2-and-peers.md §2 item 2.
--
--   local tf = require("abx.client.template_files")
--   local paths = tf.paths(ctx_dir, "server/")            -- {"server", "server/app.py", ...}
--   local hash = tf.files_hash(ctx_dir, "server/", "/opt/app/")
--   local size = tf.tar_gz(ctx_dir, "server/", "/tmp/x.tar.gz")
--
-- What the SDK does, and so this module:
--   * the paths are the source itself and, for a directory, everything below it (dot files too;
--     a symlinked directory is an entry, never descended into), sorted by path (bytewise);
--   * hash = sha256 of "COPY <src> <dest>", then per path: the relative POSIX path, the decimal
--     st_mode (file type bits included) and st_size of lstat, and then the link target (symlinks:
--     never followed, the SDK's resolveSymlinks=false default) or the content (regular files);
--   * the archive is a gzip-compressed tar of exactly those paths, each entry alone (noDirRecurse),
--     symlinks as links.
-- Not supported, and refused by the recipe (abx.run.recipe): glob patterns in src, a
-- .dockerignore in the context directory, resolveSymlinks = true.
local core = require("abx.core")
local errmap = require("abx.client.errmap")

local M = {}

-- `src` as a path relative to the context: "./" and trailing "/" dropped.
local function clean(src)
  local s = src:gsub("^%./", ""):gsub("/+$", "")
  if s == "" then s = "." end
  return s
end

--- Every path the SDK's getAllFilesInPath(src, ctx) gives, relative to `ctx`, sorted bytewise.
--- Raises: InvalidArgument when src does not exist or a directory cannot be read.
---@param ctx string the context directory (the template folder)
---@param src string relative file or directory
---@return string[] paths
function M.paths(ctx, src)
  local rel = clean(src)
  local top = ctx .. "/" .. rel
  local st, err = core.lstat(top)
  if not st then errmap.raise("InvalidArgument", 0, "copy src " .. src .. ": " .. err) end
  local out = {}
  if rel ~= "." then out[1] = rel end
  if st.type == "dir" then
    local function walk(dir_rel)
      local full = dir_rel == "." and ctx or (ctx .. "/" .. dir_rel)
      local names, rerr = core.readdir(full)
      if not names then errmap.raise("InvalidArgument", 0, "copy src " .. src .. ": " .. rerr) end
      for _, n in ipairs(names) do
        local p = dir_rel == "." and n or (dir_rel .. "/" .. n)
        out[#out + 1] = p
        local cst = core.lstat(ctx .. "/" .. p)
        if cst and cst.type == "dir" then walk(p) end
      end
    end
    walk(rel)
  end
  table.sort(out)
  return out
end

--- The SDK's calculateFilesHash(src, dest, ctx, [], false): lower-case sha256 hex.
--- Raises: InvalidArgument (src missing, unreadable file, a path that is not a regular file,
--- directory or symlink).
---@param ctx string
---@param src string as written in the recipe (it is part of the hash)
---@param dest string as written in the recipe
---@return string hash, string[] paths
function M.files_hash(ctx, src, dest)
  local h = core.sha256_new()
  h:update("COPY " .. src .. " " .. dest)
  local paths = M.paths(ctx, src)
  for _, p in ipairs(paths) do
    local full = ctx .. "/" .. p
    local st, err = core.lstat(full)
    if not st then errmap.raise("InvalidArgument", 0, "copy src " .. src .. ": " .. err) end
    if st.type == "other" then
      errmap.raise("InvalidArgument", 0, "copy src " .. src .. ": " .. p
        .. " is not a regular file, directory or symlink")
    end
    h:update(p)
    h:update(string.format("%d", st.mode))
    h:update(string.format("%d", st.size))
    if st.type == "link" then
      h:update(st.target)
    elseif st.type == "file" then
      h:update_file(full)
    end
  end
  return h:hex(), paths
end

--- Writes the upload archive of a COPY step (the SDK's spoolTarArchive with gzip) to `out`.
--- Returns its size in bytes (the PUT's exact Content-Length).
--- Raises: InvalidArgument (unreadable paths, out not writable).
---@param ctx string
---@param src string
---@param out string
---@return integer size
function M.tar_gz(ctx, src, out)
  return core.tar_gz(ctx, M.paths(ctx, src), out)
end

return M
