"""`up`'s read-back that kindnetd judges NetworkPolicies (kamaji_hami_platform/management/
policy_engine.py), against a stand-in docker playing the kind node: what it reads, and what it
says. The real node, with kindnetd's controller and without a fed queue, is the live tier's
(tests/live/test_kind_cluster.py test_the_platform_s_read_back_sees_the_policy_engine_and_its_absence).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import policy_engine
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit

# What the node's tools print (nft 1.0.x for kindnetd's table; iptables-save for an NFQUEUE rule;
# /proc/net/netfilter/nfnetlink_queue: queue, port id, queued, copy mode, copy range, ...).
NODE = r"""#!/bin/sh
echo "$*" >> "$CALLS"
[ "$1" = exec ] || exit 1
case "$3 $4" in
  "nft list")
    case "$QUEUED" in
      nft) rule='ip saddr @podips-v4 queue flags bypass to 101' ;;
      nft-0.9) rule='ip saddr @podips-v4 queue num 101 bypass' ;;
      *) echo "Error: No such file or directory" >&2; exit 1 ;;
    esac
    printf '%s\n' 'table inet kindnet-network-policies {' '	chain postrouting {' "		$rule" '	}' '}' ;;
  "iptables-save -t")
    echo '*mangle'
    [ "$QUEUED" = iptables ] && echo '-A KHP-NETPOL-QUEUE -s 10.244.0.0/16 -j NFQUEUE' \
      '--queue-num 101 --queue-bypass'
    echo COMMIT ;;
  "cat /proc/net/netfilter/nfnetlink_queue")
    [ "$LISTENING" = 1 ] && echo '  101  31337     0 2   128     0     0        0  1' ;;
  *) exit 1 ;;
esac
"""


def run(tmp_path: Path, queued: str, listening: bool) -> subprocess.CompletedProcess[str]:
    tools = tmp_path / "bin"
    stand_in(tools, "docker", NODE)
    script = policy_engine.policy_engine_check_script(ManagementConfig(), wait_seconds=2)
    env = {"CALLS": str(tmp_path / "calls"), "QUEUED": queued, "LISTENING": str(int(listening))}
    return run_script(script, shell="sh", tools=(tools,), env=env)


@pytest.mark.parametrize("queued", ["nft", "nft-0.9", "iptables"])
def test_a_fed_and_listened_queue_passes(tmp_path, queued):
    result = run(tmp_path, queued, listening=True)
    assert result.returncode == 0, result.stderr
    assert "kindnetd judges NetworkPolicies: queue 101" in result.stdout


@pytest.mark.parametrize(("queued", "listening"), [("", True), ("nft", False), ("", False)])
def test_an_unfed_or_unheard_queue_stops_up_naming_the_kernel(tmp_path, queued, listening):
    result = run(tmp_path, queued, listening)
    assert result.returncode == 1
    assert "NetworkPolicies are not enforced in the kind cluster" in result.stderr
    assert "kamaji-control-plane" in result.stderr and "CONFIG_NFT_QUEUE" in result.stderr


def test_it_only_reads_so_running_it_again_is_harmless(tmp_path):
    assert run(tmp_path, "nft", listening=True).returncode == 0
    assert run(tmp_path, "nft", listening=True).returncode == 0
    calls = (tmp_path / "calls").read_text().splitlines()
    reads = ("exec kamaji-control-plane nft list table", "exec kamaji-control-plane iptables-save -t mangle",
             "exec kamaji-control-plane cat /proc/net/netfilter/nfnetlink_queue")
    assert calls and all(call.startswith(reads) for call in calls), calls
