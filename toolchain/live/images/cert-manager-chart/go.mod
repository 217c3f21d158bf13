module kamaji-hami-platform/toolchain/live/images/cert-manager-chart

go 1.26

require github.com/cert-manager/cert-manager v1.21.2
