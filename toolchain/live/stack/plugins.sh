# shellcheck shell=bash
# Sourced by env.sh: the providers the program uses, installed once into PULUMI_HOME from the
# binaries toolchain/pulumi/build.sh built, at the versions requirements.txt pins for the program's
# SDKs (read there, not restated), so the engine never downloads a plugin.
plugins=(command kubernetes)

install_plugins() {
  local bin=$1 pulumi=$2 requirements=$3 name version binary
  for name in "${plugins[@]}"; do
    binary=pulumi-resource-$name
    version=$(sed -n "s/^pulumi-$name==//p" "$requirements")
    [ -n "$version" ] || { echo "live: $requirements pins no pulumi-$name" >&2; return 1; }
    [ -x "$PULUMI_HOME/plugins/resource-$name-v$version/$binary" ] && continue
    echo "live: installing the $name provider v$version from $bin" >&2
    "$pulumi" plugin install resource "$name" "$version" --file "$bin/$binary" >&2
  done
}
