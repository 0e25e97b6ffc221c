"""Compile-time debugging views: the compile profile and the comparison of two builds."""
