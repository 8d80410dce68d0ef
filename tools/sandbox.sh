#!/usr/bin/env bash
# A real multi-host test cluster on this one machine: the hosts of tools/sandbox-hosts.txt,
# each a network namespace + an overlayfs root over a cached Debian base + real systemd
# (systemd-nspawn -b) + sshd, on a private bridge k3sb0 (10.77.0.1/24) without a route out.
# A hosts file whose addresses are in 10.77.N.0/24 (N 1-3) makes a host set of its own beside it:
# bridge k3sbN (10.77.N.1), its own state folders and shared folder; host names differ between
# sets. Up to four sets run at once (the test suites run side by side on them).
#
#   tools/sandbox.sh up             build the hosts (and the cached base once), wait until each
#                                   answers ssh with systemd running, write inventories/sandbox/hosts.yml
#   tools/sandbox.sh down [--purge] remove all of it (--purge: the cached base rootfs too)
#   tools/sandbox.sh status         each host and whether it is up
#   tools/sandbox.sh base           build the cached base rootfs if needed and print its path
#   tools/sandbox.sh inventory      write only the inventory of the hosts file (no host; no root)
#
# Every host sees, read-only and at the same absolute paths: $REPO/.venv/vllm, $REPO/.venv/services,
# $REPO/.venv/bench, $REPO/.venv/torch (the one torch of the vllm and bench venvs, linked), the
# pyenv Pythons the venvs are made from, the model folder $REPO/.cache/sandbox/models and the front door's
# TLS files $REPO/.cache/sandbox/tls (tools/sandbox_tls.py makes them); read-write:
# $REPO/.cache/sandbox/shared as /srv/k3-shared. Root logs in with $REPO/.cache/sandbox/id_ed25519.
#
# Runs as root. The controller's PID 1 is not systemd: every nspawn is a background process
# of its own session whose PID is kept in /run/k3-sandbox/. Environment knobs:
#   K3SB_TIMEOUT (s, default 120)  how long `up` waits for the hosts to answer
#   K3SB_MIRROR                    Debian mirror for the base (default: the one apt uses)
#   K3SB_HOSTS_FILE                the hosts to create (default tools/sandbox-hosts.txt)
#   K3SB_EXTRA_BINDS               more folders (space-separated) mounted read-only in every host
#   K3SB_INVENTORY                 the hosts.yml to write (default inventories/sandbox/hosts.yml)
#   K3SB_DEBIAN_REPO               the hosts' distribution mirror: a local flat repository of Debian
#                                  packages (tools/fetch_debs.sh; default $REPO/.cache/debian-debs when
#                                  it is there, "" for none), mounted read-only, their only apt source
#
# Host keys: every host gets its own SSH host keys when it is made; `up` writes their public halves
# to a known_hosts file of this host set (in .cache/sandbox), and the generated inventory points
# Ansible at it. Host-key checking stays on: nothing here turns it off.
set -euo pipefail

# Physical path: venvs record the real path of the folder they were made in (getcwd resolves links).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
HOSTS_FILE=${K3SB_HOSTS_FILE:-$REPO/tools/sandbox-hosts.txt}
# The host set's network (10.77.NET.0/24), from its hosts file's addresses: see set_network.
NET=0
CACHE_DIR=/var/cache/k3-sandbox
BASE=$CACHE_DIR/bookworm-minbase
BASE_STAMP=$CACHE_DIR/bookworm-minbase.ready
BASE_PACKAGES=openssh-server,python3,python3-apt,iproute2,procps,ca-certificates,sudo,curl,systemd,systemd-sysv,dbus
# Runtime libraries that the bind-mounted vLLM CPU build links against (vllm._C needs libnuma).
BASE_PACKAGES+=,libnuma1,libgomp1
# ansible.builtin.deb822_repository (the prerequisites roles' package repositories) needs it;
# ansible.posix.synchronize (model_weights staging) runs rsync on the node.
BASE_PACKAGES+=,python3-debian,rsync
# The firewall role loads the deployment's nftables table on every host.
BASE_PACKAGES+=,nftables
# olah (the sandbox's model hub, on the host of group hub) reads its repositories with Git.
BASE_PACKAGES+=,git
# The stamp's first line: a base built from another recipe is rebuilt.
BASE_RECIPE="bookworm minbase +$BASE_PACKAGES"
SANDBOX_CACHE=$REPO/.cache/sandbox
KEY=$SANDBOX_CACHE/id_ed25519
MODELS=$SANDBOX_CACHE/models
SHARED_MOUNT=/srv/k3-shared
INVENTORY=${K3SB_INVENTORY:-$REPO/inventories/sandbox/hosts.yml}
# One known_hosts file per inventory: host sets made from other hosts files reuse the addresses.
if [[ -z ${K3SB_INVENTORY:-} ]]; then
  KNOWN_HOSTS=$SANDBOX_CACHE/known_hosts
else
  KNOWN_HOSTS=$SANDBOX_CACHE/known_hosts-$(printf %s "$INVENTORY" | sha256sum | cut -c1-12)
fi
TIMEOUT=${K3SB_TIMEOUT:-120}
STOP_TIMEOUT=8 # orderly power-off, then an immediate one, then SIGKILL
# A container's console when its orderly halt went wrong (see stop_hosts).
HALT_FAILED_RE='Failed to start.*systemd-(halt|poweroff)[.]service|Dependency failed for.*(halt|poweroff)[.]target'
RO_BINDS=("$REPO/.venv/vllm" "$REPO/.venv/services" "$REPO/.venv/bench" "$REPO/.venv/torch" /root/.pyenv/versions/3.11.7 /root/.pyenv/versions/3.12.1)
# The front door's certificate and key, and the CA that signed them (tools/sandbox_tls.py): "files
# already on the hosts", as a site's own certificate tooling would leave them.
TLS_DIR=$SANDBOX_CACHE/tls
RO_BINDS+=("$TLS_DIR")
# The hosts' exporters: the node exporter's program (unpacked from the distribution's package by
# make test-data) and the accelerator exporter's stand-in (a TEST DOUBLE: no GPU or NPU here) with
# the recorded real page it serves.
RO_BINDS+=("$SANDBOX_CACHE/node-exporter" "$REPO/tests/doubles" "$REPO/tests/unit/fixtures/exporters")
# The fabric check's vendor tools (TEST DOUBLES: no GPU, NPU or RDMA device here) print the recorded
# real outputs in this folder (tests/doubles/fabric_tools.py).
RO_BINDS+=("$REPO/tests/unit/fixtures/fabric")
# iperf3 for the fabric check (playbooks/fabric.yml), unpacked with its libraries by make test-data:
# its package would add a system user to every host.
RO_BINDS+=("$SANDBOX_CACHE/iperf3")
# opentracker for the checkpoint's fan-out tracker (unpacked the same way: its package adds a system
# user), and the sandbox's model hub: the stand-in checkpoint as a Hugging Face repository
# (tools/sandbox_hub.py), which olah serves from the host of group hub.
HUB_DIR=$SANDBOX_CACHE/hub
HUB_PORT=8090
RO_BINDS+=("$SANDBOX_CACHE/opentracker" "$HUB_DIR")
# One certificate for the front door of every host set that can run (so a set coming up never
# changes the files another set's hosts serve).
TLS_SUBNETS=(10.77.0.0/24 10.77.1.0/24 10.77.2.0/24 10.77.3.0/24)
# More read-only folders for every host, at the same path (e.g. a test package repository).
read -r -a EXTRA_BINDS <<<"${K3SB_EXTRA_BINDS:-}"
# The hosts have no route out: their distribution's mirror is a local one, when there is one.
DEBIAN_REPO=${K3SB_DEBIAN_REPO-$REPO/.cache/debian-debs}
[[ -n $DEBIAN_REPO && -f $DEBIAN_REPO/InRelease ]] || DEBIAN_REPO=
SSH_OPTS=(-i "$KEY" -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KNOWN_HOSTS"
  -o LogLevel=ERROR -o ConnectTimeout=3 -o ControlMaster=no -o ControlPath=none)

# --- output ---------------------------------------------------------------------------------
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
T0=$(now_ms)
# One line per step, with the seconds elapsed since the command started.
log() {
  local e=$(($(now_ms) - T0))
  printf '[sandbox %3d.%ds] %s\n' $((e / 1000)) $((e % 1000 / 100)) "$*"
}
die() {
  printf '[sandbox] ERROR: %s\n' "$*" >&2
  exit 1
}

# --- hosts file -----------------------------------------------------------------------------
NAMES=()
declare -A IP=() GROUPS_OF=()
read_hosts() {
  [[ -f $HOSTS_FILE ]] || die "$HOSTS_FILE is missing"
  local name ip groups extra n=0 g
  declare -A seen_ip=()
  while read -r name ip groups extra || [[ -n ${name:-} ]]; do
    n=$((n + 1))
    [[ -z ${name:-} || $name == \#* ]] && continue
    [[ -z ${extra:-} && -n ${groups:-} ]] || die "$HOSTS_FILE:$n: expected 'name ip group[,group...]'"
    [[ $name =~ ^[a-z0-9][a-z0-9-]{0,31}$ ]] || die "$HOSTS_FILE:$n: bad host name '$name'"
    if ! [[ $ip =~ ^10\.77\.([0-3])\.([0-9]{1,3})$ ]] || ((10#${BASH_REMATCH[2]} < 2 || 10#${BASH_REMATCH[2]} > 254)); then
      die "$HOSTS_FILE:$n: address '$ip' is not in 10.77.N.2-254 (N 0-3)"
    fi
    ((${#NAMES[@]} == 0)) && NET=${BASH_REMATCH[1]}
    ((BASH_REMATCH[1] == NET)) || die "$HOSTS_FILE:$n: address '$ip' is not in 10.77.$NET.0/24 (one network a file)"
    [[ -z ${IP[$name]:-} ]] || die "$HOSTS_FILE:$n: host '$name' listed twice"
    [[ -z ${seen_ip[$ip]:-} ]] || die "$HOSTS_FILE:$n: address $ip used twice"
    for g in ${groups//,/ }; do
      [[ $g =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $g != all && $g != ungrouped ]] ||
        die "$HOSTS_FILE:$n: bad group name '$g'"
    done
    NAMES+=("$name")
    IP[$name]=$ip
    GROUPS_OF[$name]=$groups
    seen_ip[$ip]=1
  done <"$HOSTS_FILE"
  ((${#NAMES[@]})) || die "$HOSTS_FILE lists no host"
  set_network
}

# The host set's bridge, links, MAC addresses and folders, from its network 10.77.NET.0/24. Network
# 0 keeps the names it has always had (k3sb0, k3sbv<octet>, /var/lib/k3-sandbox, /run/k3-sandbox).
set_network() {
  BRIDGE=k3sb$NET
  BRIDGE_IP=10.77.$NET.1
  SUBNET=10.77.$NET.0/24
  if ((NET == 0)); then
    VETH_PREFIX=k3sbv # + last octet of the host's address
    STATE_DIR=/var/lib/k3-sandbox # per host: overlay upper, work and the mounted root
    RUN_DIR=/run/k3-sandbox       # per host: nspawn PID file and console log
    SHARED=$SANDBOX_CACHE/shared
  else
    VETH_PREFIX=k3sb${NET}v
    STATE_DIR=/var/lib/k3-sandbox-$NET
    RUN_DIR=/run/k3-sandbox-$NET
    SHARED=$SANDBOX_CACHE/shared-$NET
  fi
  BRIDGE_MAC=$(printf '02:6b:%02x:ff:00:01' $((0x33 + NET)))
}

veth_of() { echo "$VETH_PREFIX${1##*.}"; } # $1 = address
# Fixed MAC addresses (locally administered, from the last octet): a host made anew keeps its
# MAC, so neighbour caches of the controller and of the other hosts stay right.
mac_of() { printf '02:6b:%02x:%02x:00:%02x' $((0x33 + NET)) "$2" "${1##*.}"; } # $1 = address, $2 = 0 inside, 1 host side

# --- controller prerequisites -----------------------------------------------------------------
ensure_tools() {
  local -A pkg_of=([debootstrap]=debootstrap [systemd-nspawn]=systemd-container [ip]=iproute2
    [ss]=iproute2 [ssh]=openssh-client [ssh-keygen]=openssh-client [setsid]=util-linux [flock]=util-linux)
  local cmd missing=()
  for cmd in "${!pkg_of[@]}"; do
    command -v "$cmd" >/dev/null || missing+=("${pkg_of[$cmd]}")
  done
  ((${#missing[@]})) || return 0
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  log "installing ${missing[*]} (apt)"
  local apt_log=/var/log/k3-sandbox-apt.log
  if ! "$REPO/tools/apt_install.sh" "${missing[@]}" >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    die "apt-get install ${missing[*]} failed (log: $apt_log)"
  fi
  rm -f "$apt_log"
  log "installed ${missing[*]}"
}

debian_mirror() {
  local url=${K3SB_MIRROR:-}
  if [[ -z $url && -f /etc/apt/sources.list.d/debian.sources ]]; then
    url=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [[ -z $url && -f /etc/apt/sources.list ]]; then
    url=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' \
      /etc/apt/sources.list)
  fi
  echo "${url:-http://deb.debian.org/debian}"
}

# --- processes --------------------------------------------------------------------------------
# A PID is alive when it exists and is not a zombie (orphans are reaped slowly here).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# The PID of the nspawn that runs host $1, if it is alive.
nspawn_pid() {
  local pid
  pid=$(cat "$RUN_DIR/$1.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  grep -qxF -- "--directory=$STATE_DIR/hosts/$1/root" <<<"$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  echo "$pid"
}

# PIDs of every process whose root is host $1's root (the container's init and all below it).
container_pids() {
  local root=$STATE_DIR/hosts/$1/root p
  mountpoint -q "$root" 2>/dev/null || return 0
  # Same device and inode: works across mount namespaces (the overlay is one superblock).
  for p in /proc/[0-9]*; do
    [[ $p/root -ef $root ]] && echo "${p#/proc/}"
  done
  return 0
}

# Sum of the proportional set size of host $1's processes, in MiB.
host_pss_mib() {
  local pid kb total=0
  for pid in $(container_pids "$1"); do
    kb=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null) || continue
    total=$((total + ${kb:-0}))
  done
  echo $((total / 1024))
}

# --- base rootfs ------------------------------------------------------------------------------
build_base() {
  if [[ -d $BASE && -f $BASE_STAMP && $(head -n 1 "$BASE_STAMP") == "$BASE_RECIPE" ]]; then
    log "base rootfs: cached ($BASE)"
    return
  fi
  local h
  for h in "${NAMES[@]}"; do
    ! nspawn_pid "$h" >/dev/null || die "the base rootfs must be (re)built while $h runs on it: run '$0 down' first"
  done
  local mirror start
  mirror=$(debian_mirror)
  start=$(now_ms)
  log "base rootfs: debootstrap bookworm minbase from $mirror (about a minute)"
  mkdir -p "$CACHE_DIR"
  rm -rf "$BASE" "$BASE.tmp" "$BASE_STAMP"
  if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" bookworm "$BASE.tmp" "$mirror" \
    >"$CACHE_DIR/debootstrap.log" 2>&1; then
    tail -n 20 "$CACHE_DIR/debootstrap.log" >&2
    die "debootstrap failed (full log: $CACHE_DIR/debootstrap.log)"
  fi
  # Per-host identity is made when a host is created: no host keys, no machine-id, no resolver.
  rm -f "$BASE.tmp"/etc/ssh/ssh_host_*
  : >"$BASE.tmp/etc/machine-id"
  rm -f "$BASE.tmp/var/lib/dbus/machine-id"
  rm -f "$BASE.tmp/etc/resolv.conf"
  : >"$BASE.tmp/etc/resolv.conf"
  rm -rf "$BASE.tmp"/var/cache/apt/archives/*.deb "$BASE.tmp"/var/log/*.log
  mv "$BASE.tmp" "$BASE"
  printf '%s\nbuilt %s in %ss\n' "$BASE_RECIPE" "$(date -Is)" \
    $((($(now_ms) - start) / 1000)) >"$BASE_STAMP"
  log "base rootfs: built in $((($(now_ms) - start) / 1000))s ($(du -sm "$BASE" | cut -f1) MB)"
}

# --- controller key, bridge -------------------------------------------------------------------
ensure_key() {
  mkdir -p "$SANDBOX_CACHE" "$MODELS" "$SHARED"
  if [[ ! -f $KEY || ! -f $KEY.pub ]]; then
    rm -f "$KEY" "$KEY.pub"
    ssh-keygen -q -t ed25519 -N '' -C k3-sandbox-controller -f "$KEY"
    log "controller key: created $KEY"
  fi
  chmod 600 "$KEY"
}

ensure_bridge() {
  if ! ip link show dev "$BRIDGE" >/dev/null 2>&1; then
    ip link add name "$BRIDGE" address "$BRIDGE_MAC" type bridge
    log "bridge $BRIDGE: created"
  fi
  ip -o -4 addr show dev "$BRIDGE" | grep -qF " $BRIDGE_IP/24 " || ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
  ip link set dev "$BRIDGE" up
}

# --- one host ---------------------------------------------------------------------------------
etc_hosts() {
  local h
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
  printf '%s\tk3-sb-controller\n' "$BRIDGE_IP"
  for h in "${NAMES[@]}"; do printf '%s\t%s\n' "${IP[$h]}" "$h"; done
}

# Writes $2 into file $1 only when its content differs (keeps a re-run free of changes).
write_if_changed() {
  [[ -f $1 && $(<"$1") == "$2" ]] && return 1
  printf '%s\n' "$2" >"$1.k3tmp"
  mv -f "$1.k3tmp" "$1"
}

configure_root() { # $1 = name, $2 = root
  local name=$1 r=$2 u
  printf '%s\n' "$name" >"$r/etc/hostname"
  tr -d '-' </proc/sys/kernel/random/uuid >"$r/etc/machine-id"
  etc_hosts >"$r/etc/hosts"
  ssh-keygen -q -t ed25519 -N '' -C "root@$name" -f "$r/etc/ssh/ssh_host_ed25519_key"
  ssh-keygen -q -t ecdsa -N '' -C "root@$name" -f "$r/etc/ssh/ssh_host_ecdsa_key"
  cat >"$r/etc/ssh/sshd_config.d/k3-sandbox.conf" <<'EOF'
# tools/sandbox.sh: key-only root login for the controller, many parallel sessions (Ansible forks).
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
MaxStartups 100:30:200
MaxSessions 100
EOF
  # The pyenv Pythons are mounted under /root: let non-root service users through (not list it).
  chmod 711 "$r/root"
  install -d -m 700 "$r/root/.ssh"
  install -m 600 "$KEY.pub" "$r/root/.ssh/authorized_keys"
  install -d "$r$SHARED_MOUNT"
  # Units that cannot work without a console or a network route out, so boots end "running".
  for u in console-getty.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
    e2scrub_reap.service fstrim.timer; do
    ln -sfn /dev/null "$r/etc/systemd/system/$u"
  done
  install -d "$r/etc/systemd/journald.conf.d"
  printf '[Journal]\nRuntimeMaxUse=16M\n' >"$r/etc/systemd/journald.conf.d/k3-sandbox.conf"
  # The distribution's packages come from the local mirror (apt would wait for the unreachable one).
  if [[ -n $DEBIAN_REPO ]]; then
    printf 'deb [signed-by=%s/keyring.gpg] file:%s ./\n' "$DEBIAN_REPO" "$DEBIAN_REPO" >"$r/etc/apt/sources.list"
  fi
}

# Everything of host $1 goes away: processes, mount, network namespace, veth, overlay dirs.
teardown_host() { # $1 = name, $2 = address (optional)
  local name=$1 dir=$STATE_DIR/hosts/$1 pid
  # Connections to a host that is made anew (same address and MAC) would hang: close them.
  [[ -z ${2:-} ]] || ss -K dst "$2" >/dev/null 2>&1 || true
  if pid=$(nspawn_pid "$name"); then kill -KILL "$pid" 2>/dev/null || true; fi
  for pid in $(container_pids "$name"); do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -e /run/netns/$name ]]; then
    for pid in $(ip netns pids "$name" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns delete "$name" 2>/dev/null || true
  fi
  if [[ -n ${2:-} ]] && ip link show dev "$(veth_of "$2")" >/dev/null 2>&1; then
    ip link delete dev "$(veth_of "$2")" 2>/dev/null || true
  fi
  if mountpoint -q "$dir/root" 2>/dev/null; then
    umount "$dir/root" 2>/dev/null || umount -l "$dir/root"
  fi
  rm -rf "$dir" "$RUN_DIR/$name".{pid,ip,sig,log}
}

# What a running host must match to be kept by `up`: its address, the checkout whose folders it
# mounts (another clone's hosts are made anew), the mounts and the controller key it trusts.
host_signature() { # $1 = name
  printf 'ip=%s repo=%s binds=%s key=%s caps=net_admin\n' "${IP[$1]}" "$REPO" "${BINDS[*]}" "$(cut -d' ' -f2 "$KEY.pub")"
}

start_host() { # $1 = name
  local name=$1 ip=${IP[$1]} dir=$STATE_DIR/hosts/$1 veth b
  veth=$(veth_of "$ip")
  teardown_host "$name" "$ip"
  mkdir -p "$dir/upper" "$dir/work" "$dir/root" "$RUN_DIR"
  mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$dir/upper,workdir=$dir/work" "$dir/root"
  configure_root "$name" "$dir/root"

  ip netns add "$name"
  ip link add name "$veth" address "$(mac_of "$ip" 1)" type veth peer name eth0 address "$(mac_of "$ip" 0)" netns "$name"
  ip link set dev "$veth" master "$BRIDGE" up
  ip -n "$name" addr add "$ip/24" dev eth0
  ip -n "$name" link set dev lo up
  ip -n "$name" link set dev eth0 up

  local args=(--quiet --boot --register=no --keep-unit "--directory=$dir/root" "--machine=$name"
    "--network-namespace-path=/run/netns/$name" --resolv-conf=off --timezone=off --link-journal=no
    --console=read-only
    # The host's own network namespace: its root may change its firewall (the firewall role's nftables).
    --capability=CAP_NET_ADMIN)
  for b in "${BINDS[@]}"; do args+=("--bind-ro=$b"); done
  args+=("--bind=$SHARED:$SHARED_MOUNT")
  # Its own session, no terminal, output to a log file, without the lock's descriptor. A reboot
  # inside the host (nspawn exits with 133) boots it again, as a machine would; the PID file
  # always names the current nspawn.
  rm -f "$RUN_DIR/$name.pid"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'pidfile=$1; shift
    while :; do "$@" & echo $! >"$pidfile"; wait $!; rc=$?; ((rc == 133)) || exit $rc; done' \
    k3-sandbox-boot "$RUN_DIR/$name.pid" systemd-nspawn "${args[@]}" </dev/null >"$RUN_DIR/$name.log" 2>&1 9>&- &
  local tries=0
  until [[ -s $RUN_DIR/$name.pid ]] || ((++tries > 50)); do sleep 0.05; done
  echo "$ip" >"$RUN_DIR/$name.ip"
  host_signature "$name" >"$RUN_DIR/$name.sig"
}

# "running", "degraded", another systemd state, or "unreachable".
host_state() { # $1 = name
  local out
  out=$(timeout 10 ssh "${SSH_OPTS[@]}" "root@${IP[$1]}" systemctl is-system-running 2>/dev/null) || true
  echo "${out:-unreachable}"
}

wait_ready() { # host names
  local deadline=$(($(now_ms) + TIMEOUT * 1000)) pending=("$@") next h state
  declare -A last=()
  while ((${#pending[@]})); do
    next=()
    for h in "${pending[@]}"; do
      if ! nspawn_pid "$h" >/dev/null; then
        tail -n 30 "$RUN_DIR/$h.log" >&2 || true
        die "$h: systemd-nspawn exited (console log above: $RUN_DIR/$h.log)"
      fi
      state=$(host_state "$h")
      last[$h]=$state
      case $state in
        running) ;;
        degraded)
          log "$h: degraded, failed units: $(ssh "${SSH_OPTS[@]}" "root@${IP[$h]}" \
            systemctl --failed --plain --no-legend 2>/dev/null | awk '{printf "%s ", $1}')"
          ;;
        *) next+=("$h") ;;
      esac
    done
    pending=("${next[@]}")
    ((${#pending[@]})) || break
    if (($(now_ms) > deadline)); then
      for h in "${pending[@]}"; do
        printf '[sandbox] %s (%s): %s; console log %s\n' "$h" "${IP[$h]}" "${last[$h]}" "$RUN_DIR/$h.log" >&2
      done
      die "hosts not ready after ${TIMEOUT}s: ${pending[*]}"
    fi
    sleep 0.5
  done
}

# The public host keys of every host, by address and name: what Ansible and ssh check them against.
write_known_hosts() {
  local h pub out=""
  for h in "${NAMES[@]}"; do
    for pub in "$STATE_DIR/hosts/$h/root/etc/ssh"/ssh_host_*_key.pub; do
      [[ -f $pub ]] || die "$h: no SSH host key in $pub"
      out+="${IP[$h]},$h $(cut -d' ' -f1-2 "$pub")"$'\n'
    done
  done
  if write_if_changed "$KNOWN_HOSTS" "${out%$'\n'}"; then log "known hosts: wrote ${KNOWN_HOSTS#"$REPO"/}"; fi
}

write_inventory() {
  local h g groups=() out
  declare -A seen=()
  for h in "${NAMES[@]}"; do
    for g in ${GROUPS_OF[$h]//,/ }; do
      [[ -n ${seen[$g]:-} ]] || groups+=("$g")
      seen[$g]=1
    done
  done
  out=$(
    printf -- '---\n# Written by tools/sandbox.sh up from tools/sandbox-hosts.txt; removed by tools/sandbox.sh down.\n'
    printf 'all:\n  vars:\n    ansible_user: root\n'
    printf '    ansible_ssh_private_key_file: "%s"\n' "$KEY"
    printf '    ansible_python_interpreter: /usr/bin/python3\n'
    # The hosts' own keys, written by `up`: Ansible checks each host key against them.
    printf '    ansible_ssh_common_args: "-o UserKnownHostsFile=%s"\n' "$KNOWN_HOSTS"
    # The checkout the hosts mount (venvs, model): group_vars/all.yml builds its paths on it.
    printf '    k3_sandbox_root: "%s"\n  hosts:\n' "$REPO"
    for h in "${NAMES[@]}"; do printf '    %s:\n      ansible_host: %s\n' "$h" "${IP[$h]}"; done
    printf '  children:\n'
    for g in "${groups[@]}"; do
      printf '    %s:\n      hosts:\n' "$g"
      for h in "${NAMES[@]}"; do
        [[ ",${GROUPS_OF[$h]}," == *",$g,"* ]] && printf '        %s:\n' "$h"
      done
    done
  )
  mkdir -p "$(dirname "$INVENTORY")"
  if write_if_changed "$INVENTORY" "$out"; then log "inventory: wrote ${INVENTORY#"$REPO"/}"; fi
}

# --- commands ---------------------------------------------------------------------------------
cmd_up() {
  ensure_tools
  build_base
  ensure_key
  "$REPO/.venv/ansible/bin/python" "$REPO/tools/sandbox_tls.py" "$TLS_DIR" "${TLS_SUBNETS[@]}" | while read -r line; do log "$line"; done
  ensure_bridge
  modprobe overlay 2>/dev/null || true
  # Every host's systemd takes inotify instances of the machine's shared limit (128 by default):
  # from about 20 hosts on, a new host's systemd fails with "Too many open files". 16 per host.
  local need=$((${#NAMES[@]} * 16 + 128))
  if (($(cat /proc/sys/fs/inotify/max_user_instances) < need)); then
    echo "$need" >/proc/sys/fs/inotify/max_user_instances
    log "fs.inotify.max_user_instances raised to $need for ${#NAMES[@]} hosts"
  fi
  local h b started=() kept=() hosts_txt
  BINDS=()
  for b in "${RO_BINDS[@]}" "$MODELS" "${EXTRA_BINDS[@]}" ${DEBIAN_REPO:+"$DEBIAN_REPO"}; do
    [[ " ${BINDS[*]} " != *" $b "* ]] || continue # named twice (an extra bind that is the mirror)
    if [[ -d $b ]]; then BINDS+=("$b"); else log "$b is missing: not mounted in new hosts"; fi
  done
  hosts_txt=$(etc_hosts)
  for h in "${NAMES[@]}"; do
    if nspawn_pid "$h" >/dev/null && [[ $(cat "$RUN_DIR/$h.sig" 2>/dev/null) == "$(host_signature "$h")" ]]; then
      kept+=("$h")
      # A host list that changed reaches running hosts through their (shared) overlay mount.
      write_if_changed "$STATE_DIR/hosts/$h/root/etc/hosts" "$hosts_txt" && log "$h: /etc/hosts updated"
    else
      start_host "$h"
      started+=("$h")
    fi
  done
  # Hosts that were removed from the list since the last up.
  local f name
  for f in "$RUN_DIR"/*.pid; do
    [[ -e $f ]] || continue
    name=$(basename "$f" .pid)
    [[ -n ${IP[$name]:-} ]] || {
      stop_hosts "$name"
      log "$name: removed (no longer listed)"
    }
  done
  ((${#kept[@]} == 0)) || log "already up: ${kept[*]}"
  ((${#started[@]} == 0)) || log "booting: ${started[*]}"
  write_known_hosts
  wait_ready "${NAMES[@]}"
  log "ssh + systemd ready on ${#NAMES[@]} hosts"
  write_inventory
  start_hub
  log "up: done"
}

# The site's model hub, as a site would have it before the first run: olah (a Hugging Face mirror
# server, from .venv/services) on each host of group hub, offline, serving the repositories of
# $HUB_DIR/mirrors on its address; its own state under /var/cache.
start_hub() {
  local h config
  for h in "${NAMES[@]}"; do
    [[ ",${GROUPS_OF[$h]}," == *",hub,"* ]] || continue
    if [[ ! -d $HUB_DIR/mirrors ]]; then
      log "$h: no hub repositories in $HUB_DIR/mirrors (make test-data): hub not started"
      continue
    fi
    config=$(printf '[basic]\nhost = "%s"\nport = %s\nrepos-path = "/var/cache/k3-sandbox-hub/repos"\nmirrors-path = ["%s"]\n[accessibility]\noffline = true\n' \
      "${IP[$h]}" "$HUB_PORT" "$HUB_DIR/mirrors")
    # shellcheck disable=SC2029 # the command is built here, for the host
    ssh "${SSH_OPTS[@]}" "root@${IP[$h]}" "systemctl is-active -q k3-sandbox-hub || {
      mkdir -p /var/cache/k3-sandbox-hub && printf '%s' '$config' >/var/cache/k3-sandbox-hub/olah.toml &&
      systemd-run --unit=k3-sandbox-hub --quiet --working-directory=/var/cache/k3-sandbox-hub \
        $REPO/.venv/services/bin/olah-cli -c /var/cache/k3-sandbox-hub/olah.toml; }"
    local tries=100
    until curl -fsS --max-time 2 -o /dev/null "http://${IP[$h]}:$HUB_PORT/api/models/k3-sandbox/tiny-llama/refs" 2>/dev/null; do
      ((--tries > 0)) || break
      sleep 0.2
    done
    log "$h: model hub (olah) on http://${IP[$h]}:$HUB_PORT"
  done
}

# The container's PID 1 (its systemd), seen from the controller.
container_init() { # $1 = name
  local pid
  for pid in $(container_pids "$1"); do
    [[ $(awk '/^NSpid:/ {print $NF}' "/proc/$pid/status" 2>/dev/null) == 1 ]] && echo "$pid" && return 0
  done
  return 1
}

# SIGTERM makes nspawn halt the container in order. On this controller's cgroup layout the
# last step, systemd-halt.service, sometimes fails to start (status 219/CGROUP) and the container
# then idles: seen in its console log (or after STOP_TIMEOUT), it gets SIGRTMIN+14, systemd's
# immediate power-off; whatever still runs 10 s later is killed.
stop_hosts() { # names
  local h pid start left forced=0
  declare -A pids=() kicked=()
  for h in "$@"; do
    if pid=$(nspawn_pid "$h"); then
      pids[$h]=$pid
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  start=$(now_ms)
  while :; do
    left=0
    for h in "${!pids[@]}"; do
      alive "${pids[$h]}" || continue
      left=$((left + 1))
      [[ -z ${kicked[$h]:-} ]] || continue
      if (($(now_ms) - start > STOP_TIMEOUT * 1000)) || grep -qE "$HALT_FAILED_RE" "$RUN_DIR/$h.log" 2>/dev/null; then
        kicked[$h]=1
        forced=$((forced + 1))
        if pid=$(container_init "$h"); then kill -s RTMIN+14 "$pid" 2>/dev/null || true; fi
      fi
    done
    if ((left == 0 || $(now_ms) - start > (STOP_TIMEOUT + 10) * 1000)); then break; fi
    sleep 0.2
  done
  ((forced == 0)) || log "$forced host(s) did not halt in order: immediate power-off"
  ((left == 0)) || log "$left host(s) still running: killing them"
  for h in "$@"; do
    teardown_host "$h" "$(cat "$RUN_DIR/$h.ip" 2>/dev/null || echo "${IP[$h]:-}")"
  done
  # The controller's init reaps orphans late: give it a few seconds to take our exited nspawns.
  local deadline=$(($(now_ms) + 10000))
  for h in "${!pids[@]}"; do
    while [[ $(cat "/proc/${pids[$h]}/comm" 2>/dev/null) == systemd-nspawn ]] && (($(now_ms) < deadline)); do
      sleep 0.2
    done
  done
}

# Names of every host that may have leftovers: listed, or known from the run/state folders.
known_hosts() {
  local f
  {
    printf '%s\n' "${NAMES[@]}"
    for f in "$RUN_DIR"/*.pid "$STATE_DIR"/hosts/*; do
      [[ -e $f ]] && basename "$f" .pid
    done
  } | sort -u
}

cmd_down() {
  local purge=${1:-}
  [[ -z $purge || $purge == --purge ]] || die "usage: $0 down [--purge]"
  # Half-closed SSH ControlPersist connections keep a namespace and its veth alive.
  if ip link show dev "$BRIDGE" >/dev/null 2>&1; then
    ss -K dst "$SUBNET" >/dev/null 2>&1 || true
    local pid
    for pid in $(ss -Htnp dst "$SUBNET" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
      [[ $(cat "/proc/$pid/comm" 2>/dev/null) == ssh ]] && kill -TERM "$pid" 2>/dev/null
    done
    log "ssh connections to $SUBNET closed"
  fi
  local hosts h running=()
  mapfile -t hosts < <(known_hosts)
  for h in "${hosts[@]}"; do nspawn_pid "$h" >/dev/null && running+=("$h"); done
  stop_hosts "${hosts[@]}"
  log "hosts stopped: ${running[*]:-none was running}"
  local link
  for link in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${VETH_PREFIX}[0-9]" || true); do
    ip link delete dev "$link" 2>/dev/null || true
  done
  if ip link show dev "$BRIDGE" >/dev/null 2>&1; then
    ip link delete dev "$BRIDGE"
    log "bridge $BRIDGE: deleted"
  fi
  # `ip netns add` made /run/netns a mount point; left empty, it goes too.
  if mountpoint -q /run/netns && [[ -z $(ls -A /run/netns) ]]; then
    if umount /run/netns 2>/dev/null; then rmdir /run/netns 2>/dev/null || true; fi
  fi
  rm -f "$INVENTORY" "$KNOWN_HOSTS"
  rmdir --ignore-fail-on-non-empty "$(dirname "$INVENTORY")" 2>/dev/null || true
  rm -rf "$RUN_DIR" "$STATE_DIR"
  if [[ $purge == --purge ]]; then
    rm -rf "$CACHE_DIR"
    log "base rootfs: removed ($CACHE_DIR)"
  fi
  check_clean "${hosts[@]}"
  log "down: done"
}

check_clean() { # names
  local h left=()
  for h in "$@"; do
    grep -qE "^$h( |$)" <<<"$(ip netns list)" && left+=("netns $h")
    [[ -z $(container_pids "$h") ]] || left+=("processes of $h")
  done
  grep -qE ": ($BRIDGE|${VETH_PREFIX}[0-9]+)[@:]" <<<"$(ip -o link show)" && left+=("links")
  local p
  for p in /proc/[0-9]*; do
    # (2> first: a process that exits meanwhile takes its cmdline along, quietly.)
    [[ $(tr '\0' ' ' 2>/dev/null <"$p/cmdline") == *"--directory=$STATE_DIR/"* ]] && alive "${p#/proc/}" &&
      left+=("process ${p#/proc/}")
  done
  ((${#left[@]} == 0)) || die "leftovers after down: ${left[*]}"
}

cmd_status() {
  local h pid state any=0
  for h in "${NAMES[@]}"; do
    if pid=$(nspawn_pid "$h"); then
      state=$(host_state "$h")
      printf '%-16s %-12s up    %-11s nspawn pid %s, %s MiB\n' "$h" "${IP[$h]}" "$state" "$pid" "$(host_pss_mib "$h")"
      any=1
    else
      printf '%-16s %-12s down\n' "$h" "${IP[$h]}"
    fi
  done
  if [[ -f $BASE_STAMP ]]; then echo "base rootfs: $BASE (cached)"; else echo "base rootfs: not built"; fi
  ((any)) || return 0
  [[ -f $INVENTORY ]] && echo "inventory: ${INVENTORY#"$REPO"/}"
  return 0
}

main() {
  local cmd=${1:-}
  shift || true
  # `inventory` only writes the inventory of the hosts file (no host is made): no root needed.
  [[ $cmd == inventory || $(id -u) == 0 ]] || die "run as root (network namespaces, mounts, systemd-nspawn)"
  read_hosts
  case $cmd in
    up | down | base)
      # One run at a time; nspawn is started without this descriptor so it does not keep the lock.
      exec 9<"${BASH_SOURCE[0]}"
      flock -w 300 9 || die "another tools/sandbox.sh is still running"
      ;;&
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status ;;
    inventory) write_inventory ;;
    base)
      ensure_tools
      build_base
      echo "$BASE"
      ;;
    *) die "usage: $0 up | down [--purge] | status | base | inventory" ;;
  esac
}

main "$@"
