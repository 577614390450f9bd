"""Proves the model agent's fake upstreams and requests against the providers' official
Python SDKs (`anthropic` and `openai`, pinned in requirements.txt).

Run by agui-sdk-model's `sdk_proof` test: `python sdk_proof.py <api>` with a JSON spec on
stdin, `<api>` one of `anthropic`, `responses`, `chat`. The spec:

    {"base_url": <the SDK's base URL for a fresh fake>,
     "raw_url": <the endpoint of another fresh fake, fetched without the SDK>,
     "requests": [<each request body the adapter sent>],
     "cases": [{"model": <scenario>, "input": <messages or input, optional>,
                "raw": [<status of each raw fetch, in order>],
                "complete": <whether the stream ends with its API's last event:
                             message_stop, response.completed or [DONE]; default true>,
                "extras": [<fields outside the SDK's types the scenario sends on purpose>],
                "expect": <a subset of what the SDK made of it>}]}

For each case it
- fetches the scenario's answer once per `raw` entry and validates it strictly: every
  event, parsed by the SDK's SSE decoder, against the SDK's stream event types (unknown
  event types, wrong field types, missing fields and unknown fields fail), and every
  error body against the SDK's error types;
- points the SDK's streaming helper at the other fake (its accumulator rebuilds the
  message or response; it retries a 429 or 529 itself) and compares what it made
  (`{"message": …}`, `{"response": …}`, `{"completion": …}`, or `{"raised": …}` with
  the exception's class, status and body; for Responses also `"last_event"`, the last
  event the SDK yielded) with `expect`, key by key;
and validates each request body against the SDK's request parameter types, strictly,
failing on a key the types do not know.

It prints one line per failure naming the case and the field, and exits 1 if any.
"""

import json
import sys
import typing
import urllib.error
import urllib.request

from pydantic import BaseModel, TypeAdapter, ValidationError

FAILURES = []


def fail(where, message):
    FAILURES.append(f"{where}: {message}")


def short(err):
    """A validation error's first lines (a union's can run to hundreds)."""
    lines = str(err).splitlines()
    return " / ".join(lines[:6]) + (f" / … {len(lines) - 6} more lines" if len(lines) > 6 else "")


def mismatches(expected, actual, path="$"):
    """Where `actual` differs from `expected`: every key of an expected object must
    match (others may be there), lists match item by item and in length."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                out.extend(mismatches(value, actual[key], f"{path}.{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(mismatches(e, a, f"{path}[{i}]"))
        return out
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def unknown_fields(value, path="$"):
    """Fields a parsed SDK model kept as extras: names its types do not declare."""
    out = []
    if isinstance(value, BaseModel):
        for key in (value.__pydantic_extra__ or {}):
            out.append(f"{path}.{key}")
        for key in type(value).model_fields:
            out.extend(unknown_fields(getattr(value, key), f"{path}.{key}"))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            out.extend(unknown_fields(item, f"{path}[{i}]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            out.extend(unknown_fields(item, f"{path}.{key}"))
    return out


def strict(adapter, text, where, allowed=()):
    """`text` parsed as `adapter`'s type in strict mode, with no unknown field but those
    `allowed`; None (and a failure) otherwise."""
    try:
        parsed = adapter.validate_json(text, strict=True)
    except ValidationError as err:
        fail(where, f"not the SDK's type: {short(err)} in {text}")
        return None
    extra = [f for f in unknown_fields(parsed) if f.rsplit(".", 1)[-1] not in allowed]
    if extra:
        fail(where, f"fields the SDK's type does not declare: {', '.join(extra)} in {text}")
    return parsed


class EventTypes:
    """A union of the SDK's event models, by their `type`: each event is validated
    against the model its type names (precise errors), an unknown type is a failure."""

    def __init__(self, union):
        args = typing.get_args(union)
        if typing.get_origin(union) is typing.Annotated:
            args = typing.get_args(args[0])
        self.models = {}
        for model in args:
            for literal in typing.get_args(model.model_fields["type"].annotation):
                self.models[literal] = TypeAdapter(model)

    def validate(self, text, where, allowed=()):
        kind = json.loads(text).get("type")
        if kind not in self.models:
            fail(where, f"an event type the SDK does not know: {kind!r} in {text}")
            return None
        return strict(self.models[kind], text, where, allowed)


def materialize(value):
    """A validated request with pydantic's lazy iterables read (which validates them)."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [materialize(v) for v in value]
    return value


def validate_request(adapter, body, where):
    """`body` against a TypedDict of request parameters: strict types, every required
    key, and no key the types do not know (pydantic drops those: the validated body
    must equal the body sent)."""
    try:
        validated = materialize(adapter.validate_python(body, strict=True))
    except ValidationError as err:
        fail(where, f"not the SDK's request type: {short(err)}")
        return
    for m in mismatches(body, validated):
        m = m.replace(": missing (expected ", ": a key the SDK's request type does not know (sent ")
        fail(where, f"a key or value the SDK's request type does not take: {m}")
    for m in mismatches(validated, body):
        fail(where, f"the SDK's request type changed the body: {m}")


def fetch(url, body):
    """One POST without the SDK: (status, body bytes)."""
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "x-api-key": "k", "authorization": "Bearer k"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def dump(value):
    return value.model_dump(mode="json", warnings=False) if isinstance(value, BaseModel) else value


def raised(err, sdk):
    out = {"class": type(err).__name__, "message": str(err)}
    if isinstance(err, sdk.APIStatusError):
        out["status"] = err.status_code
    if isinstance(err, sdk.APIError):
        out["body"] = err.body
    return out


def check_case(case, result, where):
    found = mismatches(case["expect"], result)
    for m in found:
        fail(where, f"the SDK made something else of it: {m}")
    if found:
        fail(where, f"what the SDK made: {json.dumps(result, ensure_ascii=False)[:2000]}")


# -- Anthropic Messages ------------------------------------------------------------


def prove_anthropic(spec):
    import anthropic
    from anthropic._streaming import SSEDecoder
    from anthropic.types import ErrorResponse, RawMessageStreamEvent
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    events = EventTypes(RawMessageStreamEvent)
    errors = TypeAdapter(ErrorResponse)
    params = TypeAdapter(MessageCreateParamsStreaming)
    client = anthropic.Anthropic(base_url=spec["base_url"], api_key="k", max_retries=2)
    default_messages = [{"role": "user", "content": "go"}]

    for case in spec["cases"]:
        model = case["model"]
        messages = case.get("input", default_messages)
        where = f"anthropic {model}"
        for i, status in enumerate(case.get("raw", [200])):
            w = f"{where} (raw answer {i})"
            got, raw = fetch(spec["raw_url"], {"model": model, "max_tokens": 1024, "stream": True, "messages": messages})
            if got != status:
                fail(w, f"status {got}, expected {status}")
                continue
            if status != 200:
                strict(errors, raw, w)
                continue
            names = []
            for sse in SSEDecoder().iter_bytes(iter([raw])):
                names.append(sse.event)
                if sse.event is None:
                    fail(w, f"an event without a name (the SDK skips it): {sse.data}")
                elif sse.event == "ping":
                    if json.loads(sse.data) != {"type": "ping"}:
                        fail(w, f"a ping with more than its type: {sse.data}")
                elif sse.event == "error":
                    strict(errors, sse.data, f"{w} error event")
                else:
                    parsed = events.validate(sse.data, f"{w} {sse.event}", case.get("extras", ()))
                    if parsed is not None and parsed.type != sse.event:
                        fail(w, f"event {sse.event!r} carries type {parsed.type!r}")
            complete = bool(names) and names[-1] == "message_stop"
            if complete != case.get("complete", True):
                fail(w, f"the stream {'ends' if complete else 'does not end'} with message_stop: {names}")

        try:
            with client.messages.stream(model=model, max_tokens=1024, messages=messages) as stream:
                result = {"message": dump(stream.get_final_message())}
        except anthropic.APIError as err:
            result = {"raised": raised(err, anthropic)}
        check_case(case, result, where)

    for i, body in enumerate(spec["requests"]):
        validate_request(params, body, f"anthropic request {i} ({body.get('model')})")


# -- OpenAI Responses --------------------------------------------------------------


# The Responses events streamed in deltas, and the field of their `.done` with the whole.
STREAMED = {
    "response.output_text": "text",
    "response.refusal": "refusal",
    "response.reasoning_summary_text": "text",
    "response.reasoning_text": "text",
    "response.function_call_arguments": "arguments",
}


def prove_responses(spec):
    import openai
    from openai._streaming import SSEDecoder
    from openai.types.responses import ResponseStreamEvent
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
    from openai.types.shared import ErrorObject

    events = EventTypes(ResponseStreamEvent)
    errors = TypeAdapter(ErrorObject)
    params = TypeAdapter(ResponseCreateParamsStreaming)
    client = openai.OpenAI(base_url=spec["base_url"], api_key="k", max_retries=2)
    default_input = [{"role": "user", "content": "go"}]

    for case in spec["cases"]:
        model = case["model"]
        inp = case.get("input", default_input)
        where = f"responses {model}"
        for i, status in enumerate(case.get("raw", [200])):
            w = f"{where} (raw answer {i})"
            got, raw = fetch(spec["raw_url"], {"model": model, "stream": True, "input": inp})
            if got != status:
                fail(w, f"status {got}, expected {status}")
                continue
            if status != 200:
                strict(errors, json.dumps(json.loads(raw).get("error")), w)
                continue
            names = []
            so_far = {}
            for n, sse in enumerate(SSEDecoder().iter_bytes(iter([raw]))):
                names.append(sse.event)
                data = json.loads(sse.data)
                # Each `.done` says the whole its deltas made.
                kind, _, step = sse.event.rpartition(".")
                if kind in STREAMED and step in ("delta", "done"):
                    key = (kind, data.get("item_id"), data.get("content_index"), data.get("summary_index"))
                    if step == "delta":
                        so_far[key] = so_far.get(key, "") + data.get("delta", "")
                    elif so_far.get(key, "") != data.get(STREAMED[kind]):
                        fail(w, f"{sse.event} says {data.get(STREAMED[kind])!r}, its deltas made {so_far.get(key, '')!r}")
                if data.get("type") != sse.event:
                    fail(w, f"event {sse.event!r} carries type {data.get('type')!r}")
                if data.get("sequence_number") != n:
                    fail(w, f"event {n} ({sse.event}) has sequence_number {data.get('sequence_number')!r}")
                if "error" in data and sse.event == "error":
                    # Not the Responses wire (it has the fields at the top): what some
                    # compatible servers send; the SDK raises it as an APIError.
                    strict(errors, json.dumps(data["error"]), f"{w} nested error event", ("type",))
                    continue
                events.validate(sse.data, f"{w} {sse.event}", case.get("extras", ()))
            complete = bool(names) and names[-1] == "response.completed"
            if complete != case.get("complete", True):
                fail(w, f"the stream {'ends' if complete else 'does not end'} with response.completed: {names}")

        seen = []
        try:
            with client.responses.stream(model=model, input=inp) as stream:
                for ev in stream:
                    seen.append(ev)
                result = {"response": dump(stream.get_final_response())}
        except (openai.APIError, RuntimeError) as err:
            result = {"raised": raised(err, openai)}
        if seen:
            result["last_event"] = dump(seen[-1])
        check_case(case, result, where)

    for i, body in enumerate(spec["requests"]):
        validate_request(params, body, f"responses request {i} ({body.get('model')})")


# -- OpenAI Chat Completions -------------------------------------------------------


def prove_chat(spec):
    import openai
    from openai._streaming import SSEDecoder
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
    from openai.types.shared import ErrorObject

    chunks = TypeAdapter(ChatCompletionChunk)
    errors = TypeAdapter(ErrorObject)
    params = TypeAdapter(CompletionCreateParamsStreaming)
    client = openai.OpenAI(base_url=spec["base_url"], api_key="k", max_retries=2)
    default_messages = [{"role": "user", "content": "go"}]

    for case in spec["cases"]:
        model = case["model"]
        messages = case.get("input", default_messages)
        where = f"chat {model}"
        for i, status in enumerate(case.get("raw", [200])):
            w = f"{where} (raw answer {i})"
            got, raw = fetch(spec["raw_url"], {"model": model, "stream": True, "messages": messages})
            if got != status:
                fail(w, f"status {got}, expected {status}")
                continue
            if status != 200:
                strict(errors, json.dumps(json.loads(raw).get("error")), w, case.get("extras", ()))
                continue
            datas = [sse.data for sse in SSEDecoder().iter_bytes(iter([raw]))]
            complete = bool(datas) and datas[-1] == "[DONE]"
            if complete != case.get("complete", True):
                fail(w, f"the stream {'ends' if complete else 'does not end'} with [DONE]")
            for n, data in enumerate(d for d in datas if d != "[DONE]"):
                if "error" in json.loads(data):
                    strict(errors, json.dumps(json.loads(data)["error"]), f"{w} error chunk", case.get("extras", ()))
                else:
                    strict(chunks, data, f"{w} chunk {n}", case.get("extras", ()))

        try:
            with client.chat.completions.stream(model=model, messages=messages) as stream:
                for _ in stream:
                    pass
                result = {"completion": dump(stream.get_final_completion())}
        except (openai.APIError, RuntimeError, AssertionError) as err:
            result = {"raised": raised(err, openai)}
        check_case(case, result, where)

    for i, body in enumerate(spec["requests"]):
        validate_request(params, body, f"chat request {i} ({body.get('model')})")


def main():
    api = sys.argv[1]
    spec = json.load(sys.stdin)
    {"anthropic": prove_anthropic, "responses": prove_responses, "chat": prove_chat}[api](spec)
    for f in FAILURES:
        print(f)
    if FAILURES:
        print(f"{api}: {len(FAILURES)} failure(s)")
        sys.exit(1)
    print(f"{api}: {len(spec['cases'])} scenarios and {len(spec['requests'])} request bodies proven")


if __name__ == "__main__":
    main()
