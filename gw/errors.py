"""The one error tree of gw.

Every error a client or an operator can meet is a ``GatewayError`` subclass that carries
its stable ``code``, HTTP ``status``, whether the same call may be ``retryable`` on the same
target, and who is to ``blame``. The server renders errors from these attributes alone.

    GatewayError
    ├── ClientError (blame: client)
    │   ├── InvalidRequestError            invalid_request             400
    │   ├── ContextLengthExceededError     context_length_exceeded     400
    │   ├── ContentBlockedError            content_blocked             400
    │   ├── NativeFeatureUnsupportedError  native_feature_unsupported  400
    │   ├── AuthenticationFailedError      authentication_failed       401
    │   ├── BudgetExceededError            budget_exceeded             402
    │   ├── PermissionDeniedError          permission_denied           403
    │   ├── ModelNotFoundError             model_not_found             404
    │   ├── EndpointNotFoundError          endpoint_not_found          404
    │   ├── ResponseNotFoundError          response_not_found          404  (/v1/responses/{id})
    │   ├── MethodNotAllowedError          method_not_allowed          405
    │   ├── RequestTimeoutError            request_timeout             408
    │   ├── ConflictError                  conflict                    409  (admin writes)
    │   ├── IdempotencyKeyInUseError       idempotency_key_in_use      409
    │   ├── PreconditionFailedError        precondition_failed         412  (admin writes)
    │   ├── RequestTooLargeError           request_too_large           413
    │   ├── IdempotencyKeyReusedError      idempotency_key_reused      422
    │   ├── RateLimitedError               rate_limited                429  (also upstream)
    │   ├── ConcurrencyLimitedError        concurrency_limited         429
    │   └── ClientAbortedError             client_aborted              499  (traced only)
    ├── GatewayFaultError (blame: gateway)
    │   ├── InternalError                  internal_error              500
    │   ├── NoRouteError                   no_route                    503
    │   └── OverloadedError                overloaded                  503  (also upstream)
    └── UpstreamFaultError (blame: upstream)
        ├── UpstreamError                  upstream_error              502
        │   └── PersistentUpstreamError    upstream_error              502  (not retried)
        ├── UpstreamAuthFailedError        upstream_auth_failed        502
        └── UpstreamTimeoutError           upstream_timeout            504

An error raised from an upstream's answer keeps ``blame="upstream"`` whatever its class,
so ``rate_limited`` from a provider and from a tenant limit are told apart in traces.
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal

Blame = Literal["client", "upstream", "gateway"]

CLIENT_VALUE_MAX_CHARS: Final = 200
"""How much of one value a client sent (a model name, a field name, a path) an error quotes."""
MESSAGE_MAX_CHARS: Final = 4000
"""A backstop for any message: what an error body, a trace and a log line hold of it."""
DEFAULT_RETRY_AFTER_S: Final = 1
"""Retry-After on a 429 or 503 of gw's own when it knows no better wait."""


def client_value(value: str, limit: int = CLIENT_VALUE_MAX_CHARS) -> str:
    """``value`` quoted for an error message (``repr``), cut to ``limit`` characters with
    its full length said: a 1 MB model name must not come back in a 2 MB error body."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def clipped(text: str, limit: int = CLIENT_VALUE_MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters (the last an ellipsis when cut), for a client
    value stored as is (a trace's requested model)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GatewayError(Exception):
    """Base of every error gw reports; subclasses fix code, status and retryability."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    retryable: ClassVar[bool] = False
    default_blame: ClassVar[Blame] = "gateway"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        retry_after: float | None = None,
        upstream_status: int | None = None,
        upstream_message: str | None = None,
        blame: Blame | None = None,
    ) -> None:
        if len(message) > MESSAGE_MAX_CHARS:
            message = clipped(message, MESSAGE_MAX_CHARS)
        super().__init__(message)
        self.message = message
        self.param = param
        self.retry_after = retry_after
        self.upstream_status = upstream_status
        self.upstream_message = upstream_message
        self.blame: Blame = blame or self.default_blame

    @property
    def client_message(self) -> str:
        """What the client reads: gw's message, plus the upstream's own words if any.

        The upstream's text may echo the request (a validation error quoting the input),
        so it goes to the client who sent it, never into a log or a trace: those keep
        ``message`` only.
        """
        if self.upstream_message:
            return f"{self.message}: {self.upstream_message}"
        return self.message


class ClientError(GatewayError):
    default_blame: ClassVar[Blame] = "client"


class InvalidRequestError(ClientError):
    code = "invalid_request"
    status = 400


class ContextLengthExceededError(ClientError):
    code = "context_length_exceeded"
    status = 400


class ContentBlockedError(ClientError):
    code = "content_blocked"
    status = 400


class NativeFeatureUnsupportedError(ClientError):
    code = "native_feature_unsupported"
    status = 400


class AuthenticationFailedError(ClientError):
    code = "authentication_failed"
    status = 401


class BudgetExceededError(ClientError):
    code = "budget_exceeded"
    status = 402


class PermissionDeniedError(ClientError):
    code = "permission_denied"
    status = 403


class ModelNotFoundError(ClientError):
    code = "model_not_found"
    status = 404


class EndpointNotFoundError(ClientError):
    code = "endpoint_not_found"
    status = 404


class ResponseNotFoundError(ClientError):
    """A Responses id gw holds nothing for: not a background job of this caller's, or a
    ``previous_response_id`` no ``kind: openai_responses`` upstream answered."""

    code = "response_not_found"
    status = 404


class MethodNotAllowedError(ClientError):
    code = "method_not_allowed"
    status = 405


class RequestTimeoutError(ClientError):
    code = "request_timeout"
    status = 408


class RequestTooLargeError(ClientError):
    code = "request_too_large"
    status = 413


class IdempotencyKeyInUseError(ClientError):
    """A request with the same ``Idempotency-Key`` (same caller) is still being answered
    (draft-ietf-httpapi-idempotency-key-header: 409 for a concurrent retry). Retrying
    later gets the stored answer."""

    code = "idempotency_key_in_use"
    status = 409
    retryable = True


class IdempotencyKeyReusedError(ClientError):
    """The ``Idempotency-Key`` was used by the same caller, within the window, for a
    request with another body or endpoint (the draft's 422)."""

    code = "idempotency_key_reused"
    status = 422


class RateLimitedError(ClientError):
    code = "rate_limited"
    status = 429
    retryable = True


class ConcurrencyLimitedError(ClientError):
    code = "concurrency_limited"
    status = 429


class ClientAbortedError(ClientError):
    code = "client_aborted"
    status = 499


class GatewayFaultError(GatewayError):
    default_blame: ClassVar[Blame] = "gateway"


class InternalError(GatewayFaultError):
    code = "internal_error"
    status = 500


class NoRouteError(GatewayFaultError):
    code = "no_route"
    status = 503


class OverloadedError(GatewayFaultError):
    code = "overloaded"
    status = 503
    retryable = True


class UpstreamFaultError(GatewayError):
    default_blame: ClassVar[Blame] = "upstream"


class UpstreamError(UpstreamFaultError):
    code = "upstream_error"
    status = 502
    retryable = True


class PersistentUpstreamError(UpstreamError):
    """An ``upstream_error`` that would repeat on the same target (the upstream does not
    know the model or endpoint, or its answer has a shape gw cannot read): never retried
    there, but fallen back from like any ``upstream_error``."""

    retryable = False


class UpstreamAuthFailedError(UpstreamFaultError):
    code = "upstream_auth_failed"
    status = 502


class UpstreamTimeoutError(UpstreamFaultError):
    code = "upstream_timeout"
    status = 504
    retryable = True


ALL_ERRORS: tuple[type[GatewayError], ...] = (
    InvalidRequestError,
    ContextLengthExceededError,
    ContentBlockedError,
    NativeFeatureUnsupportedError,
    AuthenticationFailedError,
    BudgetExceededError,
    PermissionDeniedError,
    ModelNotFoundError,
    EndpointNotFoundError,
    ResponseNotFoundError,
    MethodNotAllowedError,
    RequestTimeoutError,
    RequestTooLargeError,
    IdempotencyKeyInUseError,
    IdempotencyKeyReusedError,
    RateLimitedError,
    ConcurrencyLimitedError,
    ClientAbortedError,
    InternalError,
    NoRouteError,
    OverloadedError,
    UpstreamError,
    UpstreamAuthFailedError,
    UpstreamTimeoutError,
)

ERRORS_BY_CODE: dict[str, type[GatewayError]] = {cls.code: cls for cls in ALL_ERRORS}


def error_for_code(code: str, message: str, *, blame: Blame | None = None) -> GatewayError:
    """Build the error whose stable code is ``code`` (internal_error when unknown)."""
    cls = ERRORS_BY_CODE.get(code, InternalError)
    return cls(message, blame=blame)


# Admin API write errors (/admin/v1 config writes). Kept out of ALL_ERRORS: no client of
# /v1 meets them, and a trace never records them; their OpenAI ``error.type`` falls back
# by status (invalid_request_error).


class ConflictError(ClientError):
    """A guarded create hit an existing name, or the config cannot be written (no file)."""

    code = "conflict"
    status = 409


class PreconditionFailedError(ClientError):
    """``If-Match`` named a revision other than the current one."""

    code = "precondition_failed"
    status = 412
