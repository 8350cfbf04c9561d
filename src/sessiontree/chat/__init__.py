"""``sessiontree chat`` in a terminal: the prompt, its history and pastes, slash commands,
the rewind menu and the pickers, over the agent host in ``sessiontree.agent``."""
