"""Looking into a workspace's builds: diffs between phases and builds, the passes inside one phase.

Imports workspace/, compile/, ir/ and the shared basics.
"""
