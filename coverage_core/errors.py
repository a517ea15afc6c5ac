"""Exceptions the product shows to users.

Every message is one plain sentence that says what happened and what to do.
Callers (CLI, dashboard) print ``str(error)`` and never a traceback.
"""


class CoverageError(Exception):
    """Base class for errors a user can act on."""


class InputError(CoverageError, ValueError):
    """The input files or parameters cannot be used as given.

    Also a ``ValueError``, so code written for scikit-learn's habit of
    raising ``ValueError`` on bad input (``except ValueError``) catches it.
    """


class ProviderError(CoverageError):
    """An embedding or LLM provider refused or failed the request.

    ``kind`` is one of ``"auth"``, ``"rate_limit"``, ``"timeout"``,
    ``"connection"``, ``"bad_request"``, ``"bad_response"`` (unparseable
    output) or ``"other"``, so a caller can decide
    whether retrying later makes sense.
    """

    def __init__(self, message: str, kind: str = "other"):
        super().__init__(message)
        self.kind = kind
