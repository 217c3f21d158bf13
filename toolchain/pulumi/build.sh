#!/usr/bin/env bash
# Build the real Pulumi engine for the engine tier: the CLI, the Python and Node.js language hosts,
# and the command and Kubernetes providers, each into a version-keyed folder of the toolchain cache
# outside the repository (like toolchain/build.sh), skipping what is built. The last line printed
# is a folder with every binary (for PATH; plugins are installed from it: tests/engine/engine.py).
#
# From served Go modules: the CLI (pkg/v3 v3.276.0) and the Kubernetes provider (the only version
# of its module the proxy serves, the v4.25.0 code). From upstream source archives, which the
# proxy does not serve (KHP_UPSTREAM_SRC, default the src folder of the shared upstream folder that
# toolchain/upstream-folder.sh finds: KHP_UPSTREAM, or ../shared/upstream beside the checkout or
# beside the checkout it was cloned from):
# the language hosts and pulumi-command 1.2.1, each built with the go.mod/go.sum kept here (the
# archive's own go.mod replaces pkg/sdk with folders of pulumi's repository). The archives are
# needed only for a cold build, and each is checked against its sha256 first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
command -v go >/dev/null || { echo "toolchain: Go is not installed (https://go.dev/dl/); the engine tier needs it" >&2; exit 1; }
go_version=$(go env GOVERSION)

CLI_VERSION=v3.276.0
COMMAND_VERSION=1.2.1
KUBERNETES_CODE_VERSION=4.25.0
KUBERNETES_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
KUBERNETES_MODULE_VERSION=v4.0.0-20260115033456-f47bc2d6f199

# archive file, its sha256, the folder of the Go main inside it
declare -A ARCHIVE_SHA256=(
  [pulumi-language-python-1b5949891b3c.tar.gz]=bb74f99676f31277f0d78f9a06bb43d91e98db37ede8ec965bfe0a123ee972b8
  [pulumi-language-nodejs-v3.259.0.tar.gz]=bce5e788a19e38722dff6898f5c65aab135bdcaefed4ff6cd527a1d17d65f9cf
  [pulumi-command-v1.2.1.tar.gz]=0615e02baefabedb226cf7399bdf4fedcef602b8dd0cfdfca21f9aefa6bcc0f3
)

# The cache folder of one part: its name and a hash of everything that decides its binaries.
built_dir() {
  local name=$1 key
  key=$( { cat "$here/$name"/go.mod "$here/$name"/go.sum 2>/dev/null || true; shift; echo "$* $go_version"; } \
         | sha256sum | cut -c1-16)
  echo "$cache/pulumi-$name-$key"
}

upstream_archive() {
  local file=$1 folder=${KHP_UPSTREAM_SRC:-$("$repo/toolchain/upstream-folder.sh")/src}
  [ -f "$folder/$file" ] || {
    echo "toolchain: $file is not in $folder; set KHP_UPSTREAM_SRC to the folder of the upstream source archives" >&2
    return 1; }
  echo "${ARCHIVE_SHA256[$file]}  $folder/$file" | sha256sum --check --quiet >&2 || {
    echo "toolchain: $folder/$file is not the archive this build pins (sha256 ${ARCHIVE_SHA256[$file]})" >&2
    return 1; }
  echo "$folder/$file"
}

# Unpack an archive into a fresh folder and print the folder of its Go main (a go.mod there).
unpack() {
  local archive=$1 into=$2 main_folder=$3
  mkdir -p "$into" && tar -xzf "$archive" -C "$into"
  echo "$into/$main_folder"
}

build_cli() {
  (cd "$here/cli" && go build -o "$1/pulumi" \
     -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$CLI_VERSION" \
     github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
}

# A language host from its archive, with this folder's go.mod/go.sum (local replaces dropped).
build_language_host() {
  local language=$1 archive=$2 out=$3 src
  src=$(unpack "$(upstream_archive "$archive")" "$out/src" "pulumi/sdk/$language/cmd/pulumi-language-$language")
  cp "$here/language-$language/go.mod" "$here/language-$language/go.sum" "$src/"
  (cd "$src" && go build -o "$out/pulumi-language-$language" .)
  # The Python host runs programs through this script, found beside it.
  [ ! -f "$src/../pulumi-language-$language-exec" ] || install -m 0755 "$src/../pulumi-language-$language-exec" "$out/"
  rm -rf "$out/src"
}

build_command() {
  local out=$1 src
  src=$(unpack "$(upstream_archive "pulumi-command-v$COMMAND_VERSION.tar.gz")" "$out/src" pulumi-command/provider)
  (cd "$src" && go build -o "$out/pulumi-resource-command" \
     -ldflags "-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$COMMAND_VERSION" \
     ./cmd/pulumi-resource-command)
  rm -rf "$out/src"
}

# The Kubernetes provider: a copy of the served module without its `replace …/sdk/v4 => ../sdk`
# (the served sdk/v4 it requires is used instead), with the embedded schema generated as
# upstream's build does (cmd/pulumi-resource-kubernetes/generate.go), built from the wrapper
# module in kubernetes/, which replaces the module with that copy.
build_kubernetes() {
  local out=$1 module work=$1/work
  module=$(go mod download -json "$KUBERNETES_MODULE@$KUBERNETES_MODULE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$module" ] || { echo "toolchain: go mod download gave no folder for $KUBERNETES_MODULE" >&2; return 1; }
  mkdir -p "$work" && cp -r "$module" "$work/provider" && chmod -R u+w "$work/provider"
  cp "$here/kubernetes/go.mod" "$here/kubernetes/go.sum" "$work/"
  sed -i '\#^replace github.com/pulumi/pulumi-kubernetes/sdk/v4 => #d' "$work/provider/go.mod"
  (cd "$work/provider/cmd/pulumi-resource-kubernetes" && VERSION=$KUBERNETES_CODE_VERSION go run generate.go)
  (cd "$work" && go build -o "$out/pulumi-resource-kubernetes" \
     -ldflags "-X $KUBERNETES_MODULE/pkg/version.Version=$KUBERNETES_CODE_VERSION" \
     "$KUBERNETES_MODULE/cmd/pulumi-resource-kubernetes")
  rm -rf "$work"
}

# part  what else decides its binaries (besides its go.mod/go.sum and Go)  build command
parts=(
  "cli|$CLI_VERSION|build_cli"
  "language-python|${ARCHIVE_SHA256[pulumi-language-python-1b5949891b3c.tar.gz]}|build_language_host python pulumi-language-python-1b5949891b3c.tar.gz"
  "language-nodejs|${ARCHIVE_SHA256[pulumi-language-nodejs-v3.259.0.tar.gz]}|build_language_host nodejs pulumi-language-nodejs-v3.259.0.tar.gz"
  "command|${ARCHIVE_SHA256[pulumi-command-v$COMMAND_VERSION.tar.gz]} $COMMAND_VERSION|build_command"
  "kubernetes|$KUBERNETES_MODULE_VERSION $KUBERNETES_CODE_VERSION|build_kubernetes"
)

bin="$cache/pulumi-bin"
rm -rf "$bin" && mkdir -p "$bin"
for part in "${parts[@]}"; do
  IFS='|' read -r name key build <<<"$part"
  out=$(built_dir "$name" "$key")
  if [ -f "$out/.built" ]; then
    echo "toolchain: pulumi $name cached ($out)" >&2
  else
    echo "toolchain: building pulumi $name with $go_version (a cold build takes minutes on 2 cores)..." >&2
    start=$(date +%s)
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    # shellcheck disable=SC2086 # the build command and its arguments
    $build "$out.tmp"
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    echo "toolchain: built pulumi $name in $(( $(date +%s) - start ))s" >&2
  fi
  # Hard links, not symlinks: the CLI finds its language hosts beside its own resolved path, as
  # in Pulumi's release archives (pkg/workspace/plugins.go), even with ambient plugins ignored.
  for tool in "$out"/*; do ln "$tool" "$bin/" 2>/dev/null || cp "$tool" "$bin/"; done
done
echo "$bin"
