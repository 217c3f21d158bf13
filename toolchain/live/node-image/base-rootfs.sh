#!/usr/bin/env bash
# The kind base image's root filesystem, as a tar for `docker import`: kind v0.31.0's
# images/base/Dockerfile applied to a copy of the Debian rootfs (debootstrap.sh) without a
# Dockerfile build: its static files (images/base/files, read from kind's module in Go's module
# cache), the systemd edits and enabled units of its RUN lines, and the binaries of its build
# stages, here from toolchain/live/build.sh: containerd, ctr and the runc shim (v2.4.2; kind pins
# v2.2.0), runc (v1.5.3; kind pins v1.2.9), crictl (v1.34.0; kind pins v1.33.0, which the module
# proxy does not serve), the CNI plugins host-local, loopback, ptp, portmap (v1.8.0, kind's pin)
# and containerd-fuse-overlayfs-grpc (v2.1.7, kind's pin). go-licenses' LICENSES are not collected.
# Usage: base-rootfs.sh <bin folder> <debian rootfs> <output tar>. Needs root (chroot).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: base-rootfs.sh <bin folder> <debian rootfs> <output tar>"
bin=${1:?$usage} debian=${2:?$usage} output=${3:?$usage}
files=$(module_dir kind sigs.k8s.io/kind)/images/base/files
containerd=$(program_dir "$bin" containerd) runc=$(program_dir "$bin" runc)
crictl=$(program_dir "$bin" crictl) cni=$(program_dir "$bin" cni-plugins)
fuse=$(program_dir "$bin" fuse-overlayfs)
r=$output.rootfs
rm -rf "$r" && cp -a "$debian" "$r" && rm -f "$r/.khp-candidates"
trap 'rm -rf "$r"' EXIT

# The COPY --chmod lines of the first stage: scripts and folders 0755, everything else 0644.
install -d -m 0755 "$r/usr/local/bin" "$r/kind" "$r/kind/bin" "$r/LICENSES" "$r/etc/containerd" \
  "$r/etc/default" "$r/etc/sysctl.d" "$r/etc/systemd/system/kubelet.service.d"
install -m 0755 "$files"/usr/local/bin/* "$r/usr/local/bin/"
install -m 0644 "$files"/kind/README.txt "$r/kind/"
install -m 0755 "$files"/kind/bin/* "$r/kind/bin/"
install -m 0644 "$files"/LICENSES/* "$r/LICENSES/"
install -m 0644 "$files"/etc/crictl.yaml "$r/etc/"
install -m 0644 "$files"/etc/containerd/* "$r/etc/containerd/"
install -m 0644 "$files"/etc/default/* "$r/etc/default/"
install -m 0644 "$files"/etc/sysctl.d/* "$r/etc/sysctl.d/"
install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$r/etc/systemd/system/"
install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$r/etc/systemd/system/kubelet.service.d/"

# Its RUN lines after clean-install (debootstrap.sh): units removed, kmsg off, /sbin/init,
# the enabled and masked units, /etc/kubernetes/manifests.
find "$r/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete
rm -f "$r"/lib/systemd/system/multi-user.target.wants/* "$r"/etc/systemd/system/*.wants/* \
  "$r"/lib/systemd/system/local-fs.target.wants/* "$r"/lib/systemd/system/sockets.target.wants/*udev* \
  "$r"/lib/systemd/system/sockets.target.wants/*initctl* "$r"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> "$r/etc/systemd/journald.conf"
ln -s "$(chroot "$r" which systemd)" "$r/sbin/init"
chroot "$r" systemctl enable kubelet.service containerd.service undo-mount-hacks.service 2>&1 | sed 's/^/live: /' >&2
chroot "$r" systemctl mask systemd-binfmt.service 2>&1 | sed 's/^/live: /' >&2
mkdir -p "$r/etc/kubernetes/manifests"

# The final "build" stage: the binaries, and cri-base.json from `ctr oci spec` with kind's hook.
install -m 0755 "$containerd/containerd" "$containerd/containerd-shim-runc-v2" "$containerd/ctr" "$r/usr/local/bin/"
"$containerd/ctr" oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > "$r/etc/containerd/cri-base.json"
say "base: $(chroot "$r" /usr/local/bin/containerd --version)"
install -m 0755 "$runc/runc" "$r/usr/local/sbin/runc"
say "base: $(chroot "$r" /usr/local/sbin/runc --version | head -n 1)"
install -m 0755 "$crictl/crictl" "$r/usr/local/bin/"
install -d -m 0755 "$r/opt/cni/bin"
install -m 0755 "$cni"/host-local "$cni"/loopback "$cni"/ptp "$cni"/portmap "$r/opt/cni/bin/"
install -m 0755 "$fuse/containerd-fuse-overlayfs-grpc" "$r/usr/local/bin/"

# One layer, as the Dockerfile's `FROM scratch` + `COPY --from=build / /` squash: sorted, owners
# numeric, file capabilities kept, mtime 0 (the tar's hash does not depend on when it was made).
tar --sort=name --numeric-owner --xattrs --xattrs-include='security.capability' \
  --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --mtime=@0 \
  -C "$r" -cf "$output.tmp" .
mv "$output.tmp" "$output"
say "base rootfs: $output ($(du -h "$output" | cut -f1))"
echo "$output"
