#!/usr/bin/env bash
# kimi_k3.serving plan: profile sandbox-cpu, host k3-sb-decode, service decode (vllm)
set -euo pipefail
export VLLM_HOST_IP=10.77.0.15
export HF_HUB_OFFLINE=1
export VLLM_CACHE_ROOT=/var/lib/kimi-k3/decode/vllm-cache
export TORCHINDUCTOR_CACHE_DIR=/var/lib/kimi-k3/decode/inductor
export HF_HOME=/var/lib/kimi-k3/decode/hf
exec vllm serve /work/main/.cache/sandbox/models/tiny-llama \
    --host 0.0.0.0 \
    --port 8200 \
    --served-model-name kimi-k3-sandbox \
    --max-model-len 512 \
    --dtype float32 \
    --enforce-eager \
    --kv-cache-memory-bytes 64M \
    --max-num-seqs 4 \
    --api-server-count 1 \
    --kv-transfer-config '{"kv_connector":"ExampleConnector","kv_role":"kv_consumer","kv_connector_extra_config":{"shared_storage_path":"/srv/k3-shared/kv"}}'
