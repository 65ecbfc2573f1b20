"""How a text corpus's bytes become text: a Python codec (``encoding``, default UTF-8) and an
error handler (``errors``, :data:`ERRORS`), checked once, before any reading, with a one-line
refusal naming the flag and the fix (:func:`check_encoding`)."""

from __future__ import annotations

from posgeom._errors import PosgeomError

__all__ = ["ERRORS", "check_decoding", "check_encoding", "decode_document", "text_from"]

#: the ``errors=`` handlers of a text corpus's decoding (Python's codec error handlers)
ERRORS = ("strict", "replace", "ignore", "backslashreplace", "surrogateescape")


def check_encoding(encoding: str, errors: str = "strict") -> str:
    """The codec's canonical name, or one line naming the problem (an unknown codec or
    ``errors`` handler) and the fix."""
    import codecs

    if errors not in ERRORS:
        raise PosgeomError(f"--encoding-errors must be one of {list(ERRORS)}, got {errors!r}")
    try:
        return codecs.lookup(str(encoding)).name
    except LookupError:
        raise PosgeomError(
            f"--text-encoding {encoding!r} is not a Python codec; pass one such as utf-8, latin-1, "
            "cp1252, utf-16 (python -c 'import encodings.aliases' lists them)"
        ) from None


def check_decoding(
    *, encoding: str = "utf-8", errors: str = "strict", text_field: int = 1
) -> dict[str, object]:
    """The text readers' decoding keywords checked at once (a codec Python knows, one of
    :data:`ERRORS`, ``text_field >= 1``)."""
    from posgeom._validation import check_int

    check_encoding(encoding, errors)
    field = check_int(text_field, "--text-field", 1)
    return {"encoding": encoding, "errors": errors, "text_field": field}


def text_from(line: str, text_field: int) -> str:
    """``line`` from its ``text_field``-th whitespace-separated field on ("" when it has fewer
    fields; the whole line for 1): the text of a "label text" line at ``text_field = 2``."""
    if text_field == 1:
        return line
    parts = line.split(None, text_field - 1)
    return parts[-1] if len(parts) == text_field else ""


def decode_document(
    data: bytes, *, encoding: str = "utf-8", errors: str = "strict", text_field: int = 1
) -> str:
    """A whole file as one document: decoded (a UTF-8 byte-order mark dropped), newlines as
    text mode reads them, and with ``text_field > 1`` each line cut by :func:`text_from`."""
    codec = check_encoding(encoding, errors)
    try:
        text = data.decode("utf-8-sig" if codec == "utf-8" else codec, errors)
    except UnicodeDecodeError as exc:
        shown = "UTF-8" if codec == "utf-8" else codec
        raise PosgeomError(
            f"bytes cannot be decoded as {shown} ({exc.reason} at byte {exc.start}); pass its "
            "--text-encoding (e.g. latin-1), --encoding-errors replace, or re-encode it as UTF-8"
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text_field > 1:
        text = "\n".join(text_from(line, text_field) for line in text.split("\n"))
    return text
