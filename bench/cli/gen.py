"""A realistic event stream for the whole-process comparison: 200,000 events (about
21 MB as SSE) of runs with streamed text, reasoning, tool calls with streamed arguments
and results, state snapshots and deltas, steps and activity. Deterministic.

Usage: python3 gen.py OUT.jsonl [EVENTS]"""
import json, random, sys

out_path = sys.argv[1]
target = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
rnd = random.Random(7)
words = "the agent reads your request and plans the next step then calls a tool with care".split()

def text(n):
    return " ".join(rnd.choice(words) for _ in range(n))

events = []
run = 0
while len(events) < target:
    run += 1
    t, r = "thread-1", f"run-{run}"
    events.append({"type": "RUN_STARTED", "threadId": t, "runId": r})
    events.append({"type": "STATE_SNAPSHOT", "snapshot": {"step": 0, "items": [text(3) for _ in range(5)], "user": {"name": "Ada", "plan": "pro"}}})
    events.append({"type": "STEP_STARTED", "stepName": "think"})
    rid = f"{r}-reasoning"
    events.append({"type": "REASONING_START", "messageId": rid})
    events.append({"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"})
    for _ in range(20):
        events.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": text(12)})
    events.append({"type": "REASONING_MESSAGE_END", "messageId": rid})
    events.append({"type": "REASONING_END", "messageId": rid})
    events.append({"type": "STEP_FINISHED", "stepName": "think"})
    mid = f"{r}-m1"
    events.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
    for _ in range(60):
        events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text(rnd.randint(8, 16))})
    events.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
    for k in range(3):
        cid = f"{r}-call{k}"
        events.append({"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": "search", "parentMessageId": mid})
        for part in ['{"query":', ' "' + text(4) + '",', ' "limit": 5}']:
            events.append({"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": part})
        events.append({"type": "TOOL_CALL_END", "toolCallId": cid})
        events.append({"type": "TOOL_CALL_RESULT", "messageId": f"{cid}-result", "toolCallId": cid, "content": json.dumps({"hits": [text(5) for _ in range(3)]}), "role": "tool"})
        events.append({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": k + 1}, {"op": "add", "path": "/items/-", "value": text(3)}]})
    events.append({"type": "ACTIVITY_SNAPSHOT", "messageId": f"{r}-act", "activityType": "progress", "content": {"done": 3, "total": 3}})
    events.append({"type": "CUSTOM", "name": "metrics", "value": {"tokens": rnd.randint(100, 900), "latencyMs": rnd.random() * 500}})
    events.append({"type": "RUN_FINISHED", "threadId": t, "runId": r})
# End on a run boundary: trim whole runs past the target.
with open(out_path, "w") as f:
    for e in events:
        f.write(json.dumps(e, separators=(",", ":")) + "\n")
print(f"{len(events)} events, {run} runs")
