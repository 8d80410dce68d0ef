#!/usr/bin/env bash
# The sandbox's API key, kept the way a production inventory keeps it: in an Ansible Vault file.
#
#   tools/sandbox_secrets.sh [DIR]   make DIR/vault-password (0600, random) and DIR/secrets.yml (the
#                                    vault-encrypted k3_api_key, a random key) if they are missing;
#                                    print the ansible-playbook arguments that read them
#
# DIR defaults to .cache/sandbox. The key is made here and never printed; read it with
#   ansible-vault view --vault-password-file DIR/vault-password DIR/secrets.yml
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=${1:-$REPO/.cache/sandbox}
VAULT=${ANSIBLE_VAULT:-$REPO/.venv/ansible/bin/ansible-vault}
PY=${PYTHON:-python3}
umask 077
mkdir -p "$DIR"
if [[ ! -s $DIR/vault-password ]]; then
  "$PY" -c 'import secrets; print(secrets.token_urlsafe(32))' >"$DIR/vault-password"
fi
if [[ ! -s $DIR/secrets.yml ]]; then
  # The plaintext goes through a pipe, never through argv or a file.
  "$PY" -c 'import secrets; print("---\nk3_api_key: sk-k3-sandbox-" + secrets.token_urlsafe(24))' |
    "$VAULT" encrypt --vault-password-file "$DIR/vault-password" --output "$DIR/secrets.yml" - >/dev/null
fi
chmod 600 "$DIR/vault-password" "$DIR/secrets.yml"
printf -- '-e @%s --vault-password-file %s\n' "$DIR/secrets.yml" "$DIR/vault-password"
