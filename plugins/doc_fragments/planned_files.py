# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A host's planned files (module_utils/planned_files.py), as M(kimi_k3.serving.service_units) writes them and
M(kimi_k3.serving.service_status) compares them."""

from __future__ import annotations


class ModuleDocFragment:
    """kimi_k3.serving.planned_files."""

    DOCUMENTATION = r"""
options:
  files:
    description:
      - The services' planned files (units, environment, configuration).
        M(kimi_k3.serving.service_units) writes those that differ (their folders must exist, or be listed
        in its O(kimi_k3.serving.service_units#module:directories)); M(kimi_k3.serving.service_status)
        only compares them and never shows a secret file's content.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      content:
        description: Its whole content. Exactly one of O(files[].content), O(files[].source) and O(files[].line).
        type: str
      source:
        description: A file on the host whose content this file gets (a certificate the site put there).
        type: path
      line:
        description:
          - One line this file must hold (a distribution's settings file), replacing the last line that
            matches O(files[].regexp), else appended; the rest of the file is kept.
        type: str
      regexp:
        description: The pattern of the line O(files[].line) replaces (Python C(re), searched in each line).
        type: str
      mode:
        description: Its mode (octal string).
        type: str
        default: "0644"
      group:
        description: Its group (owner root); a group that does not exist yet is reported in check mode.
        type: str
        default: root
      service:
        description: The planned service the file belongs to.
        type: str
        required: true
      change:
        description:
          - What a change of this file does to its service's unit when the unit is in
            O(kimi_k3.serving.service_units#module:start) - C(restart) it, C(reload) it (a daemon that reads
            its configuration again), or C(none) (a file the daemon reads by itself, or at every request).
        type: str
        choices: [restart, reload, none]
        default: restart
      secret:
        description: The file holds keys; a diff shows that it changed, never its content.
        type: bool
        default: false
      validate:
        description:
          - A command that checks the new content before it replaces the file (C(%s) is the new
            content's temporary path), e.g. C(/usr/sbin/nft -c -f %s). A refusal fails the module and
            leaves the file as it was. In check mode, a command that is not installed yet (its package
            comes in the same run) is not run.
        type: str
  secrets:
    description: The key values the files hold; each is masked wherever it would show in the module's output.
    type: list
    elements: str
    default: []"""
