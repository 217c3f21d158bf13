set -eu
@bounded_docker@
if docker image inspect @image@ >/dev/null 2>&1; then echo 'image @image_text@ present'
else docker pull @image@; fi
