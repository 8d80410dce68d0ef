# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The attributes the collection's modules share (ansible-doc merges them into each module's)."""

from __future__ import annotations


class ModuleDocFragment:
    """kimi_k3.serving.attributes."""

    # Every module reports its attributes; each names the fragment that fits or writes its own.
    DOCUMENTATION = r"""
options: {}
"""

    # A module that reads the host or the plan and changes nothing.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: It only reads (or connects for a few seconds); it runs the same way in check mode.
  diff_mode:
    support: none
    description: It only reads; there is no change to show.
  idempotent:
    support: full
    description: It never changes anything and leaves nothing behind.
"""
