#!/usr/bin/env bash
# Build the live tier's engine and tools from their Go modules (toolchain/live/<program>/:
# go.mod/go.sum with `tool` directives, nothing of upstream's source) into a version-keyed cache
# outside the repository; skips what is already built. The last line printed is a folder with
# every binary the tier runs on the machine and the engine's runtime wrapper (for PATH):
#   dockerd, docker-proxy (moby v28.5.2: Docker >= 27 for endpoint sysctls), containerd, its
#   runc shim and ctr (v2.4.2), runc (v1.5.3, with seccomp from Debian's libseccomp), the docker
#   CLI (v28.5.2), kind (the platform's pinned KIND_CLI_VERSION), distribution's registry (v3.1.2:
#   the tier's mirror), go-containerregistry's crane (v0.22.1: copies images into a mirror), helm
#   (v3.21.4: pushes charts into a mirror) and
#   Kubernetes v1.35.4's kubectl, kubeadm and static control-plane binaries.
# The parts of the kind node image (toolchain/live/node-image/) are built here too but not put on
# PATH, where names such as etcd, loopback or portmap would shadow the machine's: kubelet, crictl
# (v1.34.0), the CNI plugins (v1.8.0), containerd-fuse-overlayfs-grpc (v2.1.7), CoreDNS (v1.13.1),
# etcd (v3.6.6) and local-path-provisioner (v0.0.30). Every program's own cache folder is linked
# as programs/<program> inside that folder (e.g. <bin>/programs/cni-plugins/ptp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
command -v go >/dev/null || { echo "live: Go is not installed (https://go.dev/dl/); the live tier needs it" >&2; exit 1; }
bash "$here/scripts/debian-packages.sh"
go_version=$(go env GOVERSION)

programs=(dockerd containerd runc docker-cli kind registry crane helm kubernetes
  kubelet crictl cni-plugins fuse-overlayfs coredns etcd local-path-provisioner)
# The node image's parts: in programs/ only, never on PATH.
node_parts=" kubelet crictl cni-plugins fuse-overlayfs coredns etcd local-path-provisioner "

# The version a wrapper module requires of a module (read from its go.mod: no go command).
version_of() {
  awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' \
    "$here/$1/go.mod"
}
# moby and the docker CLI have no go.mod (their modules are +incompatible): each wrapper go.mod
# carries the require and exclude blocks of the tag's vendor.mod. dockerd refuses to run with
# its version unset ("library-import"), which moby's hack/make.sh sets with -X.
moby_version=$(version_of dockerd github.com/docker/docker | sed 's/^v//; s/+incompatible$//')
kube_version=$(version_of kubernetes k8s.io/kubernetes)
# Kubernetes stamps its version as hack/lib/version.sh kube::version::ldflags does, into
# client-go's and component-base's version packages: gitVersion, gitMajor/gitMinor and buildDate
# (here the release commit's time, from the module proxy's .info: reproducible). gitCommit and
# gitTreeState stay unset, as upstream leaves them without a commit (a module zip carries none).
kube_ldflags() {
  local date minor=${kube_version#v1.} package flags="-s -w"
  date=$(cd "$here/kubernetes" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
  for package in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $package.buildDate=$date -X $package.gitVersion=$kube_version"
    flags+=" -X $package.gitMajor=1 -X $package.gitMinor=${minor%%.*}"
  done
  echo "$flags"
}

# Each program's go build flags, one a line, as its upstream build sets them (or, for the node
# image's parts, as kind v0.31.0's images/base/Dockerfile builds them); -trimpath otherwise.
build_flags() {
  case $1 in
    dockerd) echo "-ldflags=-X=github.com/docker/docker/dockerversion.Version=$moby_version" ;;
    # containerd's Makefile stamps the tag (git describe) into version.Version.
    containerd) printf '%s\n' -trimpath "-ldflags=-X github.com/containerd/containerd/v2/version.Version=$(
      version_of containerd github.com/containerd/containerd/v2)" ;;
    # helm's Makefile stamps the tag into internal/version.version.
    helm) printf '%s\n' -trimpath "-ldflags=-X helm.sh/helm/v3/internal/version.version=$(
      version_of helm helm.sh/helm/v3)" ;;
    # runc's Makefile: BUILDTAGS seccomp, urfave_cli_no_docs; cgo links libseccomp.
    runc) echo "-tags=seccomp,urfave_cli_no_docs" ;;
    # hack/lib/golang.sh for a release (non-debug) build: -trimpath, -s -w, these tags; the
    # KUBE_STATIC_BINARIES with CGO_ENABLED=0, kubelet with cgo (cgo() below).
    kubernetes|kubelet) printf '%s\n' -trimpath -tags=selinux,notest,grpcnotrace "-ldflags=$(kube_ldflags)" ;;
    # cri-tools' Makefile: -X .../pkg/version.Version=<tag without v>; kind builds it with cgo.
    crictl) printf '%s\n' -trimpath "-ldflags=-X sigs.k8s.io/cri-tools/pkg/version.Version=$(
      version_of crictl sigs.k8s.io/cri-tools | sed 's/^v//')" ;;
    # fuse-overlayfs-snapshotter's Makefile: CGO_ENABLED=0, -s -w, the tag in version.Version.
    fuse-overlayfs) printf '%s\n' -trimpath "-ldflags=-s -w -X github.com/containerd/fuse-overlayfs-snapshotter/v2/cmd/containerd-fuse-overlayfs-grpc/version.Version=$(
      version_of fuse-overlayfs github.com/containerd/fuse-overlayfs-snapshotter/v2)" ;;
    # CoreDNS's Makefile: CGO_ENABLED=0, -s -w (and the commit, which a module zip lacks).
    coredns) printf '%s\n' -trimpath "-ldflags=-s -w" ;;
    # local-path-provisioner's scripts/build: static, -X main.VERSION, -s -w.
    local-path-provisioner) printf '%s\n' -trimpath "-ldflags=-s -w -X main.VERSION=$(
      version_of local-path-provisioner github.com/rancher/local-path-provisioner)" ;;
    *) echo "-trimpath" ;;
  esac
}
cgo() { case $1 in runc|kubelet|crictl) echo 1 ;; *) echo 0 ;; esac; }
# A tool's binary is named after its package; etcd's main package is go.etcd.io/etcd/server/v3.
rename() { [ "$1" != etcd ] || mv "$2/server" "$2/etcd"; }

built_dir() {
  local key
  key=$(cd "$here/$1" && { cat go.mod go.sum; build_flags "$1"; cgo "$1"; echo "$go_version"; } | sha256sum | cut -c1-16)
  echo "$cache/live-$1-$key"
}

bin="$cache/live-bin"
rm -rf "$bin" && mkdir -p "$bin/programs"
for program in "${programs[@]}"; do
  out=$(built_dir "$program")
  if [ -f "$out/.built" ]; then
    echo "live: $program cached ($out)" >&2
  else
    echo "live: building $program with $go_version (cold: up to 7 minutes on 2 cores)..." >&2
    start=$(date +%s)
    mapfile -t flags < <(build_flags "$program")
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$here/$program" && CGO_ENABLED=$(cgo "$program") go build "${flags[@]}" -o "$out.tmp/" tool)
    rename "$program" "$out.tmp"
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    echo "live: built $program in $(( $(date +%s) - start ))s" >&2
  fi
  ln -s "$out" "$bin/programs/$program"
  [[ $node_parts == *" $program "* ]] || for tool in "$out"/*; do ln -s "$tool" "$bin/"; done
done
ln -s "$here/scripts/runtime.sh" "$bin/khp-runc"
echo "$bin"
