# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The exporters of the hosts and their accelerators, as planned services.

Pure functions; no Ansible imports. With a monitoring host in the inventory the plan gives:

- every host of the deployment Prometheus' node exporter (the distribution's
  ``prometheus-node-exporter``, run by a unit of the collection on the host's address; its
  infiniband collector reads the RDMA ports where they exist, its filesystem collector the
  checkpoint's disk);
- every accelerator host (a host with an engine) its platform's exporter, in a container from
  the vendor's image: NVIDIA dcgm-exporter (with the counters the hardware alerts read, some of
  which are off in its default list), AMD device-metrics-exporter, Ascend NPU Exporter.

A site that runs another exporter (its own build, or a stand-in where no device exists) names
its command (``k3_accelerator_exporter_command``): it then runs on the host, the port and address
given by the placeholders ``{ip}`` and ``{port}``.

Each exporter is a service of kind ``exporter`` (role ``exporter``): the firewall opens its port
to the monitoring hosts and ``k3_admin_networks`` only, and Prometheus scrapes it in the job
``k3-node`` or ``k3-accelerator``.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._service_entry import service_entry

KIND = "exporter"
NODE = "node-exporter"
NODE_PROGRAM = "prometheus-node-exporter"
NODE_PACKAGE = "prometheus-node-exporter"
NODE_PORT = 9100
# The filesystems the disk alert reads: not the kernel's and containers' pseudo mounts.
NODE_FS_EXCLUDE = "^/(dev|proc|run|sys|var/lib/docker/.+|var/lib/containers/.+)($|/)"

# dcgm-exporter's counters beyond its default list that the hardware alerts read (NVLink errors,
# uncorrectable ECC, clock event reasons), with the defaults it needs for the dashboards.
DCGM_COUNTERS = (
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask)."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total NVLink recovery errors."),
)
DCGM_COUNTERS_PATH = "/etc/dcgm-exporter/kimi-k3-counters.csv"
# device-metrics-exporter's image: its entrypoint and the configuration file the exporter reads.
ROCM_ENTRYPOINT = "/home/amd/tools/entrypoint.sh"
ROCM_CONFIG_PATH = "/etc/metrics/config.json"

# Per platform (the profile's ``platform``): the vendor's exporter. The images are the vendors'
# published ones; a site pins its own with k3_accelerator_exporter_image.
ACCELERATORS = {
    "blackwell": {
        "name": "dcgm-exporter",
        "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.1-ubuntu22.04",
        "port": 9400,
        "device": "gpu",
    },
    "rocm": {
        "name": "device-metrics-exporter",
        "image": "docker.io/rocm/device-metrics-exporter:v1.5.1",
        "port": 5000,
        "device": "gpu_id",
    },
    "ascend": {
        "name": "npu-exporter",
        "image": "npu-exporter:v7.3.0",
        "port": 8082,
        "device": "id",
    },
}
# A platform without a vendor exporter (the sandbox's CPU engines) plans one only from a command.
COMMAND_EXPORTER = {"name": "accelerator-exporter", "image": None, "port": 9400, "device": None}
PLACEHOLDERS = ("{ip}", "{port}")


def dcgm_counters():
    """dcgm-exporter's counters file (its CSV: field, Prometheus type, help)."""
    lines = ["# kimi_k3.serving: the counters the hardware alerts and dashboards read."]
    lines += ["%s, %s, %s" % counter for counter in DCGM_COUNTERS]
    return "\n".join(lines) + "\n"


def accelerator_defaults(platform):
    """The platform's exporter (name, image, port, device label), or the command-only one."""
    return dict(ACCELERATORS.get(platform) or COMMAND_EXPORTER)


def _service(name, argv, port, ip, runtime, health_path="/metrics"):
    url = "http://%s:%d" % (ip, port)
    ports = [{"name": "metrics", "port": port, "count": 1}]
    return service_entry(name, KIND, argv, runtime, ports=ports, url=url, health={"url": url + health_path})


def node_exporter(ip, port, rdma=True):
    """The node exporter on ``ip:port`` (its infiniband collector on where RDMA devices may exist)."""
    argv = [
        NODE_PROGRAM,
        "--web.listen-address=%s:%d" % (ip, port),
        "--collector.filesystem.mount-points-exclude=%s" % NODE_FS_EXCLUDE,
    ]
    if rdma:
        argv.append("--collector.infiniband")
    service = _service(NODE, argv, port, ip, "host")
    service["exporter"] = {"job": "node", "package": NODE_PACKAGE, "program": NODE_PROGRAM, "device": None}
    return service


def fill(argv, ip, port):
    """``argv`` with ``{ip}`` and ``{port}`` replaced by the exporter's address and port."""
    return [str(a).replace("{ip}", ip).replace("{port}", str(port)) for a in argv]


def accelerator_exporter(platform, ip, settings, config_dir, runtime="docker"):
    """The platform's exporter on this host: ``settings`` are port, image and command (or None).

    ``runtime`` host (the host's k3_runtime): the vendor's program installed on the host, as the
    engines are, with the same arguments and no container.
    """
    spec = accelerator_defaults(platform)
    port = int(settings.get("port") or spec["port"])
    command = settings.get("command")
    if command:
        service = _service(spec["name"], fill(command, ip, port), port, ip, "host")
        service["exporter"] = {"job": "accelerator", "package": None, "program": command[0], "device": spec["device"]}
        return service
    image = settings.get("image") or spec["image"]
    docker = runtime == "docker"
    if platform == "blackwell":
        # In the configuration folder itself: the one folder the service_units call makes.
        counters = "%s/dcgm-exporter-counters.csv" % config_dir
        argv = ["dcgm-exporter", "-a", "%s:%d" % (ip, port), "-f", DCGM_COUNTERS_PATH if docker else counters]
        container = {
            "network": "host",
            "gpus": "all",
            "cap_add": ["SYS_ADMIN"],
            "volumes": ["%s:%s:ro" % (counters, DCGM_COUNTERS_PATH)],
        }
        files = [{"path": counters, "mode": "0644", "content": dcgm_counters()}]
    elif platform == "rocm":
        # The exporter reads its port from its configuration (ServerPort) and listens on every
        # address; the image's entrypoint starts its GPU agent first, then the exporter.
        config = "%s/device-metrics-exporter.json" % config_dir
        if docker:
            argv = [ROCM_ENTRYPOINT, "-amd-metrics-config", ROCM_CONFIG_PATH]
        else:
            argv = ["amd-metrics-exporter", "-amd-metrics-config", config]
        container = {
            "network": "host",
            "devices": ["/dev/dri", "/dev/kfd"],
            "volumes": ["%s:%s:ro" % (config, ROCM_CONFIG_PATH)],
        }
        files = [{"path": config, "mode": "0644", "content": '{"ServerPort": %d}\n' % port}]
    else:  # ascend: the NPU Exporter over HTTP on the host's address, reading the driver's DCMI
        argv = ["npu-exporter", "-ip=%s" % ip, "-port=%d" % port, "-containerMode=docker", "-updateTime=5"]
        container = {
            "network": "host",
            "privileged": True,
            "volumes": [
                "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
                "/usr/local/dcmi:/usr/local/dcmi:ro",
                "/var/run/docker.sock:/var/run/docker.sock:ro",
                "/var/log/mindx-dl/npu-exporter:/var/log/mindx-dl/npu-exporter",
            ],
        }
        files = []
    service = _service(spec["name"], argv, port, ip, runtime)
    if runtime == "docker":
        service.update(image=image, container=container)
    if files:
        service["files"] = files
    program = argv[0] if runtime == "host" else None
    service["exporter"] = {"job": "accelerator", "package": None, "program": program, "device": spec["device"]}
    return service
