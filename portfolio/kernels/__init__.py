"""numba-compiled hot loops shared by backends."""
