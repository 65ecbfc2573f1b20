"""``python -m studies.pages``: a docs page's shell blocks as one script (the runner of the e2e
page tests and of the hour-long study pages)."""

from __future__ import annotations

import re

import pytest

from studies.pages import STUDY_PAGES, main, page_path, page_script, shell_blocks


def test_the_script_is_the_pages_blocks_in_order_without_pip():
    page = page_path("README.md")
    blocks = shell_blocks(page)
    script = page_script(page)
    assert len(blocks) > 3 and script.startswith("set -euo pipefail\n")
    marks = re.findall(r'echo "### block (\d+) at \$SECONDS s" >&2', script)
    assert marks == [str(k + 1) for k in range(len(blocks))]
    lines = script.splitlines()
    assert not [x for x in lines if re.match(r"\s*pip install", x)]  # checked, not run
    assert "pytest" not in [x.strip() for x in lines]  # the install block's bare pytest
    kept = [x for b in blocks for x in b.splitlines() if "pip install" not in x and x != "pytest"]
    assert all(x in lines for x in kept)  # every other line, as written


def test_the_study_pages_exist_and_an_unknown_page_is_refused(capsys):
    assert all(shell_blocks(page_path(name)) for name in STUDY_PAGES)
    with pytest.raises(SystemExit) as exc:
        main(["README.md"])  # an e2e page, not a study
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
