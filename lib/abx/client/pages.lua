-- abx.client.pages: the one loop that follows a paged list to its end, shared by every list of
-- the object model (Connection:list, list_snapshots, abx.client.template.list, the OpenSandbox
-- adapter's lists). A platform that ignores the next token answers the first page again and
-- again with a next token (CubeSandbox#1792): a loop that trusts it asks forever (one test sent
-- about 253,000 list requests in 300 s and failed at its deadline, with nothing about paging).
-- So every page is checked as it comes, and the loop has a bound:
--   - a next token seen before (the same token twice, or one that comes back) is a Protocol error
--     at once, naming the token and the number of pages read;
--   - an id on an earlier page again is a Protocol error: with cursor pagination any such id (a
--     cursor is a position in a stable order, docs/protocol/e2b-control-plane.md §2); with page
--     numbers a page that holds nothing new (sandboxes created between two pages shift the
--     numbered pages, so some repeats are honest; a whole page of them is not);
--   - more than MAX_PAGES pages is a Protocol error.
-- Errors: Protocol (status 200, `request` the page's "METHOD path"), and what `fetch` raises.

local errmap = require("abx.client.errmap")

local M = {}

-- At most this many pages in one list: 1,000 × E2B's largest page (100) is 100,000 sandboxes.
M.MAX_PAGES = 1000

-- A token as the error quotes it: at most 80 characters.
local function quoted(token)
  local s = tostring(token)
  if #s > 80 then s = s:sub(1, 77) .. "..." end
  return string.format("%q", s)
end

--- Follows a paged list: calls fetch(token) (nil for the first page) until it returns no next
--- token, and returns every item in order. See the file header for the checks.
--- Raises: Protocol (a repeated next token, a repeated id, more than MAX_PAGES pages), naming
--- `request`; what `fetch` raises.
---@param request string "METHOD path" of the pages, for the errors (e.g. "GET /v2/sandboxes")
---@param style "cursor"|"page" what a repeated id means (see the file header)
---@param fetch fun(token: string|nil): table[], string|nil one page: its items and next token
---@param id_of? fun(item: table): string|nil an item's id (nil: ids are not checked)
---@return table[]
function M.follow(request, style, fetch, id_of)
  local all, tokens, ids = {}, {}, {}
  local token, pages = nil, 0
  while true do
    local items, next_token = fetch(token)
    pages = pages + 1
    -- the token first: a platform that ignores it repeats both, and the token is what to name
    if next_token ~= nil and tokens[next_token] then
      errmap.raise("Protocol", 200, string.format("next token %s repeats after %d pages (first "
        .. "given by page %d): the platform ignores the token; stopped instead of asking "
        .. "forever", quoted(next_token), pages, tokens[next_token]), { request = request })
    end
    local new, repeated = 0, nil
    for _, it in ipairs(items) do
      local id = id_of and id_of(it)
      if id ~= nil and ids[id] then
        repeated = repeated or id
        if style == "cursor" then
          errmap.raise("Protocol", 200, string.format("page %d repeats id %s of page %d (the "
            .. "platform ignores the next token, or its cursor is not stable)", pages, quoted(id),
            ids[id]), { request = request })
        end
      else
        if id ~= nil then ids[id] = pages end
        new = new + 1
        all[#all + 1] = it
      end
    end
    if repeated and new == 0 then
      errmap.raise("Protocol", 200, string.format("page %d holds only items of earlier pages (id "
        .. "%s of page %d; the platform ignores the page number)", pages, quoted(repeated),
        ids[repeated]), { request = request })
    end
    if next_token == nil then return all end
    if pages >= M.MAX_PAGES then
      errmap.raise("Protocol", 200, string.format("more than %d pages (next token %s): stopped "
        .. "(abx.client.pages.MAX_PAGES)", M.MAX_PAGES, quoted(next_token)), { request = request })
    end
    tokens[next_token] = pages
    token = next_token
  end
end

return M
