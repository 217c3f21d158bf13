printf '%s\n' @known_hosts_line@ > "$@ssh_dir_env@/@role@.known_hosts"
