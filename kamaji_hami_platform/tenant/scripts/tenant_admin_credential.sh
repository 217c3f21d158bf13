@access@
set -u
# The tenant admin's credential: a key made here, a client certificate for it signed by the tenant's
# CA through a certificate request that the platform approves, and a kubeconfig of both on stdout
# (a Pulumi secret). The key is never written to a file, an argument or the log.
fail() { echo "tenant @tenant@: the tenant admin's credential: $*" >&2; exit 1; }
command -v openssl >/dev/null \
  || fail "openssl is not installed on Pulumi's host: the key and certificate request are made with it"
name=@request@
key=$(openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null) \
  || fail "openssl could not make a key"
request=$(printf '%s\n' "$key" | openssl req -new -key /dev/stdin -subj @subject@ 2>/dev/null | base64 | tr -d '\n')
[ -n "$request" ] || fail "openssl could not make the certificate request"
# A request of an earlier run that stopped half-way is replaced.
@kubectl@ delete csr "$name" --ignore-not-found >/dev/null 2>&1 || true
uid=$(printf '%s\n' "apiVersion: certificates.k8s.io/v1" "kind: CertificateSigningRequest" "metadata:" \
  "  name: $name" "spec:" "  signerName: @signer@" "  expirationSeconds: @seconds@" \
  "  usages: [client auth]" "  request: $request" \
  | @kubectl_stdin@ create -f - -o 'jsonpath={.metadata.uid}') && [ -n "$uid" ] \
  || fail "the certificate request $name was not created"
# Approved only while it is still the request made here (its uid and its request): the tenant side
# may not delete or create requests, and this checks it anyway.
found=$(@kubectl@ get csr "$name" -o 'jsonpath={.metadata.uid} {.spec.request}') || found=""
[ "$found" = "$uid $request" ] || fail "the certificate request $name is not the one made here; not approved"
@kubectl@ certificate approve "$name" >/dev/null || fail "the certificate request $name was not approved"
cert="" end=$(( $(date +%s) + @bound@ ))
while [ -z "$cert" ] && [ "$(date +%s)" -lt "$end" ]; do
  cert=$(@kubectl@ get csr "$name" -o 'jsonpath={.status.certificate}' 2>/dev/null) || cert=""
  [ -n "$cert" ] || sleep 1
done
@kubectl@ delete csr "$name" >/dev/null 2>&1 || true
[ -n "$cert" ] || fail "no certificate was issued for $name within @bound@s (the tenant's" \
  "kube-controller-manager signs it; check: @check@)"
# The API server and its CA as the platform's own kubeconfig (Kamaji's admin.conf) gives them.
server=$(@kubectl@ config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}') || server=""
ca=$(@kubectl@ config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}') \
  || ca=""
[ -n "$server" ] && [ -n "$ca" ] || fail "the platform's kubeconfig names no server or holds no CA data"
# The certificate must be for the key made here.
issued_key=$(printf '%s' "$cert" | base64 -d | openssl x509 -noout -pubkey 2>/dev/null) || issued_key=""
own_key=$(printf '%s\n' "$key" | openssl pkey -pubout 2>/dev/null) || own_key=""
[ -n "$issued_key" ] && [ "$issued_key" = "$own_key" ] \
  || fail "the certificate issued for $name is not for the key made here"
key_data=$(printf '%s\n' "$key" | base64 | tr -d '\n')
cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: @tenant@
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: @user@
  user:
    client-certificate-data: $cert
    client-key-data: $key_data
contexts:
- name: @context@
  context:
    cluster: @tenant@
    user: @user@
current-context: @context@
KUBECONFIG
echo "tenant @tenant@: issued the tenant admin's client certificate (@user@, group @group@)" >&2
