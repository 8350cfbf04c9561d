"""The porcelain: :class:`Session` (create, continue, resume, append, summarize, compact,
clear) and :func:`run_session` (what a live host keeps beside the transcript).

``from sessiontree.session import Session`` keeps working.
"""

from sessiontree.session.host import RunningSession as RunningSession
from sessiontree.session.host import run_session as run_session
from sessiontree.session.session import *  # noqa: F403
