printf '%s\n' "${@key_env@%$'\n'}" > "$@ssh_dir_env@/@role@.key"
