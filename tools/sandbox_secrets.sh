#!/usr/bin/env bash
# The sandbox's API key, kept the way a production inventory keeps it: in an Ansible Vault file.
#
#   tools/sandbox_secrets.sh [DIR]   make DIR/vault-password (0600, random) and DIR/secrets.yml (the
#                                    vault-encrypted k3_api_key, a client's random key,
#                                    k3_admin_api_key, the admin's, and k3_monitoring_password,
#                                    Prometheus' and Alertmanager's) if they are missing; print the
#                                    ansible-playbook arguments that read them
#
# DIR defaults to .cache/sandbox. The keys are made here and never printed; read them with
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
# A vault made before the admin key and the monitoring password existed is made again (read
# through a pipe, never shown).
if [[ -s $DIR/secrets.yml ]] &&
  ! "$VAULT" view --vault-password-file "$DIR/vault-password" "$DIR/secrets.yml" | grep -q '^k3_monitoring_password:'; then
  rm -f "$DIR/secrets.yml"
fi
if [[ ! -s $DIR/secrets.yml ]]; then
  # The plaintext goes through a pipe, never through argv or a file.
  "$PY" -c 'import secrets; t = secrets.token_urlsafe
print("---\nk3_api_key: sk-k3-sandbox-" + t(24) + "\nk3_admin_api_key: sk-k3-sandbox-admin-" + t(24)
      + "\nk3_monitoring_password: " + t(24))' |
    "$VAULT" encrypt --vault-password-file "$DIR/vault-password" --output "$DIR/secrets.yml" - >/dev/null
fi
chmod 600 "$DIR/vault-password" "$DIR/secrets.yml"
printf -- '-e @%s --vault-password-file %s\n' "$DIR/secrets.yml" "$DIR/vault-password"
