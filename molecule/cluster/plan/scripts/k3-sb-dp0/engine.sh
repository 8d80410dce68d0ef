#!/usr/bin/env bash
# kimi_k3.serving plan: profile sandbox-cpu, host k3-sb-dp0, service engine (vllm)
set -euo pipefail
export VLLM_HOST_IP=10.77.0.12
export HF_HUB_OFFLINE=1
export VLLM_CACHE_ROOT=/var/lib/kimi-k3/engine/vllm-cache
export TORCHINDUCTOR_CACHE_DIR=/var/lib/kimi-k3/engine/inductor
export HF_HOME=/var/lib/kimi-k3/engine/hf
exec vllm serve /work/main/.cache/sandbox/models/tiny-llama \
    --host 0.0.0.0 \
    --port 8000 \
    --served-model-name kimi-k3-sandbox \
    --max-model-len 512 \
    --dtype float32 \
    --enforce-eager \
    --kv-cache-memory-bytes 64M \
    --max-num-seqs 4 \
    --api-server-count 1 \
    --data-parallel-size 2 \
    --data-parallel-size-local 1 \
    --data-parallel-address 10.77.0.12 \
    --data-parallel-rpc-port 13389
