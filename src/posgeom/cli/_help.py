"""The help formatter of every ``posgeom`` command: defaults shown once, and only real ones
(argparse's ``ArgumentDefaultsHelpFormatter`` would append ``(default: None)`` to unset options
and repeat a default the help already names).
"""

from __future__ import annotations

import argparse

__all__ = ["HelpFormatter", "apply"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text.lower()
            or default is None
            or isinstance(default, bool)  # 0, 1 and 1.0 are values: shown (1.0 == True)
            or default in (argparse.SUPPRESS, [], ())
            or action.option_strings == []
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


def apply(parser: argparse.ArgumentParser) -> None:
    """Use :class:`HelpFormatter` for ``parser`` and every sub-command under it."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                apply(sub)
