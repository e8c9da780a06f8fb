"""haytham's version, in one place: pyproject.toml reads it from here when haytham is built
(so the installed distribution's metadata says the same), and ``haytham --version``, the
package's ``__version__`` and a trace's resource read it without importlib.metadata."""

__version__ = "0.1.0"
