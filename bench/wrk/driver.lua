-- wrk driver for the pms benchmark (bench/lib.py passes the arguments after `--`).
-- args: method, path, body template ("" for none; "{{n}}" is replaced by a unique token),
--       unique ("1": a fresh Idempotency-Key per request), run tag (keeps tokens unique per run).
-- done() prints one line "BENCHJSON {...}" that bench/lib.py parses.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  method = args[1] or "GET"
  path = args[2] or "/"
  body_template = args[3] or ""
  unique = args[4] == "1"
  run_tag = args[5] or "r"
  tid = tid or 0
end

function request()
  local body = nil
  if unique or body_template ~= "" then
    counter = counter + 1
    local n = run_tag .. "t" .. tid .. "n" .. counter
    if unique then
      wrk.headers["Idempotency-Key"] = n
    end
    if body_template ~= "" then
      body = string.gsub(body_template, "{{n}}", n)
    end
  end
  return wrk.format(method, path, nil, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests": %d, "duration_us": %d, "bytes": %d, "connect_errors": %d, ' ..
    '"read_errors": %d, "write_errors": %d, "status_errors": %d, "timeouts": %d, ' ..
    '"p50_us": %.1f, "p90_us": %.1f, "p99_us": %.1f, "mean_us": %.1f, "max_us": %.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end
