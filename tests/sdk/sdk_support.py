"""Constants and helpers shared by the SDK's tests."""
from __future__ import annotations

RG = "batchai.horovod"
ACCOUNT = "mystorageaccount"
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 test@example"
