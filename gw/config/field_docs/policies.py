"""How requests run: policies (match, retry, fallback, timeouts, hedging, limits) and
tenants (allowed routes, limits, budgets)."""

from __future__ import annotations

from gw.config.cache_checks import MAX_CACHE_TTL_S
from gw.config.field_docs.rules import ERROR_CODES, NAME, PRINTABLE, Field, Section, section
from gw.config.schema import (
    FallbackConfig,
    GlobalLimits,
    HedgeConfig,
    PolicyCache,
    PolicyConfig,
    PolicyLimits,
    PolicyMatch,
    RetryConfig,
    SemanticCache,
    ShapingConfig,
    StickyConfig,
    TenantBudget,
    TenantConfig,
    TenantLimits,
    TimeoutConfig,
)

POLICY_SECTIONS: dict[type, Section] = {
    PolicyConfig: section(
        "How requests are run, or refused (`deny`). A request gets the most specific matching "
        "policy, ranked by field kind: `api_keys`, then `tenants`, then the model (`routes`, "
        "`models`), `capabilities`, `streaming`, `kinds`, the prompt size; within a kind exact "
        "names beat globs. Then the higher `priority`, then the earlier in the file.",
        name=Field("The policy's name, shown in traces and `gw explain`.", text=NAME),
        match=Field("Which requests the policy applies to."),
        priority=Field("Breaks ties between equally specific matches: higher wins."),
        strategy=Field("Overrides the route's `strategy`; `null`: the route's."),
        retry=Field("Retries of one target."),
        fallback=Field("When a failure moves on to the next target."),
        timeout=Field("Time limits."),
        hedge=Field("Racing the rest of the chain when the first target is slow."),
        limits=Field("Ceilings per request."),
        budget=Field(
            "USD per day, week, month or in total for every request this policy decides, "
            "besides the tenant's, the key's and `limits.budget`; counted by the policy's "
            "name, so a renamed policy starts from nothing."
        ),
        deny=Field(
            "`true`: a deny rule; the requests it governs get 403 `permission_denied` with "
            "`deny_reason`, before any upstream call."
        ),
        deny_reason=Field(
            "What a denied client is told (the policy's name follows); `null`: a generic "
            "sentence naming the policy.",
            text=PRINTABLE,
        ),
        guardrails=Field(
            "Names of `guardrails:` rules the requests it governs are checked against, "
            "besides every rule marked `everywhere` (docs/guides/guardrails.md)."
        ),
        cache=Field("The response cache for its requests (docs/guides/response-cache.md)."),
        sticky=Field("Sticky sessions: a conversation kept on one target for its prompt cache."),
        shaping=Field(
            "What to do with a conversation too long for a target's context window "
            '(docs/routing.md, "Prompt shaping").'
        ),
    ),
    PolicyCache: section(
        "The response cache: an answer kept and served again, at no cost, for the same "
        "request (in any client format) while it lasts. Chat requests only (OpenAI Chat "
        "Completions, Anthropic Messages, Gemini); a client's `Cache-Control: no-store` "
        "(or `x-gw-cache: off`) skips it, `no-cache` (or `x-gw-cache: refresh`) asks anew.",
        enabled=Field("`true`: answers are kept and served again."),
        ttl=Field("How long an answer is served again.", above=0, maximum=MAX_CACHE_TTL_S),
        shared=Field(
            "`true`: one cache for every caller; `false`: each tenant its own (open mode: one)."
        ),
        semantic=Field(
            "A second level: a request whose last user message means nearly the same as a "
            "kept one's, all else equal, gets that answer. `null`: exact matches only."
        ),
    ),
    SemanticCache: section(
        "The response cache's semantic level. On an exact miss the request's last user "
        "message is embedded by `route` (a request of its own, `<id>-q`, traced and billed); "
        "a kept answer whose request was the same but for that message (model, earlier "
        "turns, system prompt, tools, sampling) and whose message's embedding has a cosine "
        "similarity of at least `threshold` with this one serves it.",
        route=Field("An embeddings route of this config (its targets make embeddings)."),
        threshold=Field(
            "The least cosine similarity that counts as the same question (0 to 1).",
            above=0,
            maximum=1,
        ),
    ),
    StickyConfig: section(
        "Sticky sessions, off by default: a conversation (its session key) stays on the target "
        "and account that last answered it, first in the chain, while that target is healthy, "
        "so the provider's prompt cache keeps hitting. The pin moves when the target is "
        "unhealthy (breaker open or recently failing), switched off, rejected by routing or "
        "gone from the route; it survives config reloads, and is shared by a fleet through "
        "`state.redis_url`. Session keys are kept only as keyed digests "
        "(docs/guides/sticky-sessions.md).",
        enabled=Field("`true`: the requests this policy governs are sticky."),
        ttl=Field("A pin unused this long is forgotten; each answer renews it.", above=0),
        key_from=Field(
            "Where the session key is read from, the first present wins: `header` "
            "(`x-gw-session-id`), `prompt_cache_key` (OpenAI chat and Responses), `user` "
            "(OpenAI `user` or `safety_identifier`, Anthropic `metadata.user_id`), "
            "`first_messages` (a digest of the system prompt and the first user message).",
            min_items=1,
        ),
    ),
    ShapingConfig: section(
        "Prompt shaping: what gw does with a conversation too long for a target's context "
        "window (routing's estimate of its input plus its `max_tokens`). Whatever it does is "
        "said in `x-gw-warning` and `gw explain`; a conversation that cannot be made to fit "
        "gets 400 `context_length_exceeded` before any upstream call.",
        mode=Field(
            "`none`: nothing; targets whose window is too small are skipped. `larger_window`: "
            "the same, and when that moves the request off its first choice, a warning says "
            "so. `trim`: drop the oldest turns (never the system messages, the current turn "
            "or half of a tool call and its result) until it fits the first choice's window. "
            "`larger_window_then_trim`: a larger window when one fits, else trim to fit the "
            "largest."
        ),
    ),
    PolicyMatch: section(
        "What a policy applies to; an omitted field matches everything. Globs use `*`.",
        routes=Field("Route names."),
        models=Field("Target models, as `provider/model` or bare model names."),
        streaming=Field("`true`: streamed requests only; `false`: whole answers only."),
        tenants=Field("Tenant names of the caller's API key."),
        api_keys=Field("API key ids (`key_...`, as `gw keys list` shows)."),
        capabilities=Field("The request needs all of these."),
        kinds=Field(
            "Request kinds: `chat` (OpenAI chat, Anthropic messages, Gemini generateContent), "
            "`responses`, `embeddings`, `count_tokens` (Anthropic and Gemini token counts, "
            "which only deny rules affect)."
        ),
        min_prompt_tokens=Field("The estimated prompt has at least this many tokens.", minimum=0),
        max_prompt_tokens=Field("The estimated prompt has at most this many tokens.", minimum=0),
    ),
    RetryConfig: section(
        "Retries of one target on a retryable error (`upstream_error`, `upstream_timeout`, "
        "`rate_limited`, `overloaded`), with exponential backoff and deterministic jitter.",
        max_attempts=Field(
            "Calls to one target, the first included (moving to a provider's next account does "
            "not count).",
            minimum=1,
        ),
        initial_backoff=Field("The first wait; never shorter than the upstream's `retry-after`."),
        multiplier=Field("Each wait is this times the one before.", minimum=1),
        max_backoff=Field("The longest wait."),
        max_retry_after=Field(
            "An upstream `retry-after` longer than this skips the retries and falls back at once."
        ),
    ),
    FallbackConfig: section(
        "When a failed target gives way to the next. Errors the request caused "
        "(`invalid_request`, `context_length_exceeded`, `content_blocked`) never fall back.",
        enabled=Field("`false`: the first target's failure is the answer."),
        on_error_codes=Field(
            "Fall back on exactly these error codes; `null`: on `upstream_error`, "
            "`upstream_timeout`, `upstream_auth_failed`, `rate_limited` and `overloaded`.",
            choices=ERROR_CODES,
        ),
    ),
    TimeoutConfig: section(
        "Time limits of a request.",
        total=Field("The whole request, every attempt and fallback included.", above=0),
        per_attempt=Field("One call to one target (its read timeout).", above=0),
        connect=Field("Connecting to an upstream, or waiting for a free connection slot.", above=0),
        first_token=Field(
            "A stream's first token; until it, a timeout falls back like any failure.", above=0
        ),
        stream_idle=Field("Silence between a stream's events once it has started.", above=0),
    ),
    HedgeConfig: section(
        "Hedging, for whole (non-streamed) answers only: when the first target has not "
        "answered after `after`, the rest of the chain starts in parallel and the first answer "
        "wins; the slower attempt is cancelled.",
        after=Field("The delay, e.g. `2s`; `null`: no hedging.", above=0),
    ),
    PolicyLimits: section(
        "Ceilings per request.",
        max_output_tokens=Field(
            "A larger `max_tokens` is clamped to this (the decision says so); none is invented "
            "for a request that sets none.",
            minimum=1,
        ),
        max_cost_per_request_usd=Field(
            "Targets whose projected cost is above this are skipped (relaxed, and the decision "
            "marked `degraded`, when that would leave none).",
            minimum=0,
        ),
        unpriced=Field(
            "A target with no catalog price under `max_cost_per_request_usd`: `exclude` it "
            "(rejected `cost_ceiling`, like a target above the ceiling) or `allow` it (kept, "
            "with a note in the decision)."
        ),
    ),
    TenantConfig: section(
        "A team or app: API keys belong to one (`gw keys create --tenant NAME`).",
        name=Field("The tenant's name.", text=NAME),
        allowed_routes=Field(
            "The routes its keys may use (globs with `*`); another gets 403 "
            "`permission_denied`. `null`: any."
        ),
        limits=Field("Rate and concurrency limits."),
        budget=Field("Spending limits in USD, per UTC day and month."),
    ),
    TenantLimits: section(
        "Limits checked after routing and before any upstream call; `null`: none.",
        requests_per_minute=Field(
            "Requests a minute (refilled continuously); over it: 429 `rate_limited`.",
            minimum=1,
        ),
        tokens_per_minute=Field(
            "Tokens a minute, each request charged its estimated input plus its `max_tokens` "
            "up front and settled to the real count; over it: 429 `rate_limited`.",
            minimum=1,
        ),
        max_concurrency=Field("Requests in flight; over it: 429 `concurrency_limited`.", minimum=1),
    ),
    TenantBudget: section(
        "Spend plus what requests in flight have reserved must stay within the budget, else "
        "402 `budget_exceeded` before any upstream call. A tenant, a policy (or gw, for "
        "`limits.budget`) with a budget may not use a target without a catalog price. An API "
        "key's budget has the same periods, set with `gw keys create/update --daily-usd ...`. "
        "`null`: no budget.",
        daily_usd=Field("USD per UTC day; `0` stops all spend.", minimum=0),
        weekly_usd=Field("USD per ISO week (Monday to Sunday, UTC).", minimum=0),
        monthly_usd=Field("USD per UTC month; `0` stops all spend.", minimum=0),
        total_usd=Field("USD in all, never reset (raise it to spend more).", minimum=0),
    ),
    GlobalLimits: section(
        "Limits on every routed request, whoever sends it and in every auth mode (open "
        "included), counted besides each tenant's: one budget and one rate for the whole "
        "gateway (or fleet, with `state.redis_url`). A request refused by either holds "
        "nothing of the other, except that it stays counted by a requests-per-minute limit "
        "it passed.",
        requests_per_minute=Field(
            "Requests a minute, all callers together; over it: 429 `rate_limited`.", minimum=1
        ),
        tokens_per_minute=Field(
            "Tokens a minute, all callers together, charged as a tenant's are.", minimum=1
        ),
        max_concurrency=Field(
            "Routed requests in flight; over it: 429 `concurrency_limited` (the admission cap, "
            "`server.max_concurrency`, queues instead).",
            minimum=1,
        ),
        budget=Field("USD per day, week, month or in total, for all spend together."),
    ),
}
