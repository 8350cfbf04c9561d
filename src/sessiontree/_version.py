"""The package's version, in a module of its own: ``--version`` prints it without
importing :mod:`importlib.metadata` (20 ms), and the build reads it from here
(``[tool.hatch.version]`` in ``pyproject.toml``)."""

__version__ = "0.1.0"
