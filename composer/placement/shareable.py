"""Which devices split into shares, into how many, and how a share is counted. Pure Python.

A GPU can be held by several compositions on the one host it is bound to (MIG instances or
time-slicing), each holding a share: thousandths of a GPU, as Kubernetes and the Alibaba GPU
trace count GPU milli. The device kinds registry (`fabric.kinds`) says which kinds split and
into how many (`Kind.partition == "shares"`, `Kind.shares`); the snapshot counts shares
through the functions here; `composer.placement.shares` places them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fabric.kinds import shares_per_device

if TYPE_CHECKING:
    from composer.placement.snapshot import DeviceInfo

__all__ = [
    "free_shares",
    "given_back",
    "shared_out",
    "shares_per_device",
]


def free_shares(device: DeviceInfo) -> int:
    """The shares of `device` still free: all of them for a whole free device."""
    if device.shared_host is None:
        return shares_per_device(device.kind)
    return device.shares_free


def shared_out(device: DeviceInfo, host_id: str, share: int) -> DeviceInfo:
    """`device` with `share` more of its shares taken by a composition on `host_id`."""
    if device.shared_host not in (None, host_id):
        raise ValueError(f"{device.name} is shared on {device.shared_host}, not on {host_id}.")
    left = free_shares(device) - share
    if share < 1 or left < 0:
        raise ValueError(f"{device.name} has {free_shares(device)} shares free; {share} taken.")
    return replace(device, shared_host=host_id, shares_free=left)


def given_back(device: DeviceInfo, host_id: str, share: int) -> DeviceInfo:
    """`device` with `share` of its shares given back by a composition on `host_id`."""
    if device.shared_host != host_id:
        raise ValueError(f"{device.name} holds no share for {host_id}.")
    left = device.shares_free + share
    whole = shares_per_device(device.kind)
    if share < 1 or left > whole:
        raise ValueError(f"{device.name}: {share} shares given back, {whole - left + share} held.")
    if left == whole:
        return replace(device, shared_host=None, shares_free=0)
    return replace(device, shares_free=left)
