docker run --rm --network host --entrypoint vllm-router "$ROUTER_IMAGE" \
  --vllm-pd-disaggregation \
  --kv-connector moriio \
  --vllm-discovery-address 0.0.0.0:36367 \
  --host 0.0.0.0 --port 8000 \
  --worker-startup-timeout-secs 7200 \
  --policy consistent_hash \
  --prefill-policy consistent_hash \
  --decode-policy consistent_hash \
  --log-level info
