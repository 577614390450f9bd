-- wrk script for bench/load/keepalive.py: POST the RunAgentInput in $BODY_FILE, asking
-- for SSE, on every keep-alive connection.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"
