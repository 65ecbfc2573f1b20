"""The report's one style sheet (inline CSS, no external resource) and its scoped form for a
report shown inside a notebook."""

from __future__ import annotations

__all__ = ["STYLE", "scoped"]

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1180px;margin:1.5em auto;
padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{background:#f3f7ff;border-left:4px solid #3b6fd8;padding:.6em 1em;margin:1em 0}
.missing{background:#fff6e5;border-left:4px solid #e0a000;padding:.5em 1em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px}td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f5f5f5}figure{margin:1em 0}figure img{max-width:100%;height:auto}
figcaption{font-size:13px;color:#444}dl dt{font-weight:600;margin-top:.4em}dl dd{margin-left:1.2em}
code{background:#f2f2f2;padding:0 3px}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:1em}
.figs figure.wide{grid-column:1/-1}
"""


def scoped(css: str, scope: str = ".posgeom-report") -> str:
    """``css`` with every rule limited to ``scope`` (``body`` becomes the scope itself), so a
    report shown inside a notebook does not restyle the notebook."""
    rules = []
    for rule in css.replace("\n", "").split("}"):
        if "{" not in rule:
            continue
        selectors, body = rule.split("{", 1)
        scoped = [
            scope if sel.strip() == "body" else f"{scope} {sel.strip()}"
            for sel in selectors.split(",")
        ]
        rules.append(",".join(scoped) + "{" + body + "}")
    return "\n".join(rules)
