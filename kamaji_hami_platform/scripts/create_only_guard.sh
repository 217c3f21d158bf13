echo "@path@=${@value_env@} is create-only: @reason@. To change it: @way_out@."
