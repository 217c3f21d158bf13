# kamaji-etcd's PersistentVolumeClaims name StorageClass @storage_class_text@ (the Kamaji release's values).
if out=$(@kubectl@ get storageclass @storage_class@ -o name 2>&1); then
  echo "StorageClass @storage_class_text@ exists (kamaji-etcd's volumes)"
else
  lacks "StorageClass @storage_class_text@, which kamaji-etcd's volumes name (the Kamaji release's values): $out." \
    "Fix: create it, or name an existing class in kamaji-etcd.persistentVolumeClaim.storageClassName"
fi
