-- The mixed workload of docs/scaling.md: 80 % GET /turns/{id} with a random read key, 20 % POST of a turn to a
-- random run with a random write key.
local reads, writes, runs = {}, {}, {}
for line in io.lines(os.getenv("BENCH_DIR") .. "/keys-read.txt") do reads[#reads + 1] = line end
for line in io.lines(os.getenv("BENCH_DIR") .. "/keys-write.txt") do writes[#writes + 1] = line end
for line in io.lines(os.getenv("BENCH_DIR") .. "/runs.txt") do runs[#runs + 1] = line end
local path = os.getenv("BENCH_PATH")
request = function()
  if math.random(5) == 1 then
    return wrk.format("POST", "/api/v1/queue-runs/" .. runs[math.random(#runs)] .. "/turns",
      {["X-API-Key"] = writes[math.random(#writes)], ["Content-Type"] = "application/json"}, "{}")
  end
  return wrk.format("GET", path, {["X-API-Key"] = reads[math.random(#reads)]})
end
