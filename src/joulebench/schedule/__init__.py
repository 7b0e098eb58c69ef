"""Scheduling: slots, pinning, GPU leases, bad GPUs and a job's parts folder."""
