module kamaji-hami-platform/toolchain/live/images/metallb-chart

go 1.26

require go.universe.tf/metallb v0.15.3
