# kamaji-etcd's PersistentVolumeClaims name no StorageClass: the cluster's default class provisions
# them, or they bind to PersistentVolumes without a class, or they stay Pending and so does every
# tenant's datastore. A class is the default when either annotation is "true" (Kubernetes v1.35
# pkg/apis/storage/util/helpers.go).
if ! classes=$(@kubectl@ get storageclasses -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}{" "}{.metadata.annotations.storageclass\.beta\.kubernetes\.io/is-default-class}{"\n"}{end}' 2>&1); then
  lacks "a default StorageClass for kamaji-etcd's volumes: cannot list StorageClasses ($classes)." \
    "Fix: let the stack's kubeconfig list storageclasses"
else
  defaults=$(printf '%s\n' "$classes" | awk '$2 == "true" || $3 == "true" { printf "%s%s", sep, $1; sep = " " }')
  if [ -n "$defaults" ]; then
    echo "default StorageClass: $defaults"
  else
    # kamaji-etcd's claims bound already (a platform installed before), or volumes without a class
    # they may bind to (component-helpers v0.35.4 storage/volume: a claim without a class matches them).
    bound=$(@kubectl@ -n @namespace@ get persistentvolumeclaims -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null \
      | awk '$1 ~ /^@claim_prefix@[0-9]+$/ && $2 == "Bound" { n++ } END { print n + 0 }')
    classless=$(@kubectl@ get persistentvolumes -o jsonpath='{range .items[*]}{.spec.storageClassName}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null \
      | awk '$1 == "Available" { n++ } END { print n + 0 }')
    if [ "$bound" -ge @replicas@ ]; then
      echo "no default StorageClass, but kamaji-etcd's @replicas@ volumes are bound already"
    elif [ "$classless" -ge @replicas@ ]; then
      warn "no default StorageClass: kamaji-etcd's @replicas@ volumes may bind to the $classless Available" \
        "PersistentVolumes without a class (not checked: their size, @size@ each, and access mode ReadWriteOnce)"
    else
      names=$(printf '%s\n' "$classes" | awk 'NF { printf "%s%s", sep, $1; sep = " " }')
      lacks "a default StorageClass: kamaji-etcd's @replicas@ volumes name no class, so without a default" \
        "(or as many Available PersistentVolumes without a class) they stay Pending" \
        "(StorageClasses: ${names:-none})." \
        "Fix: kubectl annotate storageclass <class> storageclass.kubernetes.io/is-default-class=true," \
        "or install a provisioner with a default class"
    fi
  fi
fi
