"""The one error type users see. Every message says what went wrong and what to do next."""


class SbclabError(Exception):
    """A mistake or a condition the user can act on; shown as a sentence, never a traceback."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message
