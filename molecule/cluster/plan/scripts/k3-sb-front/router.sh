#!/usr/bin/env bash
# kimi_k3.serving plan: profile sandbox-cpu, host k3-sb-front, service router (router)
# start once healthy: k3-sb-prefill/prefill, k3-sb-decode/decode
set -euo pipefail
exec vllm-router \
    --vllm-pd-disaggregation \
    --prefill http://10.77.0.14:8100 \
    --decode http://10.77.0.15:8200 \
    --host 0.0.0.0 \
    --port 8000 \
    --policy round_robin
