"""The columns OpenAI batch files and chat completions add to the shared tables (merged into ``warehouse.formatkit.declared.TABLES``)."""

from __future__ import annotations

from warehouse.tables import I32, I64, STR, C, Column, J

RESPONSE_COLUMNS: tuple[Column, ...] = (
    C("custom_id", STR, "the request's `custom_id` in its batch (OpenAI Batch API, vLLM `run_batch`): joins a result to its request"),
    C("batch_output_id", STR, "`id` of the batch output line (`batch_req_...` from OpenAI, `vllm-...` from vLLM)"),
    C("request_id", STR, "`response.request_id` of the batch output line"),
    C("status_code", I32, "`response.status_code` of the batch output line (200: failed requests are in quarantine)"),
    C("completion_id", STR, "`id` of the chat completion (`chatcmpl-...`)"),
    C("created", I64, "`created` of the chat completion: Unix seconds (`capture_date` holds it as ISO text)"),
    C("finish_reason", STR, "why generation stopped (`stop`, `length`, `tool_calls`, `content_filter`, ...)"),
    C("prompt_tokens", I64, "`usage.prompt_tokens` of the chat completion (the request's, shared by its n choices)"),
    C("completion_tokens", I64, "`usage.completion_tokens` of the chat completion (all of its choices together)"),
    C("total_tokens", I64, "`usage.total_tokens` of the chat completion"),
    J("request_params", "the request's body but its messages, as written: `model`, `temperature`, `max_tokens`, `n`, `logprobs`, ..."),
    J("logprobs", "the choice's `logprobs` as written: `{content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}], refusal}`, one entry per generated token"),
    J("prompt_logprobs", "vLLM's `prompt_logprobs` as written: per prompt token, null or `{token id: {logprob, rank, decoded_token}}`"),
    C("batch_input_path", STR, "the batch input file the request was read from, when a result was joined to it"),
    C("batch_input_line", I64, "line of the request in that file (1-based)"),
)

COLUMNS = {"responses": RESPONSE_COLUMNS}
