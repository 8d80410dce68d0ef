#!/usr/bin/env python3
"""Build the local, signed apt repository of TEST DOUBLE packages for the prerequisites scenario.

No vendor package can be downloaded or installed here (no GPU, no NVIDIA repository), so the
Molecule scenario installs these small packages instead, through apt, from a flat repository laid
out and signed like NVIDIA's (``deb [signed-by=KEYRING] URI /``). What they install are doubles:

* ``nvidia-driver-575-open`` / ``nvidia-driver-580-open``: an ``nvidia-smi`` that prints a recorded
  real output (tests/unit/fixtures/accelerator/nvidia, copied byte for byte from public sources)
  while the double of the kernel module has its version "loaded"; NVML's version-mismatch error
  otherwise. The "loaded module" is the file ``SYSROOT/proc/driver/nvidia/version`` (recorded
  open-kernel-module format, version substituted), written at boot by a unit the package ships,
  as modprobe loads the installed module at boot. A first install also "loads" it at once; an
  upgrade does not (the old module stays in use until the host reboots, as on a real node).
* ``nvidia-container-toolkit``: ``nvidia-ctk`` and ``nvidia-container-runtime`` that print versions.
* ``nvidia-imex-580``: an ``nvidia-imex`` daemon double (it sleeps) and its systemd unit.
* ``k3-double-amd-instinct``: an ``amd-smi`` printing the recorded ``amd-smi version`` (ROCm 6.4.1) and
  the recorded MI350X ``amd-smi static`` block once per GPU (8, renumbered); under SYSROOT the
  recorded ``/sys/module/amdgpu/version``, one recorded ``/sys/class/infiniband`` device, and
  ``/dev/kfd``, ``/dev/dri``, ``/dev/infiniband`` stand-ins.
* ``k3-double-ascend-a3``: an ``npu-smi`` printing the recorded A3 ``npu-smi info`` (8 NPUs x 2 dies)
  and an ``hccn_tool`` printing ``-ip -g`` in the recorded format, with an address per host and
  device; under SYSROOT the recorded driver/firmware/CANN version files and every device and mount
  source of the tutorial's ``docker run``.

Usage: build_repo.py OUTDIR   (idempotent: an unchanged recipe leaves OUTDIR as it is)
       build_repo.py --index DIR (index and sign the .debs in DIR/pool: tools/fetch_debs.sh)
"""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALL_FIXTURES = HERE.parent / "unit" / "fixtures" / "accelerator"
FIXTURES = ALL_FIXTURES / "nvidia"
# Where the doubles keep their state on a test host; the scenario passes it as the facts' sys_root.
SYSROOT = "/var/lib/k3-test-doubles/sysroot"
PROC_TEMPLATE = FIXTURES / "proc-driver-nvidia-version_open_x86_64_565.57.01.txt"
DOUBLE_NOTE = (
    "TEST DOUBLE built by kimi_k3.serving's tests (tests/prerequisites/build_repo.py); not the vendor's software."
)

NVIDIA_SMI = """#!/bin/sh
# {note}
# Prints the recorded output of driver {version} while the kernel-module double has it loaded.
loaded={sysroot}/proc/driver/nvidia/version
if ! grep -qF "  {version}  " "$loaded" 2>/dev/null; then
  if [ ! -e "$loaded" ]; then
    echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    exit 9
  fi
  echo "Failed to initialize NVML: Driver/library version mismatch"
  echo "NVML library version: {branch}"
  exit 18
fi
case "$1" in
  "") exec cat /usr/share/k3-test-doubles/nvidia/nvidia-smi.txt ;;
  *) echo "nvidia-smi double: unsupported arguments: $*" >&2; exit 2 ;;
esac
"""

MODPROBE_UNIT = """[Unit]
Description=Load the NVIDIA kernel module double ({note})
DefaultDependencies=no
Before=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/lib/k3-test-doubles/nvidia-load-module

[Install]
WantedBy=multi-user.target
"""

LOAD_MODULE = """#!/bin/sh
# {note}
# "Loads" the installed driver's kernel module: what modprobe does at boot.
mkdir -p {sysroot}/proc/driver/nvidia
cp /usr/share/k3-test-doubles/nvidia/proc-version {sysroot}/proc/driver/nvidia/version
"""

DRIVER_POSTINST = """#!/bin/sh
set -e
if [ "$1" = configure ]; then
  ln -sf /usr/lib/systemd/system/k3-test-double-nvidia-module.service \\
    /etc/systemd/system/multi-user.target.wants/k3-test-double-nvidia-module.service
  # A first install loads the module at once; a module already loaded stays until reboot.
  [ -e {sysroot}/proc/driver/nvidia/version ] || /usr/lib/k3-test-doubles/nvidia-load-module
fi
"""

VERSION_TOOL = """#!/bin/sh
# {note}
echo "{banner}"
"""

IMEX = """#!/bin/sh
# {note}
# Stands in for the IMEX daemon: reads its configuration and stays up.
test -r /etc/nvidia-imex/config.cfg || {{ echo "no /etc/nvidia-imex/config.cfg" >&2; exit 1; }}
exec sleep infinity
"""

IMEX_CONFIG = """# Minimal configuration of the IMEX double: where the node list is.
IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg
"""

IMEX_UNIT = """[Unit]
Description=NVIDIA IMEX service ({note})
After=network-online.target

[Service]
Type=simple
ExecStart=/usr/bin/nvidia-imex

[Install]
WantedBy=multi-user.target
"""


def driver_package(branch, version, smi_fixture, conflicts):
    fmt = {"note": DOUBLE_NOTE, "version": version, "branch": version, "sysroot": SYSROOT}
    proc = PROC_TEMPLATE.read_text(encoding="utf-8").replace("565.57.01", version)
    return {
        "control": {
            "Package": "nvidia-driver-%s-open" % branch,
            "Version": "%s-0ubuntu1" % version,
            "Conflicts": conflicts,
            "Replaces": conflicts,
            "Description": "NVIDIA driver %s, open kernel modules (%s)" % (version, DOUBLE_NOTE),
        },
        "files": {
            "usr/bin/nvidia-smi": (NVIDIA_SMI.format(**fmt), 0o755),
            "usr/share/k3-test-doubles/nvidia/nvidia-smi.txt": ((FIXTURES / smi_fixture).read_text("utf-8"), 0o644),
            "usr/share/k3-test-doubles/nvidia/proc-version": (proc, 0o644),
            "usr/lib/k3-test-doubles/nvidia-load-module": (LOAD_MODULE.format(**fmt), 0o755),
            "usr/lib/systemd/system/k3-test-double-nvidia-module.service": (MODPROBE_UNIT.format(**fmt), 0o644),
        },
        "postinst": DRIVER_POSTINST.format(**fmt),
    }


AMD_SMI = """#!/bin/sh
# {note}
d=/usr/share/k3-test-doubles/amd
case "$1" in
  version) exec cat $d/amd-smi-version.txt ;;
  static)
    for i in 0 1 2 3 4 5 6 7; do sed "s/^GPU: 0$/GPU: $i/" $d/amd-smi-static.txt; done ;;
  *) echo "amd-smi double: unsupported arguments: $*" >&2; exit 2 ;;
esac
"""

NPU_SMI = """#!/bin/sh
# {note}
[ "$1" = info ] && [ $# -eq 1 ] && exec cat /usr/share/k3-test-doubles/ascend/npu-smi-info.txt
echo "npu-smi double: unsupported arguments: $*" >&2
exit 2
"""

# Recorded format (hccn_tool -i 3 -ip -g of a 910B1 node); the address is made per host and device.
HCCN_TOOL = """#!/bin/sh
# {note}
# Prints "-ip -g" in the recorded format with address 29.1.<host>.<10+device>; <host> is the last
# octet of this host's address, or the number in /etc/k3-test-doubles/hccn-host when present.
[ "$1" = -i ] && [ "$3" = -ip ] && [ "$4" = -g ] || {{ echo "hccn_tool double: unsupported: $*" >&2; exit 2; }}
h=$(cat /etc/k3-test-doubles/hccn-host 2>/dev/null || hostname -I | awk '{{split($1, a, "."); print a[4]}}')
printf 'ipaddr:29.1.%s.%s\nnetmask:255.255.0.0\n' "$h" $((10 + $2))
"""


def recorded(name):
    """A recorded real output (tests/unit/fixtures/accelerator/NAME) as a package file."""
    return ((ALL_FIXTURES / name).read_text("utf-8"), 0o644)


def tree(src, dst):
    """Every file under the recorded folder ``src``, at ``dst`` in the package."""
    return {
        "%s/%s" % (dst, path.relative_to(src).as_posix()): (path.read_text(encoding="utf-8"), 0o644)
        for path in sorted(src.rglob("*"))
        if path.is_file()
    }


def amd_package():
    sysroot = SYSROOT.lstrip("/")
    files = {
        "opt/rocm/bin/amd-smi": (AMD_SMI.format(note=DOUBLE_NOTE), 0o755),
        "usr/share/k3-test-doubles/amd/amd-smi-version.txt": recorded("amd/amd-smi-version_mi300x_rocm6.4.1.txt"),
        "usr/share/k3-test-doubles/amd/amd-smi-static.txt": recorded("amd/amd-smi-static_mi350x_gpu0_partial.txt"),
        sysroot + "/sys/module/amdgpu/version": recorded("amd/sys-module-amdgpu-version_mi300x-vf_6.12.12.txt"),
        sysroot + "/dev/kfd": ("", 0o666),
        sysroot + "/dev/dri/renderD128": ("", 0o666),
        sysroot + "/dev/infiniband/uverbs0": ("", 0o666),
    }
    files.update(
        tree(ALL_FIXTURES / "rdma" / "sys-class-infiniband-h100" / "mlx5_0", sysroot + "/sys/class/infiniband/mlx5_0")
    )
    return {
        "control": {
            "Package": "k3-double-amd-instinct",
            "Version": "6.4.1-1",
            "Description": "AMD Instinct MI350X x8 node with ROCm 6.4.1 (%s)" % DOUBLE_NOTE,
        },
        "files": files,
    }


def ascend_package():
    sysroot = SYSROOT.lstrip("/")
    hccn = HCCN_TOOL.format(note=DOUBLE_NOTE)
    npu_smi = NPU_SMI.format(note=DOUBLE_NOTE)
    files = {
        "usr/local/bin/npu-smi": (npu_smi, 0o755),
        "usr/local/Ascend/driver/tools/hccn_tool": (hccn, 0o755),
        "usr/share/k3-test-doubles/ascend/npu-smi-info.txt": recorded("ascend/npu-smi-info_a3_8x2die_25.2.1.txt"),
        sysroot + "/usr/local/Ascend/driver/version.info": recorded(
            "ascend/driver-version.info_atlas800I-A2_25.0.rc1.1.txt"
        ),
        sysroot + "/usr/local/Ascend/firmware/version.info": recorded(
            "ascend/firmware-version.info_atlas800I-A2_7.7.0.1.231.txt"
        ),
        sysroot + "/etc/ascend_install.info": recorded("ascend/etc-ascend_install.info_atlas800-910A.txt"),
        sysroot + "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info": recorded(
            "ascend/ascend_toolkit_install.info_a3_cann8.3.RC2.txt"
        ),
        sysroot + "/usr/local/Ascend/driver/tools/hccn_tool": (hccn, 0o755),
        sysroot + "/usr/local/bin/npu-smi": (npu_smi, 0o755),
        sysroot + "/usr/local/dcmi/.k3-test-double": ("", 0o644),
        sysroot + "/usr/local/Ascend/driver/lib64/.k3-test-double": ("", 0o644),
        sysroot + "/root/.cache/.k3-test-double": ("", 0o644),
    }
    for dev in ["davinci%d" % i for i in range(16)] + ["davinci_manager", "devmm_svm", "hisi_hdc"]:
        files[sysroot + "/dev/" + dev] = ("", 0o666)
    return {
        "control": {
            "Package": "k3-double-ascend-a3",
            "Version": "25.2.1-1",
            "Description": "Atlas 800 A3 node, 8 NPUs x 2 dies (%s)" % DOUBLE_NOTE,
        },
        "files": files,
    }


def packages():
    toolkit = "1.18.0"
    return [
        driver_package("575", "575.57.08", "nvidia-smi_b200_8gpu_575.57.08.txt", "nvidia-driver-580-open"),
        driver_package("580", "580.126.09", "nvidia-smi_gb200_4gpu_580.126.09.txt", "nvidia-driver-575-open"),
        {
            "control": {
                "Package": "nvidia-container-toolkit",
                "Version": "%s-1" % toolkit,
                "Description": "NVIDIA container toolkit (%s)" % DOUBLE_NOTE,
            },
            "files": {
                "usr/bin/nvidia-ctk": (
                    VERSION_TOOL.format(note=DOUBLE_NOTE, banner="NVIDIA Container Toolkit CLI version " + toolkit),
                    0o755,
                ),
                "usr/bin/nvidia-container-runtime": (
                    VERSION_TOOL.format(note=DOUBLE_NOTE, banner="NVIDIA Container Runtime version " + toolkit),
                    0o755,
                ),
            },
        },
        {
            "control": {
                "Package": "nvidia-imex-580",
                "Version": "580.126.09-1",
                "Description": "NVIDIA IMEX daemon (%s)" % DOUBLE_NOTE,
            },
            "files": {
                "usr/bin/nvidia-imex": (IMEX.format(note=DOUBLE_NOTE), 0o755),
                "usr/lib/systemd/system/nvidia-imex.service": (IMEX_UNIT.format(note=DOUBLE_NOTE), 0o644),
                "etc/nvidia-imex/config.cfg": (IMEX_CONFIG, 0o644),
            },
        },
        amd_package(),
        ascend_package(),
    ]


def build_deb(pkg, pool):
    control = dict(pkg["control"])
    control = {k: v for k, v in control.items() if v}
    control.setdefault("Architecture", "all")
    control.setdefault("Maintainer", "kimi_k3.serving tests <tests@invalid>")
    control.setdefault("Section", "misc")
    control.setdefault("Priority", "optional")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        for rel, (text, mode) in pkg["files"].items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            path.chmod(mode)
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN" / "control").write_text("".join("%s: %s\n" % kv for kv in control.items()))
        conffiles = sorted("/" + rel for rel in pkg["files"] if rel.startswith("etc/"))
        if conffiles:
            (root / "DEBIAN" / "conffiles").write_text("".join(f + "\n" for f in conffiles))
        if pkg.get("postinst"):
            (root / "DEBIAN" / "postinst").write_text(pkg["postinst"])
            (root / "DEBIAN" / "postinst").chmod(0o755)
        for path in root.rglob("*"):
            os.utime(path, (0, 0))
        name = "%s_%s_%s.deb" % (control["Package"], control["Version"], control["Architecture"])
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(pool / name)],
            check=True,
            capture_output=True,
            env={**os.environ, "SOURCE_DATE_EPOCH": "0"},
        )
    return control, pool / name


def digest(path, algo):
    return hashlib.new(algo, path.read_bytes()).hexdigest()


def build(out):
    out.mkdir(parents=True, exist_ok=True)
    recipe = hashlib.sha256(
        json.dumps([packages(), Path(__file__).read_text()], sort_keys=True, default=str).encode()
    ).hexdigest()
    stamp = out / ".recipe"
    if stamp.is_file() and stamp.read_text() == recipe and (out / "InRelease").is_file():
        return
    for child in out.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    pool = out / "pool"
    pool.mkdir()
    for pkg in packages():
        build_deb(pkg, pool)
    write_index(out, "test doubles")
    images(out)
    stamp.write_text(recipe)


def control_of(deb):
    """The control fields of a .deb, in order."""
    text = subprocess.run(["dpkg-deb", "--field", str(deb)], check=True, capture_output=True, text=True).stdout
    return text.rstrip("\n") + "\n"


def write_index(out, label):
    """Packages, Release and a signed InRelease for the .debs in OUT/pool (a flat repository)."""
    stanzas = []
    for deb in sorted((out / "pool").glob("*.deb")):
        stanzas.append(
            control_of(deb)
            + "Filename: ./pool/%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n"
            % (deb.name, deb.stat().st_size, digest(deb, "md5"), digest(deb, "sha256"))
        )
    (out / "Packages").write_text("\n".join(stanzas))
    with open(out / "Packages", "rb") as src, gzip.GzipFile(out / "Packages.gz", "wb", mtime=0) as dst:
        dst.write(src.read())
    index = ["Packages", "Packages.gz"]
    release = ["Origin: kimi_k3.serving tests", "Label: " + label, "Date: Thu, 01 Jan 1970 00:00:00 UTC", "SHA256:"]
    release += [" %s %d %s" % (digest(out / n, "sha256"), (out / n).stat().st_size, n) for n in index]
    (out / "Release").write_text("\n".join(release) + "\n")
    sign(out)


def sign(out):
    """A throwaway key signs InRelease; its public keyring is what the hosts' Signed-By names."""
    with tempfile.TemporaryDirectory() as home:
        gpg = ["gpg", "--batch", "--homedir", home, "--quiet"]
        subprocess.run(
            [
                *gpg,
                "--passphrase",
                "",
                "--quick-gen-key",
                "kimi_k3.serving test repository",
                "ed25519",
                "sign",
                "never",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run([*gpg, "--output", str(out / "keyring.gpg"), "--export"], check=True)
        subprocess.run(
            [
                *gpg,
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--clearsign",
                "--output",
                str(out / "InRelease"),
                str(out / "Release"),
            ],
            check=True,
        )


def image_archive(path, tag, build):
    """A ``docker save`` archive of a TEST DOUBLE image: one tiny layer; ``build`` changes its configuration
    (so its image ID), as two different builds pushed under the same tag would."""
    import io
    import tarfile

    def add(tar, name, data):
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        tar.addfile(info, io.BytesIO(data))

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar, "k3-test-double.txt", ("%s (%s)\n" % (DOUBLE_NOTE, tag)).encode())
    layer_bytes = layer.getvalue()
    layer_id = hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": {"org.kimi-k3.test-double": build}},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_id]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": DOUBLE_NOTE}],
        },
        sort_keys=True,
    ).encode()
    config_id = hashlib.sha256(config).hexdigest()
    manifest = json.dumps([{"Config": config_id + ".json", "RepoTags": [tag], "Layers": [layer_id + "/layer.tar"]}])
    with tarfile.open(path, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar, config_id + ".json", config)
        add(tar, layer_id + "/layer.tar", layer_bytes)
        add(tar, layer_id + "/VERSION", b"1.0")
        add(tar, "manifest.json", manifest.encode())
    return "sha256:" + config_id


def images(out):
    """The planned NVIDIA engine image as two different builds (images/engine-a.tar, engine-b.tar)."""
    folder = out / "images"
    folder.mkdir(exist_ok=True)
    return {
        name: image_archive(folder / (name + ".tar"), "vllm/vllm-openai:kimi-k3", name)
        for name in ("engine-a", "engine-b")
    }


def main(argv):
    if len(argv) == 3 and argv[1] == "--index":
        write_index(Path(argv[2]).resolve(), "Debian packages for the test hosts")
        return
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    build(Path(argv[1]).resolve())
    print(Path(argv[1]).resolve())


if __name__ == "__main__":
    main(sys.argv)
