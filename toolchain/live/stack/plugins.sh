# shellcheck shell=bash
# Sourced by env.sh: the providers the program uses, installed once into PULUMI_HOME from the
# binaries toolchain/pulumi/build.sh built (the versions the program's requirements pin), so the
# engine never downloads a plugin.
plugins=("command 1.2.1 pulumi-resource-command" "kubernetes 4.34.2 pulumi-resource-kubernetes")

install_plugins() {
  local bin=$1 pulumi=$2 entry name version binary
  for entry in "${plugins[@]}"; do
    read -r name version binary <<<"$entry"
    [ -x "$PULUMI_HOME/plugins/resource-$name-v$version/$binary" ] && continue
    echo "live: installing the $name provider v$version from $bin" >&2
    "$pulumi" plugin install resource "$name" "$version" --file "$bin/$binary" >&2
  done
}
