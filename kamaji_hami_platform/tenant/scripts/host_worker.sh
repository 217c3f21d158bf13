echo 'host @host@ (@address@) is a worker of tenant @tenant@'
