#!/usr/bin/env bash
# kimi_k3.serving plan: profile sandbox-cpu, host k3-sb-front, service metaservice (metaservice)
set -euo pipefail
export MMC_META_CONFIG_PATH=/etc/kimi-k3/mmc-meta.conf
exec python \
    -c 'from memcache_hybrid import MetaService; MetaService.main()'
