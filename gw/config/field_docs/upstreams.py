"""What gw calls: providers (with their accounts, mock options and probes), the model
catalog, routes and their targets."""

from __future__ import annotations

from gw.config.field_docs.rules import (
    NAME,
    PRINTABLE,
    SECRET_REFERENCE,
    SLASHLESS_NAME,
    UPSTREAM_URL,
    Field,
    Section,
    section,
)
from gw.config.schema import (
    AccountConfig,
    MockOptions,
    ModelEntry,
    ProbeConfig,
    ProviderConfig,
    ProviderTls,
    RouteConfig,
    TargetConfig,
)
from gw.config.validate import MIN_PROBE_INTERVAL_S

_HEADERS = (
    "Extra request headers, name to value (shown redacted by `gw config show`). A value may be "
    "`env:NAME` or `vault:NAME`, and must be for a header that carries a credential "
    "(`authorization`, `x-api-key`, or a name with `token`, `key`, `secret`, `password` or "
    "`auth` in it)."
)

UPSTREAM_SECTIONS: dict[type, Section] = {
    ProviderConfig: section(
        "An upstream gw calls: its wire format (`kind`), where it is and how to authenticate.",
        name=Field(
            "The provider's name, used in targets and in `provider/model`.", text=SLASHLESS_NAME
        ),
        kind=Field(
            "The wire format and auth scheme: `openai` (chat completions, bearer key), "
            "`openai_compatible` (any OpenAI-shaped server: Ollama, vLLM, llama.cpp, Groq...), "
            "`openai_responses` (OpenAI's Responses API, also Azure's v1 API), `anthropic` "
            "(Messages, `x-api-key`), `gemini` (Google AI Studio, `x-goog-api-key`), "
            "`azure_openai` (a deployment per target model, `api-key`; the token limit goes as "
            "`max_tokens`, as `max_completion_tokens` when reasoning is asked for) or `mock` "
            "(gw's built-in fake)."
        ),
        base_url=Field(
            "What the provider's own SDK calls `base_url`. Default: the provider's public API "
            "for `openai`, `openai_responses` (`https://api.openai.com/v1`), `anthropic` "
            "(`https://api.anthropic.com`) and `gemini` "
            "(`https://generativelanguage.googleapis.com`); required for `openai_compatible` and "
            "`azure_openai` (unless every account has one). Never a link-local or cloud "
            "metadata address.",
            text=UPSTREAM_URL,
        ),
        api_key=Field(
            "Where the key is: `env:NAME` (gw's environment) or `vault:NAME` (`gw vault set`), "
            "never the key itself. Omit it for keyless local servers.",
            text=SECRET_REFERENCE,
        ),
        api_version=Field(
            "`anthropic`: the `anthropic-version` header (default `2023-06-01`). "
            "`azure_openai`: the `api-version` parameter (default `2024-10-21`). "
            "`openai_responses`: Azure's `api-version` parameter (e.g. `preview`); the key then "
            "goes as `api-key`. Quote a date: YAML reads a bare one as a date."
        ),
        headers=Field(_HEADERS),
        mock=Field("Behaviour of a provider of kind `mock`; only that kind takes it."),
        accounts=Field(
            "Several keys or endpoints of this provider. A rate limit or an auth failure locks "
            "one (for that model) and the next is tried before the next target. None: one "
            "account, named `default`, with the provider's own settings. Not for kind `mock`."
        ),
        account_selection=Field(
            "The order accounts are tried in: `fill_first` (as listed) or `round_robin`."
        ),
        probe=Field("Active health probes (opt-in: each one is a tiny billed call); `null`: none."),
        tls=Field(
            "TLS to this provider: a CA bundle to trust instead of the system's store, and a "
            "client certificate to present; `null`: the system's store (or what "
            "`SSL_CERT_FILE` / `SSL_CERT_DIR` name) and no client certificate."
        ),
    ),
    ProviderTls: section(
        "TLS to one provider's upstream: absolute paths to PEM files, checked when the config "
        "loads and read once per process (a replaced file takes effect at the next start).",
        ca_file=Field(
            "Trust this provider's upstream through these CA certificates only, instead of "
            "the system's store (a private CA, a TLS-inspecting proxy)."
        ),
        client_cert=Field(
            "A client certificate presented when the upstream asks for one (mutual TLS)."
        ),
        client_key=Field(
            "The client certificate's private key, unencrypted; omit it when the key is in "
            "`client_cert`'s file. Needs `client_cert`."
        ),
    ),
    MockOptions: section(
        "How a `kind: mock` provider answers, for demos and fault drills. All optional.",
        latency=Field("Wait before the answer starts."),
        first_token=Field("Wait before the first token."),
        chunk_delay=Field("Wait between streamed tokens."),
        fail_status=Field(
            "Answer every call as an upstream with this HTTP status (e.g. 500, 429)."
        ),
        fail_code=Field(
            "... or fail every call with this gw error code (e.g. `upstream_timeout`); it wins "
            "over `fail_status`."
        ),
        failure_rate=Field(
            "With `fail_status` or `fail_code`: the share of calls that fail, seeded and "
            "repeatable; alone, that share fails with 500.",
            minimum=0,
            maximum=1,
        ),
        seed=Field("Seed of the failure sequence."),
        words=Field("Length of the answer, in words."),
    ),
    AccountConfig: section(
        "One key or endpoint of a provider; an unset field is the provider's own.",
        name=Field("The account's name, unique within the provider.", text=NAME),
        api_key=Field("`env:NAME` or `vault:NAME`, as the provider's.", text=SECRET_REFERENCE),
        base_url=Field("This account's endpoint, as the provider's.", text=UPSTREAM_URL),
        headers=Field(_HEADERS),
    ),
    ProbeConfig: section(
        "A one-token chat to each probed model every `interval`. A probe may degrade a target "
        "or restore a degraded one; only live traffic opens or closes a breaker.",
        interval=Field(
            f"Time between probes; at least {MIN_PROBE_INTERVAL_S:g}s.",
            minimum=MIN_PROBE_INTERVAL_S,
        ),
        timeout=Field("A probe that takes longer fails.", above=0),
        models=Field("The models to probe; `null`: every model a route sends to this provider."),
    ),
    ModelEntry: section(
        "What one provider's model costs (USD per million tokens) and can do. An entry here "
        "replaces the shipped catalog's entry for it whole: list every price and capability.",
        provider=Field("A provider of this file."),
        model=Field("The model name, as the target names it."),
        input_per_mtok=Field("USD per million input tokens.", minimum=0),
        output_per_mtok=Field("USD per million output tokens.", minimum=0),
        cached_input_per_mtok=Field(
            "USD per million input tokens read from a prompt cache; `null`: the input price.",
            minimum=0,
        ),
        cache_write_per_mtok=Field(
            "USD per million input tokens written to a prompt cache; `null`: the input price "
            "(Anthropic charges 1.25x input for 5-minute writes, 2x for 1-hour ones).",
            minimum=0,
        ),
        reasoning_per_mtok=Field(
            "USD per million reasoning tokens; `null`: the output price.", minimum=0
        ),
        context_window=Field(
            "Tokens of input plus output the model takes; a request that cannot fit skips the "
            "target. `null`: unknown, never skipped."
        ),
        max_output_tokens=Field(
            "The model's output ceiling: a larger `max_tokens` is clamped to it for this target "
            "(and the attempt says so)."
        ),
        capabilities=Field(
            "What the model can do; a request that needs one the model lacks skips the target. "
            "A model with no catalog entry counts as capable of everything."
        ),
        quality=Field("A score for strategy `highest_quality` (higher first)."),
    ),
    RouteConfig: section(
        "A name clients put in `model`, and the targets that serve it.",
        name=Field("The route's name, what clients send as `model`.", text=SLASHLESS_NAME),
        targets=Field("The provider and model pairs that may serve it.", min_items=1),
        strategy=Field(
            "How targets are ordered: `priority` (lowest number first), `weighted` (a weighted "
            "shuffle seeded by the request id), `lowest_cost`, `lowest_latency` (this gw's "
            "moving averages) or `highest_quality` (catalog `quality`)."
        ),
        description=Field(
            "Shown to clients that list models (e.g. Gemini's `GET /v1beta/models`)."
        ),
    ),
    TargetConfig: section(
        "One provider and model a route may send to.",
        provider=Field("A provider of this file."),
        model=Field("The model name the provider knows.", text=PRINTABLE),
        priority=Field("For strategy `priority`: lower goes first."),
        weight=Field(
            "For strategy `weighted`: the share of first picks; at least one target of a "
            "weighted route needs a positive weight.",
            minimum=0,
        ),
    ),
}
