"""The life of a session outside its transcript: live processes, retention of old ones."""
