# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Where the controller-side code finds its files: the data folder beside it and the collection's root."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
# Schemas, flag lists, the variable contract, scenarios and templates (plugins/plugin_utils/data).
DATA_DIR = os.path.join(HERE, "data")
# The collection's root (profiles/, roles/ ...), two levels above plugins/plugin_utils.
COLLECTION_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
