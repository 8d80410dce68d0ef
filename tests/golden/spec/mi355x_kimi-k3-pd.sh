#!/usr/bin/env bash
set -euo pipefail

ROLE=${1:?Usage: bash kimi-k3-pd.sh prefill|decode}
: "${ROUTER_IP:?Set the router reachable IP}"
: "${WORKER_IP:?Set this worker reachable IP}"
: "${SOCKET_IFNAME:?Set the host network interface}"
: "${RDMA_DEVICES:?Set the comma-separated HCA list}"
CPU_OFFLOAD_BYTES=${CPU_OFFLOAD_BYTES:-2399000000000}

export NCCL_SOCKET_IFNAME="$SOCKET_IFNAME" GLOO_SOCKET_IFNAME="$SOCKET_IFNAME"
export NCCL_IB_HCA="$RDMA_DEVICES"
export VLLM_ROCM_USE_AITER=1 AITER_BF16_FP8_MOE_BOUND=0
export AITER_FLYDSL_STAGE2_FP8=1
export VLLM_ROCM_AITER_MLA_ASM_PADDING=asm VLLM_ROCM_AITER_MLA_DCP_VERIFY=asm
export VLLM_ROCM_QUICK_REDUCE_QUANTIZATION=INT4
export VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB=256
export SAFETENSORS_FAST_GPU=1
export VLLM_SSM_CONV_STATE_LAYOUT=DS VLLM_KV_CACHE_LAYOUT=HND
export NCCL_DMABUF_ENABLE=0 HSA_ENABLE_IPC_MODE_LEGACY=1 HIP_FORCE_DEV_KERNARG=1
export PYTHONHASHSEED=42 PYTHONNOUSERSITE=1
export VLLM_USE_DIRECT_DCP_A2A=0 VLLM_USE_DIRECT_DCP_Q_GATHER=0 VLLM_USE_DIRECT_DCP_KV_GATHER=0
export VLLM_ENGINE_READY_TIMEOUT_S=7200 VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=1200
export MORI_IO_SQ_BACKOFF_TIMEOUT_US=50000
export MORI_IO_QP_MAX_SEND_WR=16384 MORI_IO_QP_MAX_CQE=32768 MORI_IO_QP_MAX_SGE=2
export MORI_IO_TC_DISABLE=0

CUSTOM_OPS='["+fused_rms_norm_gated","+quant_fp8","+grouped_topk","+sparse_attn_indexer","none"]'
case "$ROLE" in
  prefill)
    MAX_SEQS=96
    BATCHED=8192
    KV_ROLE=kv_producer
    export HSA_NO_SCRATCH_RECLAIM=0
    COMPILATION="{\"mode\":3,\"cudagraph_mode\":\"NONE\",\"max_cudagraph_capture_size\":0,\"custom_ops\":$CUSTOM_OPS}"
    ;;
  decode)
    MAX_SEQS=96
    BATCHED=512
    KV_ROLE=kv_consumer
    CAPTURES="$(seq -s, 1 128),$(seq -s, 130 10 240)"
    COMPILATION="{\"mode\":3,\"cudagraph_mode\":\"FULL_DECODE_ONLY\",\"max_cudagraph_capture_size\":240,\"cudagraph_capture_sizes\":[$CAPTURES],\"custom_ops\":$CUSTOM_OPS}"
    ;;
  *) echo "Role must be prefill or decode" >&2; exit 1 ;;
esac

MORI="{\"kv_connector\":\"MoRIIOConnector\",\"kv_role\":\"$KV_ROLE\",\"kv_load_failure_policy\":\"fail\",\"kv_connector_extra_config\":{\"backend\":\"rdma\",\"read_mode\":true,\"proxy_ip\":\"$ROUTER_IP\",\"proxy_ping_port\":\"36367\",\"host_ip\":\"$WORKER_IP\",\"http_port\":\"6100\",\"handshake_port\":\"26000\",\"notify_port\":\"27000\"}}"
KV_CONFIG=$MORI
if [ "$ROLE" = prefill ]; then
  CPU="{\"kv_connector\":\"SimpleCPUOffloadConnector\",\"kv_role\":\"kv_both\",\"kv_connector_extra_config\":{\"cpu_bytes_to_use\":$CPU_OFFLOAD_BYTES,\"lazy_offload\":false}}"
  KV_CONFIG="{\"kv_connector\":\"MultiConnector\",\"kv_role\":\"kv_both\",\"kv_load_failure_policy\":\"fail\",\"kv_connector_extra_config\":{\"connectors\":[$MORI,$CPU]}}"
fi

exec vllm serve /models/Kimi-K3 \
  --host 0.0.0.0 --port 6100 \
  --served-model-name moonshotai/Kimi-K3 \
  --trust-remote-code \
  --tensor-parallel-size 8 \
  --decode-context-parallel-size 8 \
  --cp-kv-cache-interleave-size 1 \
  --dcp-comm-backend a2a \
  --moe-backend auto \
  --load-format fastsafetensors \
  --gpu-memory-utilization 0.90 \
  --language-model-only \
  --enable-auto-tool-choice \
  --tool-call-parser kimi_k3 --reasoning-parser kimi_k3 \
  --max-model-len 1048576 \
  --stream-interval 10 \
  --enable-prefix-caching --prefix-match-unit 128 \
  --kv-cache-dtype fp8 --mamba-ssm-cache-dtype bfloat16 \
  --block-size 128 \
  --attention-backend ROCM_AITER_MLA \
  --attention-config '{"mla_prefill_backend":"ROCM_AITER_FA","use_prefill_query_quantization":true}' \
  --speculative-config '{"model":"/models/Inferact-Kimi-K3-DSpark","method":"dspark","num_speculative_tokens":4,"attention_backend":"ROCM_AITER_MLA","kv_cache_dtype":"fp8","draft_sample_method":"probabilistic","rejection_sample_method":"block"}' \
  --max-num-seqs "$MAX_SEQS" \
  --max-num-batched-tokens "$BATCHED" \
  --compilation-config "$COMPILATION" \
  --kv-transfer-config "$KV_CONFIG"
