"""Names a package imports on first access (PEP 562), written once."""

import importlib


def lazy_exports(package, where, exported):
    """``(__getattr__, __dir__)`` for ``package``: ``where`` maps an exported
    name to the submodule (relative, without the dot) that defines it; the
    name is imported on first access and then kept in the package."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name):
        if name in where:
            value = getattr(importlib.import_module(f".{where[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(exported))

    return __getattr__, __dir__
