"""The built-in backends. Each module registers through the ``portfolio.backends`` entry-point group,
exactly as a third-party package would."""
