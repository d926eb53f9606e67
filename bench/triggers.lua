-- wrk script: posts the pre-generated trigger bodies in turn, each request
-- with an X-Request-ID of its own, as real clients send them.
--
-- Arguments (after `--` on wrk's command line):
--   1. file of bodies, one JSON document a line
--   2. API key
--   3. a label that makes request ids unique across the runs of one benchmark

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

local bodies = {}
local label = ""
local sent = 0
local threads = 0

-- Runs in the main state, once per thread: numbers the threads so that their
-- request ids differ (it becomes the global `thread_id` of that thread).
function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end

function init(args)
  for line in io.lines(args[1]) do
    bodies[#bodies + 1] = line
  end
  if #bodies == 0 then
    error("no bodies in " .. args[1])
  end
  wrk.headers["Authorization"] = "Bearer " .. args[2]
  label = args[3]
  -- Threads start at different bodies, so that they do not post the same sequence.
  sent = (thread_id or 0) * 997
end

function request()
  sent = sent + 1
  wrk.headers["X-Request-ID"] = label .. "-" .. (thread_id or 0) .. "-" .. sent
  return wrk.format(nil, nil, nil, bodies[(sent % #bodies) + 1])
end
