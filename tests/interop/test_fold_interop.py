"""Attachment texts after a tool result, resumed by the real client 2.1.328: it folds them
into the result or keeps them apart (``tests/fold_cases.py`` has the cases), and
sessiontree must send the same. Answered by a model that takes no mid-conversation system
message (Opus 4.7: system texts are user text and folded too) and by one that does (Opus
5.5: more user texts stay apart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fold_cases import write_session
from tests.interop.test_attachments_interop import resumed_both_ways
from tests.model.test_context_golden import normalize

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-5-5"])
def test_client_folds_texts_into_results_as_sessiontree_does(
    claude: Path, tmp_path: Path, model: str
) -> None:
    ours, theirs = resumed_both_ways(claude, tmp_path, write_session, model)
    assert normalize(ours) == normalize(theirs)
