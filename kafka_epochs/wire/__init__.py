"""The wire runtime: the only package generated code imports (errors, primitives, base classes)."""
